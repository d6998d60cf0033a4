# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: probe_verdict
short_description: One host's pass or fail from its health, chat and needle probe results, with the reasons
version_added: "0.3.0"
description:
  - Takes the registered results of M(glm53.serving.vllm_health), M(glm53.serving.vllm_chat_probe) and
    M(glm53.serving.vllm_needle) and returns the host's verdict, so the probes role's evidence, its report and the
    unit tests all read one decision.
  - A host passes when its engine is ready and no probe that ran failed. A probe that was skipped (not enabled,
    or not reached because the engine was not ready) is left out; a not-ready engine is a failure of its own.
  - Each failure is one line, C(health:), C(chat), C(needle) or C(bench) and the probe's own summary line (or its
    message).
positional: _input, chat, needle, bench, reference
options:
  _input:
    description: The health probe's registered result.
    type: dict
    required: true
  chat:
    description: The chat probe's registered result (skipped or omitted when it did not run).
    type: dict
  needle:
    description: The needle probe's registered result (skipped or omitted when it did not run).
    type: dict
  bench:
    description:
      - The benchmark's registered result (M(glm53.serving.bench_serve); skipped or omitted when it did not run).
        It fails the host when the benchmark could not run or a request in it failed; how fast the release is, is
        the rollout's performance gate's to judge, not the verdict's.
    type: dict
  reference:
    description:
      - The reference scoring's registered result (M(glm53.serving.vllm_reference_score); skipped or omitted when it
        did not run). Its problems (no scores, a figure outside the band, drift from the weights' reference) fail the
        host.
    type: dict
  fleet:
    description:
      - The fleet's median figure for each passage among the hosts serving the same weights (from
        P(glm53.serving.reference_fleet_median#filter); empty when fewer than three hosts serve them). A host whose
        figure departs from it by more than O(tolerance) fails, with both figures named.
    type: dict
  tolerance:
    description: The largest departure from the fleet's median, in nats per token.
    type: float
    default: 0.08
  agreement:
    description:
      - Where the host's chat answers differ from most hosts asked the same probe set
        (P(glm53.serving.answer_agreement#filter)). A failed chat probe's line then says how many hosts answered
        otherwise, and what.
    type: dict
  placeholder_key:
    description:
      - Whether the engine serves with the example inventory's placeholder API key. The example passes validation
        as shipped so that a new user can try it, and a host that serves with the placeholder fails here, named.
    type: bool
    default: false
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Decide the host's verdict
  ansible.builtin.set_fact:
    probes_verdict: "{{ __probes_health | glm53.serving.probe_verdict(__probes_chat, __probes_needle) }}"
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    passed:
      description: Whether the host passed.
      type: bool
    failures:
      description: One line per failure (empty when it passed).
      type: list
      elements: str
    engine_commit:
      description: The commit in the engine's version (C(+g<hex>)), or null when it names none.
      type: str
"""

import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.glm53.serving.plugins.module_utils._reference import TOLERANCE_NATS, drift_problem

_COMMIT = re.compile(r"\+g([0-9a-f]{7,40})")


def _ran(result):
    return isinstance(result, dict) and bool(result) and not result.get("skipped")


def _lines(result, fallback):
    summary = result.get("summary") or []
    if isinstance(summary, str):
        summary = [summary]
    return [str(line) for line in summary] or [str(result.get("msg") or fallback)]


def _excerpt(text, width=80):
    text = " ".join(str(text or "").split())
    return text if len(text) <= width else text[:width - 1] + "…"


def _with_agreement(line, agreement):
    """A chat failure line with, when its probe's answer differs from most hosts of the release, how many and what
    they answered."""
    probe = line.split(":", 1)[0]
    other = (agreement or {}).get(probe)
    if not isinstance(other, dict):
        return line
    return "%s (it differs from %s of %s hosts of this release, which answered «%s»)" % (
        line, other.get("agree"), other.get("of"), _excerpt(other.get("majority")))


def probe_verdict(health, chat=None, needle=None, bench=None, reference=None, fleet=None, tolerance=TOLERANCE_NATS,
                  placeholder_key=False, agreement=None):
    if not isinstance(health, dict):
        raise AnsibleFilterError("probe_verdict expects the health probe's registered result (a mapping)")
    failures = []
    if boolean(placeholder_key, strict=False):
        failures.append("key: serve_api_key is inventory.example's placeholder, which anyone who read the example "
                        "knows: set a key of your own in a vault (ansible-vault create "
                        "group_vars/glm53_serving/vault.yml, serve_api_key: ...) and run site.yml again")
    if not health.get("ready"):
        failures.append("health: %s" % (health.get("msg") or "not ready"))
    for name, result, fallback in (("chat", chat, "chat probe failed"), ("needle", needle, "needle test failed")):
        if _ran(result) and not result.get("passed"):
            failures.extend("%s %s" % (name, _with_agreement(line, agreement if name == "chat" else None))
                            for line in _lines(result, fallback))
    if _ran(bench):
        if bench.get("failed") or not isinstance(bench.get("figures"), dict):  # failed_when: false keeps failed off
            failures.append("bench %s" % (bench.get("msg") or "vllm bench serve failed"))
        elif int((bench.get("figures") or {}).get("failed") or 0) > 0:
            failures.append("bench %d of %d requests failed" % (
                bench["figures"]["failed"], bench["figures"]["failed"] + int(bench["figures"].get("completed") or 0)))
    if _ran(reference):
        if not reference.get("passed"):
            failures.extend("reference %s" % line for line in _lines(reference, "reference scoring failed"))
        for name, fig in sorted((reference.get("passages") or {}).items()):
            nll = fig.get("nll") if isinstance(fig, dict) else None
            problem = drift_problem(name, nll, (fleet or {}).get(name), float(tolerance),
                                    "the fleet's median for these weights") if isinstance(nll, (int, float)) else None
            if problem:
                failures.append("reference numerics_drift: %s" % problem)
    version = health.get("version")
    match = _COMMIT.search(version) if isinstance(version, str) else None
    return {"passed": not failures, "failures": failures, "engine_commit": match.group(1) if match else None}


class FilterModule(object):
    def filters(self):
        return {"probe_verdict": probe_verdict}
