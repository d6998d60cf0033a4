"""heal's schedule with hostile values: the cron line, run as cron would run it, and the unit's ExecStart, read as
systemd reads it, carry each value as one literal word; nothing else runs.

The role's own templates and vars (defaults/main.yml, vars/main.yml) are rendered by ansible-playbook into a scratch
folder; the run's ansible-playbook is a recorder script (a test double) that writes where and with what it ran.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys

import pytest

from systemd_words import command_argv, dump_words, resolve_specifiers
from testlib import COLLECTIONS_ROOT, REPO

ROLE = os.path.join(REPO, "roles", "heal")
MARKERS = ("PWNED", "PWNED2", "PWNED3", "PWNED4")


def _ansible_playbook():
    here = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return here if os.path.exists(here) else "ansible-playbook"


def render(tmp_path, values):
    """heal.cron.j2, heal.service.j2 and heal.timer.j2 rendered with these values: {name: text}."""
    out = tmp_path / "rendered"
    out.mkdir()
    playbook = tmp_path / "render.yml"
    playbook.write_text(json.dumps([{
        "hosts": "localhost", "gather_facts": False, "connection": "local",
        "vars_files": [os.path.join(ROLE, "defaults", "main.yml"), os.path.join(ROLE, "vars", "main.yml")],
        "tasks": [{"name": "Render", "ansible.builtin.template": {
            "src": os.path.join(ROLE, "templates", "heal.{{ item }}.j2"), "dest": str(out) + "/heal.{{ item }}",
            "mode": "0644"}, "loop": ["cron", "service", "timer"]}],
    }]))
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps(values))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    proc = subprocess.run([_ansible_playbook(), "-i", "localhost,", str(playbook), "-e", "@" + str(extra)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {name: (out / f"heal.{name}").read_text() for name in ("cron", "service", "timer")}


def cron_command(line):
    """What cron runs of a cron.d line: the command after five time fields and the user, cut at the first unescaped
    % (the rest is the command's stdin, each % a newline), each \\% a %: vixie cron's do_command.c."""
    fields = line.split(None, 6)
    assert len(fields) == 7, line
    command, stdin, escaped = [], None, False
    for i, char in enumerate(fields[6]):
        if escaped:
            if char == "%":
                command[-1] = "%"  # the backslash gives way to the %
            else:
                command.append(char)
            escaped = False
            continue
        if char == "\\":
            escaped = True
            command.append(char)
            continue
        if char == "%":
            stdin = fields[6][i + 1:].replace("%", "\n")
            break
        command.append(char)
    return "".join(command), stdin


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """Values a person could set, each meant literally (the workdir and the recorder's folder exist), and the
    templates rendered with them."""
    tmp_path = tmp_path_factory.mktemp("hostile")
    workdir = tmp_path / "work dir $(touch PWNED) `touch PWNED2`; touch PWNED3 %d"
    workdir.mkdir()
    bindir = tmp_path / "bin 50% $HOME `id`"  # systemd runs no executable with a quote or a backslash in its path
    bindir.mkdir()
    record = tmp_path / "record.json"
    recorder = bindir / "ansible-playbook;touch PWNED4"
    recorder.write_text(
        f"#!{sys.executable}\n# test double: records where and with what the schedule ran ansible-playbook\n"
        "import json, os, sys\n"
        f"open({str(record)!r}, 'w').write(json.dumps({{'cwd': os.getcwd(), 'argv': sys.argv[1:]}}))\n"
        "print('recorder ran')\n")
    recorder.chmod(recorder.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    logdir = tmp_path / "logs"
    logdir.mkdir()
    values = {
        "heal_schedule_name": "glm53-heal-quoting-test",
        "heal_schedule_workdir": str(workdir),
        "heal_schedule_ansible_playbook": str(recorder),
        "heal_schedule_playbook": "/srv/heal;touch PWNED $(id) `id` 100%.yml",
        "heal_schedule_inventory": ["/srv/inv a", "/srv/inv$(touch PWNED)", "/srv/100%s"],
        "heal_schedule_extra_vars_files": ["/srv/`touch PWNED`.yml", "/srv/a\\%b 'c' \"d\".yml"],
        "heal_schedule_log": str(logdir) + "/x;touch PWNED;y 100% $(touch PWNED2) `id` \\% 'q' \"dq\" a\\b.log",
    }
    intended = [values["heal_schedule_playbook"],
                "-i", "/srv/inv a", "-i", "/srv/inv$(touch PWNED)", "-i", "/srv/100%s",
                "-e", "@/srv/`touch PWNED`.yml", "-e", "@/srv/a\\%b 'c' \"d\".yml"]
    return {"values": values, "intended": intended, "record": record, "workdir": workdir, "tmp": tmp_path,
            "rendered": render(tmp_path, values)}


def _markers(root):
    return sorted(p for p in (str(x) for x in root.rglob("*")) if os.path.basename(p) in MARKERS)


def test_the_cron_line_runs_only_the_recorder_with_the_intended_words(hostile):
    tmp, rendered = hostile["tmp"], hostile["rendered"]
    lines = [x for x in rendered["cron"].splitlines() if x and not x.startswith("#") and not re.match(r"\w+=", x)]
    assert len(lines) == 1, rendered["cron"]
    assert lines[0].startswith("*/15 * * * * root "), lines[0]
    command, stdin = cron_command(lines[0])
    assert stdin is None, f"cron would cut the line at a %: {lines[0]!r}"
    # the lock folder is the host's /run/lock; here a scratch one (the template's own text, not a value)
    locks = tmp / "locks"
    locks.mkdir()
    assert command.count("/run/lock/") == 1
    command = command.replace("/run/lock/", str(locks) + "/")
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run(["/bin/sh", "-c", command], cwd=elsewhere, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(elsewhere)}, check=False)
    assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
    assert _markers(tmp) == [], f"a value ran as a command: {command!r}"
    record = json.loads(hostile["record"].read_text())
    assert record == {"cwd": str(hostile["workdir"]), "argv": hostile["intended"]}
    log = hostile["values"]["heal_schedule_log"]
    assert os.path.isfile(log) and open(log).read() == "recorder ran\n"
    assert sorted(os.listdir(tmp / "logs")) == [os.path.basename(log)]  # exactly that path, nothing beside it
    assert sorted(os.listdir(elsewhere)) == []


def test_the_units_command_line_is_the_intended_words(hostile, tmp_path):
    service = hostile["rendered"]["service"]
    execstart = [x.split("=", 1)[1] for x in service.splitlines() if x.startswith("ExecStart=")]
    assert len(execstart) == 1, service
    assert command_argv(execstart[0]) == [hostile["values"]["heal_schedule_ansible_playbook"]] + hostile["intended"]
    workdir = [x.split("=", 1)[1] for x in service.splitlines() if x.startswith("WorkingDirectory=")]
    assert [resolve_specifiers(w) for w in workdir] == [hostile["values"]["heal_schedule_workdir"]]
    if shutil.which("systemd-analyze"):
        unit = tmp_path / "glm53-heal-quoting-test.service"
        unit.write_text(service)
        proc = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True, text=True,
                              env={**os.environ, "SYSTEMD_LOG_LEVEL": "debug"}, timeout=60, check=False)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0 and "Unbalanced" not in out, out[-3000:]
        dumped = [x.split("Command Line:", 1)[1].strip() for x in out.splitlines() if "Command Line:" in x]
        if dumped:  # systemd's own reading (its dump quotes like a shell, $$ still doubled)
            assert dump_words(dumped[0]) == command_argv(execstart[0])


def test_default_values_render_plain_words(tmp_path):
    """Quoting is a no-op for plain words: a converged host's files do not change."""
    rendered = render(tmp_path, {"heal_schedule_workdir": "/srv", "heal_schedule_playbook": "/srv/heal.yml",
                                 "heal_schedule_inventory": ["/srv/hosts"],
                                 "heal_schedule_extra_vars_files": ["/srv/heal-vars.yml"],
                                 "heal_schedule_ansible_playbook": "/usr/local/bin/heal-standin"})
    assert rendered["cron"].splitlines()[-1] == (
        "*/15 * * * * root cd /srv && flock -n /run/lock/glm53-heal.lock /usr/local/bin/heal-standin /srv/heal.yml "
        "-i /srv/hosts -e @/srv/heal-vars.yml >>/var/log/glm53-heal.log 2>&1")
    assert "\nWorkingDirectory=/srv\nExecStart=/usr/local/bin/heal-standin /srv/heal.yml -i /srv/hosts " \
           "-e @/srv/heal-vars.yml\n" in rendered["service"]
