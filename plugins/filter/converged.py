# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: converged
short_description: The bring-up roles a host has nothing to do for, from its converged record
version_added: "0.4.0"
description:
  - Takes what M(glm53.serving.install_ledger) returned with O(glm53.serving.install_ledger#module:converged_read)
    (the host's record, each role with the inputs recorded, its facts and what differs on the host now) and returns
    the names of the bring-up roles that are converged. A role is converged when it is recorded, nothing it left on
    the host differs, the run's inputs equal the recorded ones, and every role before it in the bring-up's order is
    converged (a role that does its work may change what a later role reads).
  - With O(facts_only=true), the facts to restore instead, the same walk without comparing the inputs (the inputs
    of a run are computed with these facts restored).
positional: _input, inputs, roles, facts_only
options:
  _input:
    description: The C(converged) list M(glm53.serving.install_ledger) returned.
    type: list
    elements: dict
    required: true
  inputs:
    description:
      - This run's inputs (P(glm53.serving.converged_inputs#filter)), or a mapping of role names to each role's
        inputs (a role decided before the others); ignored with O(facts_only).
    type: raw
    default: ""
  roles:
    description: The bring-up's roles in order; only these are walked.
    type: list
    elements: str
    required: true
  facts_only:
    description: Return the facts of the roles whose observations hold (a mapping), not the converged names.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: The roles with nothing to do
  ansible.builtin.set_fact:
    glm53_converged: "{{ claimed.converged | glm53.serving.converged(inputs, ['preflight', 'venv', 'serve']) }}"
"""

RETURN = r"""
_value:
  description: The converged roles' names, in order (or, with O(facts_only), a mapping of facts).
  type: raw
"""

from ansible.errors import AnsibleFilterError


def converged(records, inputs="", roles=None, facts_only=False):
    if not isinstance(records, list):
        raise AnsibleFilterError("converged: expects the converged list install_ledger returned, got %r"
                                 % type(records).__name__)
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise AnsibleFilterError("converged: roles must be a list of role names")
    by_name = dict((r.get("name"), r) for r in records if isinstance(r, dict))
    names, facts = [], {}
    for role in roles:
        record = by_name.get(role)
        if not record or record.get("differs"):
            break
        wanted = inputs.get(role, "") if isinstance(inputs, dict) else inputs
        if not facts_only and (not wanted or record.get("inputs") != wanted):
            break
        names.append(role)
        facts.update(record.get("facts") or {})
    return facts if facts_only else names


class FilterModule(object):
    def filters(self):
        return {"converged": converged}
