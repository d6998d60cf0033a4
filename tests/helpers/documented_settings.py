"""The settings the documentation gives as examples, read from the documentation itself.

Each `ansible-playbook ... -e key=value ...` command in README.md, docs/*.md, the roles' READMEs and the playbooks'
header comments is one example (its -e values together, as the command gives them), and each fenced YAML block whose
keys are all settings (a group_vars file a guide shows) is one more. tests/integration/test_bad_settings_kinds.py runs
every example through validate.yml as a host of its own: an example must pass, unless REFUSED says the guide shows it
as a refusal, and then it must be refused naming the setting. tests/unit/test_documented_settings.py checks that every
key an example sets is a setting of some role.

    documented_examples() -> {case: {"settings": {...}, "source": "docs/x.md:12", "refused": [words] or None,
                                     "host_checked": [words] or None}}
"""
from __future__ import annotations

import glob
import json
import os
import re
import shlex

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = ["README.md", "docs/*.md", "roles/*/README.md", "playbooks/*.yml", "site.yml"]

# Examples the guides give as refusals: "key=value" as written -> words the refusal must name.
REFUSED = {"serve_extra_args=--foo": ["serve_extra_args"]}
# Examples whose values name what is on the user's hosts and network (a folder, an internal index): the rules pass
# them, and the check that reads the host refuses them here, naming the setting and why ({setting: words}).
HOST_CHECKED = {"vllm_fork_dependency_src_dirs": ["vllm_fork_dependency_src_dirs", "not a directory on"],
                "vllm_fork_index_url": ["vllm_fork_index_simple_url", "did not answer 200"]}
# Placeholders a guide writes where a user puts their own value, with what the test puts there.
PLACEHOLDERS = {"$PWD": REPO, "/path/to/report": "/srv/glm53/report"}

_SPAN = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def _commands(path, text):
    """(line, command) for each command line in the file: code spans and fenced blocks in Markdown (a trailing
    backslash continues a line), comment lines in YAML playbooks."""
    if path.endswith(".md"):
        for m in _SPAN.finditer(text):
            yield text.count("\n", 0, m.start()) + 1, m.group(1)
        for m in _FENCE.finditer(text):
            yield from _joined(text.count("\n", 0, m.start(2)) + 1, m.group(2).splitlines())
    else:
        lines = [line.split("#", 1)[1] if line.lstrip().startswith("#") else "" for line in text.splitlines()]
        yield from _joined(1, lines)


def _joined(first, lines):
    command, start = "", None
    for i, line in enumerate(lines):
        if start is None:
            start = first + i
        command += line.rstrip().rstrip("\\") + " "
        if not line.rstrip().endswith("\\"):
            yield start, command.strip()
            command, start = "", None
    if command.strip():
        yield start, command.strip()


def _placeholders(value):
    for marker, real in PLACEHOLDERS.items():
        value = value.replace(marker, real)
    return value


def _extra_vars(command):
    """[(written, {key: value})] for each -e of a command: key=value pairs (strings, as Ansible reads them) or JSON."""
    try:
        words = shlex.split(command.split("#", 1)[0] if " #" in command else command)
    except ValueError:
        words = command.split()
    words = [w.lstrip("[(") for w in words]  # an optional part of a usage line: [-e key=value]
    found = []
    for i, word in enumerate(words[:-1]):
        if word not in ("-e", "--extra-vars"):
            continue
        value = words[i + 1].rstrip("`):,.;]")
        if value.startswith("{"):
            try:
                found.append((value, json.loads(value)))
            except ValueError:
                continue
        elif re.match(r"^[a-z_][a-z0-9_]*=", value):
            key, _, val = value.partition("=")
            found.append((value, {key: _placeholders(val)}))
    return found


def _yaml_blocks(path, text):
    """(line, mapping) for each fenced YAML block of a Markdown file whose keys all look like settings."""
    for m in _FENCE.finditer(text):
        if m.group(1) not in ("yaml", "yml"):
            continue
        try:
            data = yaml.safe_load(m.group(2))
        except yaml.YAMLError:
            continue
        if isinstance(data, dict) and data and all(re.match(r"^[a-z][a-z0-9]*_[a-z0-9_]+$", str(k)) for k in data):
            yield text.count("\n", 0, m.start(2)) + 1, data


def documented_examples():
    examples = {}
    for pattern in DOCS:
        for path in sorted(glob.glob(os.path.join(REPO, pattern))):
            rel = os.path.relpath(path, REPO)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            seen = set()
            for line, command in _commands(rel, text):
                pairs = _extra_vars(command)
                if not pairs:
                    continue
                settings, refused = {}, None
                for written, values in pairs:
                    settings.update(values)
                    if written in REFUSED:
                        refused = REFUSED[written]
                key = json.dumps(settings, sort_keys=True)
                if key in seen:
                    continue
                seen.add(key)
                examples["doc-%s-%d" % (_slug(rel), line)] = _example(settings, rel, line, refused)
            if rel.endswith(".md"):
                for line, data in _yaml_blocks(rel, text):
                    examples["doc-%s-%d" % (_slug(rel), line)] = _example(data, rel, line, None)
    return examples


def _example(settings, rel, line, refused):
    checked = [w for k in sorted(settings) if k in HOST_CHECKED for w in HOST_CHECKED[k]] or None
    return {"settings": settings, "source": "%s:%d" % (rel, line), "refused": refused, "host_checked": checked}


def _slug(rel):
    return re.sub(r"[^a-z0-9]+", "-", rel.lower().rsplit(".", 1)[0]).strip("-")
