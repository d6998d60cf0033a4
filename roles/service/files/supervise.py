# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The tmux mode's supervisor: what the named tmux session runs, never a bare shell. It does for the engine
what the systemd unit does: runs the relaunch gate, then the serve script as the service user with the
environment file's variables, and relaunches it (in the same session) whenever it exits, as
Restart=on-failure with RestartForceExitStatus=0 would (vLLM exits 0 after an engine death, vllm#48966).

    supervise.py start CONFIG     start the named tmux session running "run", outside any login session
    supervise.py run CONFIG       the loop; the tmux session runs this as root
    supervise.py restart CONFIG   relaunch the engine in the same session with CONFIG as it is now (reread);
                                  returns once the old one is gone
    supervise.py stop CONFIG      stop the engine and end the loop (the session closes)
    supervise.py status CONFIG    print the supervisor's and the engine's pids as JSON

CONFIG is the JSON file the service role renders (name, user, group, script, env_file, gate argv, ready
argv, crash_state, restart_sec, stop_timeout, state_dir). Every line the supervisor prints starts with
"[glm53-supervise]"; the pane's title says the state ("glm53: running pid N", "glm53: ready pid N" once the
ready check passed, "glm53: died rc=N",
"glm53: gave up ..."), which vllm_health reads to fail as soon as the supervisor stops relaunching.

Crash loops as in the unit: the gate counts the starts in a row that died before ready (the ready argv,
run beside each launch, sets the count back to 0 once /health answers), waits the backoff, and after the
tries writes CONFIG's crash_state + ".gave-up"; the supervisor then stops relaunching, says why in the log
and the pane title, and waits for "stop" or "restart" (a restart tries afresh, as a manual systemctl
restart does).
"""
import grp
import json
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import sys
import time


def say(msg):
    # The pane can be gone: after `tmux kill-session` the terminal is closed and a write fails (EIO), and the SIGHUP
    # that follows must still stop the engine, not kill the supervisor in its handler and orphan the engine.
    try:
        print("[glm53-supervise] %s %s" % (time.strftime("%Y-%m-%d %H:%M:%S"), msg), flush=True)
    except OSError:
        pass


def title(text):
    try:
        sys.stdout.write("\033]2;glm53: %s\033\\" % text)
        sys.stdout.flush()
    except OSError:
        pass


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


def write_state(cfg, state):
    """launches and restarts (a restart is any launch after the first: NRestarts' counterpart)."""
    path = os.path.join(cfg["state_dir"], "%s.supervise-state.json" % cfg["name"])
    with open(path + ".tmp", "w") as f:
        json.dump(state, f)
    os.replace(path + ".tmp", path)


def read_state(cfg):
    try:
        with open(os.path.join(cfg["state_dir"], "%s.supervise-state.json" % cfg["name"])) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def write_pid(cfg, what, pid):
    tmp = pid_path(cfg, what) + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % pid)
    os.replace(tmp, pid_path(cfg, what))


