# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: setting_rules
short_description: Check the roles' settings against the shape and range rules kept beside their argument specs
version_added: "0.2.0"
description:
  - Reads the named roles' C(meta/rules.yml) in this collection (once per process). Without O(values), returns
    the names to look up (the settings the rules check, and the ones a bound refers to). With O(values), returns
    one message per setting that breaks its rule, as the C(setting_problems) filter words it.
  - "A rules file maps a setting to a rule name (C(serve_port: port)), to a mapping, or to a list of them. The
    mapping's keys: C(rule), C(min) and C(max) (a number, or C({setting: NAME, otherwise: N, less: OTHER}): another
    value, read as a whole number, less the whole number C(OTHER) (a setting's name, or a list of them) when it is
    given, or C(otherwise) when either is not one), C(hint), C(secret), C(skip_empty) (an empty value
    is left alone), C(each) (check every element of a list or every value of a mapping), C(keys) (with C(each),
    the mapping's keys instead), C(attribute) (with C(each), that key of every element) and C(label) (the name
    in messages)."
  - A value given as the O(unset) marker (not set in this context) is left alone; with C(attribute), a value that
    is not a list is left to C(setting_types).
positional: _input, values
options:
  _input:
    description: Role names of this collection (C(serve), C(venv), ...).
    type: list
    elements: str
    required: true
  values:
    description: The values, by name (as many as the names returned without it).
    type: dict
  unset:
    description: The value that stands for "not set here".
    type: str
    default: __glm53_unset__
seealso:
  - plugin: glm53.serving.setting_problems
    plugin_type: filter
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Refuse settings of the wrong shape or range
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
  vars:
    __names: "{{ ['serve'] | glm53.serving.setting_rules }}"
    __problems: >-
      {{ ['serve'] | glm53.serving.setting_rules(dict(__names | zip(query('ansible.builtin.vars', *__names,
         default='__glm53_unset__')))) }}
"""

RETURN = r"""
_value:
  description: The names to look up (without O(values)), or one message per setting that breaks its rule.
  type: list
  elements: str
"""

import os
import re

from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.filter.setting_problems import setting_problems
from ansible_collections.glm53.serving.plugins.module_utils._role_specs import SpecError, load_yaml, role_dir, role_names
from ansible_collections.glm53.serving.plugins.module_utils._undefined import is_unresolved, unresolved_message

_CACHE = {}
_KEYS = {"rule", "min", "max", "hint", "secret", "skip_empty", "each", "keys", "attribute", "label", "why",
         "not_inside", "distinct", "token", "choices", "root", "unless_default", "url_only", "home_ok"}
# Keys that name other settings, whose values the check needs.
_REFS = ("not_inside", "distinct")
# Kinds that resolve against the inventory (the magic variable groups).
_INVENTORY_KINDS = ("host_ref", "hosts_ref", "group_ref")
_DEFAULTS = {}
# Kinds of what root runs, sources or loads: never inside the engine's user's home.
_ROOT_KINDS = ("root_path", "command", "env_map")
_ENGINE_HOME = "venv_service_home"


def _not_inside(entry):
    found = list(entry.get("not_inside", []))
    root = entry.get("root", entry["rule"] in _ROOT_KINDS)
    if root and _ENGINE_HOME not in found and not entry.get("home_ok"):
        found.append(_ENGINE_HOME)
    return found


def _literal_defaults():
    """Every role's defaults whose value is written out (or made of other such values by plain {{ name }}): what a
    setting is when the role that owns it is not loaded in this context (a cross-role distinct check)."""
    if not _DEFAULTS:
        raw = {}
        for role in ["_defaults"] + role_names():
            path = os.path.join(role_dir(role), "defaults", "main.yml")
            if os.path.exists(path):
                raw.update({k: v for k, v in (load_yaml(path) or {}).items() if isinstance(v, str)})

        def resolve(value, depth=0):
            if depth > 5:
                return None
            out = re.sub(r"\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}",
                         lambda m: resolve(raw.get(m.group(1), "{{"), depth + 1) or "{{", value)
            return None if "{{" in out or "{%" in out else out
        _DEFAULTS.update({k: resolve(v) for k, v in raw.items()})
        _DEFAULTS["__loaded__"] = True
    return _DEFAULTS


def _other(name, values, unset):
    value = values.get(name, unset)
    if (isinstance(value, str) and value == unset) or is_unresolved(value):
        return _literal_defaults().get(name)
    return value


def role_rules(role):
    """[(name, rule mapping)] from a role's meta/rules.yml, in file order."""
    if role not in _CACHE:
        path = os.path.join(role_dir(role), "meta", "rules.yml")
        found = []
        for name, entries in (load_yaml(path) if os.path.exists(path) else {}).items():
            for entry in entries if isinstance(entries, list) else [entries]:
                entry = {"rule": entry} if isinstance(entry, str) else entry
                if not isinstance(entry, dict) or "rule" not in entry or set(entry) - _KEYS:
                    raise SpecError("%s: %s: a rule is a name or a mapping of %s" % (path, name, sorted(_KEYS)))
                for key in _REFS:
                    if isinstance(entry.get(key), str):
                        entry = dict(entry, **{key: [entry[key]]})
                found.append((name, entry))
        _CACHE[role] = found
    return _CACHE[role]


