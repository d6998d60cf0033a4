"""The engine's environment file, written as the serve role's template writes it (KEY={{ value | string | quote }},
Ansible's quote filter) and read back by the tmux supervisor (roles/service/files/supervise.py), gives every value
back unchanged, however hostile: quotes, $, backticks, backslashes, #, spaces at the ends, = and ;. Values with a
line break or a control character never reach the file: the validation refuses them (test_input_rules.py)."""
from __future__ import annotations

import importlib.util
import os

import pytest
from jinja2 import Environment

from ansible.plugins.filter.core import FilterModule
from testlib import REPO

HOSTILE = {
    "PLAIN": "WARN", "SPACES": "  two  words  ", "SINGLE": "it's", "DOUBLE": 'say "hi"', "DOLLAR": "$HOME and ${PATH}",
    "BACKTICK": "`id`", "SUBSHELL": "$(rm -rf /tmp/x)", "BACKSLASH": "C:\\models\\glm \\n not a newline",
    "HASH": "#not-a-comment", "EQUALS": "a=b=c", "SEMICOLON": "x; touch /tmp/pwned", "EMPTY": "",
    "UNICODE": "繁體中文 ✓", "MIXED": "'\"`$\\;#= ", "NUMBER": 8,
}


def supervise():
    spec = importlib.util.spec_from_file_location("supervise", os.path.join(REPO, "roles", "service", "files",
                                                                            "supervise.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_hostile_value_comes_back_unchanged_through_the_supervisor(tmp_path):
    env = Environment()
    env.filters.update(FilterModule().filters())
    # the template's own loop line (roles/serve/templates/serve.env.j2)
    template = open(os.path.join(REPO, "roles", "serve", "templates", "serve.env.j2")).read()
    line = next(t for t in template.splitlines() if t.startswith("{{ key }}="))
    text = env.from_string("{% for key, value in env | dictsort %}" + line + "\n{% endfor %}").render(env=HOSTILE)
    path = tmp_path / "engine.env"
    path.write_text("# Ansible managed\n" + text)
    got = supervise().read_env_file(str(path))
    assert got == {k: str(v) for k, v in HOSTILE.items()}
    assert len(text.splitlines()) == len(HOSTILE)  # one line per value


@pytest.mark.parametrize("value", ["two\nlines", "carriage\rreturn"])
def test_a_line_break_would_split_the_file_so_validation_refuses_it(value):
    from ansible_collections.glm53.serving.plugins.filter.setting_problems import setting_problems
    assert setting_problems([{"name": "venv_extra_env", "values": {"X": value}, "rule": "single_line"}])
