"""Find copied blocks in the collection's Ansible YAML: task runs copied between roles, and copied lines anywhere.

    python hack/task_copies.py [--min-tasks 2] [--min-lines 6]

Two comparisons, each printed with its count; the exit status is 1 when either finds a copy.

- Tasks, as YAML (roles/*/tasks/*.yml but tasks/main.yml): each task is reduced to its module and the shape of its
  arguments: the role's prefixes (flashinfer_, __flashinfer_, ...) and literal strings are replaced by placeholders,
  names and comments are dropped. A run of at least --min-tasks consecutive tasks with the same shapes in two
  different roles is a copy. tasks/main.yml files are left out here: they only dispatch (an include of the role's
  own files), the same shape in every role on purpose; the line comparison reads them.
- Lines, as text (every role's tasks/main.yml, playbooks/*.yml and playbooks/tasks/*.yml, site.yml,
  molecule/*/*.yml and the scenarios' stories/ and tasks/ files, .config/molecule/config.yml): blank lines and `---` are left out, each line is
  stripped, and in a role's file the role's own prefix is replaced by a placeholder (serve_port, __serve_checks);
  comments count (a copied comment is copied text). The role's name as a word (tags: [serve]) is kept: it is how
  a role's dispatch tells its own tasks apart, and every role's tasks/main.yml dispatches alike by the house style.
  A run of at least --min-lines such lines that stands in two files, or twice in one file without overlapping, is
  a copy. Each pair of places is printed once, with its longest run and how many runs it shares.
"""
from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME_KEYS = {"name", "register", "tags", "when", "loop_control", "notify", "listen", "changed_when", "failed_when"}
# The files the line comparison reads, relative to the checkout.
LINE_FILES = ("roles/*/tasks/main.yml", "playbooks/*.yml", "playbooks/tasks/*.yml", "site.yml", "molecule/*/*.yml",
              "molecule/*/stories/*.yml", "molecule/*/tasks/*.yml", ".config/molecule/config.yml")


def shape(value, role):
    """The value with role-specific names and literals abstracted away."""
    if isinstance(value, dict):
        return dict((k, shape(v, role)) for k, v in sorted(value.items()))
    if isinstance(value, list):
        return [shape(v, role) for v in value]
    if isinstance(value, str):
        text = re.sub(r"\b_?_?%s_" % re.escape(role), "ROLE_", value)
        return re.sub(r"'[^']*'|\"[^\"]*\"", "STR", text) if "{{" in text else "STR"
    return value


def tasks_of(path, role):
    with open(path) as fh:
        data = yaml.safe_load(fh) or []
    out = []
    for task in data if isinstance(data, list) else []:
        if not isinstance(task, dict):
            continue
        for inner in task.get("block", []) + task.get("rescue", []) if "block" in task else [task]:
            if isinstance(inner, dict):
                key = dict((k, v) for k, v in inner.items() if k not in NAME_KEYS)
                out.append((json.dumps(shape(key, role), sort_keys=True), inner.get("name", "?")))
    return out


def task_copies(root, min_tasks):
    """(pairs, files): the runs of same-shaped tasks copied between roles' task files."""
    files = []
    for path in sorted(glob.glob(os.path.join(root, "roles", "*", "tasks", "*.yml"))):
        if os.path.basename(path) == "main.yml":
            continue
        role = path.split(os.sep)[-3].lstrip("_")
        files.append((os.path.relpath(path, root), role, tasks_of(path, role)))
    pairs = []
    for i, (pa, ra, ta) in enumerate(files):
        for pb, rb, tb in files[i + 1:]:
            if ra == rb:
                continue
            best = 0
            for x in range(len(ta)):
                for y in range(len(tb)):
                    n = 0
                    while x + n < len(ta) and y + n < len(tb) and ta[x + n][0] == tb[y + n][0]:
                        n += 1
                    if n > best:
                        best, where = n, (ta[x][1], tb[y][1])
            if best >= min_tasks:
                pairs.append((best, pa, pb, where))
    return sorted(pairs, reverse=True), len(files)


def lines_of(path, rel):
    """[(normalised text, line number)] of a file's lines that count (see the module's docstring)."""
    parts = rel.split("/")
    role = parts[1].lstrip("_") if parts[0] == "roles" else None
    out = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            text = line.strip()
            if not text or text == "---":
                continue
            if role:
                text = re.sub(r"\b_?_?%s_" % re.escape(role), "ROLE_", text)
            out.append((text, number))
    return out


def line_copies(root, min_lines):
    """(copies, files): [(length, (file, first, last), (file, first, last), runs)], the longest run of each pair of
    files (a file paired with itself for a run that stands twice in it), and the count of files read."""
    files = {}
    for pattern in LINE_FILES:
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            rel = os.path.relpath(path, root)
            files[rel] = lines_of(path, rel)
    grams = collections.defaultdict(list)
    for rel, lines in files.items():
        for i in range(len(lines) - min_lines + 1):
            grams[tuple(text for text, _ in lines[i:i + min_lines])].append((rel, i))
    runs = {}
    for places in grams.values():
        for a in range(len(places)):
            for b in range(a + 1, len(places)):
                (fa, ia), (fb, ib) = places[a], places[b]
                la, lb = files[fa], files[fb]
                if ia and ib and la[ia - 1][0] == lb[ib - 1][0] and (fa != fb or ib - ia > 1):
                    continue  # not where the run starts: the run is counted from its first line
                n = min_lines
                while ia + n < len(la) and ib + n < len(lb) and la[ia + n][0] == lb[ib + n][0] and (fa != fb or ia + n < ib):
                    n += 1
                if fa == fb and ia + n > ib:
                    continue  # a run that overlaps itself (a line repeated) is not a copy
                runs.setdefault((fa, fb), []).append((n, ia, ib))
    copies = []
    for (fa, fb), found in runs.items():
        n, ia, ib = max(found)
        copies.append((n, (fa, files[fa][ia][1], files[fa][ia + n - 1][1]), (fb, files[fb][ib][1], files[fb][ib + n - 1][1]),
                       len(found)))
    return sorted(copies, reverse=True), len(files)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-tasks", type=int, default=2, help="consecutive same-shaped tasks that make a copy")
    ap.add_argument("--min-lines", type=int, default=6, help="consecutive same lines that make a copy")
    ap.add_argument("--repo", default=REPO, help="the checkout to read (default: this one)")
    a = ap.parse_args()
    pairs, task_files = task_copies(a.repo, a.min_tasks)
    for n, pa, pb, (na, nb) in pairs:
        print("%d tasks: %s (from %r) ~ %s (from %r)" % (n, pa, na, pb, nb))
    print("%d copied task blocks of %d or more tasks between roles, over %d task files" % (len(pairs), a.min_tasks, task_files))
    copies, line_files = line_copies(a.repo, a.min_lines)
    for n, (fa, a1, a2), (fb, b1, b2), count in copies:
        print("%d lines: %s:%d-%d ~ %s:%d-%d%s" % (n, fa, a1, a2, fb, b1, b2, " (%d runs)" % count if count > 1 else ""))
    print("%d copied blocks of %d or more lines, over %d files" % (len(copies), a.min_lines, line_files))
    return 1 if pairs or copies else 0


if __name__ == "__main__":
    sys.exit(main())
