# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The relaunch gate (ExecStartPre, or before each relaunch under tmux): the model card says "if the server
just died, don't relaunch immediately: wait ~1 min and clear /dev/shm residue". Instead of a blind minute,
wait until the port is free, no engine process of the service user is left, and (where nvidia-smi exists)
GPU memory is back near its baseline, bounded by a timeout; then remove stale shared-memory blocks, each
removal reported on stdout (the journal).

    python3 relaunch_gate.py --port 8000 --user glm53 [--shm-dir /dev/shm] [--timeout 300]

Crash loops. With --crash-state FILE the gate also counts the starts in a row that died before the engine
was ready, and the same script with --wait-ready URL (ExecStartPost, or beside each launch under tmux) sets
that count back to 0 once /health answers 200. Before a relaunch after K such starts it waits the backoff
(RESTART_SEC x 2^(K-1), at most --max-delay, less the RESTART_SEC the supervisor already waited); after
--tries of them it gives up: it writes the reason to FILE.gave-up and prints it, and the ExecStart wrapper
(start_engine.sh) refuses with status 76, which the unit's RestartPreventExitStatus makes final. A start that
is not an automatic restart (systemd's NRestarts is 0 after a manual start; --fresh under tmux) starts the
count afresh, so fixing the cause and restarting (or rerunning the playbook) tries again.
A kill -9 of a ready engine is not a crash loop: each relaunch that gets ready resets the count.
"""
import argparse
import json
import os
import pwd
import shutil
import subprocess
import sys
import ssl
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from glm53_procfs import DEFAULT_PATTERNS, find_stale, listening_sockets, remove  # noqa: E402  (installed beside this script)


def engine_processes(user):
    uid = pwd.getpwnam(user).pw_uid
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            if os.stat("/proc/" + name).st_uid != uid:
                continue
            with open("/proc/%s/cmdline" % name, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open("/proc/%s/stat" % name) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
        except OSError:
            continue
        if "vllm" in cmd or "VllmWorker" in cmd or "EngineCore" in cmd:
            found.append("%s %s" % (name, cmd.strip()[:80]))
    return found


def gpu_memory_used():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    out = subprocess.run([smi, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return None
    try:
        return [int(x) for x in out.stdout.split()]
    except ValueError:
        return None


def read_state(path):
    try:
        with open(path) as f:
            state = json.load(f)
        return state if isinstance(state, dict) else {}
    except (OSError, ValueError):
        return {}


def write_state(path, state):
    os.makedirs(os.path.dirname(path) or ".", mode=0o755, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def automatic_restart(unit):
    """systemd's restart counter: 0 on a manual start or restart, N during the Nth automatic restart."""
    out = subprocess.run(["systemctl", "show", "-p", "NRestarts", "--value", unit],
                         capture_output=True, text=True, check=False)
    return out.returncode == 0 and out.stdout.strip().isdigit() and int(out.stdout.strip()) > 0


def crash_loop(a):
    """Count this start; wait the backoff; return the reason when the tries are spent, else None."""
    gave_up = a.crash_state + ".gave-up"
    fresh = a.fresh or (a.unit and not automatic_restart(a.unit))
    state = {} if fresh else read_state(a.crash_state)
    unready = int(state.get("unready", 0))
    if unready >= a.tries:
        reason = ("the engine died before it was ready %d times in a row (the last: %s); not relaunching it. "
                  "Fix the cause in the log above, then restart it (or rerun the playbook)."
                  % (unready, state.get("last_start", "?")))
        with open(gave_up, "w") as f:
            f.write("relaunch gate: gave up: %s\n" % reason)
        os.chmod(gave_up, 0o644)
        print("relaunch gate: gave up: %s" % reason, flush=True)
        return reason
    try:
        os.unlink(gave_up)
    except OSError:
        pass
    if unready:
        delay = min(a.max_delay, a.restart_sec * 2 ** (unready - 1))
        extra = max(0.0, delay - a.restart_sec)
        print("relaunch gate: %d start(s) in a row died before ready; backoff %.0f s (try %d of %d)"
              % (unready, delay, unready + 1, a.tries), flush=True)
        time.sleep(extra)
    write_state(a.crash_state, {"unready": unready + 1, "last_start": time.strftime("%Y-%m-%d %H:%M:%S")})
    return None


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_ready(a):
    """ExecStartPost (or beside a tmux launch): wait until /health answers 200, then reset the count."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False  # loopback, and only a status code is read
    ctx.verify_mode = ssl.CERT_NONE
    main_pid = os.environ.get("MAINPID", "")  # systemd sets it for ExecStartPost
    t0 = time.monotonic()
    while True:
        try:
            with urllib.request.urlopen(a.wait_ready, timeout=5, context=ctx) as resp:
                if resp.status == 200:
                    break
        except (OSError, urllib.error.URLError, ValueError):
            pass
        if main_pid.isdigit() and not alive(int(main_pid)):
            print("relaunch gate: the engine (pid %s) exited before it was ready" % main_pid, flush=True)
            return 1
        time.sleep(a.interval)
    if a.crash_state:
        write_state(a.crash_state, {"unready": 0, "ready_at": time.strftime("%Y-%m-%d %H:%M:%S")})
    print("relaunch gate: the engine is ready (%.1f s after its start)" % (time.monotonic() - t0), flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--user", required=True)
    ap.add_argument("--shm-dir", default="/dev/shm")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--gpu-baseline-mib", type=int, default=1024)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--crash-state", help="count the starts in a row that died before ready in this file")
    ap.add_argument("--tries", type=int, default=3)
    ap.add_argument("--restart-sec", type=float, default=5)
    ap.add_argument("--max-delay", type=float, default=60)
    ap.add_argument("--unit", help="the systemd unit (its NRestarts tells a manual start from a restart)")
    ap.add_argument("--fresh", action="store_true", help="a manual start: the count starts afresh")
    ap.add_argument("--wait-ready", metavar="URL", help="wait until URL answers 200, then reset the count")
    a = ap.parse_args()
    if a.wait_ready:
        return wait_ready(a)
    if a.crash_state and crash_loop(a):
        return 0  # the ExecStart wrapper (or the tmux supervisor) reads FILE.gave-up and refuses
    t0 = time.monotonic()
    while True:
        waits = []
        if listening_sockets(a.port):
            waits.append("port %d still listening" % a.port)
        procs = engine_processes(a.user)
        if procs:
            waits.append("engine processes left: %s" % "; ".join(procs[:3]))
        mem = gpu_memory_used()
        if mem and max(mem) > a.gpu_baseline_mib:
            waits.append("GPU memory not released (max %d MiB > %d MiB)" % (max(mem), a.gpu_baseline_mib))
        if not waits:
            break
        if time.monotonic() - t0 > a.timeout:
            print("relaunch gate: gave up after %.0f s: %s" % (a.timeout, "; ".join(waits)), flush=True)
            return 1
        print("relaunch gate: waiting: %s" % "; ".join(waits), flush=True)
        time.sleep(a.interval)
    stale, kept = find_stale(a.shm_dir, a.user, DEFAULT_PATTERNS)
    for entry in remove(stale):
        print("relaunch gate: removed stale %s (%d bytes)" % (entry["path"], entry["size"]), flush=True)
    for entry in kept:
        print("relaunch gate: kept %s: %s" % (entry["path"], entry["reason"]), flush=True)
    print("relaunch gate: clear after %.1f s" % (time.monotonic() - t0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
