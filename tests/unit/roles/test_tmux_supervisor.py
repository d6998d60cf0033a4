"""The service role's tmux supervisor (roles/service/files/supervise.py) in a real tmux session, and
glm53.serving.vllm_health reading it: relaunch in the same session after a kill -9, a requested relaunch
that returns once the old engine is gone, a clean stop, and a fast failure when the engine keeps dying."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest

from testlib import REPO, free_port
from ansible_collections.glm53.serving.plugins.modules import vllm_health

SUPERVISE = os.path.join(REPO, "roles", "service", "files", "supervise.py")
GATE = os.path.join(REPO, "roles", "service", "files", "relaunch_gate.py")
PROCFS = os.path.join(REPO, "plugins", "module_utils", "_procfs.py")

if shutil.which("tmux") is None:  # pragma: no cover - hack/lib.sh installs tmux
    raise RuntimeError("tmux is needed for these tests (make test installs it)")


@pytest.fixture
def session(tmp_path):
    """start(script_body) -> config path; the session is killed afterwards whatever happened."""
    name = "glm53-test-%s" % uuid.uuid4().hex[:8]

    def start(body, restart_sec=1, crash_loop=False, port=None, ready=None):
        script = tmp_path / "engine.sh"
        script.write_text("#!/bin/bash\n" + body)
        script.chmod(0o755)
        env_file = tmp_path / "engine.env"
        env_file.write_text("# test\nGREETING='hello there'\n")
        env_file.chmod(0o600)
        cfg = {"name": name, "user": "root", "group": "root", "script": str(script), "env_file": str(env_file),
               "environment": {"FROM_ROLE": "yes"}, "gate": ["true"], "restart_sec": restart_sec,
               "stop_timeout": 5, "state_dir": str(tmp_path / "state")}
        if ready:
            cfg["ready"] = ready
        if crash_loop:  # the real gate, as the role installs it (a user with no processes, no GPUs here)
            (tmp_path / "libexec").mkdir()
            shutil.copy(GATE, tmp_path / "libexec" / "relaunch_gate.py")
            shutil.copy(PROCFS, tmp_path / "libexec" / "glm53_procfs.py")
            state = str(tmp_path / "state" / "engine.crash.json")
            base = [sys.executable, str(tmp_path / "libexec" / "relaunch_gate.py"), "--port", str(port), "--user", "nobody", "--crash-state", state]
            cfg.update(gate=base + ["--shm-dir", str(tmp_path), "--tries", "3", "--restart-sec", str(restart_sec),
                                    "--max-delay", "4", "--interval", "0.2"],
                       ready=base + ["--wait-ready", "http://127.0.0.1:%d/health" % port, "--interval", "0.2"],
                       crash_state=state, tries=3)
        path = tmp_path / "supervise.json"
        path.write_text(json.dumps(cfg))
        argv = ["tmux", "new-session", "-d", "-s", name, "-x", "200", "-y", "50",
                "%s %s run %s" % (sys.executable, SUPERVISE, path)]
        if subprocess.run(argv, check=False).returncode != 0:  # the shared tmux server exiting as another test ends
            time.sleep(0.5)
            subprocess.run(argv, check=True)
        return path

    start.name = name
    yield start
    subprocess.run(["tmux", "kill-session", "-t", "=" + name], capture_output=True, check=False)


def ctl(cfg, command):
    return subprocess.run([sys.executable, SUPERVISE, command, str(cfg)], capture_output=True, text=True,
                          timeout=60, check=False)


def status(cfg):
    return json.loads(ctl(cfg, "status").stdout)


def wait_for(predicate, timeout=15):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in %ss" % timeout)


def pane(name):
    return subprocess.run(["tmux", "capture-pane", "-p", "-J", "-t", "=%s:" % name, "-S", "-200"],
                          capture_output=True, text=True, check=False).stdout


def title(name):
    return subprocess.run(["tmux", "list-panes", "-s", "-t", "=" + name, "-F", "#{pane_title}"],
                          capture_output=True, text=True, check=False).stdout.strip()


def test_relaunch_in_the_same_session_after_kill_9(session):
    cfg = session('echo "engine up: $GREETING $FROM_ROLE"; exec sleep 600\n')
    first = wait_for(lambda: status(cfg)["engine"])
    supervisor = status(cfg)["supervisor"]
    assert title(session.name) == "glm53: running pid %d" % first
    os.kill(first, 9)
    second = wait_for(lambda: (status(cfg)["engine"] or first) != first and status(cfg)["engine"])
    assert status(cfg)["supervisor"] == supervisor  # the same loop in the same session relaunched it
    text = pane(session.name)
    assert "engine exited with status -9; relaunch in 1s" in text
    assert text.count("engine up: hello there yes") == 2
    assert "(launch 2)" in text and second != first


def test_requested_relaunch_returns_once_the_old_engine_is_gone_and_stop_ends_the_session(session):
    cfg = session("exec sleep 600\n", restart_sec=30)  # a requested relaunch must not wait restart_sec
    first = wait_for(lambda: status(cfg)["engine"])
    t0 = time.monotonic()
    r = ctl(cfg, "restart")
    assert r.returncode == 0, r.stderr
    with pytest.raises(OSError):
        os.kill(first, 0)
    second = wait_for(lambda: status(cfg)["engine"])
    assert second != first and time.monotonic() - t0 < 10
    assert "engine stopped for a relaunch" in pane(session.name)
    r = ctl(cfg, "stop")
    assert r.returncode == 0, r.stderr
    with pytest.raises(OSError):
        os.kill(second, 0)
    wait_for(lambda: subprocess.run(["tmux", "has-session", "-t", "=" + session.name],
                                    capture_output=True, check=False).returncode != 0)


def test_killing_the_session_stops_the_engine_too(session):
    """`tmux kill-session` closes the pane's terminal and sends SIGHUP: the supervisor's handler must still stop the
    engine (which runs in a process group of its own), though its pane can no longer be written to."""
    cfg = session("exec sleep 600\n")
    engine = wait_for(lambda: status(cfg)["engine"])
    subprocess.run(["tmux", "kill-session", "-t", "=" + session.name], check=True)

    def gone():
        try:
            os.kill(engine, 0)
        except OSError:
            return True
        return False
    wait_for(gone, timeout=10)


def test_a_crash_loop_stops_with_a_reason_and_vllm_health_fails_right_after(session, run_module):
    port = free_port()
    cfg = session('echo "RuntimeError: CUDA out of memory (test)"; exit 1\n', crash_loop=True, port=port)
    t0 = time.monotonic()
    r = run_module(vllm_health, {"base_url": "http://127.0.0.1:%d" % port, "served_model_name": "m",
                                 "timeout": 60, "interval": 0.2, "service_manager": "tmux",
                                 "service_name": session.name})
    took = time.monotonic() - t0
    assert r.failed and took < 20, (took, r["msg"])  # tries 3, backoff 1 s then 2 s; not the 60 s timeout
    assert "stopped relaunching the engine (glm53: gave up after 3 starts died before ready" in r["msg"], r["msg"]
    text = pane(session.name)
    assert text.count("CUDA out of memory (test)") == 3, text
    assert "backoff 1 s (try 2 of 3)" in text and "backoff 2 s (try 3 of 3)" in text
    assert "relaunch gate: gave up: the engine died before it was ready 3 times in a row" in text
    assert status(cfg)["engine"] is None and status(cfg)["launches"] == 3
    # a requested relaunch (the playbook after a fix) starts the count afresh
    assert ctl(cfg, "restart").returncode == 0
    wait_for(lambda: pane(session.name).count("CUDA out of memory (test)") == 4)


def test_relaunches_that_get_ready_never_count_as_a_crash_loop(session, tmp_path):
    port = free_port()
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "health").write_text("ok")  # http.server answers GET /health with 200
    cfg = session('exec %s -m http.server --bind 127.0.0.1 %d --directory %s\n'
                  % (sys.executable, port, tmp_path / "www"), crash_loop=True, port=port)
    for cycle in range(1, 6):  # more kills than tries: each relaunch got ready, so none counts
        engine = wait_for(lambda: status(cfg)["engine"])
        wait_for(lambda: pane(session.name).count("the engine is ready") >= cycle, 20)
        state = json.loads((tmp_path / "state" / "engine.crash.json").read_text())
        assert state["unready"] == 0, state
        os.kill(engine, 9)
        wait_for(lambda: (status(cfg)["engine"] or engine) != engine)
    assert "gave up" not in pane(session.name) and "backoff" not in pane(session.name)
    assert status(cfg)["restarts"] == 5


def test_vllm_health_reports_a_missing_session(run_module):
    r = run_module(vllm_health, {"base_url": "http://127.0.0.1:%d" % free_port(), "served_model_name": "m",
                                 "timeout": 30, "service_manager": "tmux", "service_name": "glm53-no-such-session"})
    assert r.failed and "tmux session glm53-no-such-session is gone" in r["msg"]


def test_a_requested_relaunch_runs_the_configuration_as_it_is_now(session):
    """The role rewrites the configuration (service_environment, the user, the gate, the tries) and asks for a
    relaunch: the new engine must get the new values, as systemctl daemon-reload + restart gives them."""
    cfg = session('echo "engine up: FROM_ROLE=$FROM_ROLE"; exec sleep 600\n', restart_sec=30)
    first = wait_for(lambda: status(cfg)["engine"])
    data = json.loads(cfg.read_text())
    data["environment"] = {"FROM_ROLE": "changed"}
    cfg.write_text(json.dumps(data))
    r = ctl(cfg, "restart")
    assert r.returncode == 0, r.stderr
    second = wait_for(lambda: status(cfg)["engine"] not in (None, first) and status(cfg)["engine"])
    assert status(cfg)["supervisor"] and second != first
    text = wait_for(lambda: "FROM_ROLE=changed" in pane(session.name) and pane(session.name))
    assert "engine up: FROM_ROLE=yes" in text and "configuration %s reread" % cfg in text, text
    # An unreadable file keeps the configuration the supervisor has, and says so ("restart" itself needs the
    # file, so the request is the signal it sends).
    supervisor = status(cfg)["supervisor"]
    cfg.write_text("{not json")
    os.kill(supervisor, signal.SIGUSR1)
    wait_for(lambda: "relaunching with the configuration it started with" in pane(session.name))
    wait_for(lambda: pane(session.name).count("FROM_ROLE=changed") == 2)


def test_a_ready_engine_that_stops_answering_is_frozen_not_loading(session, run_module):
    """The pane is titled ready once the ready check passes; then an engine that accepts connections and never
    answers (a listening socket nobody reads, as a SIGSTOPped vLLM) fails vllm_health at once as frozen."""
    port = free_port()
    cfg = session("exec %s -c 'import socket, time; s = socket.socket(); s.bind((\"127.0.0.1\", %d)); s.listen(8); "
                  "time.sleep(600)'\n" % (sys.executable, port), ready=["true"])
    engine = wait_for(lambda: status(cfg)["engine"])
    wait_for(lambda: title(session.name) == "glm53: ready pid %d" % engine)
    t0 = time.monotonic()
    r = run_module(vllm_health, {"base_url": "http://127.0.0.1:%d" % port, "served_model_name": "m", "timeout": 600,
                                 "frozen_deadline": 2, "service_manager": "tmux", "service_name": session.name})
    assert r.failed and r["frozen"] is True and time.monotonic() - t0 < 8, r
    assert "frozen" in r["msg"]
