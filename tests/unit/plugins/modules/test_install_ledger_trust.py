"""glm53.serving.install_ledger, as root trusts it: the ledger is read and written only where no one but root can
change it (the engine's user, who owns its home, must not be able to rewrite what root writes over and removes); an
earlier release's ledger in that home is used only when it passes the same check; a folder removed by an uninstall is
recorded anew when the collection makes it again; state=absent removes only folders that hold nothing else."""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.glm53.serving.plugins.modules import install_ledger

ENGINE = 65534  # the engine's (unprivileged) service user stands in


def tree(root):
    out = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(top, name)
            st = os.lstat(path)
            out[path] = (st.st_mode, st.st_uid, st.st_ino, open(path, "rb").read() if name in files else None)
    return out


@pytest.fixture(autouse=True)
def as_root():
    assert os.geteuid() == 0, "these tests chown, as root"


def test_the_engines_user_replaces_the_ledger_and_is_refused_with_nothing_written(run_module, tmp_path):
    """The escalation: the engine's user owns its home, where the ledger was; it writes a ledger that lists another
    service's folder as the collection's. Read from there, site.yml would have written over that folder as root."""
    home = tmp_path / "home"
    home.mkdir()
    other = tmp_path / "other-service"
    other.mkdir()
    (other / "config").write_text("another service's configuration\n")
    ledger = home / "ledger.json"
    ledger.write_text(json.dumps({"paths": [str(other)], "users": [], "groups": [], "ids": {}, "version": 2}))
    os.chown(home, ENGINE, ENGINE)
    os.chown(ledger, ENGINE, ENGINE)
    before = tree(str(tmp_path))
    claims = [{"name": "service_config_dir", "path": str(other)}]
    for state in ("present", "query", "absent"):
        out = run_module(install_ledger, {"path": str(ledger), "claims": claims, "state": state, "previous_path": ""})
        assert out["failed"], (state, out)
        assert out["msg"].startswith("install_ledger: the host's ledger, %s, cannot be trusted: %s (folder, owner "
                                     "nobody (uid 65534), mode 0755) is not root's" % (ledger, home)), out["msg"]
        assert "chown root:root %s" % home in out["msg"] and "nothing was read or written" in out["msg"]
        assert "owned" not in out and out["untrusted"] == str(ledger)
    assert tree(str(tmp_path)) == before


