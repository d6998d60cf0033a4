# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: reference_fleet_median
short_description: The fleet's median reference-passage figures for one set of weights
version_added: "0.3.0"
description:
  - From the play's hosts' registered M(glm53.serving.vllm_reference_score) results (each names its weights), the
    median mean negative log-likelihood per token of each passage among the hosts that serve O(weights), whatever
    their release (the likelihood of fixed text is a property of the weights, and correct engines agree on it). A host
    whose figures are outside the band, or were not scored, is left out, as its figures are not a model's.
  - Empty when fewer than O(least) such hosts were scored (a median of one or two hosts says nothing about either).
  - P(glm53.serving.probe_verdict#filter) fails a host whose figure departs from it by more than its tolerance.
positional: _input, weights
options:
  _input:
    description: The hosts' registered reference results, one per host (skipped ones are left out).
    type: list
    elements: dict
    required: true
  weights:
    description: The weights whose median is wanted (the probes role's C(probes_reference_weights)).
    type: str
    required: true
  least:
    description: The fewest scored hosts of the weights that make a median.
    type: int
    default: 3
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: The fleet's median for this host's weights
  ansible.builtin.set_fact:
    fleet_median: >-
      {{ ansible_play_hosts | map('extract', hostvars) | map(attribute='reference', default={}) | list
         | glm53.serving.reference_fleet_median('zai-org/GLM-5.3-Flash-AWQ-INT4@main') }}
"""

RETURN = r"""
_value:
  description: Passage name to the median nats per token ({} when too few hosts serve the weights).
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.glm53.serving.plugins.module_utils._reference import median


def _ran(result):
    return isinstance(result, dict) and bool(result) and not result.get("skipped")


def reference_fleet_median(results, weights, least=3):
    """{passage: median nats per token} over the hosts whose weights are ``weights`` and whose reference scoring ran
    inside the band, or {} when fewer than ``least`` of them did (a median of one or two hosts says nothing about any of them)."""
    if not isinstance(results, list):
        raise AnsibleFilterError("reference_fleet_median expects a list: the hosts' registered reference results")
    same = [r for r in results if _ran(r) and r.get("weights") == weights and isinstance(r.get("passages"), dict)
            and not any(str(line).startswith(("numerics_band", "no_scores")) for line in r.get("summary") or [])]
    if len(same) < int(least):
        return {}
    names = sorted(set(n for r in same for n in r["passages"]))
    out = {}
    for name in names:
        value = median([(r["passages"].get(name) or {}).get("nll") for r in same])
        if value is not None:
            out[name] = round(value, 4)
    return out


class FilterModule(object):
    def filters(self):
        return {"reference_fleet_median": reference_fleet_median}
