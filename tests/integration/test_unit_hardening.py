"""The engine's systemd unit, as the service role renders it, scored by `systemd-analyze security` (offline, on
the file): the default profile must stay at an exposure of 5.0 or less. The molecule scenarios run the same
unit for real (default: its exposure printed from the running unit, and the kill -9 relaunch under it)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from testlib import COLLECTIONS_ROOT


PLAYBOOK = os.path.join(os.path.dirname(__file__), "hardening", "playbook.yml")


@pytest.fixture(scope="module")
def units(tmp_path_factory):
    out = tmp_path_factory.mktemp("units")
    for profile in ("standard", "strict"):
        (out / profile).mkdir()
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", PLAYBOOK, "-e",
                           json.dumps({"out_dir": str(out), "ansible_python_interpreter": sys.executable})],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return out


def exposure(path):
    if shutil.which("systemd-analyze") is None:
        pytest.fail("systemd-analyze is not installed (make test installs Debian's systemd package)")
    out = subprocess.run(["systemd-analyze", "security", "--offline=true", "--no-pager", str(path)],
                         capture_output=True, text=True, timeout=60).stdout
    return float(re.search(r"Overall exposure level for \S+: ([0-9.]+)", out).group(1)), out


def test_default_profile_exposure_is_at_most_5(units):
    standard, _ = exposure(units / "standard" / "vllm-glm53.service")
    strict, _ = exposure(units / "strict" / "vllm-glm53.service")
    print("systemd-analyze security --offline: standard %.1f, strict %.1f (0.1.0's unit: 7.5)" % (standard, strict))
    assert standard <= 5.0
    assert strict < standard


def test_profiles_differ_only_by_the_unproven_directives(units):
    standard = (units / "standard" / "vllm-glm53.service").read_text()
    strict = (units / "strict" / "vllm-glm53.service").read_text()
    def settings(text):
        return {line for line in text.splitlines() if line and not line.startswith("#")}

    directives = sorted({line.split("=")[0] for line in settings(strict) - settings(standard)})
    assert directives == ["DeviceAllow", "DevicePolicy", "MemoryDenyWriteExecute", "ProtectProc", "RemoveIPC",
                          "SystemCallErrorNumber", "SystemCallFilter"], directives
    assert not settings(standard) - settings(strict)
    # What the engine needs stays allowed in both: no PrivateDevices (the GPUs), its HOME and logs writable.
    for text in (standard, strict):
        assert "PrivateDevices" not in text and "ProcSubset" not in text
        assert "ReadWritePaths=-/var/lib/glm53" in text and "ProtectSystem=strict" in text
        assert re.search(r"^RestrictAddressFamilies=.*AF_NETLINK", text, re.M)
        assert not re.search(r"^[A-Za-z]+=.*#", text, re.M), "systemd reads no comment after a value"
