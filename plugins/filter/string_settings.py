# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: string_settings
short_description: Find the mapping and list settings that arrived as strings
version_added: "0.2.0"
description:
  - "C(-e serve_compilation_config='{\"cudagraph_mode\": \"NONE\"}') or C(-e serve_extra_args=--foo) on the command
    line give a string, not a mapping or a list. Role argument specs accept such a string (they convert it to
    check it) but leave the variable a string, which the role then reads character by character or not at all."
  - Reads the named roles' C(meta/argument_specs.yml) in this collection (once per process). Without O(values),
    returns the names of their public C(dict) and C(list) settings, to look up. With O(values), returns one message
    per such setting whose value is a string, naming the variable and how to pass it. The value itself is never
    shown (a mapping such as an environment may hold a token).
positional: _input, values
options:
  _input:
    description: Role names of this collection (C(serve), C(venv), ...).
    type: list
    elements: str
    required: true
  values:
    description: The settings' values, by name (a setting that is not set is left out).
    type: dict
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Refuse a mapping or a list given as a string
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
  vars:
    __names: "{{ ['serve'] | glm53.serving.string_settings }}"
    __set: "{{ query('ansible.builtin.varnames', '^(' ~ (__names | join('|')) ~ ')$') }}"
    __problems: "{{ ['serve'] | glm53.serving.string_settings(dict(__set | zip(query('ansible.builtin.vars', *__set)))) }}"
"""

RETURN = r"""
_value:
  description: The settings' names (without O(values)), or one message per setting given as a string.
  type: list
  elements: str
"""

import os
import re

from ansible.errors import AnsibleFilterError

try:
    import yaml
except ImportError:  # pragma: no cover - ansible-core needs PyYAML
    yaml = None

_ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")
_KIND = {"dict": ("a mapping", '{"key": "value"}'), "list": ("a list", '["first", "second"]')}
_CACHE = {}


def role_options(role):
    """{name: type} of a role's public (not underscore) dict and list options, over all its entry points."""
    if not isinstance(role, str) or not re.match(r"^[a-z][a-z0-9_]*$", role):
        raise AnsibleFilterError("string_settings: %r is not a role name of this collection" % (role,))
    if role not in _CACHE:
        path = os.path.join(_ROLES, role, "meta", "argument_specs.yml")
        try:
            with open(path, encoding="utf-8") as fh:
                specs = yaml.safe_load(fh)["argument_specs"]
        except (OSError, KeyError, TypeError, yaml.YAMLError) as exc:
            raise AnsibleFilterError("string_settings: cannot read %s: %s" % (path, exc))
        found = {}
        for entry in specs.values():
            for name, option in ((entry or {}).get("options") or {}).items():
                if option.get("type") in _KIND and not name.startswith("_"):
                    found.setdefault(name, option["type"])
        _CACHE[role] = found
    return _CACHE[role]


def string_settings(roles, values=None):
    if not isinstance(roles, list):
        raise AnsibleFilterError("string_settings expects a list of role names")
    options = {}
    for role in roles:
        options.update(role_options(role))
    if values is None:
        return sorted(options)
    if not isinstance(values, dict):
        raise AnsibleFilterError("string_settings expects the settings' values as a mapping")
    out = []
    for name in sorted(options):
        value = values.get(name)
        if not isinstance(value, str):
            continue
        what, example = _KIND[options[name]]
        out.append("%s is a string (%d characters), not %s. On the command line key=value always gives a string: "
                   "pass it as JSON, -e '{\"%s\": %s}', or set it in a vars file." % (name, len(value), what, name, example))
    return out


class FilterModule(object):
    def filters(self):
        return {"string_settings": string_settings}
