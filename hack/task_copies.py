"""Find task blocks copied between roles, comparing task files as YAML (not as text).

    python hack/task_copies.py [--min-tasks 3]

Each task is reduced to its module and the shape of its arguments: role prefixes (flashinfer_, vllm_fork_,
__flashinfer_, ...) and literal strings are replaced by placeholders, names and comments are dropped. A run of
at least --min-tasks consecutive tasks with the same shapes in two different roles is a copied block. Prints
the pairs and a count; exit status 0 always (it is a report, the test suite decides). tasks/main.yml files are
left out: by the house style they only dispatch (include_tasks of the role's own files), the same shape in
every role on purpose.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME_KEYS = {"name", "register", "tags", "when", "loop_control", "notify", "listen", "changed_when", "failed_when"}


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-tasks", type=int, default=3)
    ap.add_argument("--repo", default=REPO, help="the checkout to read (default: this one)")
    a = ap.parse_args()
    files = []
    root = a.repo
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
            if best >= a.min_tasks:
                pairs.append((best, pa, pb, where))
    for n, pa, pb, (na, nb) in sorted(pairs, reverse=True):
        print("%d tasks: %s (from %r) ~ %s (from %r)" % (n, pa, na, pb, nb))
    print("%d copied task blocks of %d or more tasks between roles, over %d task files"
          % (len(pairs), a.min_tasks, len(files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
