"""glm53.serving.vllm_serve_args with the parser of the vLLM installed in this venv (the stand-in's, which
follows vLLM 0.28's rules: unknown flags and bad JSON fail at parse time, parser names are not checked)."""
from __future__ import annotations

import sys

import pytest

from ansible_collections.glm53.serving.plugins.modules import vllm_serve_args

CARD = ["/srv/models/GLM", "--served-model-name", "glm53-flash-awq", "--tensor-parallel-size", "8",
        "--host", "0.0.0.0", "--port", "8000", "--max-model-len", "524288", "--no-enable-prefix-caching",
        "--hf-overrides", '{"text_config": {"index_topk": null}}',
        "--compilation-config", '{"cudagraph_mode": "FULL_DECODE_ONLY"}', "--gpu-memory-utilization", "0.94",
        "--max-num-batched-tokens", "4096", "--reasoning-parser", "glm47", "--tool-call-parser", "glm47",
        "--enable-auto-tool-choice"]


def run(run_module, argv):
    return run_module(vllm_serve_args, {"venv": sys.prefix, "argv": argv})


def test_the_cards_command_parses(run_module):
    r = run(run_module, CARD)
    assert not r.failed, r.get("msg")
    parsed = r["parsed"]
    assert parsed["max_model_len"] == 524288 and parsed["served_model_name"] == ["glm53-flash-awq"]
    assert parsed["hf_overrides"] == {"text_config": {"index_topk": None}}
    assert parsed["reasoning_parser"] == "glm47" and parsed["model_tag"] == "/srv/models/GLM"


@pytest.mark.parametrize("change,message", [
    (["--reasoning-parser", "glm-47"], "--reasoning-parser glm-47 is unknown to this vLLM"),
    (["--tool-call-parser", "glm48"], "--tool-call-parser glm48 is unknown"),
    (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["--hf-overrides", "{text_config: null}"], "Value {text_config: null} cannot be converted to"),
    (["--max-model-len", "lots"], "vllm serve: error: argument --max-model-len"),
])
def test_bad_commands_fail_in_seconds(run_module, change, message):
    argv = list(CARD)
    flag = change[0]
    if flag in argv and len(change) == 2:
        argv[argv.index(flag) + 1] = change[1]
    else:
        argv += change
    r = run(run_module, argv)
    assert r.failed and message in r["msg"], r["msg"]


def test_auto_tool_choice_without_parser(run_module):
    i = CARD.index("--tool-call-parser")
    r = run(run_module, CARD[:i] + CARD[i + 2:])
    assert r.failed and "--enable-auto-tool-choice requires --tool-call-parser" in r["msg"]


def test_missing_venv(run_module, tmp_path):
    r = run_module(vllm_serve_args, {"venv": str(tmp_path), "argv": CARD})
    assert r.failed and "no venv at" in r["msg"]


MANAGED = {"max_model_len": "serve_max_model_len", "kv_cache_dtype": "serve_kv_cache_dtype",
           "enforce_eager": "serve_enforce_eager", "host": "serve_host", "api_key": "serve_api_key",
           "compilation_config": "serve_compilation_config", "tensor_parallel_size": "serve_tensor_parallel_size"}


@pytest.mark.parametrize("extra,dest", [
    (["--max-model-len", "1048576"], "max_model_len"),
    (["--max-model", "1M"], "max_model_len"),           # an argparse prefix
    (["--max_model_len=1000000"], "max_model_len"),     # underscores and =value
    (["--kv-cache-dtype=fp8"], "kv_cache_dtype"),
    (["--enforce-eager"], "enforce_eager"),
    (["--host", "10.0.0.1"], "host"),
    (["--api-key", "hunter2"], "api_key"),
    (["-cc", '{"cudagraph_mode": "NONE"}'], "compilation_config"),
    (["-tp", "4"], "tensor_parallel_size"),
])
def test_extra_words_that_set_a_managed_flag_are_refused_by_meaning(run_module, extra, dest):
    r = run_module(vllm_serve_args, {"venv": sys.prefix, "argv": CARD, "extra_argv": extra, "managed": MANAGED})
    assert r.failed and r["managed_conflict"] == [dest], r["msg"]
    assert "set %s instead" % MANAGED[dest] in r["msg"]


def test_extra_words_for_unmanaged_flags_pass(run_module):
    r = run_module(vllm_serve_args, {"venv": sys.prefix, "argv": CARD, "managed": MANAGED,
                                     "extra_argv": ["--max-num-seqs", "64", "--seed", "7", "--max-model-len", "524288"]})
    assert not r.failed, r["msg"]
    assert r["parsed"]["max_num_seqs"] == 64 and r["parsed"]["max_model_len"] == 524288


def test_an_exception_inside_the_parser_is_named_as_a_refusal(run_module):
    argv = list(CARD)
    argv[argv.index("--compilation-config") + 1] = '{"cudagraph_mode": "FULL_DECODE_ONLYY"}'
    r = run(run_module, argv)
    assert r.failed and "KeyError('FULL_DECODE_ONLYY')" in r["msg"] and "--compilation-config" in r["msg"], r["msg"]
    assert "Traceback" not in r["msg"]
