"""glm53.serving.vllm_chat_probe against the stand-in engine: good passes, each bad behaviour fails by name."""
from __future__ import annotations

from ansible_collections.glm53.serving.plugins.modules import vllm_chat_probe


def args(s, **extra):
    return {"base_url": s.url, "served_model_name": "glm53-flash-awq", **extra}


def test_good_server_passes_all_probes(run_module, standin):
    r = run_module(vllm_chat_probe, args(standin))
    assert not r.failed, r.get("msg")
    assert [p["name"] for p in r["probes"]] == ["greeting", "chinese", "math"]
    assert all(p["passed"] and p["reasoning_present"] and p["finish_reason"] == "stop" for p in r["probes"])
    assert r["summary"] == [] and r["changed"] is False


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
