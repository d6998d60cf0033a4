"""Property tests (hypothesis) of the verdict code: whatever the engine or a gateway sends, the judging functions give
a verdict, never an exception; bodies that are not a passing answer never pass; and a passing answer with one
corruption of each class applied fails."""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.glm53.serving.plugins.module_utils._needle import judge_control, judge_needle
from ansible_collections.glm53.serving.plugins.module_utils._text_checks import judge_chat

SERVED = "glm53-flash-awq"
A, B = 123, 456
KEY, VALUE = "brave-otter", "4729103"
DISTRACTORS = [("calm-heron", "8812345"), ("bold-otter", "1234567")]
NEEDLES = [(KEY, VALUE)] + DISTRACTORS
CONTROL_KEY = "amber-walrus"
PROMPTS = {"greeting": "Hello! Please greet me back in one short sentence.", "chinese": "用一句話介紹自己",
           "math": "What is 123 * 456? Reply with the result."}
REASONING = "The user asks a question. I will answer it briefly and clearly."
# Passing answers, one or more a probe: each corruption below is applied to each of them.
GOOD = {
    "greeting": ["Hello! I'm GLM-5.3-Flash, an AI assistant. How can I help you today?",
                 "Hi there! Nice to meet you, and welcome. What would you like to talk about?"],
    "chinese": ["我是一個由智譜訓練的大型語言模型，能夠回答問題、撰寫文章、翻譯語言與協助程式設計。"],
    "math": ["123 × 456 = 56,088. I multiplied the two numbers and checked the result."],
    "needle": ["The special magic number for brave-otter mentioned in the provided text is 4729103."],
    "control": ["The provided text does not mention a special magic number for amber-walrus at all."],
}
# No example database: nothing is written into the checkout (it would ship in the tarball), and each run is fresh.
PROPERTY = settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def body(content, finish="stop", model=SERVED, reasoning=REASONING, **message):
    return {"id": "chatcmpl-x", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": dict({"role": "assistant", "content": content, "reasoning": reasoning}, **message)}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42}}


def verdict(probe, resp):
    """(passed, signals) for one body, as the modules judge it."""
    if probe == "needle":
        _f, v = judge_needle(resp, SERVED, KEY, VALUE, DISTRACTORS)
        return v["verdict"] == "retrieved", [v["verdict"]]
    if probe == "control":
        _f, v = judge_control(resp, SERVED, CONTROL_KEY, NEEDLES)
        return v["verdict"] == "passed", [v["verdict"]]
    _f, findings = judge_chat(probe, resp, SERVED, PROMPTS[probe], (A, B), True)
    return not findings, [f["signal"] for f in findings]


def test_the_good_answers_pass():
    """The base of the corruption properties: every answer in GOOD passes as it is (else they prove nothing)."""
    for probe, answers in GOOD.items():
        for text in answers:
            assert verdict(probe, body(text)) == (True, [] if probe not in ("needle", "control") else
                                                  ["retrieved" if probe == "needle" else "passed"]), (probe, text)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=40),
                    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
                    max_leaves=25)
# Bodies shaped like a chat completion, with any value in any field.
SHAPED = st.fixed_dictionaries({
    "model": JSON, "choices": st.one_of(JSON, st.lists(st.fixed_dictionaries({
        "finish_reason": JSON, "message": st.one_of(JSON, st.fixed_dictionaries({
            "content": JSON, "reasoning": JSON, "reasoning_content": JSON, "tool_calls": JSON}))}), max_size=2))})
PROBES = st.sampled_from(["greeting", "chinese", "math", "needle", "control"])


@PROPERTY
@given(PROBES, st.one_of(JSON, SHAPED, st.text(max_size=200)))
def test_any_body_gives_a_verdict_and_never_a_pass(probe, resp):
    """Arbitrary JSON (and text, as the client hands over a body that is not JSON) never crashes the judging code,
    and never passes: none of it is the served model's finished answer."""
    passed, signals = verdict(probe, resp)
    assert not passed and signals, (probe, resp)


@PROPERTY
@given(PROBES, st.text(max_size=400), st.sampled_from(["stop", "length", "abort", None, "tool_calls"]))
def test_any_content_gives_a_verdict(probe, text, finish):
    """Arbitrary Unicode content under any finish reason gives a verdict, never an exception; content without the
    product, or without the needle's value, never passes those probes."""
    passed, _signals = verdict(probe, body(text, finish))
    if probe == "math" and "56088" not in text.replace(",", ""):
        assert not passed
    if probe == "needle" and VALUE not in text:
        assert not passed


