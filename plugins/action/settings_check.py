# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The settings_check action: a role's validation as one task on the controller (docs: modules/settings_check.py)."""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.glm53.serving.plugins.module_utils._role_specs import SpecError, role_dir

try:  # ansible-core 2.19 and later template only what is trusted: these three expressions are the plugin's own
    from ansible.template import trust_as_template
except ImportError:  # pragma: no cover - ansible-core 2.18 templates every string
    def trust_as_template(value):
        return value

# The role's validation as data (roles/_defaults/defaults/main.yml), evaluated in the role's context.
_PROBLEMS = trust_as_template("{{ __glm53_setting_problems }}")
_CHECKS = trust_as_template("{{ __glm53_checks }}")
_FINGERPRINT = trust_as_template("{{ __glm53_settings_fingerprint }}")


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
    _VALID_ARGS = frozenset(("role", "roles", "problems", "checks", "fingerprint"))

    def _load(self, path):
        """A role's defaults or vars file as Ansible loads it for the role (templates trusted, as the role's own)."""
        if not os.path.exists(path):
            return {}
        try:
            data = self._loader.load_from_file(path, trusted_as_template=True)
        except TypeError:  # pragma: no cover - ansible-core 2.18: no trust to give
            data = self._loader.load_from_file(path)
        return dict(data or {})

    def _role_context(self, role, task_vars):
        """The variables a task of the role sees: its dependency's (_defaults) and its own defaults, under the
        inventory's and the play's values, under its vars/main.yml."""
        here = role_dir(role)
        context = self._load(os.path.join(role_dir("_defaults"), "defaults", "main.yml"))
        context.update(self._load(os.path.join(here, "defaults", "main.yml")))
        context.update(task_vars)
        context.update(self._load(os.path.join(here, "vars", "main.yml")))
        context.update(role_name="glm53.serving." + role, role_path=here, ansible_role_name="glm53.serving." + role)
        return context

    def _roles(self, roles, task_vars, result):
        """Each role in turn, in its own context, as its tasks/validate.yml would: the first role refused stops
        (each value's owner comes before the roles that derive from it, so the message names what the user set)."""
        facts, warned, checked = {}, [], 0
        for role in roles:
            try:
                templar = self._templar.copy_with_new_env(available_variables=self._role_context(role, task_vars))
            except SpecError as exc:
                raise AnsibleActionFail(str(exc))
            problems = templar.template(_PROBLEMS) or []
            checks = [] if problems else templar.template(_CHECKS) or []
            if not isinstance(problems, list) or not isinstance(checks, list):
                raise AnsibleActionFail("%s: problems and checks must be lists" % role)
            refusals, warnings = evaluate(problems, checks)
            if refusals:
                result.update(changed=False, failed=True, role=role, problems=refusals, checked=checked,
                              msg=" ".join(refusals))
                return result
            checked += len(checks)
            facts["__glm53_validated_" + role] = to_text(templar.template(_FINGERPRINT) or "")
            warned.extend(warnings)
        result.update(changed=False, problems=[], checked=checked, ansible_facts=facts,
                      msg="%s: settings checked (%d combinations)" % (", ".join(roles), checked))
        if warned:
            result["warnings"] = warned
        return result

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        if args.get("roles") is not None:
            roles = args["roles"]
            if not isinstance(roles, list) or not all(isinstance(r, str) and r for r in roles):
                raise AnsibleActionFail("roles must be a list of the collection's role names")
            if set(args) - {"roles"}:
                raise AnsibleActionFail("roles is used alone: each role's problems, checks and fingerprint come from "
                                        "its own context")
            return self._roles(roles, task_vars, result)
        role = args.get("role")
        if not isinstance(role, str) or not role:
            raise AnsibleActionFail("role (the role's short name) or roles (a list of them) is required")
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
