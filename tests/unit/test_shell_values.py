"""No setting's value reaches a shell, a cron line or a unit's command line as code: every {{ }} that lands there
goes through the quoting of what reads it.

- ansible.builtin.shell / raw tasks (roles/, playbooks/): each expression's last filter is ``quote`` (``map('quote')``
  before a ``join`` with a literal separator counts: quoted words joined by a literal stay words).
- ansible.builtin.command: no interpolated string command line (``cmd`` or free-form); ``argv`` only.
- systemd unit templates: an Exec*= line's values through ``glm53.serving.systemd_quote`` (with ``$`` escaped), an
  Environment= line's through it with ``dollar=false``, a path directive's %-escaped (``replace('%', '%%')``) or
  systemd-quoted.
- cron templates: each value of the command through ``quote`` and then ``replace('%', ...\\%...)``.

The expressions are read with Jinja's own parser, not guessed at with regular expressions.
"""
from __future__ import annotations

import os
import re

import jinja2
import pytest
import yaml
from jinja2 import nodes

from testlib import REPO

SHELL_MODULES = {f"{ns}{m}" for ns in ("", "ansible.builtin.", "ansible.legacy.") for m in ("shell", "raw")}
COMMAND_MODULES = {f"{ns}command" for ns in ("", "ansible.builtin.", "ansible.legacy.")}
SYSTEMD_QUOTE = {"systemd_quote", "glm53.serving.systemd_quote"}
PATH_DIRECTIVES = {"WorkingDirectory", "EnvironmentFile", "ReadWritePaths", "ReadOnlyPaths", "InaccessiblePaths",
                   "RootDirectory", "ExecPaths", "NoExecPaths"}
_JINJA = jinja2.Environment()
# Known string command lines, each with its reason; a new one, or another line in these files, still fails.
# Each is run by the command module (no shell: `;`, `$(...)`, `>` are plain characters), so none can chain a command.
ALLOWED_COMMAND_LINES = {
    # settings that are an operator's own command line by design, split by the command module
    ("roles/monitoring/tasks/configure.yml", "{{ monitoring_reload_command }}"),
    ("roles/monitoring/tasks/uninstall.yml", "{{ monitoring_reload_command }}"),
    ("playbooks/examples/lb_upstream.yml", "{{ lb_reload_command | default('nginx -s reload') }}"),
    ("playbooks/examples/lb_upstream.yml", "{{ __lb_check_command }}"),
    # service_name is a unit name (its rule refuses anything else); to move to argv by the heal role's owner
    ("roles/heal/tasks/survey.yml", "systemctl show -p ActiveState -p Result --value {{ service_name }}.service"),
    ("roles/heal/tasks/survey.yml", "tmux list-panes -s -t ={{ service_name }} -F '#{pane_title}'"),
}


class _LineLoader(yaml.SafeLoader):
    """yaml.safe_load's loader, with each mapping's first line kept under __line__."""

    def construct_mapping(self, node, deep=False):
        mapping = super().construct_mapping(node, deep=deep)
        mapping["__line__"] = node.start_mark.line + 1
        return mapping


def _expressions(text):
    """Each {{ }} expression of a Jinja text: (its source, its parsed tree or None, the problem or None)."""
    out = []
    for match in re.finditer(r"\{\{.*?\}\}", text, flags=re.S):
        source = match.group(0)
        try:
            tree = _JINJA.parse(source)
        except jinja2.TemplateSyntaxError as err:
            out.append((source, None, f"unparsable Jinja: {err}"))
            continue
        expr = next(n for output in tree.find_all(nodes.Output) for n in output.nodes
                    if not isinstance(n, nodes.TemplateData))
        out.append((source, expr, None))
    return out


def _line_of(lines, start, source):
    """The file's line (1-based) where the expression begins, searching from the task's line."""
    head = source.splitlines()[0].strip()
    for number in range(max(start - 1, 0), len(lines)):
        if head in lines[number]:
            return number + 1
    return start


def _const(node, value=None):
    return isinstance(node, nodes.Const) and (value is None or node.value == value)