def _bound_names(bound):
    """The settings a bound reads: its setting, and the ones it is less."""
    if not isinstance(bound, dict):
        return []
    less = bound.get("less", [])
    return [bound["setting"]] + (less if isinstance(less, list) else [less])


def _whole(value):
    if isinstance(value, bool):
        return None
    try:
        return int(value) if isinstance(value, (int, float)) else int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _bound(bound, values):
    if not isinstance(bound, dict):
        return bound
    found = [_whole(values.get(name)) for name in _bound_names(bound)]
    if any(n is None for n in found):
        return bound.get("otherwise")
    return found[0] - sum(found[1:])


def setting_rules(roles, values=None, unset="__glm53_unset__"):
    if not isinstance(roles, list):
        raise AnsibleFilterError("setting_rules expects a list of role names")
    try:
        rules = [rule for role in roles for rule in role_rules(role)]
    except SpecError as exc:
        raise AnsibleFilterError("setting_rules: %s" % exc)
    if values is None:
        names = {name for name, entry in rules}
        names |= {other for name, entry in rules for k in ("min", "max") for other in _bound_names(entry.get(k))}
        names |= {other.partition("+")[0] for name, entry in rules for other in entry.get("distinct", []) + _not_inside(entry)}
        if any(entry["rule"] == "silence_matchers" for name, entry in rules):
            names |= {"inventory_hostname", "groups"}
        names |= {entry["token"] for name, entry in rules if entry.get("token")}
        if any(entry["rule"] in _INVENTORY_KINDS for name, entry in rules):
            names.add("groups")
        return sorted(names)
    if not isinstance(values, dict):
        raise AnsibleFilterError("setting_rules expects the values as a mapping")
    checks, unresolved = [], []
    for name, entry in rules:
        value = values.get(name, unset)
        if isinstance(value, str) and value == unset:
            continue
        if is_unresolved(value):
            unresolved.append(unresolved_message(name, value))
            continue
        if any(is_unresolved(values.get(other)) for k in ("min", "max") for other in _bound_names(entry.get(k))):
            continue  # a bound that could not be evaluated is refused as its own setting
        if entry.get("skip_empty") and (value is None or (hasattr(value, "__len__") and len(value) == 0)):
            continue
        check = {"name": entry.get("label", name), "rule": entry["rule"]}
        for key in ("hint", "secret", "choices", "root", "url_only"):
            if key in entry:
                check[key] = entry[key]
        if entry.get("root", entry["rule"] in _ROOT_KINDS):
            check["root"] = True
        if _not_inside(entry):
            check["untrusted"] = [[other, _other(other, values, unset)] for other in _not_inside(entry)
                                  if other != name]
        if entry.get("distinct"):
            check["others"] = []
            for other in entry["distinct"]:
                base, _plus, suffix = other.partition("+")
                theirs = _other(base, values, unset)
                if base != name:
                    check["others"].append([other.replace("+", " + ", 1) if suffix else other,
                                            theirs + suffix if isinstance(theirs, str) and theirs else theirs])
        if entry.get("token"):
            token = values.get(entry["token"])
            if isinstance(token, str) and token.strip() and token != unset:
                check["token"] = entry["token"]
        if entry.get("unless_default") and value == _literal_defaults().get(name):
            continue  # the default may name nothing (no such group: the feature is off)
        if entry["rule"] == "silence_matchers":
            groups, host = values.get("groups"), values.get("inventory_hostname")
            check["inventory"] = groups if isinstance(groups, dict) else {}
            check["host"] = host if isinstance(host, str) and host != unset else None
        if entry["rule"] in _INVENTORY_KINDS:
            groups = values.get("groups")
            check["inventory"] = groups if isinstance(groups, dict) else {}
        for key in ("min", "max"):
            if key in entry:
                check[key] = _bound(entry[key], values)
        if entry.get("each"):
            if entry.get("attribute"):
                if not isinstance(value, list):
                    continue  # the wrong type: setting_types says so
                value = [item.get(entry["attribute"]) if isinstance(item, dict) else None for item in value]
            check["values"] = value
            if entry.get("keys"):
                check["keys"] = True
        else:
            check["value"] = value
        checks.append(check)
    return sorted(set(unresolved)) + setting_problems(checks)


class FilterModule(object):
    def filters(self):
        return {"setting_rules": setting_rules}
