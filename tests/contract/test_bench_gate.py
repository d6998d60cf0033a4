"""The performance gate through vLLM's own benchmark: the real `vllm bench serve` of vLLM 0.28.0 (the
contract venv) against stand-ins, from glm53.serving.bench_serve, in the rollout's performance_gate.yml and the probes role.
Two canaries: one whose new release is 25 % slower (a stand-in with a longer decode per token) is refused with the
figures; one whose new release is as fast passes. The report shows both releases' figures side by side."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from make_model import write_tokenizer
from testlib import COLLECTIONS_ROOT, REPO, StandIn

VENV = os.environ.get("GLM53_VLLM_CONTRACT_VENV", "")
if not os.path.exists(os.path.join(VENV, "bin", "python")):  # pragma: no cover - a setup error, not a skip
    raise RuntimeError("GLM53_VLLM_CONTRACT_VENV=%r is not a venv; run make test (it makes the venv)" % VENV)
PLAYBOOK = os.path.join(REPO, "tests", "contract", "gate", "gate.yml")
# 128 tokens at 50 ms each: a request takes 6.4 s from its arrival at the stand-in (its clock counts from then, so
# a loaded machine's scheduling is inside that time, not on top of it); what is left outside it (the stream, the
# client's own scheduling) measured up to 1 s a run under load. Two runs a release: the fewest that measure the
# run-to-run noise the gate decides above. The slow release takes 67 ms a token: about 25 % less output throughput.
# The gate runs with its default limits (rollout_max_regression_pct).
DECODE_S, SLOW_DECODE_S = 0.05, 0.0667
LOAD = {"probes_bench_input_len": 64, "probes_bench_output_len": 128, "probes_bench_num_prompts": 16,
        "probes_bench_max_concurrency": 8, "probes_bench_repeats": 2, "probes_bench_long_input_len": 20000}


def vllm_executable(path):
    """A release's `vllm`: the stand-in's CLI, whose `vllm bench` runs the real vLLM 0.28.0 client of the contract
    venv (as in the fleet scenario's containers)."""
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec env VLLM_STANDIN_BENCH_PYTHON=%s PYTHONPATH=%s %s -m vllm.entrypoints.cli.main"
                " \"$@\"\n" % (os.path.join(VENV, "bin", "python"), os.path.join(REPO, "tests", "standin"),
                                 sys.executable))
    os.chmod(path, 0o755)


@pytest.fixture(scope="module")
def gate(tmp_path_factory, request):
    tmp = tmp_path_factory.mktemp("gate")
    model = tmp / "model"  # a model directory with what the benchmark reads of one: its tokenizer
    model.mkdir()
    write_tokenizer(str(model))
    servers = {}
    for name, decode in (("old", DECODE_S), ("same", DECODE_S), ("slow", SLOW_DECODE_S)):
        (tmp / name).mkdir()
        servers[name] = StandIn(tmp / name, model_dir=model, env={
            "VLLM_STANDIN_DECODE_S_PER_TOKEN": str(decode), "VLLM_STANDIN_PREFILL_S_PER_TOKEN": "0.00001"}).start()
        request.addfinalizer(servers[name].stop)
    for server in servers.values():
        server.wait_ready()
    releases = tmp / "releases"
    for release in ("old", "new"):
        vllm_executable(str(releases / release / "venv" / "bin" / "vllm"))
    os.symlink(str(releases / "old"), str(releases / "current"))
    (tmp / "out").mkdir()
    canaries = {"canary-slow": servers["slow"].url, "canary-same": servers["same"].url}
    (tmp / "hosts.yml").write_text(json.dumps({"all": {"children": {"canaries": {"hosts": {
        host: {"new_url": url, "probes_evidence_dir": str(tmp / ("ev-" + host))} for host, url in canaries.items()}}}}}))
    extra = {"ansible_python_interpreter": sys.executable, "service_mode": "none",
             "probes_needle_targets": [20000], "probes_needle_depths": [50], "probes_textfile_dir": "",
             "probes_report_dir": str(tmp / "report"), "model_path": str(model),
             "probes_bench_dir": str(tmp / "bench"), "releases_dir": str(releases), "old_url": servers["old"].url,
             "out_dir": str(tmp / "out"), "__glm53_ledger_file": str(tmp / "ledger.json"), **LOAD}
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    t0 = time.monotonic()
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp / "hosts.yml"), PLAYBOOK, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=2400, check=False)  # about 4 min idle; 15+ beside the molecule lanes
    print("two canaries through the gate: %.0f s" % (time.monotonic() - t0))
    (tmp / "play.log").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    verdicts = {h: json.loads((tmp / "out" / (h + ".json")).read_text()) for h in canaries}
    return verdicts, tmp


