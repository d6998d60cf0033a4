"""glm53.serving.vllm_metrics_info against the stand-in: reading the gauges, and the drain wait with a request in
flight (held by the emulated decode time), a refused connection, and the timeout in both modes."""
from __future__ import annotations

import threading
import time
import urllib.request

from ansible_collections.glm53.serving.plugins.module_utils._prometheus import parse, totals
from ansible_collections.glm53.serving.plugins.modules import vllm_metrics_info

TEXT = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="glm53-flash-awq"} 2.0
vllm:num_requests_running{engine="1",model_name="glm53-flash-awq"} 1.0
vllm:kv_cache_usage_perc{engine="0",model_name="a \\"quoted\\" name"} 0.25
vllm:bad_value{engine="0"} NaNish
"""


def test_parse_sums_series_and_reads_escaped_labels():
    samples = parse(TEXT)
    assert ("vllm:kv_cache_usage_perc", {"engine": "0", "model_name": 'a "quoted" name'}, 0.25) in samples
    assert totals(samples, ("vllm:num_requests_running", "absent")) == {"vllm:num_requests_running": 3.0}


TRICKY = r"""# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="glm53}flash",engine="0"} 2
vllm:num_requests_running{model_name="a,b=c",engine="1"} 1 1700000000000
vllm:num_requests_running{path="C:\\models\\glm",note="line\nbreak",q="say \"hi\""} 4
vllm:num_requests_running{} 5
vllm:num_requests_running{engine="2",} 6
vllm:num_requests_waiting +Inf
vllm:num_requests_waiting{engine="3"} NaN
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{le="0.5",model_name="m}"} 3
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m}"} 4
vllm:e2e_request_latency_seconds_sum{model_name="m}"} 1.5
vllm:e2e_request_latency_seconds_count{model_name="m}"} 4
"""


def test_parse_agrees_with_prometheus_client_on_escapes_braces_and_specials():
    import math

    from prometheus_client.parser import text_string_to_metric_families

    ours = parse(TRICKY)
    theirs = [(s.name, dict(s.labels), s.value) for fam in text_string_to_metric_families(TRICKY) for s in fam.samples]
    assert len(ours) == len(theirs) == 11

    def key(sample):
        name, labels, value = sample
        return (name, sorted(labels.items()), "nan" if math.isnan(value) else value)

    assert sorted(map(key, ours)) == sorted(map(key, theirs))
    assert ("vllm:num_requests_running", {"model_name": "glm53}flash", "engine": "0"}, 2.0) in ours
    assert totals(ours, ("vllm:num_requests_running",))["vllm:num_requests_running"] == 18.0


def test_reads_the_gauges(run_module, standin):
    r = run_module(vllm_metrics_info, {"base_url": standin.url})
    assert not r.failed and r["reachable"] and r["idle"]
    assert r["metrics"]["vllm:num_requests_running"] == 0.0 and "vllm:kv_cache_usage_perc" in r["metrics"]


def test_drain_waits_for_the_request_in_flight(run_module, standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_DECODE_S_PER_TOKEN": "0.002"}).start().wait_ready()
    done = {}

    def long_request():
        status, body = s.chat("Hello", max_tokens=1500, ignore_eos=True)
        done["at"], done["status"], done["tokens"] = time.monotonic(), status, body["usage"]["completion_tokens"]

    t = threading.Thread(target=long_request)
    t.start()
    time.sleep(0.5)
    r = run_module(vllm_metrics_info, {"base_url": s.url, "wait_idle": True, "timeout": 30, "interval": 0.2})
    finished_waiting = time.monotonic()
    t.join()
    assert not r.failed and r["idle"] and r["polls"] > 1 and r["waited_s"] >= 1.5
    assert done["status"] == 200 and done["tokens"] == 1500 and done["at"] <= finished_waiting


def running(s):
    """Requests the stand-in counts as running (its /metrics)."""
    with urllib.request.urlopen(s.url + "/metrics", timeout=10) as resp:
        samples = parse(resp.read().decode())
    return totals(samples, ("vllm:num_requests_running",)).get("vllm:num_requests_running", 0) > 0


def test_drain_timeout_fails_or_proceeds(run_module, standin_factory):
    # 60 s of emulated decoding: still in flight through both waits however loaded the machine is (the thread is
    # not joined; the stand-in is stopped under it at the end)
    s = standin_factory(env={"VLLM_STANDIN_DECODE_S_PER_TOKEN": "0.01"}).start().wait_ready()

    def in_flight():
        try:
            s.chat("Hello", max_tokens=6000, ignore_eos=True)
        except OSError:  # the stand-in is stopped under it at the end
            pass

    t = threading.Thread(target=in_flight, daemon=True)
    t.start()
    deadline = time.monotonic() + 30
    while not running(s) and time.monotonic() < deadline:  # the request has reached the engine
        time.sleep(0.1)
    r = run_module(vllm_metrics_info, {"base_url": s.url, "wait_idle": True, "timeout": 1, "interval": 0.2})
    assert r.failed and "1 request(s) still in flight" in r["msg"] and not r["idle"]
    r = run_module(vllm_metrics_info, {"base_url": s.url, "wait_idle": True, "timeout": 1, "interval": 0.2,
                                  "on_timeout": "proceed"})
    assert not r.failed and not r["idle"] and "they will be cut" in str(r.get("warnings"))


def test_a_stopped_server_counts_as_idle(run_module):
    from testlib import free_port
    r = run_module(vllm_metrics_info, {"base_url": "http://127.0.0.1:%d" % free_port(), "wait_idle": True})
    assert not r.failed and r["idle"] and not r["reachable"] and r["metrics"] == {}


def test_a_frozen_engine_fails_the_read_or_counts_as_nothing_in_flight(run_module, standin_factory):
    """SIGSTOP: /metrics accepts the connection and never answers. A plain read fails; a drain that may proceed
    counts nothing in flight (an engine that cannot answer serves nothing) and says why."""
    import os
    import signal
    s = standin_factory().start().wait_ready()
    os.kill(s.proc.pid, signal.SIGSTOP)
    try:
        r = run_module(vllm_metrics_info, {"base_url": s.url, "request_timeout": 1})
        assert r.failed and "accepted the connection and gave no answer within 1 s" in r["msg"]
        r = run_module(vllm_metrics_info, {"base_url": s.url, "wait_idle": True, "timeout": 60, "request_timeout": 1,
                                           "on_timeout": "fail"})
        assert r.failed
        r = run_module(vllm_metrics_info, {"base_url": s.url, "wait_idle": True, "timeout": 60, "request_timeout": 1,
                                           "on_timeout": "proceed"})
        assert not r.failed and r["idle"] and r["reachable"] and not r["answered"], r
        assert "gave no answer" in r["why"] and r["waited_s"] < 5
        assert "serves nothing: proceeding" in str(r.get("warnings")), r
    finally:
        os.kill(s.proc.pid, signal.SIGCONT)
