"""Contract test: the vllm_fork role, unchanged, on vLLM 0.28.0's real source. The PyPI sdist becomes the fork
(tests/helpers/real_sources.py: tag v0.28.0 on main, then the card's five fix commits on sm89-longctx-fix-v2), the
role builds it with vLLM's own no-kernel target (VLLM_TARGET_DEVICE=empty: no CMake, no FetchContent, no compile)
into a venv holding the venv role's base and build packages, with torch and vLLM's runtime packages (not vLLM
itself) taken from the contract venv, since vLLM's setup.py imports torch. The installed engine is versioned from
the fork's history and passes vllm_fork_commit's proof; the serve role's parser check accepts the card's flags
with it; a rerun builds nothing. Prints the figures."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

import real_sources
from testlib import COLLECTIONS_ROOT, exec_argv, run_serve_role
from ansible_collections.glm53.serving.plugins.modules import vllm_serve_args

CONTRACT = os.environ.get("GLM53_VLLM_CONTRACT_VENV", "")
PLAYBOOK = os.path.join(os.path.dirname(__file__), "vllm_fork", "playbook.yml")
CPU = {"VLLM_TARGET_DEVICE": "cpu"}

if not os.path.exists(os.path.join(CONTRACT, "bin", "python")):  # pragma: no cover - a setup error, not a skip
    raise RuntimeError("GLM53_VLLM_CONTRACT_VENV=%r is not a venv; run hack/contract_venv.sh (make test does)" % CONTRACT)


def purelib(python):
    return subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def fork(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("real-vllm")
    t0 = time.monotonic()
    commits = real_sources.make_vllm_fork_repo(str(tmp / "vllm-glm53.git"))
    print("\nvLLM 0.28.0 sdist to the fork's repository: %.1f s" % (time.monotonic() - t0))
    t0 = time.monotonic()
    venv = tmp / "venv"
    subprocess.run([os.path.join(CONTRACT, "bin", "python"), "-m", "venv", str(venv)], check=True)
    # torch and vLLM's runtime packages from the contract venv, through links that leave its vLLM wheel out
    host = tmp / "contract-packages"
    host.mkdir()
    src = purelib(os.path.join(CONTRACT, "bin", "python"))
    for entry in os.listdir(src):
        if not re.match(r"^(vllm|_?vllm[-_.])", entry) and not entry.endswith(".pth"):
            os.symlink(os.path.join(src, entry), host / entry)
    with open(os.path.join(purelib(str(venv / "bin" / "python")), "zz-contract-packages.pth"), "w") as f:
        f.write(str(host) + "\n")
    real_sources.install_build_packages(venv)
    print("venv (the venv role's base and build packages; torch from the contract venv): %.1f s" % (time.monotonic() - t0))
    return {"tmp": tmp, "commits": commits, "venv": venv}


def run_role(fork):
    tmp, c = fork["tmp"], fork["commits"]
    extra = {"ansible_python_interpreter": sys.executable, "venv_path": str(fork["venv"]),
             "vllm_fork_src_dir": str(tmp / "src" / "vllm-glm53"), "vllm_fork_repo_url": str(tmp / "vllm-glm53.git"),
             "vllm_fork_version": "sm89-longctx-fix-v2", "vllm_fork_minimum_commit": c["minimum"][:10],
             "vllm_fork_required_commits": [{"commit": c["mhc"][:9], "name": "mHC fused-norm fix"},
                                            {"commit": c["longctx"][:9], "name": "long-context graph fix"}],
             "vllm_fork_build_log": str(tmp / "log" / "vllm-fork-build.log"), "vllm_fork_max_jobs": 2,
             "venv_runtime_env": {}, "vllm_fork_extra_build_env": {"VLLM_TARGET_DEVICE": "empty"},
             "glm53_output_dir": str(tmp / "out"), "glm53_test_proof": str(tmp / "proof.json")}
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    t0 = time.monotonic()
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", PLAYBOOK, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=1800, check=False)
    log = tmp / "log" / "vllm-fork-build.log"
    assert proc.returncode == 0, proc.stdout[-5000:] + (log.read_text()[-3000:] if log.exists() else "")
    return proc, time.monotonic() - t0, json.loads((tmp / "proof.json").read_text())


def test_the_real_source_builds_without_kernels_proves_and_parses_the_cards_flags(fork, run_module):
    c = fork["commits"]
    figures = []  # printed at the end: run_module reads this test's stdout
    _proc, took, proof = run_role(fork)
    figures.append("vllm_fork role, VLLM_TARGET_DEVICE=empty (clone, proof, build, proof): %.1f s" % took)
    assert proof["installed_matches_head"] and proof["head"] == c["minimum"] and not proof["dirty"], proof
    # setuptools-scm from the fork's history: 5 commits after v0.28.0, at HEAD
    assert proof["installed_version"] == "0.28.1.dev5+g%s" % c["minimum"][:9], proof
    src = fork["tmp"] / "src" / "vllm-glm53"
    figures.append("checkout %s, venv %s" % tuple(subprocess.run(["du", "-sh", str(p)], capture_output=True, text=True,
                                                        check=True).stdout.split()[0] for p in (src, fork["venv"])))

    # The serve role's own parser check, in the built venv, accepts the card's flags.
    proc, _extra = run_serve_role(fork["tmp"] / "serve", venv_path=str(fork["venv"]), serve_check_environment=CPU)
    assert proc.returncode == 0, proc.stdout[-3000:]
    argv = exec_argv((fork["tmp"] / "serve" / "bin" / "serve.sh").read_text())
    r = run_module(vllm_serve_args, {"venv": str(fork["venv"]), "argv": argv[2:], "environment": CPU})
    assert not r.failed, r.get("msg")
    assert r["vllm_version"].startswith("0.28.1.dev5+g%s" % c["minimum"][:9]), r["vllm_version"]
    assert r["parsed"]["max_model_len"] == 524288 and r["parsed"]["reasoning_parser"] == "glm47"

    proc, took, _proof = run_role(fork)
    figures.append("rerun: %.1f s" % took)
    print("\n".join(figures))
    assert re.search(r"localhost\s*: ok=\d+\s+changed=0 ", proc.stdout), proc.stdout[-3000:]
    builds = re.findall(r"^=== build of ", (fork["tmp"] / "log" / "vllm-fork-build.log").read_text(), re.M)
    assert len(builds) == 1, builds
