# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The engine's watchdog (a systemd timer's oneshot service; standard library only). systemd restarts an engine
that dies, and the relaunch gate gives up on a crash loop; neither sees an engine that is alive and stuck: frozen
(the process stopped or its event loop hung: the port accepts connections, nothing answers) or wedged (/health
answers 200 while generation hangs: a stalled NCCL rank, a hung kernel). Each run:

1. the unit not active: nothing to do (systemd and the relaunch gate own a dead engine, and one still loading:
   the unit is `activating` until its ready check passes, so a load is never taken for a freeze);
2. /health accepts the connection and gives no answer within the deadline, or does not even accept the connection
   within it (a stopped engine whose listen queue other clients have filled), on the active unit (which was ready):
   frozen, one failed check;
3. /health refused or not 200: not stuck (dying: systemd restarts it);
4. /health 200: a one-token chat completion with the deadline. An answer resets the count of failed checks;
   no answer (or an error) counts one (wedged).
After --failures failed checks in a row, the unit is restarted through the relaunch gate (systemctl restart runs
its ExecStartPre), at most --max-restarts times in any hour. A freeze or wedge past the budget is logged and left
for playbooks/heal.yml or a person.

Every action and every change of state is one line on stdout (the journal of the watchdog's unit); the counts
are in a node_exporter textfile (--textfile-dir, skipped when the folder is missing).

    python3 watchdog.py --unit vllm-glm53.service --url http://127.0.0.1:8000 --model NAME --state FILE
        [--deadline 30] [--failures 3] [--max-restarts 2] [--ca FILE] [--textfile-dir DIR]
The API key comes from VLLM_API_KEY (the unit reads the engine's environment file).
"""
import argparse
import json
import os
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

HOUR = 3600


def say(msg):
    print("glm53 watchdog: " + msg, flush=True)


def load_state(path):
    try:
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
    except (OSError, ValueError):
        state = {}
    state.setdefault("failures", 0)
    state.setdefault("restarts", [])
    state.setdefault("restarts_total", 0)
    state.setdefault("checks", {"ok": 0, "wedged": 0, "frozen": 0, "not_ready": 0, "inactive": 0})
    state["checks"].setdefault("frozen", 0)
    state.setdefault("budget_spent", False)
    return state


def save_state(path, state):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state, f)
    os.replace(tmp, path)


def write_textfile(folder, unit, state, now):
    if not folder or not os.path.isdir(folder):
        return
    lab = 'unit="%s"' % unit
    lines = ["# HELP glm53_watchdog_checks_total Watchdog runs by what they found.",
             "# TYPE glm53_watchdog_checks_total counter"]
    lines += ['glm53_watchdog_checks_total{%s,result="%s"} %d' % (lab, k, v) for k, v in sorted(state["checks"].items())]
    lines += ["# HELP glm53_watchdog_restarts_total Restarts of a wedged engine by the watchdog.",
              "# TYPE glm53_watchdog_restarts_total counter",
              "glm53_watchdog_restarts_total{%s} %d" % (lab, state["restarts_total"]),
              "# HELP glm53_watchdog_consecutive_failures Failed wedge checks in a row.",
              "# TYPE glm53_watchdog_consecutive_failures gauge",
              "glm53_watchdog_consecutive_failures{%s} %d" % (lab, state["failures"]),
              "# HELP glm53_watchdog_budget_exhausted 1 while a wedge is left alone because the hour's restarts are spent.",
              "# TYPE glm53_watchdog_budget_exhausted gauge",
              "glm53_watchdog_budget_exhausted{%s} %d" % (lab, 1 if state["budget_spent"] else 0),
              "# HELP glm53_watchdog_last_run_timestamp_seconds When the watchdog last looked.",
              "# TYPE glm53_watchdog_last_run_timestamp_seconds gauge",
              "glm53_watchdog_last_run_timestamp_seconds{%s} %d" % (lab, now)]
    path = os.path.join(folder, "glm53_watchdog.prom")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(path + ".tmp", 0o644)
    os.replace(path + ".tmp", path)


def request(url, deadline, ctx, api_key, body=None):
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = "Bearer " + api_key
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                 headers=headers, method="GET" if body is None else "POST")
    with urllib.request.urlopen(req, timeout=deadline, context=ctx) as resp:
        return resp.status, resp.read()


def check(a, ctx, api_key):
    """('inactive' | 'not_ready' | 'ok' | 'frozen' | 'wedged', why)."""
    active = subprocess.run([a.systemctl, "is-active", a.unit], capture_output=True, text=True,
                            check=False).stdout.strip()
    if active != "active":
        return "inactive", "unit %s is %s" % (a.unit, active or "unknown")
    try:
        status, _body = request(a.url + "/health", a.deadline, ctx, None)
    except urllib.error.HTTPError as exc:
        return "not_ready", "/health answered %s" % exc.code
    except urllib.error.URLError as exc:  # the connection was not made (refused, or its own timeout)
        if isinstance(exc.reason, (socket.timeout, TimeoutError)):  # the port listens and takes nothing
            return "frozen", "/health's connection was not accepted within the %g s deadline, on the active unit " \
                "(its listen queue is full: clients keep connecting to an engine that takes none of them)" % a.deadline
        return "not_ready", "/health: %s" % exc.reason
    except TimeoutError:  # made, and not answered (urllib wraps only the connection's errors)
        # the deadline, not the time measured: a loaded host's clock reading rounds either way
        return "frozen", "/health accepted the connection and gave no answer within the %g s deadline, on the active " \
            "unit" % a.deadline
    except (OSError, ValueError) as exc:
        return "not_ready", "/health: %s" % getattr(exc, "reason", exc)
    if status != 200:
        return "not_ready", "/health answered %s" % status
    t0 = time.monotonic()
    try:
        status, body = request(a.url + "/v1/chat/completions", a.deadline, ctx, api_key, {
            "model": a.model, "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]})
        usage = json.loads(body).get("usage") or {}
        if usage.get("completion_tokens") != 1:
            return "wedged", "a one-token chat returned %r tokens" % usage.get("completion_tokens")
    except urllib.error.HTTPError as exc:
        if exc.code < 500:  # a key or a name that does not match: a configuration problem the probes name
            return "not_ready", "a one-token chat answered HTTP %s (not a wedge)" % exc.code
        return "wedged", "/health 200, but a one-token chat answered HTTP %s" % exc.code
    except (OSError, ValueError) as exc:
        return "wedged", "/health 200, but a one-token chat got no answer in %.0f s (%s)" % (
            time.monotonic() - t0, getattr(exc, "reason", exc))
    return "ok", "a one-token chat answered in %.1f s" % (time.monotonic() - t0)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--unit", required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--state", required=True)
    p.add_argument("--deadline", type=float, default=30)
    p.add_argument("--failures", type=int, default=3)
    p.add_argument("--max-restarts", type=int, default=2)
    p.add_argument("--ca", default="")
    p.add_argument("--textfile-dir", default="")
    p.add_argument("--systemctl", default="systemctl")
    a = p.parse_args(argv)
    ctx = ssl.create_default_context(cafile=a.ca or None) if a.url.startswith("https:") else None
    now = time.time()
    state = load_state(a.state)
    found, why = check(a, ctx, os.environ.get("VLLM_API_KEY", ""))
    state["checks"][found] = state["checks"].get(found, 0) + 1
    state["restarts"] = [t for t in state["restarts"] if now - t < HOUR]
    if found not in ("wedged", "frozen"):
        if state["failures"] or state["budget_spent"]:
            say("%s: %s; the count of failed checks (%d) starts again" % (found, why, state["failures"]))
        state["failures"], state["budget_spent"] = 0, False
    else:
        state["failures"] += 1
        say("%s: check %d of %d failed: %s" % (found, state["failures"], a.failures, why))
        if state["failures"] >= a.failures:
            if len(state["restarts"]) >= a.max_restarts:
                if not state["budget_spent"]:
                    say("%s, but the restart budget is spent (%d restarts in the last hour, at most %d): "
                        "the engine is left as it is for playbooks/heal.yml or a person" % (
                            found, len(state["restarts"]), a.max_restarts))
                state["budget_spent"] = True
            else:
                nth = len(state["restarts"]) + 1
                say("restarting %s through the relaunch gate after %d failed checks in a row "
                    "(restart %d of at most %d an hour)" % (a.unit, state["failures"], nth, a.max_restarts))
                state["restarts"].append(now)
                state["restarts_total"] += 1
                state["failures"] = 0
                save_state(a.state, state)  # before the restart, which may take minutes
                rc = subprocess.run([a.systemctl, "restart", "--no-block", a.unit], check=False).returncode
                say("systemctl restart %s: %s" % (a.unit, "queued" if rc == 0 else "failed with status %d" % rc))
    save_state(a.state, state)
    write_textfile(a.textfile_dir, a.unit, state, now)
    return 0


if __name__ == "__main__":
    sys.exit(main())
