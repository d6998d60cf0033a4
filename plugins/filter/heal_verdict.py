# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: heal_verdict
short_description: One host's heal state from its probes' verdict, its heal record and its service manager
version_added: "0.3.0"
description:
  - Takes the probes role's C(probes_result) (its verdict from P(glm53.serving.probe_verdict#filter)) and returns the
    state the survey of P(glm53.serving.heal_step#filter) gives, with its reason, the mark decided by the caller.
    C(heal.yml) uses P(glm53.serving.heal_step#filter), which holds its whole decision.
  - "C(healthy) when the probes passed; else C(marked) when an earlier heal left the host drained on the release it
    still serves (not cleared); else C(gave_up) when the service manager gave up on the engine (systemd's unit
    C(failed), or a tmux pane titled C(glm53: gave up)), a crash loop that is reported and never restarted blindly;
    else C(failing), to heal."
positional: _input, marked, record, service_mode, manager_lines
options:
  _input:
    description: The probes role's C(probes_result).
    type: dict
    required: true
  marked:
    description: Whether the host's heal record still holds (drained, same release, not cleared).
    type: bool
    default: false
  record:
    description: The host's heal record (its C(since) and C(reason) are quoted for a marked host).
    type: dict
    default: {}
  service_mode:
    description: How the engine runs (C(systemd), C(tmux), C(none)).
    type: str
    default: systemd
  manager_lines:
    description:
      - What the service manager said of the engine, for a failing host. systemd, C(systemctl show -p ActiveState
        -p Result --value) (the first line is the state); tmux, the panes' titles.
    type: list
    elements: str
    default: []
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Note this host's state
  ansible.builtin.set_fact:
    __heal: "{{ probes_result | glm53.serving.heal_verdict(__heal_marked, __heal_record, service_mode, __lines) }}"
"""

RETURN = r"""
_value:
  description: The state and its reason (empty for a healthy host).
  type: dict
  contains:
    state:
      description: C(healthy), C(marked), C(gave_up) or C(failing).
      type: str
    reason:
      description: Why, in one line.
      type: str
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.glm53.serving.plugins.filter.heal_step import heal_step


def heal_verdict(probes_result, marked=False, record=None, service_mode="systemd", manager_lines=None):
    """The survey of glm53.serving.heal_step, with the mark decided by the caller."""
    if not isinstance(probes_result, dict) or "passed" not in probes_result:
        raise AnsibleFilterError("heal_verdict needs the probes role's probes_result (a mapping with passed)")
    record = dict(record or {})
    if boolean(marked, strict=False):  # heal_step decides the mark from the record: say it holds
        record.update(state="drained", release="(the release that serves)")
    else:
        record["state"] = None
    out = heal_step({}, "survey", probes_result=probes_result, record=record, release="(the release that serves)",
                    service_mode=service_mode, manager_lines=manager_lines)
    return {"state": out["state"], "reason": out["reason"]}


class FilterModule(object):
    def filters(self):
        return {"heal_verdict": heal_verdict}
