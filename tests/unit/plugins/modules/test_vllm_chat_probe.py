"""glm53.serving.vllm_chat_probe against the stand-in engine: good passes, each bad behaviour fails by name."""
from __future__ import annotations

import pytest

from ansible_collections.glm53.serving.plugins.modules import vllm_chat_probe


def args(s, **extra):
    return {"base_url": s.url, "served_model_name": "glm53-flash-awq", **extra}


def test_good_server_passes_all_probes(run_module, standin):
    r = run_module(vllm_chat_probe, args(standin))
    assert not r.failed, r.get("msg")
    assert [p["name"] for p in r["probes"]] == ["greeting", "chinese", "math", "copy", "lookup", "zh_fact"]
    assert all(p["passed"] and p["reasoning_present"] and p["finish_reason"] == "stop" for p in r["probes"])
    assert r["summary"] == [] and r["changed"] is False
    # the greeting and the self-introduction are far likelier after their own prompt than after an unrelated one
    margins = {p["name"]: p["relevance"]["margin"] for p in r["probes"] if "relevance" in p}
    assert set(margins) == {"greeting", "chinese"} and min(margins.values()) > 0.5, margins


def test_the_old_option_name_model_still_works(run_module, standin):
    r = run_module(vllm_chat_probe, {"base_url": standin.url, "model": "glm53-flash-awq", "math": False})
    assert not r.failed, r.get("msg")


