# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The relaunch gate (ExecStartPre, or before each relaunch under tmux): the model card says "if the server
just died, don't relaunch immediately: wait ~1 min and clear /dev/shm residue". Instead of a blind minute,
wait until the port is free, no engine process of the service user is left, and (where nvidia-smi exists)
GPU memory is back near its baseline, bounded by a timeout; then remove stale shared-memory blocks, each
removal reported on stdout (the journal).

    python3 relaunch_gate.py --port 8000 --user glm53 [--shm-dir /dev/shm] [--timeout 300]
"""
import argparse
import os
import pwd
import shutil
import subprocess
import sys
import time

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--user", required=True)
    ap.add_argument("--shm-dir", default="/dev/shm")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--gpu-baseline-mib", type=int, default=1024)
    ap.add_argument("--interval", type=float, default=1.0)
    a = ap.parse_args()
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
