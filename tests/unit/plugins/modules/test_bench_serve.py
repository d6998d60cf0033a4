"""glm53.serving.bench_serve: the command it gives vLLM's benchmark, the medians it reads back from the
benchmark's own JSON results, and its refusals. The benchmark here is a small executable that writes the JSON
vllm bench serve writes (the real one runs against stand-ins in tests/contract/test_bench_gate.py)."""
from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.glm53.serving.plugins.modules import bench_serve

FAKE = r"""#!%s
import json, os, sys
argv = sys.argv[1:]
log = os.environ["BENCH_LOG"]
with open(log, "a") as f:
    f.write(json.dumps({"argv": argv, "key": os.environ.get("OPENAI_API_KEY")}) + "\n")
runs = sum(1 for _ in open(log))
opt = lambda name: argv[argv.index(name) + 1]
out = {"completed": int(opt("--num-prompts")), "failed": 0, "output_throughput": [100.0, 300.0, 200.0][(runs - 1) %% 3],
       "p99_ttft_ms": 50.0 * runs, "median_ttft_ms": 10.0, "total_input_tokens": int(opt("--random-input-len"))}
json.dump(out, open(os.path.join(opt("--result-dir"), opt("--result-filename")), "w"))
sys.exit(int(os.environ.get("BENCH_RC", "0")))
"""


@pytest.fixture
def vllm(tmp_path, monkeypatch):
    import sys
    path = tmp_path / "vllm"
    path.write_text(FAKE % sys.executable)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("BENCH_LOG", str(tmp_path / "calls.jsonl"))
    return path


def args(tmp_path, vllm, **extra):
    return {"vllm": str(vllm), "base_url": "http://127.0.0.1:8000/", "model": "glm53-flash-awq",
            "tokenizer": "/srv/models/glm", "result_dir": str(tmp_path / "bench"), "label": "rel-1", **extra}


def calls(tmp_path):
    return [json.loads(line) for line in open(tmp_path / "calls.jsonl")]


def test_medians_of_the_repeats_and_the_long_request(run_module, tmp_path, vllm):
    r = run_module(bench_serve, args(tmp_path, vllm, api_key="sk-secret", long_input_len=450000))
    assert r["figures"]["output_throughput"] == 200.0 and r["figures"]["p99_ttft_ms"] == 100.0
    assert r["figures"]["completed"] == 3 * 64 and r["figures"]["failed"] == 0 and len(r["runs"]) == 3
    assert r["long"] == {"input_tokens": 450000, "ttft_ms": 10.0, "failed": 0}
    assert sorted(os.listdir(tmp_path / "bench")) == ["rel-1-long.json", "rel-1-run1.json", "rel-1-run2.json",
                                                      "rel-1-run3.json"]
    made = calls(tmp_path)
    argv = made[0]["argv"]
    assert argv[:4] == ["bench", "serve", "--backend", "openai-chat"]
    for flag, value in (("--base-url", "http://127.0.0.1:8000"), ("--dataset-name", "random"), ("--seed", "0"),
                        ("--temperature", "0"), ("--request-rate", "inf"), ("--max-concurrency", "8"),
                        ("--metadata", "release=rel-1"), ("--tokenizer", "/srv/models/glm")):
        assert argv[argv.index(flag) + 1] == value, flag
    assert "--ignore-eos" in argv and "--save-result" in argv
    assert made[3]["argv"][made[3]["argv"].index("--random-input-len") + 1] == "450000"
    # the key reaches the benchmark through its environment, never its command line
    assert all(c["key"] == "sk-secret" and "sk-secret" not in " ".join(c["argv"]) for c in made)


def test_a_failed_run_fails_with_its_output(run_module, tmp_path, vllm, monkeypatch):
    monkeypatch.setenv("BENCH_RC", "1")
    r = run_module(bench_serve, args(tmp_path, vllm))
    assert r["failed"] and "vllm bench serve failed (exit 1) against http://127.0.0.1:8000/" in r["msg"]


@pytest.mark.parametrize("extra, word", [({"repeats": 0}, "repeats must be at least 1"),
                                         ({"request_rate": "fast"}, "request_rate must be inf"),
                                         ({"label": "../x"}, "label must be one file-name word"),
                                         ({"long_input_len": -1}, "long_input_len must be 0")])
def test_bad_options_are_refused_before_any_run(run_module, tmp_path, vllm, extra, word):
    r = run_module(bench_serve, args(tmp_path, vllm, **extra))
    assert r["failed"] and word in r["msg"] and not (tmp_path / "calls.jsonl").exists()


def test_a_missing_vllm_is_named(run_module, tmp_path):
    r = run_module(bench_serve, args(tmp_path, tmp_path / "nope" / "vllm"))
    assert r["failed"] and "is not an executable vllm" in r["msg"]
