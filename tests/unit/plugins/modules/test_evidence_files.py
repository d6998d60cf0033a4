"""glm53.serving.evidence_files: every host's evidence kept as <host>.json in one call, by rename, unchanged files
left alone, check mode writing nothing, and names that cannot be a host's file refused before any write."""
from __future__ import annotations

import json
import os

from ansible_collections.glm53.serving.plugins.modules import evidence_files


def ev(host, passed=True):
    return {"host": host, "passed": passed, "failures": [] if passed else ["health: not ready"], "note": "我是助手"}


def test_each_host_gets_its_file_and_a_second_call_changes_nothing(run_module, tmp_path):
    folder = tmp_path / "report" / "deep"
    r = run_module(evidence_files, {"path": str(folder), "evidence": [ev("gpu-01"), ev("gpu-02", False)]})
    assert r["changed"] and r["written"] == ["gpu-01", "gpu-02"] and r["unchanged"] == []
    assert json.loads((folder / "gpu-02.json").read_text()) == ev("gpu-02", False)
    assert oct(os.stat(folder / "gpu-01.json").st_mode & 0o777) == "0o644"
    again = run_module(evidence_files, {"path": str(folder), "evidence": [ev("gpu-01"), ev("gpu-02", False)]})
    assert not again["changed"] and again["unchanged"] == ["gpu-01", "gpu-02"]
    moved = run_module(evidence_files, {"path": str(folder), "evidence": [ev("gpu-01", False)]})
    assert moved["changed"] and moved["written"] == ["gpu-01"]
    assert sorted(os.listdir(folder)) == ["gpu-01.json", "gpu-02.json"]  # no temporary file left


def test_check_mode_writes_nothing(run_module, tmp_path):
    r = run_module(evidence_files, {"path": str(tmp_path / "r"), "evidence": [ev("a")]}, check_mode=True)
    assert r["changed"] and r["written"] == ["a"] and not (tmp_path / "r").exists()


def test_a_name_that_cannot_be_a_hosts_file_is_refused_before_any_write(run_module, tmp_path):
    for bad in ("../etc/passwd", "summary", "..", ""):
        r = run_module(evidence_files, {"path": str(tmp_path), "evidence": [ev("ok"), ev(bad)]})
        assert r["failed"] and repr(bad) in r["msg"], r
    assert os.listdir(tmp_path) == []
    r = run_module(evidence_files, {"path": str(tmp_path), "evidence": [ev("ok")], "mode": "rw"})
    assert r["failed"] and "mode='rw'" in r["msg"]


def test_a_runs_folder_links_and_pruning_in_the_same_call(run_module, tmp_path):
    report = tmp_path / "report"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    (report / "runs" / "20261201T000000Z").mkdir(parents=True)
    (report / "runs" / "20261202T000000Z").mkdir()
    os.symlink(outside, report / "runs" / "20261130T000000Z")  # a link with a run's name: not the role's, kept
    (report / "runs" / "20261129T000000Z").write_text("a file with a run's name: kept\n")
    (report / "runs" / "notes").mkdir()  # not a run's name: never removed
    run = {"id": "20261203T000000Z", "evidence": [ev("gpu-01"), ev("gpu-02", False)],
           "files": {"report.html": "<html>报告</html>\n", "summary.md": "# 2 hosts\n", "summary.json": "{}\n"},
           "keep_runs": 2}
    r = run_module(evidence_files, {"path": str(report), "evidence": [ev("gpu-02", False)], "run": run})
    assert r["written"] == ["gpu-02"]
    assert [os.path.basename(p) for p in r["removed_runs"]] == ["20261201T000000Z"]
    assert sorted(os.listdir(report / "runs")) == ["20261129T000000Z", "20261130T000000Z", "20261202T000000Z",
                                                   "20261203T000000Z", "notes"]
    assert (outside / "keep.txt").read_text() == "keep\n"
    folder = report / "runs" / run["id"]
    assert sorted(os.listdir(folder)) == ["gpu-01.json", "gpu-02.json", "report.html", "summary.json", "summary.md"]
    assert os.readlink(report / "latest") == "runs/" + run["id"]
    for name in ("report.html", "summary.md", "summary.json"):
        assert os.readlink(report / name) == "latest/" + name
    assert (report / "report.html").read_text() == "<html>报告</html>\n"
    again = run_module(evidence_files, {"path": str(report), "evidence": [ev("gpu-02", False)],
                                        "run": dict(run, id="20261204T000000Z")})
    assert os.readlink(report / "latest") == "runs/20261204T000000Z" and again["removed_runs"] == [
        str(report / "runs" / "20261202T000000Z")]


def test_a_run_in_check_mode_or_with_bad_values_writes_nothing(run_module, tmp_path):
    run = {"id": "20261203T000000Z", "files": {"report.html": "x"}}
    r = run_module(evidence_files, {"path": str(tmp_path / "r"), "evidence": [], "run": run}, check_mode=True)
    assert not r.get("failed") and r["removed_runs"] == [] and not (tmp_path / "r").exists()
    for bad, says in (({"id": "../x"}, "run.id='../x'"), ({"files": {"../evil": "x"}}, "not ../evil"),
                      ({"keep_runs": -1}, "run.keep_runs=-1"), ({"evidence": [ev("..")]}, "'..'")):
        r = run_module(evidence_files, {"path": str(tmp_path / "r"), "evidence": [], "run": dict(run, **bad)})
        assert r["failed"] and says in r["msg"], r
    assert not (tmp_path / "r").exists()
