# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
name: setting_values
short_description: The values of settings by name, each evaluated on its own
version_added: 0.3.0
description:
  - Like the C(ansible.builtin.vars) lookup, but a value that cannot be evaluated (it uses a variable that is not
    defined, or its expression is broken) does not stop the lookup. It comes back as a mapping that names what is
    missing, which P(glm53.serving.setting_types#filter) and P(glm53.serving.setting_rules#filter) report naming
    the setting. The template engine's own error would name only the missing variable, or a line of the inventory.
options:
  _terms:
    description: The settings' names.
    required: true
    type: list
    elements: str
  default:
    description: What a setting that is not set gives.
    type: raw
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Check the serve role's set values against its argument specs
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
  vars:
    __set: "{{ query('ansible.builtin.varnames', '^serve_') }}"
    __problems: "{{ ['serve'] | glm53.serving.setting_types(dict(__set | zip(query('glm53.serving.setting_values', *__set)))) }}"
"""

RETURN = r"""
_raw:
  description:
    - One value per name, in order. A value that could not be evaluated is a mapping with the key
      C(__glm53_unresolved__) (the variable that is not defined, when that is the cause) and C(error).
  type: list
  elements: raw
"""

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase

from ansible_collections.glm53.serving.plugins.module_utils._undefined import settled, unresolved

_ABSENT = object()


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        has_default = "default" in kwargs
        out = []
        for term in terms:
            if not isinstance(term, str):
                raise AnsibleError("setting_values: a setting's name must be a string, not %r" % (term,))
            raw = (variables or {}).get(term, _ABSENT)
            if raw is _ABSENT:
                if not has_default:
                    raise AnsibleError("setting_values: no variable named %r" % term)
                out.append(kwargs["default"])
                continue
            try:
                value = self._templar.template(raw)
            except AnsibleError as exc:  # an undefined variable (AnsibleUndefinedVariable) or a broken expression
                value = unresolved(exc.message if getattr(exc, "message", None) else exc)
            out.append(settled(value))
        return out
