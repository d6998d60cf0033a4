"""Sliced runs on this machine, as AWX/AAP job slicing runs them: a fleet of stand-in engines (each a process with its
own port and folder: start, stop, a restart that clears a fault, a switch to a release, a drain marker), a sampler
that counts the hosts serving as a load balancer sees them, and a playbook run as N concurrent ansible-runner jobs,
slice i over hosts[i::N]."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
import urllib.request

from testlib import COLLECTIONS_ROOT, VLLM, free_port

START = """#!/bin/bash
# start the stand-in in the background (its pid in ./pid); the caller's environment says its faults
cd %(dir)s
VLLM_STANDIN_SHM_DIR=%(dir)s/shm VLLM_STANDIN_LOAD_DELAY=1.5 setsid %(argv)s >> server.log 2>&1 < /dev/null &
echo $! > pid
"""
STOP = """#!/bin/bash
# stop the engine and wait until it is gone
cd %(dir)s
[ -f pid ] || exit 0
pid=$(cat pid)
kill "$pid" 2>/dev/null || true
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -9 "$pid" 2>/dev/null || true
rm -f pid
"""
RESTART = """#!/bin/bash
# a restart: stop the engine, start it again without the fault (a restart clears the stand-in's garbage fault)
cd %(dir)s
bash stop.sh
sleep 1
env -u VLLM_STANDIN_GARBAGE_AFTER bash start.sh
"""
SWITCH = """#!/bin/bash
# an upgrade's switch: stop the engine, note the release, start it; a release listed in ../bad_releases answers gibberish
cd %(dir)s
bash stop.sh
echo "$1" > release
if grep -qxF "$1" ../bad_releases 2>/dev/null; then VLLM_STANDIN_GARBAGE_AFTER=0 bash start.sh
else env -u VLLM_STANDIN_GARBAGE_AFTER bash start.sh; fi
"""
MARK = """#!/bin/bash
# the load balancer: drain (out of it) or admit (back in), each noted with its time in ./events
cd %(dir)s
case "$1" in drain) touch drained ;; admit) rm -f drained ;; *) exit 2 ;; esac
echo "$1 $(date +%%s.%%N)" >> events
"""


class Fleet(object):
    """Stand-in engines, each in a folder with its scripts, its pid, its release and the drain marker."""

    def __init__(self, tmp, count, prefix="e"):
        self.tmp, self.hosts = tmp, {}
        for i in range(count):
            name = "%s%02d" % (prefix, i)
            d = tmp / name
            (d / "shm").mkdir(parents=True)
            (d / "model").mkdir()
            port = free_port()
            argv = VLLM + ["serve", str(d / "model"), "--served-model-name", "glm53-flash-awq", "--host", "127.0.0.1",
                           "--port", str(port)]
            for script, text in (("start", START), ("stop", STOP), ("restart", RESTART), ("switch", SWITCH),
                                 ("mark", MARK)):
                (d / (script + ".sh")).write_text(text % {"dir": d, "argv": " ".join(shlex.quote(a) for a in argv)})
            self.hosts[name] = {"dir": d, "url": "http://127.0.0.1:%d" % port}

    def names(self):
        return sorted(self.hosts)

    def start(self, failing=(), release="r1"):
        """Every engine (re)started on release, those in failing with the garbage fault on from their first answer."""
        stops = [subprocess.Popen(["bash", str(h["dir"] / "stop.sh")]) for h in self.hosts.values()]
        assert [p.wait(60) for p in stops] == [0] * len(stops)
        for name, h in self.hosts.items():
            env = dict(os.environ)
            env.pop("VLLM_STANDIN_GARBAGE_AFTER", None)
            if name in failing:
                env["VLLM_STANDIN_GARBAGE_AFTER"] = "0"
            (h["dir"] / "release").write_text(release + "\n")
            (h["dir"] / "events").unlink(missing_ok=True)
            (h["dir"] / "drained").unlink(missing_ok=True)
            subprocess.run(["bash", str(h["dir"] / "start.sh")], env=env, check=True)
        deadline = time.monotonic() + 120
        while self.serving() != self.names():
            assert time.monotonic() < deadline, "the stand-ins did not all come up: %s" % self.serving()
            time.sleep(0.5)

    def serving(self):
        """The hosts a load balancer sends requests to now: not drained, and /health answering 200."""
        out = []
        for name, h in self.hosts.items():
            if (h["dir"] / "drained").exists():
                continue
            try:
                with urllib.request.urlopen(h["url"] + "/health", timeout=2) as resp:
                    if resp.status == 200:
                        out.append(name)
            except OSError:
                pass
        return sorted(out)

    def release(self, name):
        return (self.hosts[name]["dir"] / "release").read_text().strip()

    def events(self, name):
        """[(what, epoch seconds)] of the host's drains and admissions."""
        path = self.hosts[name]["dir"] / "events"
        if not path.exists():
            return []
        return [(w, float(t)) for w, t in (line.split() for line in path.read_text().splitlines())]

    def answers_well(self, name):
        req = urllib.request.Request(self.hosts[name]["url"] + "/v1/chat/completions", method="POST",
                                     headers={"Content-Type": "application/json"},
                                     data=json.dumps({"model": "glm53-flash-awq", "max_tokens": 64,
                                                      "messages": [{"role": "user", "content": "Say hello"}]}).encode())
        with urllib.request.urlopen(req, timeout=30) as resp:
            return "Hello" in json.load(resp)["choices"][0]["message"]["content"]

    def stop(self):
        procs = [subprocess.Popen(["bash", str(h["dir"] / "stop.sh")]) for h in self.hosts.values()]
        for p in procs:
            p.wait(60)


