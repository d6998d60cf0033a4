#!/usr/bin/env python3
"""The range of every number a user sets, with its reason, as docs/settings.md's "Ranges" table: read from the roles'
argument specs (which settings are numbers) and meta/rules.yml (the bounds and the reason, `hint`), the same data
the checks run on. Prints the table; --write puts it in docs/settings.md between its markers; --check exits 1 when
the page differs (tests/unit/test_setting_ranges.py runs it).
  python hack/settings_ranges.py [--write | --check]"""
from __future__ import annotations

import os
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(REPO, "docs", "settings.md")
BEGIN = "<!-- ranges: made by hack/settings_ranges.py from the roles' meta/rules.yml; do not edit -->"
END = "<!-- end of ranges -->"
NUMBER_RULES = {"int_range", "number_range", "int_min", "port", "serial", "count_or_pct", "positive"}
BOUNDED = {"int_range", "number_range", "duration"}
# Rules whose bounds are the rule itself (no min and max to read)
FIXED = {"port": ("1", "65535", "a TCP port"),
         "serial": ("1", "the play's hosts (or 1%-100%)", "a batch of hosts; 0 would stop every engine at once"),
         "count_or_pct": ("0", "the pool (or 0%-100%)", "hosts or a percentage of the pool")}


def public_roles():
    roles = os.path.join(REPO, "roles")
    return sorted(r for r in os.listdir(roles) if not r.startswith("_")
                  and os.path.exists(os.path.join(roles, r, "meta", "argument_specs.yml")))


def load(role, name):
    path = os.path.join(REPO, "roles", role, "meta", name)
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh) or {}


def numbers(role):
    """{name: option} of a role's options that are numbers."""
    out = {}
    for entry in (load(role, "argument_specs.yml").get("argument_specs") or {}).values():
        for name, option in ((entry or {}).get("options") or {}).items():
            if not name.startswith("_") and (option or {}).get("type") in ("int", "float"):
                out.setdefault(name, option)
    return out


def rules(role):
    """{name: [rule mapping]} of a role's meta/rules.yml."""
    out = {}
    for name, entries in load(role, "rules.yml").items():
        for entry in entries if isinstance(entries, list) else [entries]:
            out.setdefault(name, []).append({"rule": entry} if isinstance(entry, str) else entry)
    return out


def _bound(value, rule):
    if rule == "duration":
        return "%s s" % "{:,}".format(value)
    if isinstance(value, dict):
        less = value.get("less", [])
        less = less if isinstance(less, list) else [less]
        return ("`%s`" % value["setting"] + "".join(" - `%s`" % name for name in less)
                + (" (else %s)" % value["otherwise"] if "otherwise" in value else ""))
    return "{:,}".format(value) if isinstance(value, int) else str(value)


def rows():
    """(role, name, min, max, reason) of every number setting with a range rule, and the problems: a number without
    a bounded rule, or a bounded rule without its reason."""
    out, problems = [], []
    for role in public_roles():
        kinds, found = numbers(role), rules(role)
        for name, entries in found.items():
            for entry in entries:
                rule = entry["rule"]
                if rule in FIXED:
                    lo, hi, why = FIXED[rule]
                    out.append((role, name, lo, hi, entry.get("hint") or why))
                elif rule in BOUNDED or (rule in NUMBER_RULES and name in kinds):
                    if "min" not in entry or "max" not in entry:
                        problems.append("%s: %s (%s) has no %s" % (role, name, rule, "max" if "min" in entry else "min"))
                        continue
                    if not entry.get("hint"):
                        problems.append("%s: %s has a range and no reason (hint)" % (role, name))
                        continue
                    label = name + (" (each)" if entry.get("each") else "")
                    out.append((role, entry.get("label", label), _bound(entry["min"], rule), _bound(entry["max"], rule),
                                " ".join(str(entry["hint"]).split())))
        for name in sorted(kinds):
            if any(e["rule"] in NUMBER_RULES for e in found.get(name, [])):
                continue
            choices = kinds[name].get("choices")
            if choices:  # the argument spec's own list is the range
                out.append((role, name, str(min(choices)), str(max(choices)),
                            "one of %s: %s" % (", ".join(str(c) for c in choices), kinds[name]["description"])))
            else:
                problems.append("%s: %s is a number (%s) with no range in meta/rules.yml" % (
                    role, name, kinds[name]["type"]))
    return out, problems


def table():
    found, problems = rows()
    lines = [BEGIN, "", "| setting | from | to | why |", "|---|---|---|---|"]
    lines += ["| `%s` | %s | %s | %s |" % (name, lo, hi, why.replace("|", "\\|")) for _role, name, lo, hi, why in found]
    lines += ["", END]
    return "\n".join(lines), problems


def main(argv):
    text, problems = table()
    for problem in problems:
        print("settings_ranges: " + problem, file=sys.stderr)
    with open(PAGE, encoding="utf-8") as fh:
        page = fh.read()
    if BEGIN not in page or END not in page:
        print("settings_ranges: %s has no ranges markers" % PAGE, file=sys.stderr)
        return 1
    head, rest = page.split(BEGIN, 1)
    new = head + text + rest.split(END, 1)[1]
    if "--write" in argv:
        with open(PAGE, "w", encoding="utf-8") as fh:
            fh.write(new)
    elif "--check" in argv:
        if new != page:
            print("settings_ranges: docs/settings.md's ranges differ from the rules: python hack/settings_ranges.py "
                  "--write", file=sys.stderr)
            return 1
    else:
        print(text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