def _strip_joins(node):
    """The expression under its trailing join(LITERAL) and map('join', LITERAL) filters."""
    while isinstance(node, nodes.Filter):
        if node.name == "join" and all(_const(a) for a in node.args) and not node.kwargs:
            node = node.node
        elif node.name == "map" and len(node.args) == 2 and _const(node.args[0], "join") and _const(node.args[1]):
            node = node.node
        else:
            break
    return node


def _is_filter(node, name, *args):
    """node is `| name(args...)`, `| map(name, args...)` or `| map('map', name, args...)`; then its input."""
    if not isinstance(node, nodes.Filter):
        return None
    if node.name == name and len(node.args) >= len(args) and all(_const(a, v) for a, v in zip(node.args, args)):
        return node.node
    if node.name == "map" and node.args:
        rest = list(node.args)
        while rest and _const(rest[0], "map"):  # map('map', name): a list of lists
            rest.pop(0)
        if rest and _const(rest[0], name) and len(rest) > len(args) - 1 \
                and all(_const(a, v) for a, v in zip(rest[1:], args)):
            return node.node
    return None


def _shell_quoted(node):
    return _is_filter(_strip_joins(node), "quote") is not None


def _cron_quoted(node):
    inner = _strip_joins(node)
    if not isinstance(inner, nodes.Filter):
        return False
    escaped = _is_filter(inner, "replace", "%")
    replacement = inner.args[-1] if inner.args else None
    if escaped is None or not _const(replacement) or "\\%" not in str(replacement.value):
        return False
    return _is_filter(escaped, "quote") is not None


def _systemd_quoted(node, directive):
    if isinstance(node, nodes.Filter) and node.name in SYSTEMD_QUOTE:
        dollar = next((kw.value for kw in node.kwargs if kw.key == "dollar"), node.args[0] if node.args else None)
        dollar_off = _const(dollar, False)
        if directive.startswith("Exec"):
            return not dollar_off  # $VAR is expanded on command lines: $ must become $$
        return dollar_off  # elsewhere $$ would stay two dollars
    if directive in PATH_DIRECTIVES:
        return (isinstance(node, nodes.Filter) and node.name == "replace" and len(node.args) == 2
                and _const(node.args[0], "%") and _const(node.args[1], "%%"))
    return False


# ---------------------------------------------------------------- tasks
def _tasks(tree):
    """Every mapping that is a list item (tasks, handlers, block bodies), wherever it is nested."""
    if isinstance(tree, list):
        for item in tree:
            if isinstance(item, dict):
                yield item
            yield from _tasks(item)
    elif isinstance(tree, dict):
        for key, value in tree.items():
            if key != "__line__":
                yield from _tasks(value)


def _task_yaml_files(root):
    for top in ("roles", "playbooks"):
        for folder, _dirs, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if name.endswith((".yml", ".yaml")):
                    yield os.path.join(folder, name)


