"""glm53.serving.install_ledger: records only what does not exist yet (the topmost missing folder of each path, the
users and groups not on the machine), adds and never drops, reads without change, and removes the ledger file."""
from __future__ import annotations

import getpass
import grp
import json
import os

from ansible_collections.glm53.serving.plugins.modules import install_ledger


def test_records_the_topmost_missing_folders_and_absent_accounts(run_module, tmp_path):
    ledger = tmp_path / "state" / "ledger.json"
    (tmp_path / "exists").mkdir()
    me, my_group = getpass.getuser(), grp.getgrgid(os.getgid()).gr_name
    args = {"path": str(ledger), "paths": [str(tmp_path / "opt" / "glm53" / "releases"), str(tmp_path / "exists"),
                                           str(tmp_path / "exists" / "new" / "deeper")],
            "users": [me, "glm53-no-such-user"], "groups": [my_group, "glm53-no-such-group"]}
    preview = run_module(install_ledger, args, check_mode=True)
    assert preview["changed"] and not ledger.exists(), "check mode wrote the ledger"
    first = run_module(install_ledger, args)
    assert first["changed"]
    # the ledger's own folder first, then each path's topmost missing folder; what exists is never recorded
    assert first["added"]["paths"] == [str(tmp_path / "state"), str(tmp_path / "opt"), str(tmp_path / "exists" / "new")]
    assert first["added"]["users"] == ["glm53-no-such-user"] and first["added"]["groups"] == ["glm53-no-such-group"]
    written = json.loads(ledger.read_text())
    assert dict((k, written[k]) for k in ("paths", "users", "groups")) == first["ledger"] and written["version"] == 2
    # the identity of what exists by now (the ledger's own folder, made by this call)
    assert list(written["ids"]) == [str(tmp_path / "state")]
    assert oct(ledger.stat().st_mode & 0o777) == "0o644"
    again = run_module(install_ledger, args)
    assert not again["changed"] and again["ledger"] == first["ledger"]


def test_a_later_run_adds_and_never_drops(run_module, tmp_path):
    ledger = tmp_path / "ledger.json"
    run_module(install_ledger, {"path": str(ledger), "paths": [str(tmp_path / "a" / "b")]})
    (tmp_path / "a" / "b").mkdir(parents=True)  # site.yml made it
    later = run_module(install_ledger, {"path": str(ledger), "paths": [str(tmp_path / "a" / "b"), str(tmp_path / "c")]})
    assert later["changed"] and later["ledger"]["paths"] == [str(tmp_path / "a"), str(tmp_path / "c")]
    # a folder still missing inside a recorded one (a wheelhouse never made) is not new: a re-run changes nothing
    inside = run_module(install_ledger, {"path": str(ledger), "paths": [str(tmp_path / "a" / "b" / "wheels"),
                                                                       str(tmp_path / "c" / "d")]})
    assert not inside["changed"] and inside["ledger"] == later["ledger"]


def test_query_and_absent(run_module, tmp_path):
    ledger = tmp_path / "ledger.json"
    empty = run_module(install_ledger, {"path": str(ledger), "state": "query"})
    assert not empty["changed"] and empty["ledger"] == {"paths": [], "users": [], "groups": []}
    run_module(install_ledger, {"path": str(ledger), "paths": [str(tmp_path / "x")]})
    read = run_module(install_ledger, {"path": str(ledger), "state": "query"})
    assert not read["changed"] and read["ledger"]["paths"] == [str(tmp_path / "x")]
    gone = run_module(install_ledger, {"path": str(ledger), "state": "absent"})
    assert gone["changed"] and not ledger.exists()
    assert not run_module(install_ledger, {"path": str(ledger), "state": "absent"})["changed"]


def test_refuses_a_relative_path_or_the_root(run_module, tmp_path):
    for bad in ("relative/dir", "/", "/opt/x\n"):
        r = run_module(install_ledger, {"path": str(tmp_path / "l.json"), "paths": [bad]})
        assert r["failed"] and "not an absolute path below /" in r["msg"], bad
    assert not (tmp_path / "l.json").exists()


def test_a_ledger_that_is_not_one_is_an_error(run_module, tmp_path):
    ledger = tmp_path / "ledger.json"
    ledger.write_text("[1, 2]")
    r = run_module(install_ledger, {"path": str(ledger), "state": "query"})
    assert r["failed"] and "is not a ledger" in r["msg"]


def test_hosts_on_one_machine_write_one_ledger_without_losing_a_path(tmp_path):
    """Eight inventory hosts on one machine (a local connection) record their folders at once: every folder is kept,
    no write fails, and no temporary or lock file is left (CI's load once lost this race: one writer's temporary
    file was renamed away under another)."""
    import subprocess
    import sys

    from testlib import COLLECTIONS_ROOT

    ledger = tmp_path / "state" / "ledger.json"
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    procs = [subprocess.Popen(
        ["ansible", "localhost", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable,
         "-m", "glm53.serving.install_ledger", "-a",
         json.dumps({"path": str(ledger), "paths": [str(tmp_path / ("p%d" % i))]})],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) for i in range(8)]
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out
    assert sorted(json.loads(ledger.read_text())["paths"]) == sorted(
        [str(tmp_path / "state")] + [str(tmp_path / ("p%d" % i)) for i in range(8)])
    assert os.listdir(tmp_path / "state") == ["ledger.json"]


