"""Contract test: the serve role and glm53.serving.vllm_serve_args against the *real* vLLM 0.28.0 (the fork's
base) from PyPI, not the stand-in. The venv (tests/contract/requirements-vllm-0.28.0.txt, CPU torch, no GPU
stack) is made and cached by hack/contract_venv.sh, which `make test` runs before this stage and which
exports GLM53_VLLM_CONTRACT_VENV. Run alone: `STAGES=contract make test`."""
from __future__ import annotations

import os

import pytest

from testlib import exec_argv, run_serve_role
from ansible_collections.glm53.serving.plugins.modules import vllm_serve_args

VENV = os.environ.get("GLM53_VLLM_CONTRACT_VENV", "")
CPU = {"VLLM_TARGET_DEVICE": "cpu"}  # without it vLLM cannot infer a device on a machine with no GPU

if not os.path.exists(os.path.join(VENV, "bin", "python")):  # pragma: no cover - a setup error, not a skip
    raise RuntimeError("GLM53_VLLM_CONTRACT_VENV=%r is not a venv; run hack/contract_venv.sh (make test does)" % VENV)


@pytest.fixture(scope="module")
def default_render(tmp_path_factory):
    """The serve role with its defaults, its own parser check running in the real vLLM's venv."""
    tmp = tmp_path_factory.mktemp("render")
    proc, _extra = run_serve_role(tmp, venv_path=VENV, serve_check_environment=CPU)
    return proc, tmp


def check(run_module, argv):
    return run_module(vllm_serve_args, {"venv": VENV, "argv": argv, "environment": CPU})


def test_the_role_renders_the_default_script_through_the_real_parser(default_render):
    proc, tmp = default_render
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (tmp / "bin" / "serve.sh").exists()


def test_the_default_rendered_argv_parses_with_vllm_0_28_0(run_module, default_render):
    _proc, tmp = default_render
    argv = exec_argv((tmp / "bin" / "serve.sh").read_text())
    assert argv[0].endswith("/bin/vllm") and argv[1] == "serve"
    r = check(run_module, argv[2:])
    assert not r.failed, r.get("msg")
    assert r["vllm_version"] == "0.28.0"
    parsed = r["parsed"]
    assert parsed["max_model_len"] == 524288 and parsed["tensor_parallel_size"] == 8
    assert parsed["served_model_name"] == ["glm53-flash-awq"]
    assert parsed["enable_prefix_caching"] is False
    assert parsed["hf_overrides"] == {"text_config": {"index_topk": None, "index_n_heads": None,
                                                      "index_head_dim": None, "index_kpool": None}}
    assert parsed["reasoning_parser"] == "glm47" and parsed["tool_call_parser"] == "glm47"
    assert parsed["enable_auto_tool_choice"] is True and parsed["gpu_memory_utilization"] == 0.94


def test_the_role_refuses_a_misspelt_reasoning_parser_before_writing(tmp_path):
    """Refused by the validation's table of vLLM 0.28.0 (plugins/module_utils/_vllm_cli_data.py), before the
    parser check with the installed vLLM could run; the module-level cases below are that check's."""
    proc, _extra = run_serve_role(tmp_path, venv_path=VENV, serve_check_environment=CPU,
                                  serve_reasoning_parser="glm-47")
    assert proc.returncode != 0
    assert 'serve_reasoning_parser=\\"glm-47\\" is not a reasoning parser of vLLM 0.28.0' in proc.stdout, proc.stdout[-3000:]
    assert not (tmp_path / "bin" / "serve.sh").exists()


@pytest.fixture(scope="module")
def default_argv(default_render):
    _proc, tmp = default_render
    return exec_argv((tmp / "bin" / "serve.sh").read_text())[2:]


@pytest.mark.parametrize("change,message", [
    (("--reasoning-parser", "glm4.7"), "--reasoning-parser glm4.7 is unknown to this vLLM"),
    (("--tool-call-parser", "glm-47"), "--tool-call-parser glm-47 is unknown to this vLLM"),
    (("--no-such-flag",), "vllm serve: error: unrecognized arguments: --no-such-flag"),
    (("--hf-overrides", '{"text_config": {"index_topk": nul}}'), "argument --hf-overrides: Value"),
    (("--compilation-config", "{cudagraph_mode: FULL_DECODE_ONLY}"),
     "argument --compilation-config/-cc: 1 validation error for CompilationConfig Invalid JSON"),
    (("--max-model-len", "half-a-million"), "argument --max-model-len"),
])
def test_bad_commands_are_refused_by_vllm_0_28_0(run_module, default_argv, change, message):
    argv = list(default_argv)
    if change[0] in argv and len(change) == 2:
        argv[argv.index(change[0]) + 1] = change[1]
    else:
        argv += list(change)
    r = check(run_module, argv)
    assert r.failed and "vLLM (0.28.0) refuses this serve command" in r["msg"] and message in r["msg"], r["msg"]


MANAGED = {"max_model_len": "serve_max_model_len", "kv_cache_dtype": "serve_kv_cache_dtype",
           "enforce_eager": "serve_enforce_eager", "host": "serve_host", "api_key": "serve_api_key",
           "tensor_parallel_size": "serve_tensor_parallel_size", "compilation_config": "serve_compilation_config"}


@pytest.mark.parametrize("extra,dest", [
    (["--max-model", "1M"], "max_model_len"),          # argparse prefix matching, in the real parser
    (["--max_model_len=1000000"], "max_model_len"),
    (["--kv-cache-dtype=fp8"], "kv_cache_dtype"),
    (["--enforce-eager"], "enforce_eager"),
    (["--api-key", "k"], "api_key"),
    (["-tp", "4"], "tensor_parallel_size"),
    (["-cc", '{"cudagraph_mode": "NONE"}'], "compilation_config"),
])
def test_extra_words_are_compared_by_meaning_in_vllm_0_28_0(run_module, default_argv, extra, dest):
    r = run_module(vllm_serve_args, {"venv": VENV, "argv": default_argv, "extra_argv": extra, "managed": MANAGED,
                                     "environment": CPU})
    assert r.failed and dest in r["managed_conflict"], r["msg"]
    assert "set %s instead" % MANAGED[dest] in r["msg"]


def test_a_mistyped_cudagraph_mode_is_vllms_refusal_with_the_value(run_module, default_argv):
    argv = list(default_argv)
    argv[argv.index("--compilation-config") + 1] = '{"cudagraph_mode": "FULL_DECODE_ONLYY"}'
    r = check(run_module, argv)
    assert r.failed and "vLLM (0.28.0) refuses this serve command" in r["msg"] and "FULL_DECODE_ONLYY" in r["msg"]
    assert "Traceback" not in r["msg"]
    print("vLLM 0.28.0 on a mistyped cudagraph_mode: %s" % r["msg"])
