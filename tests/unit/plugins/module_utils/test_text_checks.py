"""The garbage detector: each signal fires on its pattern and stays quiet on coherent text."""
from __future__ import annotations

import pytest

from ansible_collections.glm53.serving.plugins.module_utils._text_checks import (
    _eval_expr,
    garbage_findings,
    judge_answer,
    math_findings,
    numbers_in,
    repeated_ngram,
    word_tokens,
)

GOOD = [
    "Hello! I'm GLM-5.3-Flash, an AI assistant. How can I help you today?",
    "我是一個由智譜訓練的大型語言模型，能夠回答問題、撰寫文章、翻譯語言與協助程式設計。",
    "The user wants 123 * 456. 123 * 400 = 49200 and 123 * 56 = 6888, so the total is 56088.",
    ("To compare the options, first list the costs of each plan, then weigh the risks: the first plan is "
     "cheaper but slower, the second is faster and needs more staff, and the third sits between them."),
]


@pytest.mark.parametrize("text", GOOD)
def test_coherent_text_has_no_findings(text):
    assert garbage_findings(text, "content") == []


@pytest.mark.parametrize("text,signal", [
    ("of the of the of the of the of the of the of the of the of the of the", "repeated_ngram"),
    ("The answer is " + "ĠĠĠĠĠĠĠĠĠĠĠĠ", "scaled_token"),
    ("Sure" + "!" * 40, "scaled_token"),
    ("好" * 30, "scaled_token"),
    ("I think the answer is 42. " + "yes " * 30, "repetition_to_end"),
    (" ".join(["alpha", "beta", "gamma", "delta"] * 15), "low_distinct_ratio"),
])
def test_each_signal_fires(text, signal):
    found = garbage_findings(text, "content")
    assert signal in {f["signal"] for f in found}
    assert all(f["excerpt"] and f["field"] == "content" for f in found)


def test_empty_and_budget_verdicts():
    assert judge_answer(None, "thinking...", "length")[0]["signal"] == "reasoning_ran_out_of_budget"
    assert judge_answer("", "thinking", "stop")[0]["signal"] == "empty_content"
    assert judge_answer("Hi there, how are you?", None, "stop")[0]["signal"] == "no_reasoning"
    assert judge_answer("Hi there, how are you?", None, "stop", require_reasoning=False) == []


@pytest.mark.parametrize("text,values", [("= 56,088", [56088.0]), ("The result is 391.", [391.0]), ("none", []),
                                         ("123 * 456 = 56088", [123.0, 456.0, 56088.0]), ("56\u202f088", [56088.0])])
def test_numbers_in(text, values):
    assert [v for v, _s, _e in numbers_in(text)] == values


def test_math_verdicts_name_the_conflict():
    assert math_findings("The result is 56088 (123 × 456).", 123, 456) == []
    (f,) = math_findings("56088, no wait: 56098", 123, 456)
    assert f["signal"] == "conflicting_answer" and "56098" in f["detail"]
    (f,) = math_findings("123 × 456 = 56,078", 123, 456)
    assert f["signal"] == "wrong_answer" and "56078" in f["detail"]


def test_punctuation_makes_no_ngrams_and_coverage_stays_below_100_percent():
    table = "| a | b |\n" + "|---|---|\n" * 30
    assert word_tokens(table) == ["a", "b"]
    _n, _phrase, count, coverage = repeated_ngram(["of", "the", "of", "the"] * 25)
    assert 0.95 <= coverage <= 1.0 and count >= 40
    assert repeated_ngram("one two three four five six seven eight nine ten eleven twelve".split() * 1) is None


def test_markup_in_a_code_span_is_quoted_not_leaked():
    assert garbage_findings("Reasoning goes between `<think>` and `</think>`, never into this answer.", "content") == []
    leak = garbage_findings("I will greet them.</think>Hello there, how can I help?", "content")
    assert [f["signal"] for f in leak] == ["markup_leak"] and "</think>" in leak[0]["detail"]


def test_invisible_characters():
    # a joined emoji has one zero-width joiner between pictures: no run
    assert garbage_findings("Hello! 👨‍👩‍👧‍👦 How can I help your family today?", "content") == []
    assert [f["signal"] for f in garbage_findings("Hi\u200b\u200b\u200b\u200bthere, how are you?", "content")] == ["scaled_token"]
    empty = judge_answer("\u200b\u2060\ufeff\u200b", "ok", "stop")
    assert [f["signal"] for f in empty] == ["empty_content"] and "4 invisible" in empty[0]["detail"]


def test_opaque_codes_only_when_they_are_most_of_the_text():
    assert garbage_findings("Hi! This build is commit f2935ce322ab47e1c0d9a8b7c6d5e4f3a2b1c0d9; how can I help you with "
                            "it today, and what would you like to know about the release and its fixes?", "content") == []
    hexdump = garbage_findings(" ".join("0x%02x" % n for n in range(0, 240, 15)), "content")
    assert [f["signal"] for f in hexdump] == ["token_salad"]


def test_latex_and_powers_in_arithmetic():
    assert math_findings(r"$$123 \times 456 = 56{,}088$$", 123, 456) == []
    assert math_findings(r"\(123 \cdot 456\) is \boxed{56\,088}", 123, 456) == []
    assert math_findings("123 × 456 = 5.6088 × 10^4 = 56088", 123, 456) == []
    assert [f["signal"] for f in math_findings(r"$123 \times 456 = 56{,}078$", 123, 456)] == ["wrong_answer"]


@pytest.mark.parametrize("expr", ["9^12^12", "2^(10^10)", "99999999999999999999^99", "(" * 300 + "1" + ")" * 300])
def test_huge_or_deep_expressions_are_not_evaluated(expr):
    # a hostile answer must not make the probe compute a huge power or recurse without bound
    assert _eval_expr(expr) is None
