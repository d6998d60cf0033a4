# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: answer_agreement
short_description: Where one host's chat answers differ from the majority of the hosts asked the same probe set
version_added: "0.3.0"
description:
  - The probes decode greedily and every host of a release is asked the same probe set, so hosts whose engines are
    sound answer alike. For each probe where O(host)'s answer differs from an answer a strict majority of the hosts
    gave (three hosts or more), this filter returns how many gave it, of how many, and the answer itself, so the
    verdict and the report can say "differs from N of M hosts of this release" with both texts side by side.
  - Hosts are compared only with hosts asked the same probe set (the chat probe's C(probe_set)); a host whose chat
    probe did not run is left out.
positional: _input, host, probe_set
options:
  _input:
    description: The play's hosts' variables (C(hostvars)), each with the chat probe's registered C(__probes_chat).
    type: list
    elements: dict
    required: true
  host:
    description: The host to compare (its C(inventory_hostname)).
    type: str
    required: true
  probe_set:
    description: The probe set's name (the chat probe's O(glm53.serving.vllm_chat_probe#module:probe_set)).
    type: str
    required: true
  kept:
    description:
      - Other hosts' last evidence (sliced runs - the fleet's store, M(glm53.serving.evidence_store)), each with its
        C(host) and C(chat); a host of the play is taken from O(_input), never from here, so every slice compares
        with the whole fleet's answers.
    type: list
    elements: dict
    default: []
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Compare this host's answers with the other hosts' of its release
  ansible.builtin.set_fact:
    agreement: >-
      {{ ansible_play_hosts | map('extract', hostvars)
         | glm53.serving.answer_agreement(inventory_hostname, 'glm53-20261201/GLM-5.3-Flash-AWQ-INT4') }}
"""

RETURN = r"""
_value:
  description: Probe name to C({agree, of, majority, hosts}) for each probe where the host differs; C({}) otherwise.
  type: dict
"""

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

_RESULT = "__probes_chat"


def _answers(hostvars, probe_set):
    """{host: {probe: content}} of the hosts whose chat probe ran on ``probe_set``."""
    out = {}
    for hv in hostvars:
        if not isinstance(hv, Mapping):  # hostvars' entries are mappings, not dicts
            continue
        chat = hv.get(_RESULT)
        if not isinstance(chat, Mapping) or chat.get("skipped") or chat.get("probe_set") != probe_set:
            continue
        answers = chat.get("answers")
        if isinstance(answers, list):
            out[str(hv.get("inventory_hostname"))] = dict(
                (a.get("name"), a.get("content")) for a in answers if isinstance(a, Mapping))
    return out


def answer_agreement(hostvars, host, probe_set, kept=None):
    if not isinstance(hostvars, (list, tuple)):
        raise AnsibleFilterError("answer_agreement expects the play's hosts' variables (a list)")
    if not isinstance(kept or [], (list, tuple)):
        raise AnsibleFilterError("answer_agreement's kept must be a list of evidence (the store's)")
    answers = _answers(hostvars, probe_set)
    for name, more in _answers([{"inventory_hostname": e.get("host"), _RESULT: e.get("chat")}
                                for e in kept or [] if isinstance(e, Mapping) and e.get("host")], probe_set).items():
        answers.setdefault(name, more)
    mine = answers.get(str(host))
    if mine is None or len(answers) < 3:
        return {}
    out = {}
    for probe, content in sorted(mine.items()):
        given = [(h, a.get(probe)) for h, a in sorted(answers.items()) if probe in a]
        counts = {}
        for _h, text in given:
            key = (text or "").strip()
            counts[key] = counts.get(key, 0) + 1
        top, n = max(counts.items(), key=lambda kv: kv[1])
        if n * 2 > len(given) and (content or "").strip() != top:
            out[probe] = {"agree": n, "of": len(given), "majority": top,
                          "hosts": [h for h, text in given if (text or "").strip() == top]}
    return out


class FilterModule(object):
    def filters(self):
        return {"answer_agreement": answer_agreement}
