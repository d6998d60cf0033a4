# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: golden_record
short_description: A release's golden record, recorded once from the hosts that first proved it
version_added: "0.3.0"
description:
  - The probes decode greedily, so a release answers its fixed probe set the same way on every sound host. Its
    golden record keeps those answers with their scores, and later runs are judged by it
    (M(glm53.serving.vllm_chat_probe)'s O(glm53.serving.vllm_chat_probe#module:golden)). This filter decides the
    record after a batch of hosts was probed.
  - With no record yet, it is taken from the batch's hosts of the release whose whole verdict passed (health, chat,
    numerics in band and against the weights' reference, needle) and whose chat probe scored its answers, taking
    the answers most of them gave alike. It is C(provisional) when one host gave them and C(confirmed) once two did.
  - With a record, its answers never change (a later run, a drifted host or another release never replace them).
    Hosts of the batch that passed with every answer equal to the record are added to its hosts, which confirms a
    provisional one.
  - Returns the record to keep, equal to O(_input) when nothing changed, and C({}) when there is nothing to record.
positional: _input, results, probe_set, release
options:
  _input:
    description: The record kept so far (C({}) when there is none).
    type: dict
    required: true
  results:
    description: The batch's hosts' C(probes_result) facts (each with C(host), C(passed) and C(chat)).
    type: list
    elements: dict
    required: true
  probe_set:
    description: The probe set the record answers (the release's and the weights' names).
    type: str
    required: true
  release:
    description: The release the record belongs to.
    type: str
    required: true
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: The release's golden record after this batch
  ansible.builtin.set_fact:
    golden: "{{ kept | glm53.serving.golden_record(results, 'r1/GLM-5.3-Flash-AWQ-INT4', 'r1') }}"
"""

RETURN = r"""
_value:
  description: The record to keep, or C({}).
  type: dict
  contains:
    release:
      description: The release.
      type: str
    probe_set:
      description: The probe set's name.
      type: str
    probes:
      description: One entry per probe (its task, C(content), C(token_ids), C(tokens), C(nll)); fixed once recorded.
      type: list
      elements: dict
    hosts:
      description: The hosts that gave these answers, sorted.
      type: list
      elements: str
    state:
      description: C(provisional) (one host) or C(confirmed) (two or more).
      type: str
"""

from ansible.errors import AnsibleFilterError


def _chat(result, probe_set):
    """The host's chat evidence when its whole verdict passed on ``probe_set``, else None."""
    if not isinstance(result, dict) or result.get("passed") is not True:
        return None
    chat = result.get("chat")
    if not isinstance(chat, dict) or chat.get("passed") is not True or chat.get("probe_set") != probe_set:
        return None
    return chat


def _scored(chat):
    """The chat's answers when each is scored for a record, else None."""
    answers = chat.get("answers")
    if not isinstance(answers, list) or not answers:
        return None
    if not all(isinstance(a, dict) and isinstance(a.get("content"), str) and isinstance(a.get("nll"), (int, float))
               and isinstance(a.get("tokens"), int) for a in answers):
        return None
    return answers


def _texts(answers):
    return tuple((a.get("name"), (a.get("content") or "").strip()) for a in answers)


def golden_record(kept, results, probe_set, release):
    if not isinstance(kept, dict) or not isinstance(results, list):
        raise AnsibleFilterError("golden_record expects the kept record (a mapping, {} for none) and a list of the "
                                 "hosts' probes_result facts")
    if not probe_set or not release:
        raise AnsibleFilterError("golden_record needs the probe set's name and the release")
    passed = [(str(r.get("host")), c) for r, c in ((r, _chat(r, probe_set)) for r in results) if c is not None]
    if kept.get("probes"):
        if kept.get("probe_set") != probe_set:
            raise AnsibleFilterError("the kept golden record answers %r, not %r" % (kept.get("probe_set"), probe_set))
        agree = [h for h, c in passed if c.get("golden_release") == kept.get("release")
                 and _texts(c.get("answers") or []) == _texts(kept["probes"])]
        hosts = sorted(set(kept.get("hosts") or []) | set(agree))
        if hosts == sorted(kept.get("hosts") or []):
            return kept
        return dict(kept, hosts=hosts, state="confirmed" if len(hosts) >= 2 else "provisional")
    scored = [(h, _scored(c)) for h, c in passed]
    scored = [(h, a) for h, a in scored if a is not None]
    if not scored:
        return {}
    groups = {}
    for h, answers in scored:
        groups.setdefault(_texts(answers), []).append((h, answers))
    best = sorted(groups.values(), key=lambda g: (-len(g), sorted(h for h, _a in g)))[0]  # the most hosts, then by name
    hosts = sorted(h for h, _a in best)
    return {"release": release, "probe_set": probe_set, "probes": best[0][1], "hosts": hosts,
            "state": "confirmed" if len(hosts) >= 2 else "provisional"}


class FilterModule(object):
    def filters(self):
        return {"golden_record": golden_record}
