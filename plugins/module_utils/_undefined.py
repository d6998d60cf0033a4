# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A setting whose value could not be evaluated (it uses a variable that is not defined, or a broken expression),
carried as a plain mapping so that the checks name the setting instead of failing with the template engine's own
error. The setting_values lookup makes them; setting_types, setting_rules and the fleet's filters report them."""

from __future__ import annotations

import re

KEY = "__glm53_unresolved__"
_NAME = re.compile(r"'([^']+)' is undefined")


def unresolved(error_text):
    """The mapping that stands for a value that could not be evaluated, from the engine's message."""
    text = " ".join(str(error_text).split())
    m = _NAME.search(text)
    return {KEY: m.group(1) if m else "", "error": text[:300]}


def is_unresolved(value):
    return isinstance(value, dict) and KEY in value


def settled(value):
    """value, or the unresolved mapping when it is the template engine's undefined value (which fails only when
    printed, far from the setting that holds it)."""
    try:
        from jinja2 import Undefined
    except ImportError:  # pragma: no cover - Ansible ships Jinja2
        return value
    if isinstance(value, Undefined):
        message = getattr(value, "_undefined_message", None)
        if not message:
            try:
                str(value)
                message = "an undefined value"
            except Exception as exc:  # pylint: disable=broad-except  # the undefined value's own message
                message = str(exc)
        return unresolved(message)
    return value


def unresolved_message(name, value, where=""):
    """The refusal of setting name whose value could not be evaluated."""
    missing = value.get(KEY) or ""
    if missing:
        return ("%s%s uses %s, which is not defined, so its value cannot be known. Define %s (in the inventory, "
                "group_vars or -e), or give %s a value of its own." % (name, where, missing, missing, name))
    return ("%s%s could not be evaluated (%s). Fix its expression, or give it a plain value."
            % (name, where, value.get("error") or "a template error"))
