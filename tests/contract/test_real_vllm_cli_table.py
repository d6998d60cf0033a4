"""Contract test: the table of what `vllm serve` accepts (plugins/module_utils/_vllm_cli_data.py, which the serve
role's validation reads before any build) against the *real* vLLM 0.28.0 in the contract venv.

1. hack/vllm_cli_data.py run in that venv writes exactly the checked-in table (a vLLM bump regenerates it).
2. For each command below, the filter refuses it exactly when vLLM's own parser (or its parser registries)
   refuses it: the table check may not pass what vLLM refuses, nor refuse what it accepts.
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from testlib import REPO
from ansible_collections.glm53.serving.plugins.filter.vllm_cli_problems import vllm_cli_problems

VENV = os.environ.get("GLM53_VLLM_CONTRACT_VENV", "")
PYTHON = os.path.join(VENV, "bin", "python")
ENV = {**os.environ, "VLLM_TARGET_DEVICE": "cpu"}
if not os.path.exists(PYTHON):  # pragma: no cover - a setup error, not a skip
    raise RuntimeError("GLM53_VLLM_CONTRACT_VENV=%r is not a venv; run make test (it makes the venv)" % VENV)

# extra words after `vllm serve MODEL`: misspellings, prefixes, values, choices, config keys, parser names
CASES = [
    ["--enabel-chunked-prefill"], ["--enable-chunked-prefil"], ["--enable-chunked-prefill"], ["--no-enable-chunked-prefill"],
    ["--enable-chunked-prefill", "false"], ["--enable-chunked-prefill=true"], ["--enable"], ["--max-num-seq", "8"], ["--max-num-seqs=8"],
    ["--max-num-seqs", "abc"], ["--max-num-seqs"], ["--max-num-seqs", "--enforce-eager"], ["--max_num_seqs", "16"], ["-t", "4"], ["-tp4"],
    ["-q", "awq"], ["-qawq"], ["-q", "awq_marlin"], ["-q", "nonsense"], ["--kv-cache-dtype", "fp9"], ["--kv-cache-dtype", "fp8_e4m3"],
    ["stray"], ["--block-size", "16"], ["--block-size", "x"], ["--swap-space", "4"], ["--attention-config.backend=FLASHINFER"],
    ["-ac.bogus_key=1"], ["--attention-config", '{"bogus": 1}'], ["--attention-config", '{bad json'], ["--seed", "0"], ["--seed", "-1"],
    ["--disable-log-requests"], ["--enable-log-requests"], ["--no-enable-log-requests"], ["--disable-log-stats"], ["--uvicorn-log-level", "info"],
    ["--uvicorn-log-level", "loud"], ["--max-num-seqs", "8", "--max-num-seqs", "16"], ["--scheduling-policy", "priority"], ["--scheduling-policy", "lifo"],
    ["--tool-call-parser", "hermes"], ["--tool-call-parser", "hermes2"], ["--reasoning-parser", "glm45"], ["--reasoning-parser", "glm-47"],
    ["--compilation-config", '{"cudagraph_mode": "FULL_DECODE"}'], ["--compilation-config", '{"cudagraph_mode": "full_decode_only"}'],
    ["--compilation-config", '{"cuda_graph_mode": "FULL"}'], ["--compilation-config", '{"mode": 3}'], ["--compilation-config", '{"mode": 5}'],
    ["--compilation-config", '{"mode": "VLLM_COMPILE"}'], ["--compilation-config", '{"mode": "vllm_compile"}'],
    ["--compilation-config", '{"pass_config": {"bogus": 1}}'], ["-cc.cudagraph_mode=NONE"], ["-cc.cudagraph_modes=NONE"],
    ["--compilation-config.cudagraph_mode", "PIECEWISE"], ["--compilation-config.cudagraph_mode", "SOMETIMES"],
    ["--served-model-name", "a", "b"], ["--api-server-count", "2"], ["-asc", "2"], ["--max-model-len", "512k"], ["--gpu-memory-utilization", "0.9"],
    ["--gpu-memory-utilization", "high"], ["--limit-mm-per-prompt", '{"image": 0}'], ["--enable-auto-tool-choice"], ["--hf-token"],
    ["--load-format", "safetensors"], ["--load-format", "pt2"], ["--dtype", "bf16"], ["--dtype", "bfloat16"], ["-O3"],
]

# role settings checked as the values of the flags they set
SETTINGS = [
    ("--compilation-config", {"cudagraph_mode": "FULL_DECODE_ONLY"}),
    ("--compilation-config", {"cudagraph_mode": "FULL_DECODE"}),
    ("--compilation-config", {"cudagraph_mode": "FULL_DECODE_ONLY", "cudagraph_capture_sizes": [1, 2, 4]}),
    ("--compilation-config", {"cudagraph_mode": "FULL_DECODE_ONLY", "cuda_graph_sizes": [1, 2, 4]}),
    ("--compilation-config", {"mode": "NONE"}),
    ("--compilation-config", {"pass_config": {"fuse_norm_quant": True}}),
    ("--reasoning-parser", "glm47"), ("--reasoning-parser", "glm4.7"), ("--reasoning-parser", "deepseek_r1"),
    ("--tool-call-parser", "glm47"), ("--tool-call-parser", "glm_47"), ("--kv-cache-dtype", "auto"),
    ("--kv-cache-dtype", "fp16"),
]


def real_verdicts(commands):
    proc = subprocess.run([PYTHON, os.path.join(REPO, "tests", "contract", "parse_many.py")], input=json.dumps(commands),
                          capture_output=True, text=True, env=ENV, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def verdicts():
    commands = CASES + [[flag, json.dumps(value) if isinstance(value, dict) else value] for flag, value in SETTINGS]
    return dict(zip([json.dumps(c) for c in commands], real_verdicts(commands)))


def test_the_checked_in_table_is_what_the_real_vllm_gives(tmp_path):
    out = tmp_path / "table.py"
    proc = subprocess.run([PYTHON, os.path.join(REPO, "hack", "vllm_cli_data.py"), str(out)], capture_output=True,
                          text=True, env=ENV, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(os.path.join(REPO, "plugins", "module_utils", "_vllm_cli_data.py"), encoding="utf-8") as fh:
        assert out.read_text() == fh.read(), "regenerate: hack/vllm_cli_data.py plugins/module_utils/_vllm_cli_data.py"


@pytest.mark.parametrize("words", CASES, ids=[" ".join(c)[:60] for c in CASES])
def test_the_table_refuses_extra_words_exactly_when_vllm_does(verdicts, words):
    real = verdicts[json.dumps(words)]
    ours = vllm_cli_problems(words)
    assert (real == "ok") == (not ours), "vLLM: %s; the table: %s" % (real, ours)
    assert all(m.startswith("serve_extra_args[") for m in ours)


@pytest.mark.parametrize("flag,value", SETTINGS, ids=["%s %s" % (f, json.dumps(v))[:60] for f, v in SETTINGS])
def test_the_table_refuses_settings_exactly_when_vllm_does(verdicts, flag, value):
    real = verdicts[json.dumps([flag, json.dumps(value) if isinstance(value, dict) else value])]
    ours = vllm_cli_problems([], settings=[{"name": "serve_setting", "value": value, "flag": flag}])
    assert (real == "ok") == (not ours), "vLLM: %s; the table: %s" % (real, ours)
    assert all(m.startswith("serve_setting") for m in ours)
