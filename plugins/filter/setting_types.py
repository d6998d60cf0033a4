# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: setting_types
short_description: Check the settings' types against the roles' argument specs, with a message per bad value
version_added: "0.2.0"
description:
  - Reads the named roles' C(meta/argument_specs.yml) in this collection (once per process). Without O(values),
    returns the names of their public options, to look up. With O(values), returns one message per value that
    the option's C(type), C(elements) or C(choices) does not allow, naming the variable, what was given and how
    to write it.
  - "Runs before any role's argument spec: an argument spec's own refusal prints the role's whole spec with it
    and says nothing of the cause (C(serve_port:) with nothing after it is null in YAML; C(-e key=value) always
    gives a string, so a mapping or a list given that way stays text; C(no) unquoted is a boolean)."
  - Every string a setting holds (in lists and mappings too, keys included) is refused when it holds an invisible
    or control character (zero-width spaces and joiners, bidi embeddings, overrides and isolates, the byte-order
    mark, C0 and C1 controls other than tab and line breaks), since such a value reaches a header, a unit line, an
    env file or a file name unseen. Line breaks are left to each setting's own rule.
  - A value that could not be evaluated (from the P(glm53.serving.setting_values#lookup) lookup, for a value that uses
    a variable that is not defined) is refused naming the setting and the missing variable.
  - A whole number is digits only, with an optional sign (ASCII, all of the value); a number is a decimal in
    ASCII. Booleans are Ansible's (C(true), C(yes), C(on), C(1) and their opposites). Values of C(no_log) options
    and of names that hold secrets are never shown.
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
  defer_role_variables:
    description:
      - Leave out a value that could not be evaluated because it uses a variable one of this collection's roles
        defines, such as C(serve_url) written with C(serve_port). It resolves in that role's context,
        where the role's own check evaluates it. For a check made before any role's defaults are loaded.
    type: bool
    default: false
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Refuse values of the wrong type
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
  vars:
    __names: "{{ ['serve'] | glm53.serving.setting_types }}"
    __set: "{{ query('ansible.builtin.varnames', '^(' ~ (__names | join('|')) ~ ')$') }}"
    __problems: "{{ ['serve'] | glm53.serving.setting_types(dict(__set | zip(query('ansible.builtin.vars', *__set)))) }}"
"""

RETURN = r"""
_value:
  description: The settings' names (without O(values)), or one message per value of the wrong type.
  type: list
  elements: str
"""

import json
import re
import unicodedata

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.glm53.serving.plugins.filter.setting_problems import unseen_at
from ansible_collections.glm53.serving.plugins.module_utils._role_specs import SpecError, collection_variables, role_options
from ansible_collections.glm53.serving.plugins.module_utils._undefined import KEY, is_unresolved, unresolved_message

_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")
_TRUE = ("y", "yes", "on", "1", "true", "t")
_FALSE = ("n", "no", "off", "0", "false", "f")
_SECRET = re.compile(r"(^|_)(api_key|key|token|password|secret|credentials?)(_|\Z)", re.I)
_KIND = {"str": "a string", "path": "a path", "int": "a whole number", "float": "a number", "bool": "true or false",
         "list": "a list", "dict": "a mapping"}
_EXAMPLE = {"list": '["first", "second"]', "dict": '{"key": "value"}'}


def _what(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__


def _shown(value, secret):
    if secret:
        return "(hidden)"
    try:
        return json.dumps(value, ensure_ascii=True, default=str)[:80]
    except (TypeError, ValueError):  # pragma: no cover - values from Ansible serialise
        return repr(value)[:80]


def _scalar_problem(kind, value):
    """Why a scalar does not convert to kind, or None."""
    if kind in ("str", "path"):
        if isinstance(value, bool):
            return "was read as a boolean (YAML reads an unquoted yes, no, on, off, true or false so): quote it"
        if isinstance(value, (dict, list, tuple)) or value is None:
            return "is %s, not %s" % (_what(value), _KIND[kind])
        return None
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            return "is %s, not a whole number" % _what(value)
        if isinstance(value, float):
            return None if value.is_integer() else "is not a whole number"
        if isinstance(value, str) and not _INT.match(value.strip()):
            return "is not a whole number (ASCII digits only, nothing else)"
        return None
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            return "is %s, not a number" % _what(value)
        if isinstance(value, str) and not _FLOAT.match(value.strip()):
            return "is not a number (ASCII digits and one '.', nothing else)"
        return None
    if kind == "bool":
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, float)) and value in (0, 1):
            return None
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return None
        return "is not a boolean: use true or false"
    return None


# Invisible and control characters no setting may hold (line breaks and tabs are each setting's rule's to judge).


def _strings(value, path):
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key, "%s (a key)" % path)
            yield from _strings(item, "%s[%s]" % (path, json.dumps(key, default=str)))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _strings(item, "%s[%d]" % (path, i))


def _invisible(name, value):
    for path, text in _strings(value, name):
        at = unseen_at(text, allowed="\t\n\r")  # line breaks are each setting's own rule
        if at is not None:
            char = text[at]
            return ["%s holds U+%04X %s at character %d: an invisible or control character reaches a header, a unit "
                    "line or a file unseen (a byte-order mark or a zero-width space pasted with a key, a bidi "
                    "override). Type the value again, or remove the character." % (
                        path, ord(char), unicodedata.name(char, "(a control character)"), at + 1)]
    return []


def _problems(name, option, value, defer=False):
    if is_unresolved(value):
        if defer and value.get(KEY) in collection_variables():
            return []  # a role's own variable: that role's check, in its context, evaluates it
        return [unresolved_message(name, value)]
    kind = option.get("type", "str")
    secret = bool(option.get("no_log")) or bool(_SECRET.search(name))
    shown = _shown(value, secret)
    if kind == "raw":
        return []
    if value is None:
        hint = " ('' for none)" if kind == "str" else ""
        return ["%s is null (in YAML, `%s:` with nothing after it is null, not empty): give %s%s, or leave it out "
                "to keep the default." % (name, name, _KIND.get(kind, kind), hint)]
    if kind in ("list", "dict"):
        if isinstance(value, str):
            return ["%s is a string (%d characters), not %s. On the command line key=value always gives a string: "
                    "pass it as JSON, -e '{\"%s\": %s}', or set it in a vars file." % (
                        name, len(value), _KIND[kind], name, _EXAMPLE[kind])]
        ok = isinstance(value, dict) if kind == "dict" else isinstance(value, (list, tuple))
        if not ok:
            return ["%s=%s is %s, not %s (for example %s)." % (name, shown, _what(value), _KIND[kind], _EXAMPLE[kind])]
        if kind == "list" and option.get("elements") in ("str", "path", "int", "float", "bool", "dict"):
            out = []
            for i, item in enumerate(value):
                if option["elements"] == "dict":
                    why = None if isinstance(item, dict) else "is %s, not a mapping" % _what(item)
                else:
                    why = ("is null" if item is None else _scalar_problem(option["elements"], item))
                if why:
                    out.append("%s[%d]=%s %s." % (name, i, _shown(item, secret), why))
            return out
        return []
    why = _scalar_problem(kind, value)
    if why:
        return ["%s=%s %s." % (name, shown, why)]
    choices = option.get("choices")
    if choices and to_text(value).strip() not in [to_text(c) for c in choices]:
        return ["%s=%s is not one of: %s." % (name, shown, ", ".join(to_text(c) for c in choices))]
    return []


def setting_types(roles, values=None, defer_role_variables=False):
    if not isinstance(roles, list):
        raise AnsibleFilterError("setting_types expects a list of role names")
    options = {}
    try:
        for role in roles:
            for name, option in role_options(role).items():
                if not name.startswith("_"):
                    options.setdefault(name, option)
    except SpecError as exc:
        raise AnsibleFilterError("setting_types: %s" % exc)
    if values is None:
        return sorted(options)
    if not isinstance(values, dict):
        raise AnsibleFilterError("setting_types expects the settings' values as a mapping")
    out = []
    for name in sorted(values):
        if name in options:
            out.extend(_problems(name, options[name], values[name], defer_role_variables)
                       or _invisible(name, values[name]))
    return out


class FilterModule(object):
    def filters(self):
        return {"setting_types": setting_types}
