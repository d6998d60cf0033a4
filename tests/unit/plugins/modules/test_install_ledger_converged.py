"""glm53.serving.install_ledger's converged record: what each role left, observed when the bring-up finished, read
again in the claim's module run; a role whose observations hold and whose inputs are the run's is converged (the
converged filter), and an uninstall leaves no record behind."""
from __future__ import annotations

import json
import os
import subprocess

from ansible_collections.glm53.serving.plugins.filter.converged import converged
from ansible_collections.glm53.serving.plugins.filter.converged_inputs import converged_inputs
from ansible_collections.glm53.serving.plugins.module_utils import _converged
from ansible_collections.glm53.serving.plugins.modules import install_ledger


def _host(tmp_path):
    """A small host: a script, a folder of packages, a link to a release and a git checkout."""
    (tmp_path / "opt" / "releases" / "r1" / "site").mkdir(parents=True)
    (tmp_path / "opt" / "releases" / "r1" / "site" / "torch-2.9.dist-info").mkdir()
    (tmp_path / "opt" / "releases" / "current").symlink_to(tmp_path / "opt" / "releases" / "r1")
    script = tmp_path / "opt" / "serve.sh"
    script.write_text("#!/bin/bash\nexec vllm serve\n")
    script.chmod(0o755)
    src = tmp_path / "opt" / "src"
    src.mkdir()
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    subprocess.run(["git", "init", "-q", "-b", "main", str(src)], check=True, env=env)
    (src / "a").write_text("a\n")
    subprocess.run(["git", "-C", str(src), "add", "a"], check=True, env=env)
    subprocess.run(["git", "-C", str(src), "commit", "-q", "-m", "one"], check=True, env=env)
    head = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], check=True, env=env,
                          stdout=subprocess.PIPE, text=True).stdout.strip()
    roles = [
        {"name": "venv", "facts": ["venv_python_version"],
         "observe": {"trees": [str(tmp_path / "opt" / "releases" / "r1" / "site")],
                     "links": [str(tmp_path / "opt" / "releases" / "current")], "users": ["root"], "groups": ["root"]}},
        {"name": "vllm_fork", "facts": [], "observe": {"git": [str(src)]}},
        {"name": "serve", "facts": ["serve_args_check"], "observe": {"files": [str(script)], "dirs": [str(tmp_path / "opt")]}},
    ]
    return script, src, head, roles


def _record(run_module, ledger, roles, inputs="in-1", check_mode=False):
    facts = {"venv_python_version": "3.10", "serve_args_check": {"ok": True}}
    return run_module(install_ledger, {"path": str(ledger), "host": "node1", "converged_record": {
        "inputs": inputs, "roles": roles, "facts": facts}}, check_mode=check_mode)


def _read(run_module, ledger):
    return run_module(install_ledger, {"path": str(ledger), "host": "node1", "converged_read": True})["converged"]


def test_a_recorded_host_reads_converged_until_something_it_left_differs(run_module, tmp_path):
    ledger = tmp_path / "ledger" / "ledger.json"
    script, src, head, roles = _host(tmp_path)
    assert not _read(run_module, ledger), "a host with no record has nothing converged"
    _record(run_module, ledger, roles)
    record = json.loads((ledger.parent / "converged.json").read_text())
    assert oct((ledger.parent / "converged.json").stat().st_mode & 0o777) == "0o600"
    assert record["hosts"]["node1"]["roles"][1]["observed"]["git"] == {str(src): head}
    now = _read(run_module, ledger)
    assert [r["name"] for r in now] == ["venv", "vllm_fork", "serve"]
    assert all(not r["differs"] for r in now) and now[0]["inputs"] == "in-1"
    assert now[0]["facts"] == {"venv_python_version": "3.10"} and now[2]["facts"] == {"serve_args_check": {"ok": True}}
    names = ["venv", "vllm_fork", "serve"]
    assert converged(now, "in-1", names) == names
    assert converged(now, "in-2", names) == [], "other inputs: nothing is converged"
    assert converged(now, "", names, True) == {"venv_python_version": "3.10", "serve_args_check": {"ok": True}}

    script.write_text("#!/bin/bash\nexec vllm serve --edited\n")  # edited by hand
    now = _read(run_module, ledger)
    assert not now[0]["differs"] and not now[1]["differs"]
    assert len(now[2]["differs"]) == 1 and now[2]["differs"][0].startswith("file %s: " % script)
    assert converged(now, "in-1", names) == ["venv", "vllm_fork"]

    (tmp_path / "opt" / "releases" / "r1" / "site" / "flashinfer-0.6.dist-info").mkdir()  # a package added
    now = _read(run_module, ledger)
    assert now[0]["differs"] and converged(now, "in-1", names) == [], "a role after one that differs is not converged"