def test_a_ledger_file_of_another_owner_or_writable_by_others_in_a_folder_of_roots_is_refused(run_module, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    ledger = state / "ledger.json"
    run_module(install_ledger, {"path": str(ledger), "paths": [str(tmp_path / "opt")], "previous_path": ""})
    os.chown(ledger, ENGINE, ENGINE)
    out = run_module(install_ledger, {"path": str(ledger), "state": "query", "previous_path": ""})
    assert out["failed"] and "%s (file, owner nobody (uid 65534), mode 0644) is not root's" % ledger in out["msg"]
    os.chown(ledger, 0, 0)
    os.chmod(ledger, 0o666)
    out = run_module(install_ledger, {"path": str(ledger), "state": "query", "previous_path": ""})
    assert out["failed"] and "%s (file, owner root (uid 0), mode 0666) may be written by everyone" % ledger in out["msg"]
    os.chmod(ledger, 0o644)
    os.rename(ledger, state / "real.json")
    os.symlink(state / "real.json", ledger)
    out = run_module(install_ledger, {"path": str(ledger), "state": "query", "previous_path": ""})
    assert out["failed"] and "%s is a link" % ledger in out["msg"]


def test_an_earlier_releases_ledger_in_the_users_home_is_refused_with_what_to_do(run_module, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    previous = home / "ledger.json"
    previous.write_text(json.dumps({"paths": [str(tmp_path / "opt")], "users": [], "groups": []}))
    os.chown(home, ENGINE, ENGINE)  # the service user's home, as the venv role leaves it
    ledger = tmp_path / "ledger" / "ledger.json"
    before = tree(str(tmp_path))
    out = run_module(install_ledger, {"path": str(ledger), "previous_path": str(previous),
                                      "claims": [{"name": "venv_releases_dir", "path": str(tmp_path / "opt")}]})
    assert out["failed"] and out["untrusted"] == str(previous)
    msg = out["msg"]
    assert msg.startswith("install_ledger: there is no ledger at %s, and an earlier release's ledger is at %s, where "
                          "it is not root's alone: %s (folder, owner nobody" % (ledger, previous, home)), msg
    assert "install -o root -g root -m 0644 %s %s && rm %s" % (previous, ledger, previous) in msg
    assert "or remove it (rm %s" % previous in msg
    assert tree(str(tmp_path)) == before, "a refused call wrote something"
    # once a ledger is at the new place, the earlier one is not read at all
    ok = run_module(install_ledger, {"path": str(ledger), "previous_path": ""})
    assert not ok.get("failed")
    out = run_module(install_ledger, {"path": str(ledger), "previous_path": str(previous), "state": "query"})
    assert not out.get("failed") and out["ledger"]["paths"] == [str(tmp_path / "ledger")]


def test_an_earlier_releases_ledger_that_only_root_could_write_is_moved(run_module, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    os.chmod(home, 0o755)
    previous = home / "ledger.json"
    (tmp_path / "opt").mkdir()
    previous.write_text(json.dumps({"paths": [str(tmp_path / "opt")], "users": [], "groups": []}))
    os.chmod(previous, 0o644)
    ledger = tmp_path / "ledger" / "ledger.json"
    read = run_module(install_ledger, {"path": str(ledger), "previous_path": str(previous), "state": "query"})
    assert read["owned"] == [str(tmp_path / "opt")] and previous.exists() and not ledger.exists()
    out = run_module(install_ledger, {"path": str(ledger), "previous_path": str(previous),
                                      "claims": [{"name": "venv_releases_dir", "path": str(tmp_path / "opt")}]})
    assert not out.get("failed"), out
    assert not previous.exists()
    written = json.loads(ledger.read_text())
    assert written["paths"] == [str(tmp_path / "opt"), str(tmp_path / "ledger")] and written["version"] == 2


def test_forgotten_then_made_again_is_the_collections_with_its_new_identity(run_module, tmp_path):
    """The re-install after an uninstall: /run/glm53 and /var/cache/glm53 (model-verify.json) went, and the ledger
    stayed (the evidence was kept). The next site.yml made them again; the one after must take them as its own."""
    ledger = tmp_path / "ledger" / "ledger.json"
    run_dir, cache_file = tmp_path / "run" / "glm53", tmp_path / "cache" / "glm53" / "model-verify.json"
    (tmp_path / "run").mkdir()
    (tmp_path / "cache").mkdir()
    claims = [{"name": "service_state_dir", "path": str(run_dir)},
              {"name": "model_verify_cache_file", "path": str(cache_file), "kind": "file"}]
    args = {"path": str(ledger), "claims": claims, "previous_path": ""}

    def site():  # the claims, the roles' writes, the identities recorded at the end
        out = run_module(install_ledger, args)
        assert not out.get("failed"), out
        run_dir.mkdir(exist_ok=True)
        cache_file.parent.mkdir(exist_ok=True)
        cache_file.write_text("{}")
        return run_module(install_ledger, {"path": str(ledger), "previous_path": ""})

    site()
    first = json.loads(ledger.read_text())["ids"]
    assert sorted(first) == sorted([str(tmp_path / "ledger"), str(run_dir), str(cache_file.parent)])
    # uninstall removes them by hand here (the roles' files, then the folders), the ledger stays for the evidence
    cache_file.unlink()
    cache_file.parent.rmdir()
    run_dir.rmdir()
    # a file made meanwhile in the folder's place keeps the inode numbers from matching by chance
    (tmp_path / "spacer").mkdir()
    site()
    again = run_module(install_ledger, args)
    assert not again.get("failed") and not again["changed"], again
    ids = json.loads(ledger.read_text())["ids"]
    assert ids[str(run_dir)] == [os.lstat(run_dir).st_dev, os.lstat(run_dir).st_ino]
    assert ids[str(cache_file.parent)] == [os.lstat(cache_file.parent).st_dev, os.lstat(cache_file.parent).st_ino]
    # and after uninstall's forget, a claim of the path records it afresh
    cache_file.unlink()
    cache_file.parent.rmdir()
    gone = run_module(install_ledger, {"path": str(ledger), "previous_path": "", "forget": [str(cache_file.parent)]})
    assert gone["forgotten"] == [str(cache_file.parent)] and str(cache_file.parent) not in gone["ledger"]["paths"]
    fresh = run_module(install_ledger, args)
    assert fresh["added"]["paths"] == [str(cache_file.parent)]
    site()
    assert not run_module(install_ledger, args)["changed"]


def test_absent_removes_the_folders_that_hold_nothing_else_and_keeps_the_rest(run_module, tmp_path):
    ledger = tmp_path / "ledger" / "ledger.json"
    opt, run_dir = tmp_path / "opt", tmp_path / "run"
    args = {"path": str(ledger), "previous_path": "", "paths": [str(opt / "libexec"), str(run_dir)]}
    run_module(install_ledger, args)
    (opt / "libexec" / "__pycache__").mkdir(parents=True)
    (opt / "releases" / "r1").mkdir(parents=True)
    run_dir.mkdir()
    (opt / "libexec" / "site-hook.sh").write_text("an operator's hook\n")  # not the collection's
    os.symlink("/etc", opt / "releases" / "r1" / "link")  # never followed
    run_module(install_ledger, {"path": str(ledger), "previous_path": ""})
    preview = run_module(install_ledger, {"path": str(ledger), "previous_path": "", "state": "absent"}, check_mode=True)
    out = run_module(install_ledger, {"path": str(ledger), "previous_path": "", "state": "absent"})
    assert preview["removed"] == out["removed"] and preview["kept"] == out["kept"]
    assert out["changed"] and not out["ledger_removed"]
    assert out["kept"] == [str(opt / "libexec" / "site-hook.sh"), str(opt / "releases" / "r1" / "link")]
    assert sorted(out["removed"]) == [str(opt / "libexec" / "__pycache__"), str(run_dir)]
    assert out["forgotten"] == [str(run_dir)]
    assert (opt / "libexec" / "site-hook.sh").exists() and os.path.islink(opt / "releases" / "r1" / "link")
    assert json.loads(ledger.read_text())["paths"] == [str(tmp_path / "ledger"), str(opt)]
    # the operator takes their files away: the next run finishes, the ledger and its folder last
    (opt / "libexec" / "site-hook.sh").unlink()
    (opt / "releases" / "r1" / "link").unlink()
    done = run_module(install_ledger, {"path": str(ledger), "previous_path": "", "state": "absent"})
    assert done["ledger_removed"] and done["kept"] == []
    assert sorted(os.listdir(tmp_path)) == []
    assert not run_module(install_ledger, {"path": str(ledger), "previous_path": "", "state": "absent"})["changed"]


def test_a_path_root_runs_is_refused_where_the_engines_user_could_change_it(run_module, tmp_path):
    """A trusted claim (the relaunch gate's folder, the env file): a folder on its way that the engine's user owns
    is refused before anything is made; the same claim in folders of root's passes and is recorded."""
    ledger = tmp_path / "state" / "ledger.json"
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, ENGINE, ENGINE)
    before = tree(str(tmp_path))
    claims = [{"name": "service_gate_dir", "path": str(home / "libexec"), "trusted": True},
              {"name": "serve_env_file", "path": str(tmp_path / "etc" / "vllm.env"), "kind": "file", "trusted": True}]
    out = run_module(install_ledger, {"path": str(ledger), "claims": claims, "previous_path": ""})
    assert out.failed, out
    assert out["msg"].startswith("service_gate_dir=%s cannot be trusted: %s (folder, owner nobody (uid 65534)"
                                 % (home / "libexec", home)), out["msg"]
    assert "serve_env_file" not in out["msg"]
    assert tree(str(tmp_path)) == before
    # the same paths, untrusted claims (a folder the engine writes): left to the ledger's own rules
    out = run_module(install_ledger, {"path": str(ledger), "previous_path": "",
                                      "claims": [dict(c, trusted=False) for c in claims]})
    assert not out.failed, out
    out = run_module(install_ledger, {"path": str(ledger), "claims": claims[1:], "previous_path": ""})
    assert not out.failed, out


def test_a_unit_named_like_one_of_the_systems_is_refused(run_module, tmp_path, monkeypatch):
    """service_name=ssh: /etc/systemd/system/ssh.service would replace the package's sshd unit."""
    vendor = tmp_path / "lib-systemd"
    vendor.mkdir()
    (vendor / "ssh.service").write_text("[Service]\nExecStart=/usr/sbin/sshd -D\n")
    monkeypatch.setattr(install_ledger, "VENDOR_UNIT_DIRS", (str(vendor),))
    ledger = tmp_path / "state" / "ledger.json"
    before = tree(str(tmp_path))
    out = run_module(install_ledger, {"path": str(ledger), "previous_path": "", "claims": [
        {"name": "service_name", "path": "/etc/systemd/system/ssh.service", "kind": "file", "trusted": True}]})
    assert out.failed and "would replace the system's own unit %s" % (vendor / "ssh.service") in out["msg"], out
    assert tree(str(tmp_path)) == before
    out = run_module(install_ledger, {"path": str(ledger), "previous_path": "", "claims": [
        {"name": "service_name", "path": "/etc/systemd/system/glm53-own-test-unit.service", "kind": "file"}]})
    assert not out.failed, out
