"""glm53.serving.host_files on a scratch folder: folders and files in one run, check mode, diff, validation,
owner and mode drift, bad input refused before any write."""
from __future__ import annotations

import getpass
import grp
import os
import stat

from ansible_collections.glm53.serving.plugins.modules import host_files

ME = getpass.getuser()
GROUP = grp.getgrgid(os.getgid()).gr_name


def spec(path, **kw):
    return dict({"path": str(path), "owner": ME, "group": GROUP}, **kw)


def args(tmp_path, script="#!/bin/sh\necho one\n", validate="sh -n %s"):
    d = tmp_path / "a" / "b"
    return {"directories": [spec(d, mode="0750")],
            "files": [spec(d / "run.sh", content=script, mode="0755", validate=validate),
                      spec(d / "env", content="KEY=secret\n", mode="0600")]}


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_writes_then_changes_nothing(run_module, tmp_path):
    preview = run_module(host_files, dict(args(tmp_path), _ansible_diff=True), check_mode=True)
    assert preview["changed"] and not (tmp_path / "a").exists(), "check mode wrote"
    assert len(preview["diff"]) == 2 and preview["diff"][0]["after"].endswith("echo one\n")
    r = run_module(host_files, args(tmp_path))
    d = tmp_path / "a" / "b"
    assert r["changed_paths"] == [str(d), str(d / "run.sh"), str(d / "env")]
    assert (d / "run.sh").read_text() == "#!/bin/sh\necho one\n" and mode(d / "run.sh") == 0o755
    assert mode(d / "env") == 0o600 and mode(d) == 0o750
    again = run_module(host_files, args(tmp_path))
    assert not again["changed"] and again["changed_paths"] == []
    assert sorted(os.listdir(d)) == ["env", "run.sh"], "a temporary file was left"


def test_content_and_mode_drift_converge(run_module, tmp_path):
    run_module(host_files, args(tmp_path))
    d = tmp_path / "a" / "b"
    os.chmod(d / "env", 0o644)
    r = run_module(host_files, args(tmp_path, script="#!/bin/sh\necho two\n"))
    assert r["changed_paths"] == [str(d / "run.sh"), str(d / "env")]
    assert "two" in (d / "run.sh").read_text() and mode(d / "env") == 0o600


def test_failed_validation_keeps_the_old_file(run_module, tmp_path):
    run_module(host_files, args(tmp_path))
    r = run_module(host_files, args(tmp_path, script="#!/bin/sh\nif then fi (\n"))
    d = tmp_path / "a" / "b"
    assert r.failed and "failed validation" in r["msg"]
    assert "echo one" in (d / "run.sh").read_text() and sorted(os.listdir(d)) == ["env", "run.sh"]


def test_bad_input_writes_nothing(run_module, tmp_path):
    bad_owner = args(tmp_path)
    bad_owner["files"][1]["owner"] = "no-such-user-glm53"
    r = run_module(host_files, bad_owner)
    assert r.failed and "no-such-user-glm53 does not exist" in r["msg"] and not (tmp_path / "a").exists()
    (tmp_path / "f").write_text("x")
    r = run_module(host_files, {"directories": [spec(tmp_path / "f", mode="0755")]})
    assert r.failed and "not a folder" in r["msg"]
    r = run_module(host_files, {"files": [spec(tmp_path / "none" / "x", content="", mode="0644")]})
    assert r.failed and "does not exist" in r["msg"]
    # a bad second file is refused before the first is written
    r = run_module(host_files, {"files": [spec(tmp_path / "first", content="x", mode="0644"),
                                          spec(tmp_path / "second", content="y", mode="0644", validate="true")]})
    assert r.failed and "must hold %s" in r["msg"] and not (tmp_path / "first").exists()
    r = run_module(host_files, {"files": [spec(tmp_path / "first", content="x", mode="0644"),
                                          spec(tmp_path / "none" / "y", content="y", mode="0644")]})
    assert r.failed and "does not exist" in r["msg"] and not (tmp_path / "first").exists()
    # a dry run on a bare host: the folder an earlier task makes is not there yet, and the file is only reported
    dry = run_module(host_files, {"files": [spec(tmp_path / "none" / "y", content="y", mode="0644")]}, check_mode=True)
    assert not dry.failed and dry["changed_paths"] == [str(tmp_path / "none" / "y")]
