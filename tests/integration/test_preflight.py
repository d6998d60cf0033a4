"""The preflight role refuses bad hosts with a message naming the variable, before any change.

Runs ansible-playbook for real against this machine (connection local) with tests/fakes/nvidia-smi
serving captured and edited nvidia-smi outputs. A good host passes and writes its evidence; each bad
host fails in preflight, and neither the evidence nor the change that follows is written.
"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys

import pytest

from testlib import COLLECTIONS_ROOT, FAKES, FIXTURES, failures_by_host, held_port

PLAYBOOK = os.path.join(os.path.dirname(__file__), "preflight", "playbook.yml")


def case_vars(tmp_path, case="l40s-8x", **overrides):
    """One host's variables: the good base (everything under tmp_path) with the case's overrides."""
    return {
        "fake_nvidia_smi_dir": os.path.join(FIXTURES, "nvidia-smi", case),
        "marker": str(tmp_path / "marker"),
        "preflight_nvidia_smi": os.path.join(FAKES, "nvidia-smi"),
        "probes_evidence_dir": str(tmp_path / "evidence"),
        "preflight_disk_requirements": [{"path": str(tmp_path / "build"), "min_free_gib": 1, "purpose": "builds"},
                                        {"path": str(tmp_path / "models" / "x"), "min_free_gib": 1,
                                         "purpose": "weights"}],
        "preflight_shm_min_size_mib": 64, "preflight_shm_min_free_mib": 32,
        "preflight_min_memory_gib": 1,
        "venv_python": sys.executable,
        "preflight_python_version": "%d.%d" % sys.version_info[:2],
        "serve_port": _free_port(),
        "preflight_gcc_min_version": "9",
        "ansible_python_interpreter": sys.executable,
        **overrides,
    }


def run_playbook(inventory, extra=None):
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCALHOST_WARNING": "false", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
           "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "ANSIBLE_FORKS": "10"}
    argv = ["ansible-playbook", "-i", inventory, PLAYBOOK] + (["-e", json.dumps(extra)] if extra else [])
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900, check=False)


def run_preflight(tmp_path, case="l40s-8x", **overrides):
    proc = run_playbook("localhost,", case_vars(tmp_path, case, **overrides))
    return proc, tmp_path / "evidence" / "preflight.json", tmp_path / "marker"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_good_host_passes_and_records_evidence(tmp_path):
    port = _free_port()
    proc, evidence, marker = run_preflight(tmp_path, preflight_skip_checks=["build_tools"], serve_port=port)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert marker.exists()
    record = json.loads(evidence.read_text())
    assert record["skipped"] == ["build_tools"] and "build_tools" not in record["passed"]
    assert record["deferred"] == ["cuda_toolkit"] and "cuda_toolkit" not in record["passed"]
    assert record["passed"] == ["gpu_driver", "gpu_compute_capability", "gpu_memory", "gpu_count",
                                "gpu_foreign_processes", "shm",
                                "disk", "memory", "python", "serve_port"]
    assert "gpu_compute_capability" in record["passed"] and record["compute_capabilities"] == ["8.9"]
    assert record["gpus"] == ["NVIDIA L40S"] * 8 and record["driver_version"] == "580.159.04"
    # a second run on the same host changes nothing
    proc, evidence, marker = run_preflight(tmp_path, preflight_skip_checks=["build_tools"], serve_port=port)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"localhost\s+:\s+ok=\d+\s+changed=0\s", proc.stdout.split("PLAY RECAP")[1])
    assert json.loads(evidence.read_text()) == record


def _release():
    with open("/etc/os-release") as fh:
        info = dict(line.rstrip("\n").split("=", 1) for line in fh if "=" in line)
    return info.get("ID", "").strip('"'), info.get("VERSION_ID", "").strip('"')


# The route to Python 3.10 that the refusal names, for this machine's release (preflight reads the distribution):
# Debian 12 ships 3.11 and no other version's package, Ubuntu 22.04 ships 3.10.
ROUTE = {("debian", "12"): "cannot build a venv here (not found): Debian 12 ships Python 3.11 and no python3.",
         ("ubuntu", "22.04"): "cannot build a venv here (not found): Ubuntu 22.04 ships Python 3."}.get(
    _release(), "set venv_python to")
# and the fix it names: the uv route where the release ships no package of that version
FIX = {("debian", "12"): "set venv_python_source=uv, and the venv role installs a standalone CPython"}.get(
    _release(), "set venv_python")

BAD_HOSTS = {
    "h200": ({"case": "h200"}, ["compute capability 9.0", "preflight_gpu_compute_capability", "NVIDIA H200"]),
    "gpu_missing": ({"case": "l40s-7x"}, ["shows 7 GPU(s)", "serve_tensor_parallel_size=8"]),
    "old_driver": ({"case": "l40s-8x-old-driver"}, ["535.183.01", "preflight_driver_min_version=580"]),
    "foreign_gpu_process": ({"case": "l40s-8x-foreign-process"},
                            ["pid 4242", "12034 MiB on GPU 3", "preflight_gpu_allowed_users"]),
    "driver_not_loaded": ({"case": "driver-not-loaded"}, ["NVIDIA driver is not loaded", "couldn't communicate"]),
    "small_shm": ({"preflight_shm_min_size_mib": 10**8}, ["preflight_shm_min_size_mib=100000000", "/dev/shm"]),
    "full_disk": ({"preflight_disk_requirements": [{"path": "/var/tmp/glm53-weights", "min_free_gib": 10**7,
                                                   "purpose": "weights"}]},
                  ["/var/tmp/glm53-weights (weights)", "preflight_disk_requirements asks for 10000000 GiB"]),
    "small_memory": ({"preflight_min_memory_gib": 60000}, ["preflight_min_memory_gib is 60000", "OOM-killed"]),
    "no_python": ({"venv_python": "python3.10-not-installed"},
                  ["venv_python=python3.10-not-installed cannot build a venv", ROUTE, FIX]),
    "wrong_python": ({"preflight_python_version": "3.10" if sys.version_info[:2] != (3, 10) else "3.9"},
                     ["not preflight_python_version="]),
    "missing_tools": ({"preflight_required_commands": ["git", "no-such-compiler"]},
                      ["Missing from PATH: no-such-compiler", "preflight_required_commands"]),
    "old_gcc": ({"preflight_gcc_min_version": "99.1"}, ["older than preflight_gcc_min_version=99.1"]),
    "no_system_nvcc": ({"preflight_cuda_toolkit": "system", "preflight_nvcc": "/nonexistent/nvcc"},
                       ["preflight_nvcc=/nonexistent/nvcc is not an executable"]),
    "unknown_skip": ({"preflight_skip_checks": ["gpu_cout"]}, ["preflight_skip_checks", "gpu_cout"]),
    "hidden_gpu_memory": ({"case": "l40s-8x-hidden-memory"},
                          ["GPU(s) 3 (00000000:48:00.0, 30112 MiB in use)", "lists no process",
                           "another container or PID namespace"]),
    "small_gpus": ({"case": "rtx4090-8x"}, ["24564 MiB", "preflight_gpu_min_memory_mib=40960", "RTX 4090"]),
    "driver_too_old_to_query": ({"case": "driver-470-no-compute-cap"},
                                ["driver is too old to be queried", "'compute_cap'", "580 series"]),
    "lost_gpu": ({"case": "lost-gpu"}, ["GPU(s) at 00000000:3B:00.0 are lost", "Xid 79"]),
    "no_gpu": ({"case": "no-gpu"}, ["No GPU found"]),
}


@pytest.fixture(scope="module")
def bad_hosts(tmp_path_factory):
    """Every bad host in one run (one inventory host per case, all on this machine), the last one's port held."""
    tmp = tmp_path_factory.mktemp("bad-hosts")
    listener = held_port()
    cases = dict(BAD_HOSTS)
    cases["port_held"] = ({"serve_port": listener.getsockname()[1]},
                          ["serve_port=%d is held by pid %d" % (listener.getsockname()[1], os.getpid())])
    hosts = {}
    for name, (overrides, _words) in cases.items():
        overrides = dict(overrides)
        (tmp / name).mkdir()
        hosts[name] = dict(case_vars(tmp / name, overrides.pop("case", "l40s-8x"), **overrides),
                           ansible_connection="local")
    inventory = tmp / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    try:
        proc = run_playbook(str(inventory))
    finally:
        listener.close()
    return proc, failures_by_host(proc.stdout), tmp, cases


@pytest.mark.parametrize("name", sorted(BAD_HOSTS) + ["port_held"])
def test_bad_host_is_refused_before_any_change(bad_hosts, name):
    proc, refusals, tmp, cases = bad_hosts
    assert proc.returncode != 0
    assert name in refusals, "%s was not refused:\n%s" % (name, proc.stdout[-4000:])
    for text in cases[name][1]:
        assert text in refusals[name], "%r not in %s's refusal:\n%s" % (text, name, refusals[name][-3000:])
    assert not (tmp / name / "evidence" / "preflight.json").exists() and not (tmp / name / "marker").exists(), \
        "a refused host was changed"
