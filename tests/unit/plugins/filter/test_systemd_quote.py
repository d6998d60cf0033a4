"""systemd_quote: every value comes back from systemd's reading of the line as the one word it was."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.filter.systemd_quote import systemd_quote
from systemd_words import SystemdSyntaxError, assignment, command_argv, dump_words

HOSTILE = [
    "/var/log/x;touch /tmp/PWNED", ";", "\\;", "a b", "", " ", "50%", "%h", "%%", "$HOME", "${HOME}", "$$", "$(id)",
    "`id`", "'single'", '"double"', "back\\slash", "trailing\\", "tab\there", "new\nline", "\x01ctl", "\x7f",
    "ünïcødé", "-dash", "@at", "a=b", "x'y\"z", "#hash", "{braces}", "*glob?", "~tilde", "a\\nb",
]


@pytest.mark.parametrize("word", ["/usr/bin/python3", "--port", "8000", "/opt/glm53/libexec/relaunch_gate.py",
                                  "vllm-glm53.service", "@/srv/heal-vars.yml", "-i", "a=b,c:d+e"])
def test_a_plain_word_is_written_as_it_is(word):
    # converged hosts' units stay byte-identical where quoting is a no-op
    assert systemd_quote(word) == word


def test_the_empty_word_is_written_as_the_shell_quote_wrote_it():
    # the watchdog unit's --ca '' stays as it was on converged hosts
    assert systemd_quote(["/usr/bin/python3", "--ca", ""]) == "/usr/bin/python3 --ca ''"
    assert command_argv("/usr/bin/python3 --ca ''") == ["/usr/bin/python3", "--ca", ""]


def test_a_list_is_its_words_joined_by_single_spaces():
    assert systemd_quote(["/bin/echo", "a b", "50%"]) == '/bin/echo "a b" 50%%'


@pytest.mark.parametrize("word", HOSTILE)
def test_every_hostile_word_comes_back_as_one_argument(word):
    line = systemd_quote(["/bin/echo", word, "after"])
    assert command_argv(line) == ["/bin/echo", word, "after"], line


@pytest.mark.parametrize("word", HOSTILE)
def test_an_environment_assignment_comes_back_whole(word):
    line = systemd_quote("KEY=" + word, dollar=False, always=True)
    assert line.startswith('"') and line.endswith('"')
    assert assignment(line) == "KEY=" + word, line


def test_specifiers_and_variables_are_escaped_on_a_command_line_only():
    assert systemd_quote("%h/$HOME") == "%%h/$$HOME"
    assert systemd_quote("%h/$HOME", dollar=False) == "%%h/$HOME"


def test_an_assignment_always_quoted_is_what_to_json_wrote_for_a_plain_value():
    # engine.service's Environment= lines were to_json before: a plain ASCII value renders as it did
    assert systemd_quote("VLLM_LOGGING_LEVEL=DEBUG", dollar=False, always=True) == '"VLLM_LOGGING_LEVEL=DEBUG"'


def test_the_executable_is_taken_literally():
    # systemd substitutes no $VAR in the executable's path: a doubled $ there would be two dollars
    assert systemd_quote(["/opt/a $b%/run", "$x"]) == '"/opt/a $b%%/run" $$x'
    assert command_argv(systemd_quote(["/opt/a $b%/run", "$x"])) == ["/opt/a $b%/run", "$x"]


@pytest.mark.parametrize("executable", ["/opt/it's/run", '/opt/"q"/run', "/opt/back\\slash", "/opt/new\nline"])
def test_an_executable_systemd_would_refuse_is_refused(executable):
    with pytest.raises(AnsibleFilterError, match="runs no executable"):
        systemd_quote([executable, "arg"])


@pytest.mark.parametrize("bad", [{"a": 1}, ["x", ["nested"]], "nul\x00"])
def test_what_cannot_be_one_word_is_refused(bad):
    with pytest.raises(AnsibleFilterError):
        systemd_quote(bad)


def test_the_reference_reader_refuses_what_systemd_would_misread():
    # the reader is what the other tests trust: it must be able to fail
    for line in ['/bin/echo "a b', "/bin/echo ;", "/bin/echo $HOME", "/bin/echo 50%", "/bin/echo \\q", "\"/bin/it's\""]:
        with pytest.raises(SystemdSyntaxError):
            command_argv(line)
    assert command_argv("/bin/echo a b") == ["/bin/echo", "a", "b"]


def _systemd_command_line(tmp_path, execstart):
    """systemd's own reading of an ExecStart line (systemd-analyze verify's debug dump), as argv."""
    unit = tmp_path / "quoting-check.service"
    unit.write_text(f"[Unit]\nDescription=quoting check\n[Service]\nType=oneshot\nExecStart={execstart}\n")
    proc = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True, text=True,
                          env={**os.environ, "SYSTEMD_LOG_LEVEL": "debug"}, timeout=60, check=False)
    lines = [x.split("Command Line:", 1)[1].strip() for x in (proc.stdout + proc.stderr).splitlines()
             if "Command Line:" in x]
    if proc.returncode != 0 or not lines:
        return proc, None
    return proc, dump_words(lines[0])


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
def test_systemd_itself_reads_the_words_back(tmp_path):
    words = [w for w in HOSTILE if not any(c in w for c in "\n\t\x01\x7f")]  # the dump escapes those its own way
    executable = tmp_path / "bin 50% $HOME;x" / "run"
    executable.parent.mkdir()
    executable.write_text("#!/bin/sh\n")
    executable.chmod(0o755)
    proc, argv = _systemd_command_line(tmp_path, systemd_quote([str(executable)] + words))
    if argv is None and proc.returncode == 0:
        pytest.skip("this systemd-analyze prints no command line in its debug dump")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert argv == [str(executable)] + words