def test_gibberish_fails_naming_the_signal(run_module, standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_BEHAVIOUR": "gibberish"}).start().wait_ready()
    r = run_module(vllm_chat_probe, args(s))
    assert r.failed and not any(p["passed"] for p in r["probes"])
    signals = {f["signal"] for p in r["probes"] for f in p["findings"]}
    assert "repeated_ngram" in signals and "repetition_to_end" in signals
    assert "greeting: repeated_ngram in content" in r["msg"] and "«" in r["msg"]


def test_scaled_token_signature(run_module, standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_BEHAVIOUR": "scaled"}).start().wait_ready()
    r = run_module(vllm_chat_probe, args(s, math=False))
    assert r.failed and all("scaled_token" in {f["signal"] for f in p["findings"]} for p in r["probes"])


def test_unclosed_reasoning_is_out_of_budget_not_a_pass(run_module, standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_BEHAVIOUR": "unclosed_reasoning"}).start().wait_ready()
    r = run_module(vllm_chat_probe, args(s))
    assert r.failed
    for p in r["probes"]:
        assert p["finish_reason"] == "length" and p["findings"][0]["signal"] == "reasoning_ran_out_of_budget"
    assert "reasoning used the whole max_tokens budget" in r["msg"]


def test_max_tokens_below_2048_is_refused(run_module, standin):
    r = run_module(vllm_chat_probe, args(standin, max_tokens=512))
    assert r.failed and "max_tokens=512 is below 2048" in r["msg"] and "probes" not in r


def test_simplified_answer_is_caught(run_module, standin):
    # the stand-in repeats a Chinese prompt's language; this asks it a question it answers in Simplified
    from ansible_collections.glm53.serving.plugins.module_utils._text_checks import traditional_chinese_findings
    assert traditional_chinese_findings("我是一个由智谱训练的大型语言模型。")[0]["signal"] == "simplified_chinese"
    assert traditional_chinese_findings("I am a model.")[0]["signal"] == "not_chinese"
    assert traditional_chinese_findings("我是一個由智譜訓練的大型語言模型，能夠回答問題。") == []


def test_http_error_is_a_failed_probe(run_module, standin):
    r = run_module(vllm_chat_probe, args(standin, model="not-served"))
    assert r.failed and {f["signal"] for p in r["probes"] for f in p["findings"]} == {"http_error"}
    assert "NotFoundError" in r["msg"]


def test_answers_that_belong_to_another_request_are_wrong(run_module, standin_factory):
    """The batch is judged as a whole: an engine that answers the copy task with the table's value (or the other way
    round) fails both as wrong answers, whatever each answer looks like on its own."""
    s = standin_factory(env={"VLLM_STANDIN_BEHAVIOUR": "echo"}).start().wait_ready()
    r = run_module(vllm_chat_probe, args(s, seed=7, relevance=False))
    by = {p["name"]: p for p in r["probes"]}
    assert r.failed and not by["copy"]["passed"] and not by["lookup"]["passed"] and not by["zh_fact"]["passed"]
    assert {f["signal"] for f in by["lookup"]["findings"]} & {"prompt_echo", "conflicting_answer", "wrong_answer"}


def test_a_poisoned_engine_writes_fluent_text_and_relevance_says_so(run_module, standin_factory):
    """Numerics broken, text fluent: the text checks pass, the likelihood after the answer's own prompt is no better
    than after an unrelated one. Uncalibrated on real engines, the margin is an advisory that names it (the numerics
    fail such a host: test_probes_role); with relevance_fails it fails the probe."""
    s = standin_factory(env={"VLLM_STANDIN_NUMERICS": "poisoned"}).start().wait_ready()
    r = run_module(vllm_chat_probe, args(s, seed=3))
    by = {p["name"]: p for p in r["probes"]}
    assert not r.failed and by["greeting"]["passed"] and by["greeting"]["findings"] == [], r.get("msg")
    assert [f["signal"] for f in by["greeting"]["advisories"]] == ["off_prompt"]
    assert any(a.startswith("greeting: off_prompt in content") and "11.9" in a for a in r["advisories"]), r["advisories"]
    r = run_module(vllm_chat_probe, args(s, seed=3, relevance_fails=True))
    by = {p["name"]: p for p in r["probes"]}
    assert r.failed and by["math"]["passed"] and by["copy"]["passed"]
    assert [f["signal"] for f in by["greeting"]["findings"]] == ["off_prompt"]
    assert "greeting: off_prompt in content" in r["msg"] and "11.9" in r["msg"]
    off = run_module(vllm_chat_probe, args(s, seed=3, relevance=False))
    assert not off.failed and off["advisories"] == [], off.get("msg")


def test_a_gateway_answering_with_another_model_fails(run_module, standin_factory):
    """The served name is checked in every answer: a gateway's fallback model behind the same URL fails each probe
    with model_mismatch, however good its answers are."""
    s = standin_factory(env={"VLLM_STANDIN_ANSWER_AS": "gpt-fallback"}).start().wait_ready()
    r = run_module(vllm_chat_probe, args(s, relevance=False))
    assert r.failed and all([f["signal"] for f in p["findings"]] == ["model_mismatch"] for p in r["probes"]), r["probes"]
    assert "'gpt-fallback', not the served 'glm53-flash-awq'" in r["msg"]


def test_a_bad_relevance_margin_is_refused(run_module, standin):
    r = run_module(vllm_chat_probe, args(standin, relevance_margin=9.0))
    assert r.failed and "relevance_margin must be between -1 and 5" in r["msg"]


def _record(run_module, s):
    """A golden record from a healthy engine: its answers to the probe set of one release."""
    r = run_module(vllm_chat_probe, args(s, probe_set="r1/GLM"))
    assert not r.failed and len(r["answers"]) == 6, r.get("msg")
    assert all(a["tokens"] > 0 and 0 < a["nll"] < 2 and a["token_ids"] for a in r["answers"]), r["answers"]
    return {"release": "r1", "probes": r["answers"]}


def test_a_probe_set_name_asks_every_host_the_same(run_module, standin):
    one = run_module(vllm_chat_probe, args(standin, probe_set="r1/GLM", relevance=False, record=False))
    two = run_module(vllm_chat_probe, args(standin, probe_set="r1/GLM", relevance=False, record=False))
    other = run_module(vllm_chat_probe, args(standin, probe_set="r2/GLM", relevance=False, record=False))
    assert [p["prompt"] for p in one["probes"]] == [p["prompt"] for p in two["probes"]]
    assert [p["prompt"] for p in one["probes"]] != [p["prompt"] for p in other["probes"]]
    assert [set(a) for a in one["answers"]] == [{"name", "content"}] * 6 and one["probe_set"] == "r1/GLM"
    assert all(p["layer"] == "text" for p in one["probes"])


def test_the_recorded_answer_passes_with_no_text_rule(run_module, standin, monkeypatch):
    """An answer equal to the release's recorded one is decided by the record: the text checks are never called."""
    golden = _record(run_module, standin)

    def no_text_rule(*_a, **_k):
        raise AssertionError("a text rule was consulted")
    monkeypatch.setattr(vllm_chat_probe, "judge_chat", no_text_rule)
    monkeypatch.setattr(vllm_chat_probe, "exact_findings", no_text_rule)
    r = run_module(vllm_chat_probe, args(standin, golden=golden))
    assert not r.failed, r.get("msg")
    assert [p["prompt"] for p in r["probes"]] == [e["prompt"] for e in golden["probes"]]
    assert all(p["layer"] == "golden" and not p["golden"]["differs"] for p in r["probes"])
    assert all(abs(p["golden"]["recorded_nll_now"] - p["golden"]["recorded_nll"]) < 1e-6 for p in r["probes"])
    assert r["golden_release"] == "r1" and "relevance" not in r["probes"][0]


@pytest.mark.parametrize("fault, probe", [("lost_first", "greeting"), ("doubled", "chinese"), ("crosstalk", None)])
def test_a_decoder_that_does_not_write_what_the_model_predicts_fails(run_module, standin, standin_factory, fault,
                                                                     probe):
    """A token lost or doubled, or another request's answer: the engine's own scores put the token it wrote far below
    the likeliest one, whatever the text checks make of it."""
    golden = _record(run_module, standin)
    s = standin_factory(env={"VLLM_STANDIN_DECODE_FAULT": fault}).start().wait_ready()
    r = run_module(vllm_chat_probe, args(s, golden=golden))
    by = {p["name"]: p for p in r["probes"]}
    if probe is None:  # the batch's first request gets its own answer, every other one the answer before it
        (probe,) = [name for name, p in by.items() if p["golden"]["differs"]][:1]
        assert sum(p["passed"] for p in r["probes"]) <= 1, r["summary"]
    assert r.failed and not by[probe]["passed"], r["probes"]
    assert by[probe]["layer"] == "golden" and by[probe]["golden"]["differs"]
    (finding,) = [f for f in by[probe]["findings"] if f["signal"] == "not_own_answer"]
    recorded = golden["probes"][[e["name"] for e in golden["probes"]].index(probe)]["content"]
    assert "the release's recorded answer is «%s" % recorded[:20] in finding["detail"]
    assert "where this engine's own scores put «" in finding["detail"] and "nats apart" in finding["detail"]


def test_an_engine_whose_numerics_drift_by_a_tenth_of_a_nat_fails_its_recorded_answers(run_module, standin,
                                                                                       standin_factory):
    """The answers are the same words, and the recorded answers became less likely: the record catches it."""
    golden = _record(run_module, standin)
    s = standin_factory(env={"VLLM_STANDIN_NUMERICS": "shift:0.1"}).start().wait_ready()
    r = run_module(vllm_chat_probe, args(s, golden=golden))
    assert r.failed and all(not p["golden"]["differs"] for p in r["probes"])
    assert all([f["signal"] for f in p["findings"]] == ["golden_drift"] for p in r["probes"]), r["summary"]
    assert "(+0.1000; tolerance 0.080 nats)" in r["summary"][0]


def test_a_release_whose_chat_template_changed_fails_its_recorded_answers(run_module, standin, standin_factory):
    """A release that renders the prompts in another format (no newline after each role's tag): the engine writes the
    same answers, which every text check passes (the same probes without a record pass), and the recorded answers
    are less likely after the changed prompt. The record catches what the text checks cannot see."""
    golden = _record(run_module, standin)
    s = standin_factory(env={"VLLM_STANDIN_CHAT_TEMPLATE": "no_newline"}).start().wait_ready()
    alone = run_module(vllm_chat_probe, args(s, probe_set="r1/GLM"))
    assert not alone.failed, alone["summary"]
    r = run_module(vllm_chat_probe, args(s, golden=golden))
    assert r.failed and all(not p["golden"]["differs"] for p in r["probes"])
    assert all([f["signal"] for f in p["findings"]] == ["golden_drift"] for p in r["probes"]), r["summary"]
    assert "its chat template" in r["summary"][0]


def test_a_record_that_is_not_one_is_refused(run_module, standin):
    r = run_module(vllm_chat_probe, args(standin, golden={"release": "r1", "probes": [{"name": "greeting"}]}))
    assert r.failed and "golden is not a golden record" in r["msg"] and "probes" not in r


def test_relevance_is_not_judged_when_the_numerics_are_not_sound(run_module, standin):
    r = run_module(vllm_chat_probe, args(standin, numerics_sound=False, relevance_fails=True, math=False))
    assert not r.failed and all("relevance" not in p for p in r["probes"])
    assert [a.split(":")[1].strip().split(" ")[0] for a in r["advisories"]] == ["relevance_not_judged"] * 2
