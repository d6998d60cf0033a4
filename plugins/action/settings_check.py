# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The settings_check action: a role's validation as one task on the controller (docs: modules/settings_check.py)."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase


def _ok(value):
    """A check's condition: a boolean, or its text from an older templar ('True', 'False')."""
    if isinstance(value, str):
        return boolean(value.strip() or "false", strict=False)
    return bool(value)


def evaluate(problems, checks):
    """(refusals, warnings) of a role's settings: the types' and rules' problems first, else the failed checks."""
    if problems:
        return [to_text(p) for p in problems], []
    refusals, warnings = [], []
    for i, check in enumerate(checks or []):
        if not isinstance(check, dict) or "ok" not in check or "msg" not in check:
            raise AnsibleActionFail("check %d is not a mapping with ok and msg: %r" % (i, check))
        if _ok(check["ok"]):
            continue
        text = " ".join(to_text(check["msg"]).split())
        (warnings if _ok(check.get("warn", False)) else refusals).append(text)
    return refusals, warnings


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("role", "problems", "checks", "fingerprint"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        role = args.get("role")
        if not isinstance(role, str) or not role:
            raise AnsibleActionFail("role is required: the role's short name")
        problems = args.get("problems") or []
        checks = args.get("checks") or []
        if not isinstance(problems, list) or not isinstance(checks, list):
            raise AnsibleActionFail("problems and checks must be lists")
        refusals, warnings = evaluate(problems, checks)
        result.update(changed=False, problems=refusals, checked=0 if problems else len(checks))
        if refusals:
            result.update(failed=True, msg=" ".join(refusals))
            return result
        # One fact per role, set whole: a fact that gathers every role's record in one mapping would be read back
        # from task_vars and merged, and a multi-host include can hand this host another host's copy of it.
        result["ansible_facts"] = {"__glm53_validated_" + role: to_text(args.get("fingerprint") or "")}
        if warnings:
            result["warnings"] = warnings
        result["msg"] = "%s: settings checked (%d combinations)" % (role, len(checks))
        return result