@PROPERTY
@given(st.sampled_from(sorted(GOOD)), st.data())
def test_a_truncated_answer_never_passes(probe, data):
    """A passing answer cut anywhere by the token limit (finish_reason length) fails."""
    text = data.draw(st.sampled_from(GOOD[probe]))
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    passed, _signals = verdict(probe, body(text[:cut], "length"))
    assert not passed


def _word_starts(text):
    return [i for i in range(1, len(text)) if text[i - 1] == " " and text[i].isalpha()] or [len(text) // 2]


def _mid_sentence(text):
    """Positions with a letter of the sentence before them and after them, before any punctuation: mid-sentence."""
    stops = set(".,!?;:\u3002\uff0c\u3001\uff01\uff1f")
    out = []
    for i in range(1, len(text)):
        j = i - 1
        while j >= 0 and text[j] not in stops and not text[j].isalpha():
            j -= 1
        k = i
        while k < len(text) and text[k] not in stops and not text[k].isalpha():
            k += 1
        if j >= 0 and text[j].isalpha() and k < len(text) and text[k].isalpha() and (text[i - 1] == " " or
                                                                                   not text[i].isascii()):
            out.append(i)
    return out


# One corruption a class: (name, function(text, position, data) -> (content, body fields)).
CORRUPTIONS = {
    "tool_tags": lambda t, i: (t[:i] + "<tool_call>search<arg_key>q</arg_key></tool_call> " + t[i:], {}),
    "json_call": lambda t, i: (t + ' {"name": "lookup", "arguments": {"q": 1}}', {}),
    "escaped_tag": lambda t, i: (t[:i] + "&lt;/think&gt;" + t[i:], {}),
    "special_token": lambda t, i: (t[:i] + "<|user|>" + t[i:], {}),
    "next_turn": lambda t, i: (t + "\nUser: and now tell me a joke.", {}),
    "next_turn_zh": lambda t, i: (t + "\n使用者：再說一次。", {}),
    "replacement_char": lambda t, i: (t[:i] + "\ufffd" + t[i:], {}),
    "byte_piece": lambda t, i: (t[:i] + "<0xE8>" + t[i:], {}),
    "hangul_fragment": lambda t, i: (t[:i] + "대규모 " + t[i:], {}),
    "cyrillic_fragment": lambda t, i: (t[:i] + "может " + t[i:], {}),
    "abort": lambda t, i: (t, {"finish": "abort"}),
    "no_finish": lambda t, i: (t, {"finish": None}),
    "other_model": lambda t, i: (t, {"model": "fallback-model"}),
    "unasked_tool_call": lambda t, i: (t, {"tool_calls": [{"id": "c", "type": "function",
                                                           "function": {"name": "f", "arguments": "{}"}}]}),
    "html_page": lambda t, i: ("<html><body><h1>502 Bad Gateway</h1></body></html>", {}),
}


@PROPERTY
@given(st.sampled_from(sorted(GOOD)), st.sampled_from(sorted(CORRUPTIONS)), st.data())
def test_one_corruption_of_each_class_fails_a_passing_answer(probe, name, data):
    text = data.draw(st.sampled_from(GOOD[probe]))
    if name in ("hangul_fragment", "cyrillic_fragment"):
        positions = _mid_sentence(text)
    else:
        positions = _word_starts(text)
    i = data.draw(st.sampled_from(positions))
    content, fields = CORRUPTIONS[name](text, i)
    resp = body(content, fields.get("finish", "stop"), fields.get("model", SERVED),
                **({"tool_calls": fields["tool_calls"]} if "tool_calls" in fields else {}))
    passed, signals = verdict(probe, resp)
    assert not passed, (probe, name, content, json.dumps(fields))
    assert signals


@PROPERTY
@given(st.sampled_from(["\u2212", "\ufe63", "\uff0d"]))
def test_a_minus_sign_in_any_form_is_negative(minus):
    passed, signals = verdict("math", body("123 × 456 = %s56088" % minus))
    assert not passed and "wrong_answer" in signals


@PROPERTY
@given(st.sampled_from(["0123456789", "０１２３４５６７８９", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669",
                        "\u0966\u0967\u0968\u0969\u096a\u096b\u096c\u096d\u096e\u096f"]))
def test_digits_of_any_script_are_read(digits):
    """The needle's value and the product read the same in ASCII, full-width, Arabic-Indic or Devanagari digits."""
    def write(number):
        return "".join(digits[int(c)] for c in number)

    assert verdict("needle", body("The special magic number for brave-otter is %s." % write(VALUE)))[0]
    assert verdict("math", body("123 × 456 = %s" % write("56088")))[0]
