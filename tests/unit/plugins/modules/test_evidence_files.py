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
