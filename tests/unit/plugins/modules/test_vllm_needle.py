"""glm53.serving.vllm_needle against the stand-in engine: sizing with /tokenize, exact scoring, failure naming."""
from __future__ import annotations

import re

from ansible_collections.glm53.serving.plugins.module_utils._needle import Haystack, score, score_control
from ansible_collections.glm53.serving.plugins.modules import vllm_needle
from testlib import REFERENCE_FLAGS


def args(s, **extra):
    return {"base_url": s.url, "served_model_name": "glm53-flash-awq", "targets": [100000], **extra}


def test_good_server_retrieves_every_depth(run_module, standin):
    r = run_module(vllm_needle, args(standin))
    assert not r.failed, r.get("msg")
    (res,) = r["results"]
    assert res["tokenize_calls"] <= 4 and abs(res["sizing_error_pct"]) <= 1.0
    assert [d["depth"] for d in res["depths"]] == [10, 30, 50, 70, 90]
    assert all(d["verdict"] == "retrieved" and d["word_part"] and d["digit_part"] for d in res["depths"])
    assert all(d["prompt_tokens"] == res["tokens"] for d in res["depths"])
    assert res["control"]["verdict"] == "passed"
    assert re.fullmatch(r"\d{7}", r["value"]) and re.fullmatch(r"[a-z]+-[a-z]+", r["key"])


def test_450k_target_is_sized_within_one_percent_and_under_the_limit(run_module, standin):
    r = run_module(vllm_needle, args(standin, targets=[450000], depths=[50], control=False))
    assert not r.failed, r.get("msg")
    res = r["results"][0]
    assert abs(res["tokens"] - 450000) <= 4500 and res["tokens"] <= 524288 - 4096
    assert res["tokenize_calls"] <= 4


def test_target_above_the_window_fails_and_is_never_shrunk(run_module, standin_factory):
    flags = list(REFERENCE_FLAGS)
    flags[flags.index("--max-model-len") + 1] = "131072"
    s = standin_factory(flags=flags).start().wait_ready()
    r = run_module(vllm_needle, args(s, targets=[450000, 60000], depths=[50], control=False))
    assert r.failed
    big, small = r["results"]
    assert big["verdict"] == "cannot_test" and big["depths"] == [] and big["tokens"] is None
    assert "cannot test 450000 tokens: max_model_len 131072 allows at most 126720" in r["msg"]
    assert small["verdict"] == "passed" and small["depths"][0]["prompt_tokens"] == small["tokens"]


def test_a_target_held_under_the_context_limit_names_max_model_len(run_module, standin_factory, monkeypatch):
    # 127000 passes the pre-check (1 % under it fits the 126720 limit), but the window [125730, 126720] is a few
    # sentences wide: where the real sizing lands depends on the haystack. Here it always lands under the window.
    flags = list(REFERENCE_FLAGS)
    flags[flags.index("--max-model-len") + 1] = "131072"
    s = standin_factory(flags=flags).start().wait_ready()
    real = vllm_needle.size_haystack
    monkeypatch.setattr(vllm_needle, "size_haystack",
                        lambda count, hay, target, limit, tol: real(count, hay, int(target * 0.97), limit, tol))
    r = run_module(vllm_needle, args(s, targets=[127000], depths=[50], control=False))
    assert r.failed
    (res,) = r["results"]
    assert res["verdict"] == "cannot_test" and res["depths"] == [] and res["tokens"] < 125730
    assert "outside the 1.0% tolerance; the cause is max_model_len 131072, which allows at most 126720" in r["msg"]


def test_each_run_has_a_fresh_key_and_value(run_module, standin):
    a = run_module(vllm_needle, args(standin, targets=[20000], depths=[50], control=False))
    b = run_module(vllm_needle, args(standin, targets=[20000], depths=[50], control=False))
    assert (a["key"], a["value"], a["seed"]) != (b["key"], b["value"], b["seed"])


def test_lost_digits_fail_and_say_which_part(run_module, standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_BEHAVIOUR": "needle_lossy"}).start().wait_ready()
    r = run_module(vllm_needle, args(s, depths=[30, 70]))
    assert r.failed
    for d in r["results"][0]["depths"]:
        assert d["verdict"] == "partial" and d["word_part"] and not d["digit_part"]
        assert "digits wrong" in d["detail"]
    assert "depth 30: partial: digits wrong" in r["msg"]


def test_missing_needle_fails(run_module, standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_BEHAVIOUR": "needle_blind"}).start().wait_ready()
    r = run_module(vllm_needle, args(s, depths=[50]))
    assert r.failed and r["results"][0]["depths"][0]["verdict"] == "missed"
    assert "the answer says it is not there" in r["msg"] and "(%d sent)" % r["results"][0]["tokens"] in r["msg"]


def test_haystack_is_varied_and_digit_free():
    h = Haystack(seed=7)
    sentences = h.sentences(2000)
    assert len(set(sentences)) > 1900
    prompt = h.prompt(2000, 50)
    assert re.findall(r"\d{7}", prompt).count(h.value) == 1
    assert len(re.findall(r"\d", prompt)) == 7 * (1 + len(h.distractors))
    pos = prompt.index(h.value) / len(prompt)
    assert 0.45 < pos < 0.55


def test_score_verdicts_read_the_content_only():
    d = [("calm-heron", "8812345")]
    assert score("brave-otter is 4729103", None, "brave-otter", "4729103", d)["verdict"] == "retrieved"
    assert score("for brave-otter: 4739103", None, "brave-otter", "4729103", d)["verdict"] == "partial"
    assert score("it is 8812345", None, "brave-otter", "4729103", d)["verdict"] == "distractor"
    assert score("8812345 or 4729103", None, "brave-otter", "4729103", d)["verdict"] == "ambiguous"
    v = score("I could not find it.", "brave-otter is 4729103", "brave-otter", "4729103", d)
    assert v["verdict"] == "missed" and v["reasoning_has_value"] and "in the reasoning only" in v["detail"]


def test_keys_that_share_a_word_are_told_apart():
    """Over many seeds (keys share adjectives and nouns): a good answer retrieves, a keyed list of the
    other needles after "not found" passes the control, and answering another needle's value fails it."""
    for seed in range(300):
        h = Haystack(seed)
        needles = [(h.key, h.value)] + list(h.distractors)
        good = "The special magic number for %s mentioned in the provided text is: %s." % (h.key, h.value)
        assert score(good, None, h.key, h.value, h.distractors)["verdict"] == "retrieved", seed
        found = ", ".join("%s (%s)" % kv for kv in needles)
        listed = "I could not find a number for %s in the text. The text gives: %s." % (h.control_key, found)
        assert score_control(listed, None, h.control_key, needles)["verdict"] == "passed", (seed, listed)
        wrong = "The special magic number for %s is: %s." % (h.control_key, h.distractors[0][1])
        assert score_control(wrong, None, h.control_key, needles)["verdict"] == "failed", seed

