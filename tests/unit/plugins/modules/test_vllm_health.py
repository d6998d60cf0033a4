"""glm53.serving.vllm_health against the stand-in engine, in good and bad behaviours."""
from __future__ import annotations

import time

from ansible_collections.glm53.serving.plugins.modules import vllm_health


def args(s, **extra):
    return {"base_url": s.url, "served_model_name": "glm53-flash-awq", "max_model_len": 524288,
            "pid": s.proc.pid, "log_file": str(s.log), "timeout": 60, **extra}


def test_waits_through_the_load_and_passes_every_layer(run_module, standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_LOAD_DELAY": "2"}).start()
    t0 = time.monotonic()
    r = run_module(vllm_health, args(s))
    assert not r.failed, r.get("msg")
    assert r["ready"] and r["layers"] == {"health": "passed", "models": "passed", "auth": "skipped", "chat": "passed"}
    assert 1.5 < r["load_time_s"] < 5 and time.monotonic() - t0 < 8
    assert r["models"] == ["glm53-flash-awq"] and r["max_model_len"] == 524288 and r["changed"] is False


def test_wrong_context_is_caught(run_module, standin):
    r = run_module(vllm_health, args(standin, max_model_len=1048576))
    assert r.failed and r["layers"]["models"] == "failed"
    assert "reports max_model_len 524288, configured 1048576" in r["msg"]


def test_wrong_served_name_is_caught(run_module, standin):
    r = run_module(vllm_health, args(standin, served_model_name="glm53"))
    assert r.failed and "serves ['glm53-flash-awq'], not glm53" in r["msg"]


def test_server_dying_during_load_fails_fast_with_log_lines(run_module, standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_LOAD_DELAY": "1"}, flags=[
        "--served-model-name", "glm53-flash-awq", "--host", "127.0.0.1", "--kv-cache-dtype", "fp8"]).start()
    t0 = time.monotonic()
    r = run_module(vllm_health, args(s, timeout=600))
    took = time.monotonic() - t0
    assert r.failed and took < 10, "waited %.1f s instead of failing fast" % took
    assert "died while loading" in r["msg"] and r["layers"]["health"] == "failed"
    assert any("FP8 kv_data_type for MLA is only supported" in line for line in r["log_tail"])


def test_engine_death_gives_503_and_fails_at_once(run_module, standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_DIE_AFTER": "1", "VLLM_STANDIN_WATCHDOG_S": "30"}).start().wait_ready()
    assert s.chat("Hello")[0] == 200  # the engine dies after this request
    t0 = time.monotonic()
    r = run_module(vllm_health, args(s, timeout=600))
    assert r.failed and time.monotonic() - t0 < 5
    assert "/health answered 503" in r["msg"]
    assert any("EngineCore encountered a fatal error" in line for line in r["log_tail"])


def test_timeout_when_nothing_ever_listens(run_module, tmp_path):
    from testlib import free_port
    r = run_module(vllm_health, {"base_url": "http://127.0.0.1:%d" % free_port(), "served_model_name": "m",
                                 "timeout": 2, "log_file": str(tmp_path / "none.log")})
    assert r.failed and "No healthy server" in r["msg"] and "connection refused" in r["msg"]


def test_api_key_is_used_and_wrong_key_is_reported(run_module, standin_factory):
    s = standin_factory(env={"VLLM_API_KEY": "k3y"}).start().wait_ready()
    r = run_module(vllm_health, args(s, api_key="k3y"))
    assert not r.failed and r["layers"]["auth"] == "passed", r
    r = run_module(vllm_health, args(s, api_key="nope"))
    assert r.failed and "401" in r["msg"] and "nope" not in r["msg"]


def test_a_frozen_engine_fails_within_one_deadline_not_the_load_timeout(run_module, standin_factory):
    """SIGSTOP: the process alive, its port accepting connections (the kernel's backlog), no answer."""
    import os
    import signal
    s = standin_factory().start().wait_ready()
    os.kill(s.proc.pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        r = run_module(vllm_health, args(s, timeout=600, frozen_deadline=2))
        took = time.monotonic() - t0
    finally:
        os.kill(s.proc.pid, signal.SIGCONT)
    assert r.failed and r["frozen"] is True and r["layers"]["health"] == "failed"
    assert 2 <= took < 6, "took %.1f s for a 2 s deadline" % took
    assert "frozen" in r["msg"] and "frozen_deadline" in r["msg"]
    # thawed, the same engine passes, and a load (connection refused) is never called frozen
    assert not run_module(vllm_health, args(s, frozen_deadline=2)).failed
    loading = standin_factory(env={"VLLM_STANDIN_LOAD_DELAY": "3"}).start()
    r = run_module(vllm_health, args(loading, frozen_deadline=2))
    assert not r.failed and r["frozen"] is False and r["load_time_s"] >= 2.5


def test_an_engine_that_serves_without_its_key_fails_naming_it(run_module, standin_factory):
    """The key is configured on the controller, and the engine was started without it (a unit line that unsets it,
    a lost environment file): every request is answered, so the probes must ask without the key too."""
    s = standin_factory().start().wait_ready()
    r = run_module(vllm_health, args(s, api_key="k3y"))
    assert r.failed and r["layers"]["auth"] == "failed" and r["layers"]["chat"] == "not run", r
    assert r["msg"].startswith("key_not_enforced: /v1/models answered with no key"), r["msg"]
    assert "k3y" not in r["msg"]


def test_a_frozen_engine_under_traffic_is_frozen_not_loading(run_module, standin_factory, tmp_path, monkeypatch):
    """SIGSTOP while other clients keep connecting: the listen queue fills and the kernel accepts no new connection,
    so /health's own connection times out. On a unit that was ready (systemd: active, running) that is a freeze, not a
    load; the same timeout on a unit still activating (a load after a relaunch) is waited on."""
    import os
    import signal
    from testlib import fill_listen_queue
    state = tmp_path / "state"
    stub = tmp_path / "bin" / "systemctl"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\n[ \"$1\" = show ] && cat %s\nexit 0\n" % state)
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (stub.parent, os.environ["PATH"]))
    s = standin_factory().start().wait_ready()
    os.kill(s.proc.pid, signal.SIGSTOP)
    held = fill_listen_queue(s.port)
    try:
        systemd = args(s, service_manager="systemd", service_name="vllm-glm53.service", frozen_deadline=2)
        state.write_text("ActiveState=active\nSubState=running\n")
        t0 = time.monotonic()
        r = run_module(vllm_health, dict(systemd, timeout=20))
        took = time.monotonic() - t0
        assert r.failed and r["frozen"] is True and r["layers"]["health"] == "failed", r["msg"]
        assert took < 8, "took %.1f s for a 2 s deadline" % took
        assert "not even accepted in 2 s" in r["msg"] and "listen queue is full" in r["msg"]
        state.write_text("ActiveState=activating\nSubState=start-post\n")
        r = run_module(vllm_health, dict(systemd, timeout=5))
        assert r.failed and r["frozen"] is False and "No healthy server" in r["msg"], r["msg"]
        assert "the connection not accepted within 2 s" in r["msg"]
    finally:
        os.kill(s.proc.pid, signal.SIGCONT)
        for sock in held:
            sock.close()
    assert len(held) >= 1
