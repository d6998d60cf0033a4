"""The relaunch gate's crash-loop count (roles/service/files/relaunch_gate.py --crash-state), run as the unit's
ExecStartPre and ExecStartPost run it: starts in a row that die before ready are counted, backed off and, after
the tries, refused; a fresh (manual) start counts afresh; a start that gets ready resets the count."""
from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

from testlib import REPO, free_port

GATE = os.path.join(REPO, "roles", "service", "files", "relaunch_gate.py")
PROCFS = os.path.join(REPO, "plugins", "module_utils", "_procfs.py")


@pytest.fixture
def gate(tmp_path):
    shutil.copy(GATE, tmp_path / "relaunch_gate.py")
    shutil.copy(PROCFS, tmp_path / "glm53_procfs.py")
    state = tmp_path / "run" / "engine.crash.json"
    port = free_port()

    def run(*extra, env=None):
        argv = [sys.executable, str(tmp_path / "relaunch_gate.py"), "--port", str(port), "--user", "nobody",
                "--shm-dir", str(tmp_path), "--crash-state", str(state), "--tries", "3", "--restart-sec", "0.2",
                "--max-delay", "0.5", "--interval", "0.1", *extra]
        t0 = time.monotonic()
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, env={**os.environ, **(env or {})},
                             check=False)
        out.took = time.monotonic() - t0
        return out

    run.state, run.port = state, port
    return run


def read(path):
    return json.loads(path.read_text())


def test_counts_backs_off_then_gives_up_and_a_fresh_start_counts_afresh(gate):
    first = gate()
    assert first.returncode == 0 and read(gate.state)["unready"] == 1 and "backoff" not in first.stdout
    second = gate()
    # 0.2 s already waited by systemd: the gate's own backoff is 0 s (what it says it waits, not a timed bound on a
    # process that a loaded machine may start slowly)
    assert "backoff 0 s (try 2 of 3)" in second.stdout
    third = gate()
    assert "backoff 0 s (try 3 of 3)" in third.stdout and third.took >= 0.2  # 0.4 s, less the 0.2 s waited
    refused = gate()
    assert refused.returncode == 0  # the ExecStart wrapper refuses, so that RestartPreventExitStatus applies
    gave_up = gate.state.parent / "engine.crash.json.gave-up"
    assert "relaunch gate: gave up: the engine died before it was ready 3 times in a row" in refused.stdout
    assert gave_up.read_text() == refused.stdout.splitlines()[-1] + "\n"
    assert oct(gave_up.stat().st_mode & 0o777) == "0o644"  # the wrapper runs as the service user
    assert "gave up" in gate().stdout  # it stays refused until a manual start
    fresh = gate("--fresh")
    assert not gave_up.exists() and read(gate.state)["unready"] == 1 and "clear after" in fresh.stdout


def test_a_start_that_gets_ready_resets_the_count(gate):
    gate()
    gate()
    assert read(gate.state)["unready"] == 2

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def log_message(self, *_args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        ready = gate("--wait-ready", "http://127.0.0.1:%d/health" % server.server_address[1],
                     env={"MAINPID": str(os.getpid())})
    finally:
        server.shutdown()
    assert ready.returncode == 0 and "the engine is ready" in ready.stdout
    assert read(gate.state)["unready"] == 0
    assert "backoff" not in gate().stdout


def test_the_ready_wait_ends_when_the_engine_exits_before_ready(gate):
    dead = subprocess.Popen(["true"])
    dead.wait()
    out = gate("--wait-ready", "http://127.0.0.1:%d/health" % gate.port, env={"MAINPID": str(dead.pid)})
    assert out.returncode == 1 and "exited before it was ready" in out.stdout and out.took < 5
