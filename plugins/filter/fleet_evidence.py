# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: fleet_evidence
short_description: A run's probe evidence merged with the evidence kept on the controller for the other hosts
version_added: "0.3.0"
description:
  - A run limited with C(-l), or one batch of a rollout, probes some hosts only. The report still shows the whole
    fleet, with each other host's last evidence, kept in the report folder as C(<host>.json).
  - Returns one mapping per host in inventory order, with hosts not in O(order) last, by name. A host's evidence
    from this run wins over its kept file. A kept file that cannot be read or parsed, or whose C(host) is not the
    host its name says, is left out, and so is a host that is no longer in O(order).
positional: _input
options:
  _input:
    description: This run's evidence, one mapping per host, each with its C(host) name.
    type: list
    elements: dict
    required: true
  order:
    description: The inventory's hosts in order. Only these hosts' kept files are read.
    type: list
    elements: str
  kept_dir:
    description: The report folder (C(probes_report_dir)).
    type: path
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: This run's evidence and the kept evidence of the other hosts
  ansible.builtin.set_fact:
    fleet: "{{ this_run | glm53.serving.fleet_evidence(order=groups['all'], kept_dir=probes_report_dir) }}"
"""

RETURN = r"""
_value:
  description: The evidence of every host, in inventory order.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.glm53.serving.plugins.module_utils._fleet_evidence import merge_evidence


def fleet_evidence(evidence, order=None, kept_dir=None):
    if not isinstance(evidence, list) or not all(isinstance(e, dict) and e.get("host") for e in evidence):
        raise AnsibleFilterError("fleet_evidence expects a list of evidence mappings, each with its host")
    return merge_evidence(evidence, order, kept_dir)


class FilterModule(object):
    def filters(self):
        return {"fleet_evidence": fleet_evidence}