def test_a_checkout_moved_a_mode_changed_or_a_link_repointed_differs(run_module, tmp_path):
    ledger = tmp_path / "ledger" / "ledger.json"
    script, src, head, roles = _host(tmp_path)
    _record(run_module, ledger, roles)
    subprocess.run(["git", "-C", str(src), "commit", "-q", "--allow-empty", "-m", "two"], check=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                            GIT_COMMITTER_EMAIL="t@t"))
    script.chmod(0o777)
    current = tmp_path / "opt" / "releases" / "current"
    current.unlink()
    current.symlink_to(tmp_path / "elsewhere")
    now = dict((r["name"], r["differs"]) for r in _read(run_module, ledger))
    assert now["vllm_fork"][0].startswith("git %s: " % src) and head in now["vllm_fork"][0]
    assert any(line.startswith("file %s: " % script) and "0777" in line for line in now["serve"])
    assert any(line.startswith("link %s: " % current) for line in now["venv"])


def test_check_mode_and_an_equal_record_write_nothing_and_an_uninstall_removes_the_record(run_module, tmp_path):
    ledger = tmp_path / "ledger" / "ledger.json"
    _, _, _, roles = _host(tmp_path)
    _record(run_module, ledger, roles, check_mode=True)
    assert not (ledger.parent / "converged.json").exists(), "check mode wrote the record"
    _record(run_module, ledger, roles)
    first = (ledger.parent / "converged.json").stat().st_mtime_ns
    _record(run_module, ledger, roles)
    assert (ledger.parent / "converged.json").stat().st_mtime_ns == first, "an equal record was written again"
    gone = run_module(install_ledger, {"path": str(ledger), "state": "absent"})
    assert gone["ledger_removed"] and not ledger.parent.exists(), "the record kept the ledger's folder"


def test_a_record_anyone_else_could_change_is_not_read(run_module, tmp_path):
    ledger = tmp_path / "ledger" / "ledger.json"
    _, _, _, roles = _host(tmp_path)
    _record(run_module, ledger, roles)
    (ledger.parent / "converged.json").chmod(0o666)
    assert _read(run_module, ledger) == [], "a world-writable record decided what is skipped"


def test_the_host_is_required_with_a_record(run_module, tmp_path):
    refused = run_module(install_ledger, {"path": str(tmp_path / "l" / "ledger.json"), "converged_read": True})
    assert refused["failed"] and "host (the inventory host" in refused["msg"]
    assert not (tmp_path / "l").exists()


def test_observe_reads_missing_things_as_missing(tmp_path):
    seen = _converged.observe({"files": [str(tmp_path / "no")], "trees": [str(tmp_path / "no")],
                               "links": [str(tmp_path / "no")], "git": [str(tmp_path)], "users": ["glm53-no-such-user"],
                               "groups": ["glm53-no-such-group"], "dirs": [str(tmp_path / "no")]})
    assert all(v is None for kind in ("files", "trees", "links", "git", "users", "groups", "dirs")
               for v in seen[kind].values())


def test_the_inputs_follow_every_value():
    a = converged_inputs({"settings": [1, "x"], "sources": {"vllm_fork": {"commit": "f2935ce322"}}})
    assert a == converged_inputs({"sources": {"vllm_fork": {"commit": "f2935ce322"}}, "settings": [1, "x"]})
    assert a != converged_inputs({"settings": [1, "x"], "sources": {"vllm_fork": {"commit": "f2935ce323"}}})
    assert len(a) == 64


def test_an_interpreters_cache_is_not_a_difference(tmp_path):
    (tmp_path / "gate.py").write_text("x = 1\n")
    before = _converged.observe({"trees": [str(tmp_path)]})
    (tmp_path / "__pycache__").mkdir()  # root ran the gate: Python wrote its cache beside it
    (tmp_path / "__pycache__" / "gate.cpython-311.pyc").write_bytes(b"\0")
    assert _converged.differences(before) == []
    (tmp_path / "marker").write_text("")
    assert _converged.differences(before) and _converged.differences(before)[0].startswith("tree %s: " % tmp_path)
