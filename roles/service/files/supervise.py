# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The tmux mode's supervisor: what the named tmux session runs, never a bare shell. It does for the engine
what the systemd unit does: runs the relaunch gate, then the serve script as the service user with the
environment file's variables, and relaunches it (in the same session) whenever it exits, as
Restart=on-failure with RestartForceExitStatus=0 would (vLLM exits 0 after an engine death, vllm#48966).

    supervise.py run CONFIG       the loop; the tmux session runs this as root
    supervise.py restart CONFIG   relaunch the engine in the same session; returns once the old one is gone
    supervise.py stop CONFIG      stop the engine and end the loop (the session closes)
    supervise.py status CONFIG    print the supervisor's and the engine's pids as JSON

CONFIG is the JSON file the service role renders (name, user, group, script, env_file, gate argv,
restart_sec, stop_timeout, state_dir). Every line the supervisor prints starts with "[glm53-supervise]";
the pane's title says the state ("glm53: running pid N", "glm53: died rc=N"), which vllm_health reads to
fail fast when the engine dies while it waits.
"""
import grp
import json
import os
import pwd
import shlex
import signal
import subprocess
import sys
import time


def say(msg):
    print("[glm53-supervise] %s %s" % (time.strftime("%Y-%m-%d %H:%M:%S"), msg), flush=True)


def title(text):
    sys.stdout.write("\033]2;glm53: %s\033\\" % text)
    sys.stdout.flush()


def read_env_file(path):
    """systemd EnvironmentFile syntax as the serve role writes it: KEY=value, the value shell-quoted."""
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, value = line.split("=", 1)
            words = shlex.split(value) if value else [""]
            env[key.strip()] = words[0] if words else ""
    return env


def pid_path(cfg, what):
    return os.path.join(cfg["state_dir"], "%s.%s.pid" % (cfg["name"], what))


def read_pid(cfg, what):
    try:
        with open(pid_path(cfg, what)) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def write_pid(cfg, what, pid):
    tmp = pid_path(cfg, what) + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % pid)
    os.replace(tmp, pid_path(cfg, what))


class Supervisor:
    def __init__(self, cfg):
        self.cfg = cfg
        self.engine = None
        self.stopping = False
        self.restart_requested = False
        self.term_sent_at = None

    def on_stop(self, signum, _frame):
        say("signal %d: stopping the engine and the supervisor" % signum)
        self.stopping = True
        self.terminate()

    def on_restart(self, _signum, _frame):
        say("relaunch requested")
        self.restart_requested = True
        self.terminate()

    def terminate(self):
        """KillMode=mixed: SIGTERM to the engine's main process; its process group is killed after it exits,
        or at once when it outlives stop_timeout."""
        if self.engine is not None and self.engine.poll() is None:
            self.term_sent_at = time.monotonic()
            try:
                self.engine.send_signal(signal.SIGTERM)
            except OSError:
                pass

    def kill_group(self):
        try:
            os.killpg(self.engine.pid, signal.SIGKILL)
        except OSError:
            pass

    def launch(self):
        cfg = self.cfg
        user = pwd.getpwnam(cfg["user"])
        gid = grp.getgrnam(cfg["group"]).gr_gid
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": user.pw_dir,
               "USER": user.pw_name, "LOGNAME": user.pw_name, "LANG": os.environ.get("LANG", "C.UTF-8")}
        env.update(cfg.get("environment") or {})
        env.update(read_env_file(cfg["env_file"]))  # as in systemd, the file wins over Environment=

        def demote():
            os.setsid()  # its own process group, so the whole engine can be killed at once
            os.setgroups([])
            os.setgid(gid)
            os.setuid(user.pw_uid)

        cwd = user.pw_dir if os.path.isdir(user.pw_dir) else "/"
        return subprocess.Popen([cfg["script"]], env=env, cwd=cwd, preexec_fn=demote)  # noqa: PLW1509

    def sleep(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (self.stopping or self.restart_requested):
            time.sleep(0.2)

    def run(self):
        cfg = self.cfg
        os.makedirs(cfg["state_dir"], exist_ok=True)
        write_pid(cfg, "supervisor", os.getpid())
        signal.signal(signal.SIGTERM, self.on_stop)
        signal.signal(signal.SIGINT, self.on_stop)
        signal.signal(signal.SIGHUP, self.on_stop)
        signal.signal(signal.SIGUSR1, self.on_restart)
        launches = 0
        while not self.stopping:
            self.restart_requested = False
            title("gate")
            gate = subprocess.call(cfg["gate"])
            if gate != 0:
                say("the relaunch gate failed (exit %d); retrying in %ss" % (gate, cfg["restart_sec"]))
                title("gate failed rc=%d" % gate)
                self.sleep(cfg["restart_sec"])
                continue
            if self.stopping:
                break
            try:
                self.engine = self.launch()
            except (OSError, KeyError) as exc:
                say("cannot start %s as %s: %s; retrying in %ss" % (cfg["script"], cfg["user"], exc, cfg["restart_sec"]))
                title("died rc=start-failure")
                self.sleep(cfg["restart_sec"])
                continue
            launches += 1
            write_pid(cfg, "engine", self.engine.pid)
            say("engine started: pid %d as %s (launch %d)" % (self.engine.pid, cfg["user"], launches))
            title("running pid %d" % self.engine.pid)
            while self.engine.poll() is None:
                if self.term_sent_at and time.monotonic() - self.term_sent_at > cfg["stop_timeout"]:
                    say("engine outlived the %ss stop timeout: SIGKILL to its process group" % cfg["stop_timeout"])
                    self.kill_group()
                    self.term_sent_at = None
                time.sleep(0.2)
            rc = self.engine.returncode
            self.kill_group()  # workers left behind by the main process (KillMode=mixed)
            self.term_sent_at = None
            if self.stopping:
                say("engine stopped (exit %s)" % rc)
                break
            if self.restart_requested:
                say("engine stopped for a relaunch (exit %s)" % rc)
                title("restarting")
                continue
            say("engine exited with status %s; relaunch in %ss" % (rc, cfg["restart_sec"]))
            title("died rc=%s" % rc)
            self.sleep(cfg["restart_sec"])
        for what in ("engine", "supervisor"):
            try:
                os.unlink(pid_path(cfg, what))
            except OSError:
                pass
        title("stopped")
        return 0


def wait_gone(pid, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except OSError:
            return True
        time.sleep(0.2)
    return False


def main(argv):
    if len(argv) != 3 or argv[1] not in ("run", "restart", "stop", "status"):
        sys.stderr.write(__doc__)
        return 2
    with open(argv[2]) as f:
        cfg = json.load(f)
    if argv[1] == "run":
        return Supervisor(cfg).run()
    supervisor, engine = read_pid(cfg, "supervisor"), read_pid(cfg, "engine")
    if argv[1] == "status":
        print(json.dumps({"supervisor": supervisor, "engine": engine}))
        return 0
    if supervisor is None:
        sys.stderr.write("no supervisor of %s is running\n" % cfg["name"])
        return 3 if argv[1] == "restart" else 0
    if argv[1] == "stop":
        os.kill(supervisor, signal.SIGTERM)
        ok = wait_gone(supervisor, cfg["stop_timeout"] + 15)
    else:
        os.kill(supervisor, signal.SIGUSR1)
        ok = engine is None or wait_gone(engine, cfg["stop_timeout"] + 15)
    if not ok:
        sys.stderr.write("%s of %s did not finish in time\n" % (argv[1], cfg["name"]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
