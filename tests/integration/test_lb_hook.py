"""The example drain/re-admit hook (playbooks/examples/lb_upstream.yml) on nginx and HAProxy upstream files:
only the host's own line changes, drain marks it down/disabled, admit restores it, a rerun changes nothing,
and the reload command runs only after a change."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from testlib import COLLECTIONS_ROOT

PLAYBOOK = os.path.join(os.path.dirname(__file__), "lb", "playbook.yml")
FILES = {
    "nginx": "upstream glm53 {\n    server 10.0.0.11:8000;  # gpu-a\n    server 10.0.0.12:8000;  # gpu-b\n}\n",
    "haproxy": "backend glm53\n    server gpu-a 10.0.0.11:8000 check\n    server gpu-b 10.0.0.12:8000 check\n",
}


def run_hook(tmp_path, kind, phase, check="true", rc=0):
    """The hook for one phase; the balancer's check is a command standing in for nginx -t or haproxy -c (neither
    balancer's whole configuration is on this machine)."""
    inv = tmp_path / "hosts"
    inv.write_text("[glm53_serving]\ngpu-a ansible_host=10.0.0.11 ansible_connection=local\n")
    extra = {"ansible_python_interpreter": sys.executable, "rollout_phase": phase, "lb_kind": kind,
             "lb_upstream_file": str(tmp_path / "upstream.conf"), "lb_check_command": check,
             "lb_reload_command": "touch %s" % (tmp_path / ("reloaded-" + phase))}
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run(["ansible-playbook", "-i", str(inv), PLAYBOOK, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert (proc.returncode == 0) is (rc == 0), proc.stdout[-2000:] + proc.stderr[-2000:]
    return (tmp_path / "upstream.conf").read_text(), proc


@pytest.mark.parametrize("kind,down_line", [
    ("nginx", "    server 10.0.0.11:8000 down;  # gpu-a\n"),
    ("haproxy", "    server gpu-a 10.0.0.11:8000 check disabled\n"),
])
def test_drain_then_admit_touches_only_this_host(tmp_path, kind, down_line):
    (tmp_path / "upstream.conf").write_text(FILES[kind])
    drained, _proc = run_hook(tmp_path, kind, "drain")
    assert down_line in drained
    assert drained.replace(down_line, "") == FILES[kind].replace(FILES[kind].splitlines(True)[1], "")
    assert (tmp_path / "reloaded-drain").exists()
    again, proc = run_hook(tmp_path, kind, "drain")
    assert again == drained and re.search(r"changed=0\s", proc.stdout.split("PLAY RECAP")[1])
    admitted, _proc = run_hook(tmp_path, kind, "admit")
    assert admitted == FILES[kind] and (tmp_path / "reloaded-admit").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("upstream.conf.")] == []  # no backup left


@pytest.mark.parametrize("kind", ["nginx", "haproxy"])
def test_an_edit_the_balancers_check_refuses_is_put_back_and_nothing_reloads(tmp_path, kind):
    (tmp_path / "upstream.conf").write_text(FILES[kind])
    after, proc = run_hook(tmp_path, kind, "drain", check="false", rc=2)
    assert after == FILES[kind] and not (tmp_path / "reloaded-drain").exists()
    assert "configuration check (false) refused" in proc.stdout and "The file is as it was" in proc.stdout
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("upstream.conf.")] == []
