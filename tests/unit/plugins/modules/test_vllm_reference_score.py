"""glm53.serving.vllm_reference_score against the stand-in engine, the span reader on vLLM's shapes, and the fleet
median and verdict filters: healthy numerics pass, broken ones fail the band, drifted ones the baseline and the
fleet's median, each naming both figures."""
from __future__ import annotations

import pytest

from ansible_collections.glm53.serving.plugins.filter.probe_verdict import probe_verdict
from ansible_collections.glm53.serving.plugins.filter.reference_fleet_median import reference_fleet_median
from ansible_collections.glm53.serving.plugins.module_utils._reference import ScoreError, span_logprobs
from ansible_collections.glm53.serving.plugins.modules import vllm_reference_score


def args(s, **extra):
    return {"base_url": s.url, "served_model_name": "glm53-flash-awq", **extra}


def test_healthy_numerics_are_in_the_band_and_say_their_figures(run_module, standin):
    r = run_module(vllm_reference_score, args(standin, release="r1"))
    assert not r.failed, r.get("msg")
    assert set(r["passages"]) == {"english", "chinese", "code"} and r["release"] == "r1"
    for name, fig in r["passages"].items():
        assert 100 <= fig["tokens"] <= 400, (name, fig)  # a few hundred tokens each: one cheap prefill
        assert 0.5 < fig["nll"] < 4 and r["figures"][name] == fig["nll"]


