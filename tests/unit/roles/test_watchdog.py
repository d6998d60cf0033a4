"""The wedge watchdog (roles/service/files/watchdog.py) against the stand-in, with a systemctl that records what it
is asked (the real timer and unit are molecule default's watchdog story): an answering engine resets the count, a
wedge restarts after --failures checks in a row, the budget per hour holds, and a dead or stopped engine is left to
systemd."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from testlib import REPO

WATCHDOG = os.path.join(REPO, "roles", "service", "files", "watchdog.py")


def run(tmp_path, url, active="active", **opts):
    stub = tmp_path / "systemctl"
    stub.write_text("#!/bin/sh\necho \"$@\" >>%s\n[ \"$1\" = is-active ] && echo %s\nexit 0\n" % (
        tmp_path / "calls", active))
    stub.chmod(0o755)
    argv = [sys.executable, WATCHDOG, "--unit", "vllm-glm53.service", "--url", url, "--model", "glm53-flash-awq",
            "--state", str(tmp_path / "state.json"), "--deadline", "2", "--failures", "2", "--max-restarts", "1",
            "--textfile-dir", str(tmp_path), "--systemctl", str(stub)]
    for key, value in opts.items():
        argv += ["--" + key.replace("_", "-"), str(value)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout


def calls(tmp_path):
    path = tmp_path / "calls"
    return [line.split()[0] for line in path.read_text().splitlines()] if path.exists() else []


def metrics(tmp_path):
    text = (tmp_path / "glm53_watchdog.prom").read_text()
    return {line.split("{")[0] + ("" if "result" not in line else "_" + line.split('result="')[1].split('"')[0]):
            float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if not line.startswith("#")}


def test_a_wedge_is_restarted_after_the_failures_in_a_row_and_the_budget_holds(standin_factory, tmp_path):
    s = standin_factory(env={"VLLM_STANDIN_WEDGE_AFTER": "1"}).start().wait_ready()
    assert run(tmp_path, s.url) == ""  # the first chat answers (the wedge starts after it): nothing to say
    out = run(tmp_path, s.url)
    assert "wedged: check 1 of 2 failed: /health 200, but a one-token chat got no answer" in out, out
    assert "restart" not in calls(tmp_path)
    out = run(tmp_path, s.url)
    assert "wedged: check 2 of 2 failed" in out and "restarting vllm-glm53.service through the relaunch gate" in out, out
    assert "(restart 1 of at most 1 an hour)" in out and "systemctl restart vllm-glm53.service: queued" in out
    assert calls(tmp_path).count("restart") == 1
    m = metrics(tmp_path)
    assert m["glm53_watchdog_restarts_total"] == 1 and m["glm53_watchdog_consecutive_failures"] == 0
    # the stand-in did not really restart: the wedge goes on, and the hour's budget (1) is spent
    run(tmp_path, s.url)
    out = run(tmp_path, s.url)
    assert "the restart budget is spent (1 restarts in the last hour, at most 1)" in out, out
    assert calls(tmp_path).count("restart") == 1
    assert metrics(tmp_path)["glm53_watchdog_budget_exhausted"] == 1
    assert "budget" not in run(tmp_path, s.url)  # said once, not every minute
    assert metrics(tmp_path)["glm53_watchdog_checks_total_wedged"] == 5


def test_an_answering_engine_resets_the_count(standin_factory, tmp_path):
    s = standin_factory().start().wait_ready()
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"failures": 1, "restarts": [], "restarts_total": 0}))
    out = run(tmp_path, s.url)
    assert "ok: a one-token chat answered" in out and "the count of failed checks (1) starts again" in out, out
    assert json.loads(state.read_text())["failures"] == 0 and metrics(tmp_path)["glm53_watchdog_checks_total_ok"] == 1


def test_a_stopped_or_unhealthy_engine_is_left_to_systemd(standin_factory, tmp_path):
    run(tmp_path, "http://127.0.0.1:9", active="activating")
    run(tmp_path, "http://127.0.0.1:9")  # active, but nothing answers /health: loading or dying, not a wedge
    m = metrics(tmp_path)
    assert m["glm53_watchdog_checks_total_inactive"] == 1 and m["glm53_watchdog_checks_total_not_ready"] == 1
    assert calls(tmp_path) == ["is-active", "is-active"]


def test_a_frozen_engine_is_restarted_and_a_loading_one_never(standin_factory, tmp_path):
    """SIGSTOP: the port accepts connections and nothing answers. On the active unit (which it is only once ready)
    that is a freeze; the same silence while the unit is activating (a load after a restart) is left alone."""
    import signal
    s = standin_factory().start().wait_ready()
    os.kill(s.proc.pid, signal.SIGSTOP)
    try:
        out = run(tmp_path, s.url, active="activating")
        assert out == "" and calls(tmp_path) == ["is-active"]
        out = run(tmp_path, s.url)
        assert "frozen: check 1 of 2 failed: /health accepted the connection and gave no answer within the 2 s deadline" in out, out
        out = run(tmp_path, s.url)
        assert "frozen: check 2 of 2 failed" in out and "systemctl restart vllm-glm53.service: queued" in out, out
        assert calls(tmp_path).count("restart") == 1
        m = metrics(tmp_path)
        assert m["glm53_watchdog_checks_total_frozen"] == 2 and m["glm53_watchdog_checks_total_inactive"] == 1
    finally:
        os.kill(s.proc.pid, signal.SIGCONT)


def test_a_frozen_engine_under_traffic_is_frozen_not_not_ready(standin_factory, tmp_path):
    """SIGSTOP while other clients keep connecting: the listen queue is full and /health's own connection is not
    accepted within the deadline. On the active unit that is a freeze (restarted after the failures in a row), not
    an engine still loading, which refuses connections instead."""
    import signal
    from testlib import fill_listen_queue
    s = standin_factory().start().wait_ready()
    os.kill(s.proc.pid, signal.SIGSTOP)
    held = fill_listen_queue(s.port)
    try:
        out = run(tmp_path, s.url)
        assert "frozen: check 1 of 2 failed: /health's connection was not accepted within the 2 s deadline" in out, out
        out = run(tmp_path, s.url)
        assert "frozen: check 2 of 2 failed" in out and "systemctl restart vllm-glm53.service: queued" in out, out
        m = metrics(tmp_path)
        assert m["glm53_watchdog_checks_total_frozen"] == 2 and m.get("glm53_watchdog_checks_total_not_ready", 0) == 0
    finally:
        os.kill(s.proc.pid, signal.SIGCONT)
        for sock in held:
            sock.close()
