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
    state C(heal.yml) acts on, with the reason it reports.
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


def gave_up(service_mode, lines):
    """Whether the service manager gave up on the engine (a crash loop)."""
    lines = [str(x) for x in lines or []]
    if service_mode == "systemd":
        return bool(lines) and lines[0].strip() == "failed"
    if service_mode == "tmux":
        return any(x.startswith("glm53: gave up") for x in lines)
    return False


def heal_verdict(probes_result, marked=False, record=None, service_mode="systemd", manager_lines=None):
    if not isinstance(probes_result, dict) or "passed" not in probes_result:
        raise AnsibleFilterError("heal_verdict needs the probes role's probes_result (a mapping with passed)")
    record = record or {}
    lines = [str(x) for x in manager_lines or []]
    if boolean(probes_result["passed"], strict=False):
        return {"state": "healthy", "reason": ""}
    if boolean(marked, strict=False):
        return {"state": "marked", "reason": "left drained by heal.yml since %s: %s" % (
            record.get("since", "?"), record.get("reason", "?"))}
    if gave_up(service_mode, lines):
        return {"state": "gave_up", "reason": "the service manager gave up on the engine (a crash loop; see its log): "
                + " ".join(lines)}
    return {"state": "failing", "reason": " | ".join(str(f) for f in probes_result.get("failures") or [])}


class FilterModule(object):
    def filters(self):
        return {"heal_verdict": heal_verdict}
