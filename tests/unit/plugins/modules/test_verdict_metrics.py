"""glm53.serving.verdict_metrics: the probes' verdicts in the Prometheus text format, parsed back by the reference
parser (prometheus-client), written by rename, with each probe's last success kept across a failing run."""
from __future__ import annotations

import os

from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.glm53.serving.plugins.modules import verdict_metrics

PASSED = {"passed": True, "engine_version": "0.28.1.dev5+gf2935ce32", "engine_commit": "f2935ce322",
          "health": {"ready": True}, "chat": {"passed": True},
          "needle": {"passed": True, "results": [{"target": 450000, "tokens": 449871, "depths": [
              {"depth": d, "verdict": "retrieved"} for d in (10, 30, 50, 70, 90)]}]}}
FAILED_CHAT = dict(PASSED, passed=False, chat={"passed": False})


def samples(path):
    out = {}
    for family in text_string_to_metric_families(path.read_text()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def release_link(tmp_path, name="fork-f2935ce322-fi-1a2b3c4d5e"):
    (tmp_path / "releases" / name).mkdir(parents=True)
    os.symlink(tmp_path / "releases" / name, tmp_path / "releases" / "current")
    return str(tmp_path / "releases" / "current")


def test_verdicts_figures_and_release_parse_with_the_reference_parser(run_module, tmp_path):
    path = tmp_path / "glm53_probes.prom"
    r = run_module(verdict_metrics, {"path": str(path), "result": PASSED, "release_link": release_link(tmp_path)})
    assert r["written"] and r["changed"] and r["release"] == "fork-f2935ce322-fi-1a2b3c4d5e"
    got = samples(path)
    rel = ("release", "fork-f2935ce322-fi-1a2b3c4d5e")
    for probe in ("all", "health", "chat", "needle"):
        assert got[("glm53_probe_verdict", (("probe", probe), rel))] == 1
    assert got[("glm53_needle_depths_retrieved", (("target", "450000"),))] == 5
    assert got[("glm53_needle_depths_total", (("target", "450000"),))] == 5
    assert got[("glm53_needle_tokens_sent", (("target", "450000"),))] == 449871
    assert got[("glm53_release_info", (("engine_commit", "f2935ce322"), ("engine_version", "0.28.1.dev5+gf2935ce32"),
                                       rel))] == 1
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".glm53_probes.")] == []  # no temporary left


def test_a_failing_probe_keeps_its_last_success_and_a_rerun_is_no_change(run_module, tmp_path):
    path = tmp_path / "glm53_probes.prom"
    run_module(verdict_metrics, {"path": str(path), "result": PASSED})
    # the times move, the verdicts do not: no change
    again = run_module(verdict_metrics, {"path": str(path), "result": PASSED})
    assert again["written"] and not again["changed"]
    # the last success is the rerun's (a second may have passed between the two runs)
    success = samples(path)[("glm53_probe_last_success_timestamp_seconds", (("probe", "chat"),))]
    failed = run_module(verdict_metrics, {"path": str(path), "result": FAILED_CHAT})
    assert failed["changed"] and failed["verdicts"] == {"all": 0, "health": 1, "chat": 0, "needle": 1}
    got = samples(path)
    assert got[("glm53_probe_verdict", (("probe", "chat"), ("release", "")))] == 0
    assert got[("glm53_probe_last_success_timestamp_seconds", (("probe", "chat"),))] == success
    assert got[("glm53_probe_last_run_timestamp_seconds", (("release", ""),))] >= success
    # health down: chat and the needle did not run, and still keep their last success
    run_module(verdict_metrics, {"path": str(path), "result": {"passed": False, "health": {"ready": False},
                                                               "chat": None, "needle": None}})
    got = samples(path)
    assert got[("glm53_probe_last_success_timestamp_seconds", (("probe", "needle"),))] == success
    assert ("glm53_probe_verdict", (("probe", "needle"), ("release", ""))) not in got


def test_labels_are_escaped(run_module, tmp_path):
    path = tmp_path / "glm53_probes.prom"
    odd = dict(PASSED, engine_version='0.28 "odd"\\\nline')
    run_module(verdict_metrics, {"path": str(path), "result": odd})
    info = [k for k in samples(path) if k[0] == "glm53_release_info"]
    assert dict(info[0][1])["engine_version"] == '0.28 "odd"\\\nline'


def test_check_mode_and_a_missing_folder_write_nothing_bad_names_fail(run_module, tmp_path):
    path = tmp_path / "glm53_probes.prom"
    preview = run_module(verdict_metrics, {"path": str(path), "result": PASSED}, check_mode=True)
    assert not preview["written"] and not path.exists()
    missing = {"path": str(tmp_path / "no-such" / "glm53_probes.prom"), "result": PASSED}
    r = run_module(verdict_metrics, missing)
    assert r["failed"] and "prometheus-node-exporter" in r["msg"]
    r = run_module(verdict_metrics, dict(missing, require_folder=False))
    assert not r.get("failed") and not r["written"] and "no metrics written" in r["msg"]
    r = run_module(verdict_metrics, {"path": str(tmp_path / "glm53.txt"), "result": PASSED})
    assert r["failed"] and "ending in .prom" in r["msg"]
