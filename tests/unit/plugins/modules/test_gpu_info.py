"""glm53.serving.gpu_info against real (and edited) nvidia-smi captures, served by tests/fakes/nvidia-smi."""
from __future__ import annotations

import os
import subprocess

import pytest

from ansible_collections.glm53.serving.plugins.module_utils import _nvidia_smi as nsmi
from ansible_collections.glm53.serving.plugins.modules import gpu_info

from testlib import FAKES, FIXTURES

FAKE = os.path.join(FAKES, "nvidia-smi")


@pytest.fixture
def smi(monkeypatch):
    def use(case):
        monkeypatch.setenv("FAKE_NVIDIA_SMI_DIR", os.path.join(FIXTURES, "nvidia-smi", case))
        return FAKE
    return use


def test_h200_capture(run_module, smi):
    r = run_module(gpu_info, {"nvidia_smi": smi("h200")})
    assert not r.failed and r["changed"] is False
    assert r["gpu_count"] == 1 and r["driver_version"] == "580.159.04"
    (gpu,) = r["gpus"]
    assert gpu == {"index": 0, "name": "NVIDIA H200", "compute_capability": "9.0", "memory_total_mib": 143771,
                   "memory_used_mib": 0, "driver_version": "580.159.04", "bus_id": "00000000:00:06.0",
                   "uuid": "GPU-cefa5aa9-751a-930f-d627-1da6b685ff14"}
    assert r["compute_capabilities"] == ["9.0"] and r["processes"] == []


def test_eight_l40s(run_module, smi):
    r = run_module(gpu_info, {"nvidia_smi": smi("l40s-8x")}, check_mode=True)
    assert r["gpu_count"] == 8 and [g["index"] for g in r["gpus"]] == list(range(8))
    assert r["compute_capabilities"] == ["8.9"]
    assert len({g["bus_id"] for g in r["gpus"]}) == 8


def test_one_gpu_missing(run_module, smi):
    assert run_module(gpu_info, {"nvidia_smi": smi("l40s-7x")})["gpu_count"] == 7


def test_old_driver(run_module, smi):
    r = run_module(gpu_info, {"nvidia_smi": smi("l40s-8x-old-driver")})
    assert r["driver_version"] == "535.183.01"
    assert not nsmi.version_at_least(r["driver_version"], "580")


def test_foreign_process_is_mapped_to_its_gpu(run_module, smi):
    r = run_module(gpu_info, {"nvidia_smi": smi("l40s-8x-foreign-process")})
    (proc,) = r["processes"]
    assert proc["pid"] == 4242 and proc["used_memory_mib"] == 12034 and proc["gpu_index"] == 3
    assert r["gpus"][3]["memory_used_mib"] == 12034


def test_processes_can_be_skipped(run_module, smi):
    r = run_module(gpu_info, {"nvidia_smi": smi("l40s-8x-foreign-process"), "include_processes": False})
    assert r["processes"] == []


def test_driver_not_loaded_fails_clearly(run_module, smi):
    r = run_module(gpu_info, {"nvidia_smi": smi("driver-not-loaded")})
    assert r.failed and r["rc"] == 9
    assert "NVIDIA driver is not loaded" in r["msg"] and "couldn't communicate" in r["msg"]


def test_missing_binary_fails_clearly(run_module, tmp_path):
    r = run_module(gpu_info, {"nvidia_smi": str(tmp_path / "nvidia-smi")})
    assert r.failed and "nvidia-smi was not found" in r["msg"] and "nvidia_smi option" in r["msg"]


def test_fake_reproduces_the_real_noheader_capture(monkeypatch):
    monkeypatch.setenv("FAKE_NVIDIA_SMI_DIR", os.path.join(FIXTURES, "nvidia-smi", "h200"))
    out = subprocess.run([FAKE, "--query-gpu=index,name,compute_cap,memory.total,driver_version",
                          "--format=csv,noheader,nounits"], capture_output=True, text=True, check=True).stdout
    assert out == open(os.path.join(FIXTURES, "nvidia-smi", "h200", "query-gpu-noheader.csv")).read()


@pytest.mark.parametrize("text", ["0, NVIDIA L40S, 8.9\n", "x, NVIDIA L40S, 8.9, 1, 0, 580, 0:0:0.0, GPU-1\n"])
def test_parse_errors_are_reported(text):
    with pytest.raises(nsmi.NvidiaSmiParseError):
        nsmi.parse_gpus(text)


@pytest.mark.parametrize("version,minimum,ok", [("580.159.04", "580", True), ("580.65.06", "580.95", False),
                                                ("575.57.08", "580", False), ("590.1", "580.159.04", True)])
def test_version_at_least(version, minimum, ok):
    assert nsmi.version_at_least(version, minimum) is ok


def test_bus_id_forms_are_normalised():
    assert nsmi.normalise_bus_id("0000:00:06.0") == nsmi.normalise_bus_id("00000000:00:06.0") == "00000000:00:06.0"


def test_the_old_name_redirects_with_a_deprecation(monkeypatch):
    import json as _json
    import sys

    from testlib import COLLECTIONS_ROOT
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCALHOST_WARNING": "false", "FAKE_NVIDIA_SMI_DIR": os.path.join(FIXTURES, "nvidia-smi", "l40s-8x")}
    proc = subprocess.run(["ansible", "localhost", "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable,
                           "-m", "glm53.serving.gpu_facts", "-a", "nvidia_smi=%s" % FAKE],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = _json.loads(proc.stdout.split("=>", 1)[1])
    assert result["gpu_count"] == 8
    assert "glm53.serving.gpu_facts has been deprecated" in proc.stderr and "use glm53.serving.gpu_info" in proc.stderr