class Supervisor:
    def __init__(self, cfg, config_path=None):
        self.cfg = cfg
        self.config_path = config_path
        self.engine = None
        self.stopping = False
        self.restart_requested = False
        self.term_sent_at = None

    def on_stop(self, signum, _frame):
        self.stopping = True
        self.terminate()
        say("signal %d: stopping the engine and the supervisor" % signum)

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

    def reload(self):
        """A requested relaunch runs the configuration as it is now (systemd's daemon-reload and restart): the
        role rewrites this file when service_environment, the user, the gate or the tries change."""
        if not self.config_path:
            return
        try:
            with open(self.config_path) as f:
                cfg = json.load(f)
        except (OSError, ValueError) as exc:
            say("cannot reread %s (%s); relaunching with the configuration it started with" % (self.config_path, exc))
            return
        if cfg != self.cfg:
            say("configuration %s reread" % self.config_path)
        self.cfg = cfg
        write_pid(cfg, "supervisor", os.getpid())

    def sleep(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (self.stopping or self.restart_requested):
            time.sleep(0.2)

    def call(self, argv):
        """Run the gate; a stop or a relaunch request ends its wait or its backoff."""
        proc = subprocess.Popen(argv)  # noqa: S603
        while proc.poll() is None:
            if self.stopping:
                proc.terminate()
                proc.wait()
                return -1
            time.sleep(0.2)
        return proc.returncode

    def gave_up(self):
        try:
            with open(self.cfg["crash_state"] + ".gave-up") as f:
                return f.read().strip()
        except (KeyError, OSError):
            return None

    def run(self):
        cfg = self.cfg
        os.makedirs(cfg["state_dir"], exist_ok=True)
        write_pid(cfg, "supervisor", os.getpid())
        signal.signal(signal.SIGTERM, self.on_stop)
        signal.signal(signal.SIGINT, self.on_stop)
        signal.signal(signal.SIGHUP, self.on_stop)
        signal.signal(signal.SIGUSR1, self.on_restart)
        launches = 0
        fresh = True  # the first start and a requested relaunch start the crash-loop count afresh
        while not self.stopping:
            if self.restart_requested:
                fresh = True
                self.restart_requested = False
                self.reload()
                cfg = self.cfg
            title("gate")
            gate = self.call(cfg["gate"] + (["--fresh"] if fresh else []))
            fresh = False
            if self.stopping:
                break
            reason = self.gave_up() if gate == 0 else None
            if reason:
                say(reason)
                say("not relaunching; 'supervise.py restart' (or the playbook) tries again")
                title("gave up after %s starts died before ready; see the log" % cfg.get("tries", "?"))
                while not (self.stopping or self.restart_requested):
                    time.sleep(0.2)
                continue
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
            write_state(cfg, {"launches": launches, "restarts": launches - 1})
            say("engine started: pid %d as %s (launch %d)" % (self.engine.pid, cfg["user"], launches))
            title("running pid %d" % self.engine.pid)
            ready = subprocess.Popen(cfg["ready"]) if cfg.get("ready") else None  # noqa: S603
            titled_ready = False
            while self.engine.poll() is None:
                # the ready check passed: "ready" tells the probes and heal that an unanswered /health is a frozen
                # engine, not a load
                if ready is not None and not titled_ready and ready.poll() == 0:
                    title("ready pid %d" % self.engine.pid)
                    titled_ready = True
                if self.term_sent_at and time.monotonic() - self.term_sent_at > cfg["stop_timeout"]:
                    say("engine outlived the %ss stop timeout: SIGKILL to its process group" % cfg["stop_timeout"])
                    self.kill_group()
                    self.term_sent_at = None
                time.sleep(0.2)
            rc = self.engine.returncode
            if ready is not None and ready.poll() is None:
                ready.terminate()
                ready.wait()
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


def start(cfg, config_path):
    """The tmux server in a scope of its own under system.slice, not in the caller's login session: logind
    with KillUserProcesses=yes stops the session's scope at logout and kills everything in its cgroup,
    whatever setsid or nohup did. Without systemd as init, setsid (a new session, no controlling tty)."""
    name = cfg["name"]
    if subprocess.call(["tmux", "has-session", "-t", "=" + name], stderr=subprocess.DEVNULL) == 0:
        print("tmux session %s is already running" % name)
        return 0
    words = (sys.executable, os.path.abspath(__file__), "run", os.path.abspath(config_path))
    inner = " ".join(shlex.quote(word) for word in words)
    tmux = ["tmux", "new-session", "-d", "-s", name, "-x", "250", "-y", "50", inner, ";",
            "pipe-pane", "-o", "-t", "=%s:" % name, "cat >> %s" % shlex.quote(cfg["log_file"])]
    if os.path.isdir("/run/systemd/system") and shutil.which("systemd-run"):
        scope = "%s-tmux.scope" % name
        for _try in range(50):  # a scope whose server just exited is collected a moment later
            if subprocess.call(["systemctl", "is-active", "--quiet", scope]) != 0:
                break
            time.sleep(0.2)
        argv = ["systemd-run", "--scope", "--quiet", "--collect", "--slice=system.slice",
                "--unit=%s-tmux" % name, "--description=tmux server of %s (glm53.serving)" % name, "--"] + tmux
    else:
        argv = ["setsid"] + tmux
    rc = subprocess.call(argv)  # noqa: S603
    print("started tmux session %s%s" % (name, " in %s-tmux.scope" % name if argv[0] == "systemd-run" else ""))
    return rc


def main(argv):
    if len(argv) != 3 or argv[1] not in ("start", "run", "restart", "stop", "status"):
        sys.stderr.write(__doc__)
        return 2
    with open(argv[2]) as f:
        cfg = json.load(f)
    if argv[1] == "start":
        return start(cfg, argv[2])
    if argv[1] == "run":
        return Supervisor(cfg, os.path.abspath(argv[2])).run()
    supervisor, engine = read_pid(cfg, "supervisor"), read_pid(cfg, "engine")
    if argv[1] == "status":
        print(json.dumps({"supervisor": supervisor, "engine": engine, **read_state(cfg)}))
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