class Sampler(threading.Thread):
    """Counts the hosts serving every `every` seconds until stopped (the lowest count, and how many samples)."""

    def __init__(self, fleet, every=1.0):
        super().__init__(daemon=True)
        self.fleet, self.every, self.counts, self.done = fleet, every, [], threading.Event()

    def run(self):
        while not self.done.is_set():
            t = time.monotonic()
            self.counts.append(len(self.fleet.serving()))
            self.done.wait(max(0.0, self.every - (time.monotonic() - t)))


def sliced_run(tmp, fleet, playbook, label, slices, every=1.0, forks=3, **extra):
    """playbook as `slices` concurrent ansible-runner jobs (slice i: hosts[i::slices], each with its own private data
    folder, as an execution node has), under the sampler: (the fewest hosts serving, {slice: runner}, seconds,
    samples). One slice is the unsliced run of the whole fleet from one controller."""
    names = fleet.names()
    sampler = Sampler(fleet, every)
    sampler.start()
    t0, jobs = time.monotonic(), {}
    for i in range(slices):
        pdd = tmp / ("%s-slice%d" % (label, i))
        (pdd / "project").mkdir(parents=True)
        for f in os.listdir(os.path.dirname(playbook)):
            shutil.copy(os.path.join(os.path.dirname(playbook), f), pdd / "project" / f)
        hosts = dict((n, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                          "standin_url": fleet.hosts[n]["url"], "standin_dir": str(fleet.hosts[n]["dir"]),
                          "standin_restart": "bash %s" % (fleet.hosts[n]["dir"] / "restart.sh"),
                          "heal_state_file": str(fleet.hosts[n]["dir"] / "heal.json")})
                     for n in names[i::slices])
        (pdd / "inventory").mkdir()
        (pdd / "inventory" / "hosts.json").write_text(json.dumps({"glm53_serving": {"hosts": hosts}}))
        extravars = dict({"awx_job_id": "%s-%d" % (label, i), "probes_textfile_dir": ""}, **extra)
        jobs[i] = ansible_runner().run_async(
            private_data_dir=str(pdd), playbook=os.path.basename(playbook), extravars=extravars, quiet=True,
            envvars={"ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORKS": str(forks),
                     "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")})
    ends = {}
    while len(ends) < len(jobs):
        assert time.monotonic() - t0 < 900, "the slices ran past 900 s"
        for i, (thread, _runner) in jobs.items():
            if i not in ends and not thread.is_alive():
                ends[i] = time.monotonic() - t0
        time.sleep(0.2)
    seconds = time.monotonic() - t0
    print("  %s: %d slice(s) done after %s s" % (label, slices, ", ".join("%.1f" % ends[i] for i in sorted(ends))))
    sampler.done.set()
    sampler.join(10)
    runners = dict((i, r) for i, (_t, r) in jobs.items())
    return min(sampler.counts), runners, seconds, len(sampler.counts)


def ansible_runner():
    import ansible_runner as runner  # hack/lib.sh's tool venv has it; the tests import-skip without it
    return runner


def heal_states(runners):
    """{host: (state, reason)} from the heal record play's one line per host ('e03: held: not healed ...')."""
    out = {}
    for r in runners.values():
        for ev in r.events:
            res = ev.get("event_data", {}).get("res", {})
            if ev.get("event") == "runner_on_ok" and ev["event_data"].get("task", "").startswith("Say what the run did"):
                for line in res.get("msg", []):
                    host, _sep, rest = line.partition(": ")
                    state, _sep, reason = rest.partition(": ")
                    out[host] = (state.split(" in ")[0].strip(), reason)
    return out


def failures(runners):
    """{host: msg} of the hosts a run failed."""
    out = {}
    for r in runners.values():
        for ev in r.events:
            if ev.get("event") == "runner_on_failed" and not ev["event_data"].get("ignore_errors"):
                out[ev["event_data"]["host"]] = ev["event_data"].get("res", {}).get("msg", "")
    return out
