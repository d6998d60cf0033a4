# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: reference_record
short_description: The weights' reference figures, recorded once from hosts whose every proof passed
version_added: "0.3.0"
description:
  - The likelihood of the fixed reference passages is a property of the weights, so the probes hold every engine of
    the same weights (every release, every host) to one reference, kept on the controller. This filter decides what
    that reference is after a batch of hosts was probed.
  - With no reference yet, it is the median of the hosts of the batch whose whole verdict passed (health, chat,
    needle, numerics in the band), less any host further than O(tolerance) from that median; it is C(provisional)
    when it rests on one host, C(confirmed) once two or more agree.
  - With a reference, its figures never change (a release, a run or a drifted host never replaces them). Hosts of
    the batch that passed and agree within O(tolerance) are added to its hosts, which confirms a provisional one.
  - Returns the record to keep, equal to O(_input) when nothing changed, and C({}) when there is nothing to record.
positional: _input, results, weights
options:
  _input:
    description: The reference kept so far for these weights (C({}) when there is none).
    type: dict
    required: true
  results:
    description: The batch's hosts' C(probes_result) facts (each with C(host), C(passed) and C(reference)).
    type: list
    elements: dict
    required: true
  weights:
    description: The weights the reference belongs to (the probes role's C(probes_reference_weights)).
    type: str
    required: true
  tolerance:
    description: The largest departure, in nats per token, of a host that agrees.
    type: float
    default: 0.08
  release:
    description: The release the first hosts served, noted in a new record.
    type: str
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: The weights' reference after this batch
  ansible.builtin.set_fact:
    reference: >-
      {{ kept | glm53.serving.reference_record(ansible_play_hosts | map('extract', hostvars)
                                               | selectattr('probes_result', 'defined')
                                               | map(attribute='probes_result') | list,
                                               'zai-org/GLM-5.3-Flash-AWQ-INT4@main') }}
"""

RETURN = r"""
_value:
  description: The record to keep, or C({}).
  type: dict
  contains:
    weights:
      description: The weights.
      type: str
    figures:
      description: Passage name to nats per token; fixed once recorded.
      type: dict
    hosts:
      description: The hosts whose figures agreed with the reference, sorted.
      type: list
      elements: str
    state:
      description: C(provisional) (one host) or C(confirmed) (two or more).
      type: str
    release:
      description: The release the first hosts served.
      type: str
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.glm53.serving.plugins.module_utils._reference import TOLERANCE_NATS, median


def _figures(result, weights):
    """The host's figures when its whole verdict passed and its reference belongs to ``weights``, else None."""
    if not isinstance(result, dict) or result.get("passed") is not True:
        return None
    ref = result.get("reference")
    if not isinstance(ref, dict) or ref.get("passed") is not True or ref.get("weights") != weights:
        return None
    figures = ref.get("figures")
    if not isinstance(figures, dict) or not figures:
        return None
    try:
        return dict((str(k), float(v)) for k, v in figures.items())
    except (TypeError, ValueError):
        return None


def _agrees(figures, reference, tolerance):
    return all(name in figures and abs(figures[name] - value) <= tolerance for name, value in reference.items())


def reference_record(kept, results, weights, tolerance=TOLERANCE_NATS, release=None):
    if not isinstance(kept, dict) or not isinstance(results, list):
        raise AnsibleFilterError("reference_record expects the kept record (a mapping, {} for none) and a list of "
                                 "the hosts' probes_result facts")
    if not weights:
        raise AnsibleFilterError("reference_record needs the weights the reference belongs to")
    tolerance = float(tolerance)
    passed = [(str(r.get("host")), f) for r, f in ((r, _figures(r, weights)) for r in results) if f is not None]
    if kept.get("figures"):
        if kept.get("weights") != weights:
            raise AnsibleFilterError("the kept reference is of the weights %r, not %r" % (kept.get("weights"), weights))
        hosts = sorted(set(kept.get("hosts") or []) | set(h for h, f in passed if _agrees(f, kept["figures"], tolerance)))
        if hosts == sorted(kept.get("hosts") or []):
            return kept
        return dict(kept, hosts=hosts, state="confirmed" if len(hosts) >= 2 else "provisional")
    if not passed:
        return {}
    names = sorted(set.intersection(*(set(f) for _h, f in passed)))
    centre = dict((n, median([f[n] for _h, f in passed])) for n in names)
    agreeing = [(h, f) for h, f in passed if _agrees(f, centre, tolerance)]
    if not agreeing or not names:
        return {}
    figures = dict((n, round(median([f[n] for _h, f in agreeing]), 4)) for n in names)
    hosts = sorted(h for h, _f in agreeing)
    return {"weights": weights, "figures": figures, "hosts": hosts, "release": release,
            "state": "confirmed" if len(hosts) >= 2 else "provisional"}


class FilterModule(object):
    def filters(self):
        return {"reference_record": reference_record}
