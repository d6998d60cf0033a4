"""Write docs/architecture.md's table of what each playbook runs, read from the tree (or check it).

    python hack/gen_architecture.py [--check]

For each playbook under playbooks/: the playbooks it imports, and for each of its plays the hosts, the roles and
role entry points it runs (roles:, import_role and include_role with their tasks_from, inside blocks too), and the
facts those roles publish (the public names their task files set with set_fact or register; names that start with
an underscore are a role's own). The table sits between two marker lines in docs/architecture.md; --check exits 1
when the file differs from what the tree gives (tests/unit/test_architecture_doc.py runs it).
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(REPO, "docs", "architecture.md")
START = "<!-- the table below is written by hack/gen_architecture.py from the tree: do not edit it by hand -->"
END = "<!-- end of the generated table -->"
PREFIX = "glm53.serving."
ROLE_KEYS = ("ansible.builtin.import_role", "ansible.builtin.include_role", "import_role", "include_role")


def _load(path):
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh) or []


def _tasks(items):
    """Every task of a list, blocks opened."""
    for task in items or []:
        if not isinstance(task, dict):
            continue
        if "block" in task:
            for key in ("block", "rescue", "always"):
                yield from _tasks(task.get(key))
        else:
            yield task


def _role_calls(play):
    """[(role, entry point)] a play runs, in order."""
    calls = []
    for role in play.get("roles") or []:
        name = role.get("role") or role.get("name") if isinstance(role, dict) else role
        calls.append((str(name), "main"))
    for key in ("pre_tasks", "tasks", "post_tasks", "handlers"):
        for task in _tasks(play.get(key)):
            for mod in ROLE_KEYS:
                if isinstance(task.get(mod), dict):
                    calls.append((str(task[mod].get("name")), str(task[mod].get("tasks_from") or "main")))
    out = []
    for name, entry in calls:
        name = name[len(PREFIX):] if name.startswith(PREFIX) else name
        name = "(each role)" if "{{" in name else name  # a loop over the roles
        if (name, entry) not in out:
            out.append((name, entry))
    return out


def published(role):
    """The public facts a role's task files set (set_fact keys, register names), sorted."""
    names = set()
    for path in glob.glob(os.path.join(REPO, "roles", role, "tasks", "*.yml")):
        for task in _tasks(_load(path)):
            for key in ("ansible.builtin.set_fact", "set_fact"):
                if isinstance(task.get(key), dict):
                    names |= set(k for k in task[key] if k != "cacheable")
            if isinstance(task.get("register"), str):
                names.add(task["register"])
    return sorted(n for n in names if not n.startswith("_") and "{" not in n)


def rows():
    lines = ["| playbook | play: hosts | roles and entry points (`role` or `role:entry`) | facts those roles publish |",
             "| --- | --- | --- | --- |"]
    for path in sorted(glob.glob(os.path.join(REPO, "playbooks", "*.yml"))):
        name = "playbooks/" + os.path.basename(path)
        for i, play in enumerate(_load(path)):
            if not isinstance(play, dict):
                continue
            imported = play.get("ansible.builtin.import_playbook") or play.get("import_playbook")
            if imported:
                lines.append("| %s | imports `%s` | | |" % (name if i == 0 else "", imported))
                continue
            calls = _role_calls(play)
            roles = sorted(set(r for r, _e in calls if not r.startswith(("_", "(")) and "." not in r))
            facts = sorted(set(f for r in roles for f in published(r)))
            hosts = str(play.get("hosts", "")).replace("|", "\\|")
            lines.append("| %s | %s: `%s` | %s | %s |" % (
                name if i == 0 else "", re.sub(r"\s+", " ", str(play.get("name", "play"))).replace("|", "\\|"), hosts,
                ", ".join("`%s`" % (r if e == "main" else "%s:%s" % (r, e)) for r, e in calls) or "(tasks only)",
                ", ".join("`%s`" % f for f in facts)))
    return "\n".join(lines)


def render(text):
    if START not in text or END not in text:
        raise SystemExit("gen_architecture: docs/architecture.md has no marker lines (%s ... %s)" % (START, END))
    head, rest = text.split(START, 1)
    _old, tail = rest.split(END, 1)
    return head + START + "\n" + rows() + "\n" + END + tail


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the file differs from the tree")
    a = ap.parse_args()
    with open(DOC, encoding="utf-8") as fh:
        text = fh.read()
    new = render(text)
    if a.check:
        if new != text:
            sys.stderr.write("gen_architecture: docs/architecture.md's table differs from the tree: "
                             "python hack/gen_architecture.py\n")
            return 1
        return 0
    if new != text:
        with open(DOC, "w", encoding="utf-8") as fh:
            fh.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