def _tree(root):
    """Every file and folder under root, with its content and mode: what "byte for byte" compares."""
    out = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(top, name)
            st = os.lstat(path)
            out[os.path.relpath(path, root)] = (st.st_mode, st.st_uid, open(path, "rb").read() if name in files else None)
    return out


def test_claims_on_what_exists_and_is_not_the_collections_are_refused_and_nothing_is_recorded(run_module, tmp_path):
    ledger = tmp_path / "state" / "ledger.json"
    foreign = tmp_path / "foreign"
    (foreign / "state").mkdir(parents=True)
    (foreign / "state" / "other.db").write_text("another service's state\n")
    (foreign / "serve.sh").write_text("#!/bin/sh\n# another tool's script\n")
    before = _tree(tmp_path)
    out = run_module(install_ledger, {"path": str(ledger), "claims": [
        {"name": "service_state_dir", "path": str(foreign / "state")},
        {"name": "serve_script_path", "path": str(foreign / "serve.sh"), "kind": "file"},
        {"name": "service_log_dir", "path": str(tmp_path / "new" / "log")},
        {"name": "heal_state_file", "path": str(ledger), "kind": "file"}]})
    assert out["failed"] and len(out["foreign"]) == 3, out
    assert out["foreign"][0].startswith("service_state_dir=%s exists and glm53.serving did not make it" % (foreign / "state"))
    assert out["foreign"][1].startswith("serve_script_path=%s exists" % (foreign / "serve.sh"))
    assert out["foreign"][2].startswith("heal_state_file=%s is the host's ledger" % ledger)
    assert _tree(tmp_path) == before, "a refused claim changed something"


def test_claims_on_new_paths_are_recorded_and_stay_the_collections_until_replaced(run_module, tmp_path):
    ledger = tmp_path / "ledger.json"
    claims = [{"name": "serve_script_path", "path": str(tmp_path / "opt" / "bin" / "serve.sh"), "kind": "file"},
              {"name": "service_state_dir", "path": str(tmp_path / "run" / "glm53")}]
    first = run_module(install_ledger, {"path": str(ledger), "claims": claims})
    assert first["changed"] and first["added"]["paths"] == [str(tmp_path / "opt"), str(tmp_path / "run")]
    (tmp_path / "opt" / "bin").mkdir(parents=True)  # site.yml writes them
    (tmp_path / "opt" / "bin" / "serve.sh").write_text("ours\n")
    (tmp_path / "run" / "glm53").mkdir(parents=True)
    again = run_module(install_ledger, {"path": str(ledger), "claims": claims})
    assert not again["changed"] and again["owned"] == [str(tmp_path / "opt"), str(tmp_path / "run")]
    assert sorted(json.loads(ledger.read_text())["ids"]) == [str(tmp_path / "opt"), str(tmp_path / "run")]
    # another tool moves /run's folder away and makes its own there: no longer the collection's, to write or remove
    # (the old folder is removed after, so the new one cannot be given its freed inode number, as a file system may)
    (tmp_path / "run").rename(tmp_path / "run.old")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "glm53").mkdir()
    (tmp_path / "run.old" / "glm53").rmdir()
    (tmp_path / "run.old").rmdir()
    read = run_module(install_ledger, {"path": str(ledger), "state": "query"})
    assert read["owned"] == [str(tmp_path / "opt")] and read["replaced"] == [str(tmp_path / "run")]
    taken = run_module(install_ledger, {"path": str(ledger), "claims": claims})
    assert taken["foreign"] == [
        "service_state_dir=%s exists and glm53.serving did not make it (it is not in the host's ledger, %s): the "
        "collection writes and removes only what it made. Point service_state_dir at a path that does not exist yet, "
        "or move %s away first." % (tmp_path / "run" / "glm53", ledger, tmp_path / "run" / "glm53")]


def test_a_ledger_of_an_earlier_version_adopts_the_files_it_never_recorded(run_module, tmp_path):
    """Before identities, the ledger listed folders only: on a host it marks as installed, a claimed file that exists
    (the unit, in a folder the collection did not make) is taken as the collection's, once; a folder is not."""
    ledger = tmp_path / "ledger.json"
    ledger.write_text(json.dumps({"paths": [], "users": [], "groups": []}))
    (tmp_path / "unit.service").write_text("[Unit]\n")
    (tmp_path / "other").mkdir()
    refused = run_module(install_ledger, {"path": str(ledger), "claims": [
        {"name": "service_name", "path": str(tmp_path / "unit.service"), "kind": "file"},
        {"name": "service_gate_dir", "path": str(tmp_path / "other")}]})
    assert [m.split("=")[0] for m in refused["foreign"]] == ["service_gate_dir"]
    out = run_module(install_ledger, {"path": str(ledger), "claims": [
        {"name": "service_name", "path": str(tmp_path / "unit.service"), "kind": "file"}]})
    assert out["added"]["paths"] == [str(tmp_path / "unit.service")]
    assert json.loads(ledger.read_text())["version"] == 2