def figures(tmp, host):
    return json.loads((tmp / "report" / (host + ".json")).read_text())["bench"]


@pytest.mark.figures
def test_a_release_25_percent_slower_is_refused_with_its_figures(gate):
    verdicts, tmp = gate
    slow = verdicts["canary-slow"]
    bench = figures(tmp, "canary-slow")
    old, new = slow["baseline"]["figures"]["output_throughput"], bench["figures"]["output_throughput"]
    print("canary-slow: output throughput %.1f -> %.1f tok/s (%+.1f %%); %s" % (
        old, new, (new - old) / old * 100, slow.get("msg")))
    print("\n".join("  " + line for line in slow["decision"]["lines"]))
    assert not slow["passed"]
    assert slow["msg"].startswith("output throughput %.1f -> %.1f tok/s (" % (old, new)), slow["msg"]
    assert "limit 10 %, noise +/-" in slow["msg"] and "(2+2 runs)" in slow["msg"], slow["msg"]
    assert "the median of 2 vllm bench serve runs a release" in slow["msg"], slow["msg"]
    assert slow["decision"]["figures"]["output_throughput"]["verdict"] == "regressed"
    assert (new - old) / old * 100 < -15  # 25 % slower by construction; the stand-in adds its own queueing on top


@pytest.mark.figures
def test_an_equally_fast_release_passes(gate):
    verdicts, tmp = gate
    same = verdicts["canary-same"]
    bench = figures(tmp, "canary-same")
    old, new = same["baseline"]["figures"]["output_throughput"], bench["figures"]["output_throughput"]
    print("canary-same: output throughput %.1f -> %.1f tok/s (%+.1f %%), with the default limits %s" % (
        old, new, (new - old) / old * 100, json.dumps(same["decision"]["figures"]["output_throughput"]["limit_pct"])))
    print("\n".join("  " + line for line in same["decision"]["lines"]))
    assert same["passed"], same
    assert sorted(same["decision"]["figures"]) == ["output_throughput", "p99_ttft_ms"]  # the defaults' figures
    assert all(f["noise_pct"] is not None for f in same["decision"]["figures"].values())


@pytest.mark.figures
def test_the_evidence_holds_both_releases_figures_and_the_long_request(gate):
    _verdicts, tmp = gate
    for host in ("canary-slow", "canary-same"):
        bench = figures(tmp, host)
        assert bench["passed"] and bench["release"] == "new" and bench["baseline"]["release"] == "old"
        # completed and failed are summed over the runs
        assert bench["figures"]["completed"] == LOAD["probes_bench_num_prompts"] * LOAD["probes_bench_repeats"]
        assert bench["figures"]["failed"] == 0
        for name in ("p99_ttft_ms", "median_tpot_ms", "p99_itl_ms", "request_throughput"):
            assert isinstance(bench["figures"][name], (int, float)), name
        assert bench["long"]["failed"] == 0 and bench["long"]["ttft_ms"] > 0, bench["long"]
        assert bench["load"]["num_prompts"] == LOAD["probes_bench_num_prompts"] and bench["load"]["request_rate"] == "inf"
        print("%s: the benchmark's own cost %.1f s (baseline %.1f s); long request %s prompt tokens, TTFT %.0f ms" % (
            host, bench["seconds"], bench["baseline"]["seconds"], bench["long"]["input_tokens"],
            bench["long"]["ttft_ms"]))
        # the benchmark's own JSON results, named by release and run
        assert sorted(os.listdir(tmp / "bench")) == ["new-long.json", "new-run1.json", "new-run2.json", "old-long.json",
                                                     "old-run1.json", "old-run2.json"]


def test_the_report_shows_both_releases_side_by_side(gate):
    _verdicts, tmp = gate
    html = (tmp / "report" / "report.html").read_text()
    assert "Benchmark (vllm bench serve)" in html
    for host in ("canary-slow", "canary-same"):
        new = html.split('<tr class="bench" data-host="%s">' % host)[1].split("</tr>")[0]
        old = html.split('<tr class="bench-baseline" data-host="%s">' % host)[1].split("</tr>")[0]
        bench = figures(tmp, host)
        assert "<td>new</td>" in new and "%.1f" % bench["figures"]["output_throughput"] in new, new
        assert "<td>old (baseline)</td>" in old, old
        assert "%.1f" % bench["baseline"]["figures"]["output_throughput"] in old, old
