"""Every boolean setting is read through `| bool` wherever an expression uses it.

`-e serve_allow_unauthenticated_remote=false` on the command line gives the *string* "false", which Jinja
takes as true; argument_specs accept it (it converts to a boolean) but leave the variable a string. A guard
written `... or serve_allow_unauthenticated_remote` is then skipped by the very value meant to keep it, and
`['--enforce-eager'] if serve_enforce_eager` adds the flag it was meant to leave out. So an expression never
reads a boolean setting bare: this test reads every expression in roles/, playbooks/ and site.yml (task
conditions, `{{ }}` and `{% %}` in any value, whole templates) and fails on any bare use.
"""
from __future__ import annotations

import glob
import os
import re

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONDITION_KEYS = ("when", "that", "changed_when", "failed_when", "until")
JINJA_RE = re.compile(r"{{.*?}}|{%.*?%}", re.S)


def bool_settings():
    names = set()
    for path in glob.glob(os.path.join(REPO, "roles", "*", "meta", "argument_specs.yml")):
        with open(path, encoding="utf-8") as fh:
            for spec in yaml.safe_load(fh)["argument_specs"].values():
                names.update(n for n, o in spec.get("options", {}).items() if o.get("type") == "bool")
    return names


def expressions(node, key=None):
    """Every Jinja expression in a loaded YAML document: bare conditions and templated strings."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from expressions(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from expressions(v, key)
    elif isinstance(node, str):
        if key in CONDITION_KEYS:
            yield node
        else:
            yield from JINJA_RE.findall(node)


def bare_uses(text, names):
    found = []
    for name in names:
        for m in re.finditer(r"(?<![\w.'\"])%s(?![\w'\"])" % re.escape(name), text):
            rest = text[m.end():]
            if re.match(r"\s*\|\s*bool\b", rest):
                continue
            if re.match(r"\s*[:=](?!=)", rest):
                continue  # a key being set (set_fact, a vars mapping), not read
            found.append(name)
    return found


def sources():
    for pattern in ("roles/**/*.yml", "playbooks/**/*.yml", "site.yml"):
        for path in glob.glob(os.path.join(REPO, pattern), recursive=True):
            if path.endswith(("argument_specs.yml", os.path.join("defaults", "main.yml"))):
                continue
            with open(path, encoding="utf-8") as fh:
                for doc in yaml.safe_load_all(fh):
                    yield path, list(expressions(doc))
    for path in glob.glob(os.path.join(REPO, "roles", "**", "*.j2"), recursive=True):
        with open(path, encoding="utf-8") as fh:
            yield path, JINJA_RE.findall(fh.read())


def test_there_are_boolean_settings_and_expressions_to_check():
    names = bool_settings()
    assert {"serve_enforce_eager", "serve_allow_unauthenticated_remote", "probes_fail_host"} <= names
    assert sum(len(exprs) for _p, exprs in sources()) > 500


def test_no_expression_reads_a_boolean_setting_bare():
    names = bool_settings()
    bad = []
    for path, exprs in sources():
        for expr in exprs:
            for name in bare_uses(expr, names):
                bad.append("%s: %s in %r" % (os.path.relpath(path, REPO), name, expr.strip()[:120]))
    assert not bad, "read these through `| bool` (a -e string 'false' is true):\n" + "\n".join(sorted(set(bad)))


def test_the_scanner_sees_a_bare_use():
    names = {"serve_enforce_eager"}
    assert bare_uses("['--enforce-eager'] if serve_enforce_eager else []", names) == ["serve_enforce_eager"]
    assert bare_uses("not (serve_enforce_eager | bool and x)", names) == []
    assert bare_uses("{'variable': 'serve_enforce_eager'}", names) == []
