"""Verify the tmux scenario: the engine under a supervisor in a named tmux session, as the system user,
relaunched in the same session after kill -9 with its residue removed and a held decoy kept."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "default", "tests"))
import lifecycle_checks  # noqa: E402

STATUS = "python3 /opt/glm53/libexec/supervise.py status /etc/glm53/vllm-glm53.supervise.json"


def status(host):
    return json.loads(host.check_output(STATUS))


def test_no_systemd_unit_runs_the_engine(host):
    assert not host.file("/etc/systemd/system/vllm-glm53.service").exists


def test_named_session_runs_the_supervisor_not_a_shell(host):
    panes = host.check_output("tmux list-panes -s -t =vllm-glm53 -F '#{pane_pid} #{pane_current_command} #{pane_title}'")
    pane_pid, command, title = panes.split(" ", 2)
    cmdline = host.file("/proc/%s/cmdline" % pane_pid).content_string.replace("\0", " ")
    assert "supervise.py run /etc/glm53/vllm-glm53.supervise.json" in cmdline, cmdline
    assert int(pane_pid) == status(host)["supervisor"]
    assert title == "glm53: ready pid %d" % status(host)["engine"], (command, title)  # its ready check passed


def test_engine_runs_as_the_system_user(host):
    engine = host.process.get(pid=status(host)["engine"])
    assert engine.user == "glm53" and "vllm serve" in engine.args
    assert host.user("glm53").uid < 1000  # a system user: logind's RemoveIPC leaves its /dev/shm alone
    assert "--max-num-batched-tokens 8192" in engine.args  # the side effect's configuration change


def test_tmux_server_is_detached_from_every_connection(host):
    """Each Ansible task here was a connection that ended (docker exec); the server must be in a session of
    its own (setsid) and a child of PID 1, so the end of an SSH session cannot take it down."""
    server = int(host.check_output("tmux display-message -p '#{pid}'"))
    stat = host.file("/proc/%d/stat" % server).content_string.rsplit(")", 1)[1].split()
    ppid, sid = int(stat[1]), int(stat[3])
    assert ppid == 1 and sid == server, (ppid, sid, server)


def test_ten_kill9_cycles_relaunched_in_the_same_session_behind_the_gate(host):
    log = host.file("/var/log/glm53/vllm-glm53.log").content_string
    lifecycle_checks.ten_kill9_cycles(host, log)
    assert "engine exited with status -9; relaunch in 2s" in log
    assert log.count("engine exited with status -9") >= 10


def test_crash_loop_stops_the_supervisor_with_a_reason_and_the_role_soon_after(host):
    r = lifecycle_checks.crash_loop(host)
    assert "stopped relaunching the engine (glm53: gave up after 3 starts died before ready" in r["msg"], r["msg"]
    log = host.file("/var/log/glm53/vllm-glm53.log").content_string
    assert "backoff 2 s (try 2 of 3)" in log and "backoff 4 s (try 3 of 3)" in log
    assert "not relaunching; 'supervise.py restart' (or the playbook) tries again" in log


def test_tmux_server_outlives_the_login_session_that_started_it(host):
    r = json.loads(host.file("/root/logout.json").content_string)
    assert r["control"] == "dead", "the logout did not kill the session's processes: the test proves nothing"
    assert r["server_cgroup"].endswith("/system.slice/vllm-glm53-tmux.scope"), r["server_cgroup"]


def test_private_env_file_and_no_key_in_logs_or_readable_files(host):
    env = host.file("/etc/glm53/vllm-glm53.env")
    assert env.mode == 0o600 and env.user == "root"
    found = host.run("grep -rl molecule-test-key /etc/glm53 /opt/glm53/bin /opt/glm53/libexec /var/log/glm53")
    assert found.stdout.split() == ["/etc/glm53/vllm-glm53.env"], found.stdout
    assert host.file("/etc/glm53/vllm-glm53.supervise.json").mode == 0o644