def test_a_poisoned_engine_fails_the_band(run_module, standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_NUMERICS": "poisoned"}).start().wait_ready()
    r = run_module(vllm_reference_score, args(s))
    assert r.failed and len(r["summary"]) == 3
    assert r["summary"][0].startswith("numerics_band: english: 11.9") and "band (0.02-5.00)" in r["summary"][0]


def test_a_drifted_engine_fails_its_baseline_naming_both_figures(run_module, standin, standin_factory):
    base = run_module(vllm_reference_score, args(standin))["figures"]
    s = standin_factory(env={"VLLM_STANDIN_NUMERICS": "drifted"}).start().wait_ready()
    r = run_module(vllm_reference_score, args(s, baseline=base))
    assert r.failed and all(line.startswith("numerics_drift: ") for line in r["summary"])
    assert "against %.4f" % base["english"] in r["summary"][0] and "+15.0%" in r["summary"][0]
    same = run_module(vllm_reference_score, args(standin, baseline=base))
    assert not same.failed  # the same engine again: within the tolerance of its own baseline


@pytest.mark.parametrize("shift, fails", [(0.1, True), (0.06, False), (0.12, True)])
def test_a_fixed_drift_per_token_is_held_to_the_absolute_tolerance(run_module, standin, standin_factory, shift, fails):
    """Every token less likely by a fixed drift (a subtle kernel or quantisation bug): 0.1 nats a token is refused
    (5 % of a 2-nat passage was not), 0.06 is within 0.08 nats, 0.12 (two such steps) is not."""
    base = run_module(vllm_reference_score, args(standin))["figures"]
    s = standin_factory(env={"VLLM_STANDIN_NUMERICS": "shift:%s" % shift}).start().wait_ready()
    r = run_module(vllm_reference_score, args(s, baseline=base))
    assert r.failed is fails, r.get("msg")
    if fails:
        assert r["summary"][0].startswith("numerics_drift: english:") and "(+%.4f nats" % shift in r["summary"][0], r["summary"]
        assert "tolerance 0.080 nats" in r["summary"][0]


def test_the_garbage_fault_poisons_the_numerics(run_module, standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_GARBAGE_AFTER": "0"}).start().wait_ready()
    r = run_module(vllm_reference_score, args(s))
    assert r.failed and "numerics_band" in r["msg"]


def test_an_engine_without_prompt_logprobs_gives_a_signal(run_module):
    r = run_module(vllm_reference_score, {"base_url": "http://127.0.0.1:9", "served_model_name": "x",
                                          "request_timeout": 2})
    assert r.failed and all(line.startswith("no_scores: ") for line in r["summary"])


@pytest.mark.parametrize("extra, message", [
    ({"band": [5.0, 1.0]}, "band must be [low, high]"),
    ({"band": [0.1]}, "band must be [low, high]"),
    ({"tolerance_nats": 0.0}, "tolerance_nats must be between 0.001 and 1"),
    ({"tolerance_nats": 2.0}, "tolerance_nats must be between 0.001 and 1"),
    ({"baseline": {"english": "fast"}}, "baseline[english] must be a number"),
])
def test_bad_options_are_refused_before_any_request(run_module, extra, message):
    r = run_module(vllm_reference_score, {"base_url": "http://127.0.0.1:9", "served_model_name": "x", **extra})
    assert r.failed and message in r["msg"]


def _body(entries, ids=None, prompt_tokens=None):
    return {"prompt_logprobs": entries, "prompt_token_ids": ids,
            "usage": {"prompt_tokens": len(entries) if prompt_tokens is None else prompt_tokens}}


def test_the_span_reader_takes_the_prompt_token_by_id_never_the_max():
    """vLLM's shapes (docs: one entry per prompt token, the first null, keys are token ids as strings, with top-N the
    dict holds N+1 entries): the prompt's own token is read by its id."""
    entries = [None, {"7": {"logprob": -0.5, "rank": 1, "decoded_token": "a"}},
               {"3": {"logprob": -0.1, "rank": 1, "decoded_token": "x"}, "9": {"logprob": -2.0, "rank": 4,
                                                                              "decoded_token": "b"}}]
    assert span_logprobs(_body(entries, [1, 7, 9]), 2) == [-0.5, -2.0]
    assert span_logprobs(_body(entries[:2]), 1) == [-0.5]  # N=0 without ids: the one entry is the token's


@pytest.mark.parametrize("body, message", [
    ("<html>", "not a JSON object"),
    ({"choices": []}, "no prompt_logprobs"),
    (_body([None, {"1": {"logprob": -1}}], [0, 1], prompt_tokens=5), "2 entries for 5 prompt tokens"),
    (_body([None, {"1": {"logprob": -1}}], [0, 2]), "not in its prompt_logprobs entry"),
    (_body([None, {"1": {"logprob": 0.5}}], [0, 1]), "not a log-probability"),
    (_body([None, {"1": {"logprob": -1}}], [0, 1, 2]), "prompt_token_ids has 3 entries"),
    (_body([None, {"1": {"logprob": -1}}], [0, 1], None), None),
])
def test_the_span_reader_refuses_what_vllm_never_sends(body, message):
    if message is None:
        with pytest.raises(ScoreError, match="do not fit"):
            span_logprobs(body, 2)
        return
    with pytest.raises(ScoreError, match=message.replace("[", "\\[").replace("(", "\\(")):
        span_logprobs(body, 1)


def _scored(weights, english, summary=(), release="r1"):
    return {"weights": weights, "release": release, "passed": not summary, "summary": list(summary),
            "passages": {"english": {"nll": english}}}


def test_the_fleet_median_is_per_weights_across_releases_and_leaves_out_broken_hosts():
    results = [_scored("w1", 2.2), _scored("w1", 2.25, release="r2"), _scored("w1", 2.6), _scored("w2", 9.0),
               _scored("w1", 11.9, ["numerics_band: english: 11.9 ..."]), {"skipped": True}]
    assert reference_fleet_median(results, "w1") == {"english": 2.25}
    assert reference_fleet_median(results, "w2") == {}  # one host says nothing about itself
    assert reference_fleet_median(results[:2], "w1") == {}


def test_the_verdict_fails_a_host_off_its_fleets_median_naming_both_figures():
    health = {"ready": True, "version": "0.28.0"}
    v = probe_verdict(health, reference=_scored("w1", 2.6), fleet={"english": 2.25})
    assert not v["passed"] and v["failures"][0].startswith("reference numerics_drift: english: 2.6000 nats/token "
                                                           "against 2.2500 for the fleet's median")
    assert probe_verdict(health, reference=_scored("w1", 2.26), fleet={"english": 2.25})["passed"]
    assert not probe_verdict(health, reference=_scored("w1", 2.35), fleet={"english": 2.25})["passed"]  # 0.1 nats
    assert probe_verdict(health, reference=_scored("w1", 2.6), fleet={})["passed"]  # no median: nothing to compare
    broken = probe_verdict(health, reference={"passed": False, "summary": ["numerics_band: english: 11.9"]})
    assert broken["failures"] == ["reference numerics_band: english: 11.9"]


def test_a_host_serving_with_the_example_inventorys_key_fails_naming_it():
    health = {"ready": True, "version": "0.28.0"}
    v = probe_verdict(health, placeholder_key=True)
    assert not v["passed"] and v["failures"][0].startswith("key: serve_api_key is inventory.example's placeholder")
    assert "ansible-vault create" in v["failures"][0]
    assert probe_verdict(health, placeholder_key=False)["passed"]
