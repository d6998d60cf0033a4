"""Benchmark the probes against the vLLM stand-in (tests/standin), printing figures; it asserts nothing.

    python hack/bench_probes.py [--runs 5]

- readiness detection delay: how long after the server starts listening vllm_health returns ready
  (a side thread connects every 10 ms to see the moment the port opens);
- haystack sizing: /tokenize calls and sizing error for 100K and 450K targets (the stand-in's tokenizer);
- client CPU time to build a 450K-token haystack prompt;
- probe time on a good host: vllm_chat_probe (the card's prompts and the verifiable tasks in one batch, the relevance
  scores), vllm_reference_score, then vllm_needle at 100K tokens (5 depths and the control), wall seconds per run and
  each part's (the verdict code is part of it; the stand-in answers at once);
- the reference scoring's own cost: passages, prompt tokens scored (one prefill each), seconds;
- the chat probe set judged three ways, on a stand-in that takes time to decode and prefill as an engine does
  (--decode-s per generated token, --prefill-s per prompt token): by the text checks with the relevance scores, the
  same run scoring its answers for a golden record (a release's first proof), and judged by that record.
Run from a venv with ansible-core and the stand-in installed (make test's venv: /var/tmp/glm53-ci/venv).
"""
import argparse
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from testlib import StandIn, run_module_here as run_module  # noqa: E402  (also makes the collection importable)
from ansible_collections.glm53.serving.plugins.module_utils._needle import Haystack, size_haystack  # noqa: E402
from ansible_collections.glm53.serving.plugins.module_utils._openai_client import OpenAIClient  # noqa: E402
from ansible_collections.glm53.serving.plugins.modules import (  # noqa: E402
    vllm_chat_probe,
    vllm_health,
    vllm_needle,
    vllm_reference_score,
)