def task_offenders(root):
    """'FILE:LINE: why' for every shell/raw task that interpolates an unquoted value, and every command task with an
    interpolated string command line."""
    found = []
    for path in _task_yaml_files(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        with open(path, encoding="utf-8") as f:
            try:
                tree = yaml.load(f, Loader=_LineLoader)  # noqa: S506  (a SafeLoader subclass)
            except yaml.YAMLError as err:
                found.append(f"{rel}: not readable as YAML, so not checked: {err}")
                continue
        for task in _tasks(tree):
            line = task.get("__line__", 0)
            args = task.get("args") if isinstance(task.get("args"), dict) else {}
            for key in task:
                if key in SHELL_MODULES or key in COMMAND_MODULES:
                    value = task[key]
                    text = value if isinstance(value, str) else value.get("cmd") if isinstance(value, dict) else None
                    text = text if text is not None else args.get("cmd")
                    if not isinstance(text, str):
                        continue  # argv
                    if key in COMMAND_MODULES and (rel, text.strip()) in ALLOWED_COMMAND_LINES:
                        continue
                    for source, expr, problem in _expressions(text):
                        where = f"{rel}:{_line_of(lines, line, source)}: {key} {' '.join(source.split())}"
                        if problem:
                            found.append(f"{where}: {problem}")
                        elif key in COMMAND_MODULES:
                            found.append(f"{where}: a string command line with a value in it: give argv (a list)")
                        elif not _shell_quoted(expr):
                            found.append(f"{where}: a value reaches the shell without | quote")
    return found


# ---------------------------------------------------------------- templates
def _templates(root):
    for folder, _dirs, files in os.walk(os.path.join(root, "roles")):
        for name in sorted(files):
            if name.endswith((".service.j2", ".timer.j2", ".socket.j2")) or "cron" in name:
                yield os.path.join(folder, name)


_EXPR = re.compile(r"\{\{.*?\}\}")
_CRON_TOKEN = re.compile(r"(?:\{\{.*?\}\}|[^\s{]|\{(?!\{))+")


def _line_expressions(text, rel, found):
    """(line number, line, [(start column, parsed expression)]) for each line; an expression over lines is a finding."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.count("{{") != line.count("}}"):
            found.append(f"{rel}:{number}: an expression spans lines (keep each on one line to be checked)")
            continue
        exprs = []
        for match in _EXPR.finditer(line):
            parsed = _expressions(match.group(0))
            exprs.append((match.start(), match.group(0), parsed[0][1] if parsed else None))
        yield number, line, exprs


def template_offenders(root):
    found = []
    for path in _templates(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        text = re.sub(r"\{#.*?#\}", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)  # Jinja comments
        is_cron = "cron" in os.path.basename(path)
        for number, line, exprs in _line_expressions(text, rel, found):
            stripped = line.lstrip()
            if not exprs or stripped.startswith(("#", ";")):
                continue
            if is_cron:
                if re.match(r"[A-Za-z_][A-Za-z0-9_]*\s*=", stripped):
                    found.append(f"{rel}:{number}: a value in a cron environment line")
                    continue
                tokens = list(_CRON_TOKEN.finditer(line))
                if len(tokens) < 7:
                    continue
                command_from = tokens[6].start()  # five time fields and the user, then the command
                for column, source, expr in exprs:
                    if column >= command_from and (expr is None or not _cron_quoted(expr)):
                        found.append(f"{rel}:{number}: {source}: a value reaches the cron line's shell without "
                                     "| quote | replace('%', \"'\\\\%'\")")
                continue
            directive = stripped.split("=", 1)[0].strip()
            directive = directive if re.fullmatch(r"[A-Za-z]+", directive) else ""
            if not (directive.startswith("Exec") or directive == "Environment" or directive in PATH_DIRECTIVES):
                continue
            for _column, source, expr in exprs:
                if expr is None or not _systemd_quoted(expr, directive):
                    want = ("| glm53.serving.systemd_quote" if directive.startswith("Exec")
                            else "| glm53.serving.systemd_quote(dollar=false)" if directive == "Environment"
                            else "| replace('%', '%%') or | glm53.serving.systemd_quote(dollar=false)")
                    found.append(f"{rel}:{number}: {source}: a value in {directive}= without {want}")
    return found


# ---------------------------------------------------------------- the tests
def test_no_shell_or_command_task_interpolates_an_unquoted_value():
    found = task_offenders(REPO)
    assert not found, "values reach a shell or a command line as code:\n" + "\n".join(found)


def test_no_unit_or_cron_template_writes_an_unquoted_value_into_a_command():
    found = template_offenders(REPO)
    assert not found, "values reach a unit's or cron's command line unquoted:\n" + "\n".join(found)


def test_the_checks_read_the_templates_and_tasks_they_must():
    """Guards the scanner itself: the files that carry values into commands are the ones it looks at."""
    rels = {os.path.relpath(p, REPO) for p in _templates(REPO)}
    assert {"roles/heal/templates/heal.cron.j2", "roles/heal/templates/heal.service.j2",
            "roles/service/templates/engine.service.j2", "roles/service/templates/watchdog.service.j2"} <= rels
    yml = {os.path.relpath(p, REPO) for p in _task_yaml_files(REPO)}
    assert {"roles/_build/tasks/editable.yml", "roles/venv/tasks/python.yml",
            "roles/preflight/tasks/gather.yml"} <= yml


def _write(tmp_path, rel, text):
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.mark.parametrize("task, flagged", [
    ("ansible.builtin.shell: echo {{ x }} >> /tmp/log", True),
    ("ansible.builtin.shell: echo {{ x | quote }} >> /tmp/log", False),
    ("ansible.builtin.shell: echo {{ x | quote | upper }}", True),
    ("ansible.builtin.shell: echo {{ xs | map('quote') | join(' ') }}", False),
    ("ansible.builtin.shell: echo {{ xs | join(' ') }}", True),
    ("ansible.builtin.shell: echo {{ runs | map('map', 'quote') | map('join', ' ') | join(' && ') }}", False),
    ("shell:\n    cmd: echo {{ x }}", True),
    ("ansible.builtin.raw: echo {{ x }}", True),
    ("ansible.builtin.command: tail {{ x | quote }}", True),
    ("ansible.builtin.command:\n    cmd: tail {{ x }}", True),
    ("ansible.builtin.command:\n    argv: [tail, \"{{ x }}\"]", False),
    ("ansible.builtin.command: uptime", False),
    ("ansible.builtin.user:\n    name: a\n    shell: /bin/{{ x }}", False),
])
def test_the_task_check_flags_what_it_must(tmp_path, task, flagged):
    _write(tmp_path, "roles/r/tasks/main.yml", f"---\n- name: T\n  {task}\n")
    found = task_offenders(str(tmp_path))
    assert bool(found) == flagged, found
    if flagged:
        assert found[0].startswith("roles/r/tasks/main.yml:"), found


@pytest.mark.parametrize("name, line, flagged", [
    ("u.service.j2", "ExecStart={{ argv | join(' ') }}", True),
    ("u.service.j2", "ExecStart={{ argv | map('quote') | join(' ') }}", True),
    ("u.service.j2", "ExecStart={{ argv | glm53.serving.systemd_quote }}", False),
    ("u.service.j2", "ExecStart={{ argv | glm53.serving.systemd_quote(dollar=false) }}", True),
    ("u.service.j2", "ExecStartPre=+{{ argv | glm53.serving.systemd_quote }} --x {{ y }}", True),
    ("u.service.j2", "Environment={{ ('A=' ~ v) | to_json }}", True),
    ("u.service.j2", "Environment={{ ('A=' ~ v) | glm53.serving.systemd_quote(dollar=false, always=true) }}", False),
    ("u.service.j2", "WorkingDirectory={{ d }}", True),
    ("u.service.j2", "WorkingDirectory={{ d | replace('%', '%%') }}", False),
    ("u.service.j2", "Description=every {{ n }} minutes", False),
    ("u.service.j2", "# ExecStart={{ argv }}", False),
    ("x.cron.j2", "*/5 * * * * {{ user }} cd {{ d }} && run", True),
    ("x.cron.j2", "*/5 * * * * {{ user }} cd {{ d | quote }} && run", True),
    ("x.cron.j2", "*/5 * * * * {{ user }} cd {{ d | quote | replace('%', \"'\\\\%'\") }} && run", False),
    ("x.cron.j2", "{{ m }} * * * * root run {{ a | map('quote') | map('replace', '%', \"'\\\\%'\") | join(' ') }}",
     False),
    ("x.cron.j2", "{{ m }} * * * * root run {{ a | map('quote') | join(' ') }}", True),
    ("x.cron.j2", "PATH={{ p }}", True),
])
def test_the_template_check_flags_what_it_must(tmp_path, name, line, flagged):
    _write(tmp_path, f"roles/r/templates/{name}", "{{ ansible_managed | comment }}\n" + line + "\n")
    found = template_offenders(str(tmp_path))
    assert bool(found) == flagged, found
    if flagged:
        assert found[0].startswith(f"roles/r/templates/{name}:2:"), found
