"""playbooks/uninstall.yml as dpkg removes a package: the files the collection made go, by name (and the trees a tool
built for it whole: a release, a venv, a checkout); a folder it made goes only when nothing else is left in it. A host
where the collection made every folder, and where someone then put a file of their own into each of them: every such
file stays byte for byte, is listed as kept, and keeps its folders and the ledger; once they are moved away, a second
run removes the rest and the ledger.

The host is this machine (connection local), every path in a scratch folder, the engine in tmux mode; the install is
laid out by hand (the files the roles write, under the ledger's claims), not by site.yml."""
from __future__ import annotations

import json
import os

from test_bad_settings import UNIT, base
from test_foreign_content import playbook, tree

from ansible_collections.glm53.serving.plugins.modules import install_ledger

# The files the roles write (relative to the scratch folder), as they would be after site.yml and verify.yml.
MADE = [
    "libexec/relaunch_gate.py", "libexec/start_engine.sh", "libexec/verify_unit.sh", "libexec/supervise.py",
    "libexec/glm53_procfs.py", "libexec/watchdog.py", "libexec/__pycache__/glm53_procfs.cpython-312.pyc",
    "run/%s.crash.json" % UNIT, "run/%s.restart-pending" % UNIT, "log/%s.log" % UNIT,
    "evidence/preflight.json", "evidence/probes.json", "evidence/baselines/r1.json",
    "bench/glm53-run1.json", "bench/glm53-long.json",
    "wheels/abc123/flashinfer-0.6.18-cp310-linux_x86_64.whl", "wheels/def456/vllm-0.28.0-cp310-linux_x86_64.whl",
    "wheels/def456/requirements.txt", "src/flashinfer/setup.py", "src/vllm/setup.py", "tools/pyvenv.cfg",
    "tools/bin/python", "cache/verify.json", "bin/serve.sh", "etc/vllm.env", "venv/pyvenv.cfg", "venv/bin/python",
    "textfile/glm53_probes.prom",
]
# Folders the collection made where someone put a file of theirs (the release-like trees a tool built whole, a venv
# and the checkouts, are the tool's: what is put inside one goes with it).
FOREIGN_IN = ["libexec", "libexec/__pycache__", "run", "log", "evidence", "evidence/baselines", "bench", "wheels",
              "wheels/abc123", "etc", "bin", "cache", "textfile", "home", "src"]


def test_uninstall_removes_what_it_made_and_keeps_what_others_put_in_its_folders(run_module, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    t = str(scratch)
    ledger = tmp_path / "ledger" / "ledger.json"
    host = dict(base(scratch), service_mode="tmux", venv_releases_dir=t + "/releases", probes_bench_dir=t + "/bench",
                probes_textfile_dir=t + "/textfile", service_shm_dir=t + "/shm", probes_bench=True,
                __glm53_ledger_file=str(ledger), __glm53_ledger_file_before=str(tmp_path / "no-earlier-ledger.json"))
    host.pop("glm53_validate_stop_all")
    # site.yml's claims, before anything is made: every folder is the collection's
    claims = [{"name": n, "path": host[n]} for n in (
        "venv_releases_dir", "venv_service_home", "venv_path", "flashinfer_src_dir", "vllm_fork_src_dir",
        "service_gate_dir", "service_config_dir", "service_state_dir", "service_log_dir", "probes_evidence_dir",
        "probes_bench_dir", "model_tools_venv", "vllm_fork_wheelhouse", "probes_textfile_dir")] + [
        {"name": n, "path": host[n], "kind": "file"} for n in (
            "serve_script_path", "serve_env_file", "model_verify_cache_file")]
    first = run_module(install_ledger, {"path": str(ledger), "previous_path": "", "claims": claims})
    assert not first.get("failed"), first
    for rel in MADE:
        path = scratch / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("made by glm53.serving: %s\n" % rel)
    (scratch / "home").mkdir()
    (scratch / "releases" / "r1" / "venv").mkdir(parents=True)
    (scratch / "releases" / "r1" / "release.json").write_text("{}\n")
    os.symlink(scratch / "releases" / "r1", scratch / "releases" / "current")
    assert not run_module(install_ledger, {"path": str(ledger), "previous_path": ""}).get("failed")  # identities
    foreign = {}
    for rel in FOREIGN_IN:
        path = scratch / rel / "operator-note.txt"
        path.write_text("an operator's file in %s\n" % rel)
        foreign[str(path)] = path.read_bytes()
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"children": {"glm53_serving": {"hosts": {"local-host": host}}}}}))

    removed = playbook("uninstall.yml", str(inventory), "-e", "uninstall_evidence=true")
    out = removed.stdout + removed.stderr
    assert removed.returncode == 0, out[-5000:]
    left = tree(str(scratch))
    for path, body in foreign.items():
        assert left[os.path.relpath(path, scratch)][3] == body, path
    gone = [rel for rel in MADE + ["releases/r1/release.json", "releases/current"] if rel in left]
    assert gone == [], "uninstall.yml left files the collection made: %s" % gone
    files_left = sorted(os.path.join(t, k) for k, v in left.items() if v[0] != 0o040000)
    assert files_left == sorted(foreign), "uninstall.yml left more than the operator's files"
    kept = json.loads(ledger.read_text())  # the ledger stays, with the folders that hold something
    assert sorted(kept["paths"]) == sorted([str(tmp_path / "ledger")] + [os.path.join(t, d) for d in (
        "libexec", "run", "log", "evidence", "bench", "wheels", "etc", "bin", "cache", "textfile", "home", "src")])
    line = [ln for ln in out.splitlines() if "Kept, with the folders that hold them" in ln]
    assert line and all(p in line[0] for p in foreign), out[-3000:]

    # the operator moves their files away: the next run's last task (uninstall.yml's own, called here: a whole run
    # takes minutes) removes the folders and the ledger
    for path in foreign:
        os.unlink(path)
    done = run_module(install_ledger, {"path": str(ledger), "previous_path": "", "state": "absent"})
    assert done["ledger_removed"] and done["kept"] == [], done
    assert os.listdir(scratch) == [] and not (tmp_path / "ledger").exists()
    print("uninstall kept %d files of others in the collection's folders, removed %d of its own" % (
        len(foreign), len(MADE) + 2))
