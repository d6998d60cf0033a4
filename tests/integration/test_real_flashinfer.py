"""The flashinfer role, unchanged, on FlashInfer's real source: the 0.6.16.post3 sdist from PyPI (the version vLLM
0.28.0 pins) as a git repository shaped like upstream's (tests/helpers/real_sources.py), built editable with no
build isolation into a venv holding the venv role's own base and build packages, and nothing else (no torch:
the build must not need it, and the proof must not import FlashInfer, which fails without CUDA anyway).
A rerun builds nothing; a new commit builds once more. Prints the install times."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

import real_sources
from testlib import COLLECTIONS_ROOT

PLAYBOOK = os.path.join(os.path.dirname(__file__), "flashinfer", "playbook.yml")


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("real-flashinfer")
    t0 = time.monotonic()
    repo = real_sources.make_flashinfer_repo(str(tmp / "flashinfer.git"))
    print("\nFlashInfer sdist to git repository: %.1f s" % (time.monotonic() - t0))
    venv = tmp / "venv"
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    real_sources.install_build_packages(venv)
    print("venv with the venv role's base and build packages (no torch): %.1f s" % (time.monotonic() - t0))
    return {"tmp": tmp, "repo": repo, "venv": venv}


def run_role(real, version):
    tmp = real["tmp"]
    extra = {"ansible_python_interpreter": sys.executable, "venv_path": str(real["venv"]),
             "flashinfer_src_dir": str(tmp / "src" / "flashinfer"), "flashinfer_repo_url": str(tmp / "flashinfer.git"),
             "flashinfer_version": version, "flashinfer_build_log": str(tmp / "log" / "flashinfer-build.log"),
             "venv_runtime_env": {"FLASHINFER_DISABLE_VERSION_CHECK": "1"}, "glm53_output_dir": str(tmp / "out")}
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    t0 = time.monotonic()
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", PLAYBOOK, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=1800, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return proc, time.monotonic() - t0


def builds(real):
    with open(real["tmp"] / "log" / "flashinfer-build.log") as f:
        return re.findall(r"^=== build of ([0-9a-f]{40})", f.read(), re.M)


def installed(real):
    """What the installed build says of itself, read as the role's proof reads it: from files, no import."""
    out = subprocess.run([str(real["venv"] / "bin" / "python"), "-c",
                          "import importlib.metadata as m, pathlib; d = m.distribution('flashinfer-python'); "
                          "print(d.version); print(d.read_text('direct_url.json'))"],
                         capture_output=True, text=True, check=True).stdout.split("\n", 1)
    meta = (real["tmp"] / "src" / "flashinfer" / "flashinfer" / "_build_meta.py").read_text()
    return out[0], json.loads(out[1]), meta


def test_the_real_source_builds_unchanged_proves_and_rebuilds_only_on_a_new_commit(real):
    repo = real["repo"]
    _proc, took = run_role(real, repo["tag"])
    print("flashinfer role on the real 0.6.16.post3 source (clone, editable no-isolation install, proof): %.1f s" % took)
    assert builds(real) == [repo["tagged"]]
    version, direct_url, meta = installed(real)
    assert version == "0.6.16.post3" and direct_url["dir_info"] == {"editable": True}, (version, direct_url)
    assert '__git_version__ = "%s"' % repo["tagged"] in meta
    # The checkout stays clean: the files the build writes are ignored, as upstream ignores them.
    status = real_sources.git(str(real["tmp"] / "src" / "flashinfer"), "status", "--porcelain")
    assert status == "", status

    proc, took = run_role(real, repo["tag"])
    print("rerun on the same pin: %.1f s" % took)
    assert builds(real) == [repo["tagged"]], "a rerun on a converged host rebuilt"
    assert re.search(r"localhost\s*: ok=\d+\s+changed=0 ", proc.stdout), proc.stdout[-3000:]

    newer = real_sources.add_commit(str(real["tmp"] / "flashinfer.git"), "fix: a commit after the pin")
    _proc, took = run_role(real, newer)
    print("new commit: %.1f s" % took)
    assert builds(real) == [repo["tagged"], newer]
    assert '__git_version__ = "%s"' % newer in installed(real)[2]