def readiness_delay(tmp):
    s = StandIn(tmp, env={"VLLM_STANDIN_LOAD_DELAY": "3"}).start()
    opened = {}

    def watch():
        while "t" not in opened:
            try:
                socket.create_connection(("127.0.0.1", s.port), timeout=0.05).close()
                opened["t"] = time.monotonic()
            except OSError:
                time.sleep(0.01)

    threading.Thread(target=watch, daemon=True).start()
    r = run_module(vllm_health, {"base_url": s.url, "served_model_name": "glm53-flash-awq", "chat_check": False,
                                 "pid": s.proc.pid, "timeout": 60})
    done = time.monotonic()
    s.stop()
    assert r.get("ready"), r
    return done - opened["t"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--decode-s", type=float, default=0.01, help="emulated decode seconds per generated token")
    ap.add_argument("--prefill-s", type=float, default=0.0001, help="emulated prefill seconds per prompt token")
    a = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-probes-"))
    delays = []
    for i in range(a.runs):
        d = base / ("r%d" % i)
        d.mkdir()
        delays.append(readiness_delay(d))
    print("readiness detection delay after the port opens (poll interval 0.5 s), %d runs: median %.3f s, max %.3f s"
          % (a.runs, statistics.median(delays), max(delays)))

    (base / "tok").mkdir()
    s = StandIn(base / "tok").start().wait_ready()
    client = OpenAIClient(s.url)

    def count(text):
        return client.post("/tokenize", {"messages": [{"role": "user", "content": text}]})[1]["count"]

    limit = 524288 - 4096 - 256
    for target in (100000, 450000):
        calls, errors = [], []
        for seed in range(a.runs):
            n, tokens, c = size_haystack(count, Haystack(seed), target, limit)
            calls.append(c)
            errors.append(100.0 * (tokens - target) / target)
        print("sizing %6d tokens, %d seeds: /tokenize calls max %d (mean %.1f), error max |%.3f|%% (mean %+.3f%%)"
              % (target, a.runs, max(calls), statistics.mean(calls), max(abs(e) for e in errors), statistics.mean(errors)))
    s.stop()

    h = Haystack(1)
    n = size_haystack(count_local, h, 450000, limit)[0]
    fresh = Haystack(1)  # sentences are generated on first use: time generation and assembly together
    t0 = time.process_time()
    prompt = fresh.prompt(n, 50)
    cpu = time.process_time() - t0
    print("client CPU time to build a 450K-token haystack prompt (%d sentences, %.1f MB): %.3f s"
          % (n, len(prompt.encode()) / 1e6, cpu))
    (base / "probe").mkdir()
    s = StandIn(base / "probe").start().wait_ready()
    walls, parts = [], {"chat": [], "reference": [], "needle": []}
    for seed in range(a.runs):
        t0 = time.monotonic()
        chat = run_module(vllm_chat_probe, {"base_url": s.url, "model": "glm53-flash-awq"})
        t1 = time.monotonic()
        ref = run_module(vllm_reference_score, {"base_url": s.url, "served_model_name": "glm53-flash-awq"})
        t2 = time.monotonic()
        needle = run_module(vllm_needle, {"base_url": s.url, "model": "glm53-flash-awq", "targets": [100000],
                                          "seed": seed})
        walls.append(time.monotonic() - t0)
        parts["chat"].append(t1 - t0)
        parts["reference"].append(t2 - t1)
        parts["needle"].append(walls[-1] - (t2 - t0))
        assert chat["passed"] and ref["passed"] and needle["passed"], (chat.get("msg"), ref.get("msg"), needle.get("msg"))
    s.stop()
    print("probe time on a good host (chat probe with its verifiable batch and relevance scores + reference scoring + "
          "needle at 100K, 5 depths + control), %d runs: median %.2f s, min %.2f s, max %.2f s"
          % (a.runs, statistics.median(walls), min(walls), max(walls)))
    print("  of it, medians: chat probe %.2f s (%d answers in one batch, then the relevance and record scoring), "
          "reference scoring %.2f s, needle %.2f s" % (statistics.median(parts["chat"]), len(chat["probes"]),
                                                       statistics.median(parts["reference"]),
                                                       statistics.median(parts["needle"])))
    print("reference scoring: %d passages, one prefill each (%s prompt tokens scored), %.3f s in the module"
          % (len(ref["passages"]), ", ".join("%s %d" % (k, v["tokens"]) for k, v in sorted(ref["passages"].items())),
             ref["seconds"]))
    chat_modes(base, a)
    print("cores: %d" % os.cpu_count())


def chat_modes(base, a):
    """The chat probe set's wall time judged by the text checks (with relevance), recording, and by the record."""
    (base / "modes").mkdir()
    s = StandIn(base / "modes", env={"VLLM_STANDIN_DECODE_S_PER_TOKEN": str(a.decode_s),
                                     "VLLM_STANDIN_PREFILL_S_PER_TOKEN": str(a.prefill_s)}).start().wait_ready()
    args = {"base_url": s.url, "served_model_name": "glm53-flash-awq", "probe_set": "bench/GLM"}
    golden = {"release": "bench", "probes": run_module(vllm_chat_probe, dict(args, record=True))["answers"]}
    modes = (("text checks and relevance scores", dict(args, record=False)), ("recording", dict(args, record=True)),
             ("by the golden record", dict(args, golden=golden)))
    times = dict((name, []) for name, _args in modes)
    for _run in range(a.runs):
        for name, margs in modes:
            t0 = time.monotonic()
            r = run_module(vllm_chat_probe, margs)
            times[name].append(time.monotonic() - t0)
            assert r["passed"], r.get("msg")
    s.stop()
    first = statistics.median(times[modes[0][0]])
    print("chat probe set, %d runs, decode %.3f s/token, prefill %.5f s/token (medians): %s" % (
        a.runs, a.decode_s, a.prefill_s, "; ".join("%s %.2f s (%.2fx)" % (name, statistics.median(t),
                                                                          statistics.median(t) / first)
                                                   for name, t in times.items())))


def count_local(text):
    from vllm.standin.tokenizer import Tokenizer, render_chat
    return Tokenizer().count(render_chat([{"role": "user", "content": text}]))


if __name__ == "__main__":
    main()
