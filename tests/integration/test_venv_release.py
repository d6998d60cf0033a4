"""The venv role's releases: a new release prunes nothing while it is built or proved; the switch to it prunes the
oldest beyond venv_releases_keep, never current or previous, and only releases it made: a directory under
venv_releases_dir without the role's release.json (another tool's folder, a backup) is never removed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from testlib import COLLECTIONS_ROOT, REPO


def run_step(step, extra):
    """The venv role's tasks_from STEP alone on this machine (tests/integration/venv/STEP.yml)."""
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(["ansible-playbook", "-i", "localhost,", os.path.join(REPO, "tests", "integration", "venv",
                                                                                 step + ".yml"),
                           "-e", json.dumps({"ansible_python_interpreter": sys.executable, **extra})],
                          capture_output=True, text=True, env=env, timeout=300, check=False)


def run_release(releases, release_id, keep=2, step="release"):
    return run_step(step, {"venv_releases_dir": str(releases), "venv_release_id": release_id,
                           "venv_path": str(releases / release_id / "venv"), "venv_releases_keep": keep,
                           "venv_release_pins": {"vllm_fork": "f2935ce322", "flashinfer": "v0.6.18"}})


def test_a_new_release_prunes_nothing_until_it_serves_and_never_a_folder_it_did_not_make(tmp_path):
    releases = tmp_path / "releases"
    releases.mkdir()
    old = time.time() - 3600
    for i, name in enumerate(["other-software", "backup-2025", "r0", "r1", "r2"]):
        d = releases / name
        d.mkdir()
        (d / "payload.txt").write_text("%s\n" % name)
        if name.startswith("r"):
            (d / "release.json").write_text(json.dumps({"id": name}) + "\n")
            os.utime(d / "release.json", (old + i, old + i))
        os.utime(d, (old - 100 + i, old - 100 + i))  # the foreign folders are the oldest of all
    (releases / "current").symlink_to(releases / "r2")
    (releases / "previous").symlink_to(releases / "r1")
    # an upgrade builds r3 beside them: nothing goes (a gate may still refuse r3, and previous is the rollback)
    proc = run_release(releases, "r3")
    assert proc.returncode == 0, proc.stdout[-3000:]
    left = sorted(p.name for p in releases.iterdir())
    assert left == ["backup-2025", "current", "other-software", "previous", "r0", "r1", "r2", "r3"], left
    assert os.readlink(releases / "current") == str(releases / "r2")
    assert os.readlink(releases / "previous") == str(releases / "r1")
    assert json.loads((releases / "r3" / "release.json").read_text())["id"] == "r3"
    # r3 proved and switched: current r3, previous r2; keep 2 prunes r0 and r1, never what it did not make
    proc = run_release(releases, "r3", step="switch")
    assert proc.returncode == 0, proc.stdout[-3000:]
    left = sorted(p.name for p in releases.iterdir())
    assert left == ["backup-2025", "current", "other-software", "previous", "r2", "r3"], left
    assert os.readlink(releases / "current") == str(releases / "r3")
    assert os.readlink(releases / "previous") == str(releases / "r2")
    assert (releases / "other-software" / "payload.txt").read_text() == "other-software\n"
    # a second switch changes nothing
    proc = run_release(releases, "r3", step="switch")
    assert proc.returncode == 0 and "changed=0" in proc.stdout, proc.stdout[-3000:]


def test_an_interpreter_the_service_user_cannot_run_is_refused_and_made_again_by_the_rerun(tmp_path):
    """A venv made of an interpreter behind a private folder (pyenv's under /root, say) would start, as the service
    user, with "bad interpreter: Permission denied" only: the role refuses it when it makes the venv and names the
    setting. It removes only the interpreter link its venv command made (the folder held a file before, which
    stays), so that the rerun after the fix makes the venv again and tries again."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    (private / "python3").symlink_to(sys.executable)
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "notes.txt").write_text("not the collection's\n")
    proc = run_step("install", {"venv_python": str(private / "python3"), "venv_path": str(venv),
                                "venv_service_user": "nobody"})
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert "The service user nobody cannot run %s/bin/python, made from venv_python=%s" % (
        venv, private / "python3") in proc.stdout, proc.stdout[-3000:]
    assert not os.path.lexists(venv / "bin" / "python")
    assert (venv / "notes.txt").read_text() == "not the collection's\n"
