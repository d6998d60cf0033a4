"""Ownership by construction: a host whose every configurable path already holds something the collection did not
make. site.yml refuses to take any of it over before it changes anything (each path named by its variable), and
playbooks/uninstall.yml, run on the same host, leaves all of it byte for byte as it was: a path's name, a marker file
inside it (a release.json, a heal record that reads as one, a venv's pyvenv.cfg) or a matching pattern never decides a
removal; only the host's ledger does, and it lists none of these.

The host is this machine (connection local), every path inside a temporary folder, the engine in tmux mode (no unit
is written under /etc)."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

from testlib import COLLECTIONS_ROOT, REPO
from test_bad_settings import base

# variable: (kind, content) of what is already there; each is claimed by site.yml's first change
FOREIGN = {
    "venv_releases_dir": "dir", "venv_service_home": "dir", "service_gate_dir": "dir", "service_config_dir": "dir",
    "service_state_dir": "dir", "service_log_dir": "dir", "model_tools_venv": "dir",
    "vllm_fork_wheelhouse": "dir", "probes_evidence_dir": "dir",
    "probes_bench_dir": "dir", "serve_script_path": "file", "serve_env_file": "file",
    "model_verify_cache_file": "file", "flashinfer_build_log": "file", "vllm_fork_build_log": "file",
    "heal_state_file": "file",
}


def tree(root):
    """Every path under root with its type, mode, owner and bytes (a link: its target)."""
    out = {}
    for top, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            path = os.path.join(top, name)
            st = os.lstat(path)
            body = os.readlink(path) if stat.S_ISLNK(st.st_mode) else (
                open(path, "rb").read() if stat.S_ISREG(st.st_mode) else None)
            out[os.path.relpath(path, root)] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, body)
    return out


def make_foreign(root):
    """Another team's content at every path, with the markers a pattern-based removal would take for the collection's."""
    settings = {}
    for i, (name, kind) in enumerate(sorted(FOREIGN.items())):
        path = os.path.join(root, "theirs", name.replace("_", "-"))
        if kind == "dir":
            os.makedirs(path, mode=0o700)
            with open(os.path.join(path, "keep.txt"), "w") as fh:
                fh.write("%s: another service's data %d\n" % (name, i))
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as fh:
                fh.write("#!/bin/sh\n# another tool's %s\n" % name)
            os.chmod(path, 0o640)
        settings[name] = path
    releases = settings["venv_releases_dir"]
    # a "release" of another tool's, with the marker the venv role's releases carry, and links that look like its own
    os.makedirs(os.path.join(releases, "r1", "venv"))
    with open(os.path.join(releases, "r1", "release.json"), "w") as fh:
        json.dump({"pins": "theirs"}, fh)
    os.symlink(os.path.join(releases, "r1"), os.path.join(releases, "current"))
    os.symlink(os.path.join(releases, "r1"), os.path.join(releases, "previous"))
    # a heal record that reads as one (state and release), a venv's marker where a fixed venv_path points
    with open(settings["heal_state_file"], "w") as fh:
        json.dump({"state": "drained", "release": "r1", "since": "then", "reason": "theirs"}, fh)
    venv = os.path.join(root, "theirs", "venv")
    os.makedirs(venv)
    with open(os.path.join(venv, "pyvenv.cfg"), "w") as fh:
        fh.write("home = /usr/bin\n")
    settings["venv_path"] = venv
    # node_exporter's folder with another exporter's metrics, and files named as the collection's would be
    textfiles = os.path.join(root, "theirs", "node-exporter")
    os.makedirs(textfiles)
    for name in ("other.prom", "glm53_probes.prom", "glm53_heal.prom", "glm53_watchdog.prom"):
        with open(os.path.join(textfiles, name), "w") as fh:
            fh.write("# another exporter's metrics\nother_metric 1\n")
    settings["probes_textfile_dir"] = textfiles
    # the tmux supervisor's configuration, by its name, in the (foreign) configuration folder
    with open(os.path.join(settings["service_config_dir"], "vllm-glm53-foreign.supervise.json"), "w") as fh:
        fh.write("{}\n")
    return settings


def playbook(name, inventory, *extra):
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default"}
    return subprocess.run(["ansible-playbook", "-i", str(inventory), os.path.join(REPO, "playbooks", name), *extra],
                          capture_output=True, text=True, env=env, timeout=900)


def test_foreign_content_is_never_taken_over_or_removed(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    host = dict(base(scratch), **make_foreign(str(tmp_path)))
    host.update(service_mode="tmux", service_name="vllm-glm53-foreign", probes_bench=True,
                __glm53_ledger_file=str(tmp_path / "ledger" / "ledger.json"))
    host.pop("glm53_validate_stop_all")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"children": {"glm53_serving": {"hosts": {"foreign-host": host}}}}}))
    before = tree(str(tmp_path / "theirs"))
    assert len(before) > 35

    site = playbook("site.yml", inventory)
    out = site.stdout + site.stderr
    assert site.returncode != 0, out[-3000:]
    assert "Claim what this bring-up writes on the host" in out
    claimed = [n for n in FOREIGN if n not in ("probes_evidence_dir", "probes_bench_dir", "heal_state_file")]
    for name in claimed + ["venv_path"]:
        assert "%s=%s exists and glm53.serving did not make it" % (name, host[name]) in out, name
    assert "Bring GLM-5.3-Flash serving hosts" in out and "Read the GPUs" not in out, "went past the claims"
    assert tree(str(tmp_path / "theirs")) == before, "site.yml changed what it refused to take over"
    assert not (tmp_path / "ledger").exists() and list(scratch.iterdir()) == []

    removed = playbook("uninstall.yml", inventory, "-e", "uninstall_evidence=true")
    assert removed.returncode == 0, (removed.stdout + removed.stderr)[-4000:]
    after = tree(str(tmp_path / "theirs"))
    assert after == before, "uninstall.yml removed or changed: %s" % sorted(
        set(before) ^ set(after) | set(k for k in before if k in after and before[k] != after[k]))
    print("foreign content: %d paths under %d configured settings kept byte for byte by site.yml and uninstall.yml" % (
        len(before), len(FOREIGN) + 2))

    # the probes' and heal's own claims, refused the same way (verify.yml and heal.yml write them)
    verify = playbook("verify.yml", inventory)
    assert verify.returncode != 0
    verify_out = verify.stdout + verify.stderr
    for name in ("probes_evidence_dir", "probes_bench_dir"):
        assert "%s=%s exists and glm53.serving did not make it" % (name, host[name]) in verify_out, name
    assert "probes_textfile_dir=%s/glm53_probes.prom exists" % host["probes_textfile_dir"] in verify_out
    heal = playbook("heal.yml", inventory)
    assert heal.returncode != 0
    assert "heal_state_file=%s exists and glm53.serving did not make it" % host["heal_state_file"] in heal.stdout
    assert tree(str(tmp_path / "theirs")) == before

    # the roles reused on their own, from a playbook that claims nothing first: each role claims its paths before it
    # writes (preflight only reads and writes its evidence, serve its script and env file)
    reuse = tmp_path / "reuse.yml"
    reuse.write_text(json.dumps([{"hosts": "glm53_serving", "gather_facts": False,
                                  "roles": ["glm53.serving.serve", "glm53.serving.service"]}]))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    alone = subprocess.run(["ansible-playbook", "-i", str(inventory), str(reuse)], capture_output=True, text=True,
                           env=env, timeout=900)
    assert alone.returncode != 0
    for name in ("serve_script_path", "serve_env_file"):
        assert "%s=%s exists and glm53.serving did not make it" % (name, host[name]) in alone.stdout, \
            alone.stdout[-3000:]
    assert "TASK [glm53.serving._common : Claim this role's paths on the host]" in alone.stdout
    assert tree(str(tmp_path / "theirs")) == before
