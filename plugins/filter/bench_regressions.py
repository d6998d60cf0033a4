# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: bench_regressions
short_description: Compare a release's benchmark figures with a baseline's and name each regression
version_added: "0.2.0"
description:
  - Takes the figures of the C(bench_serve) module for a new release and for the baseline (the release that served
    before), and a limit in percent per figure. A throughput (a figure whose name ends in C(_throughput)) regresses
    when it falls by more than its limit; a latency (a name ending in C(_ms)) when it grows by more than its limit.
  - Returns one message per regression, such as C(output throughput 812.0 -> 611.0 tok/s (-24.8 %), limit 10 %).
    An empty list means the new release is as fast, within the limits.
  - Failed requests in the new release's run are a regression whatever the limits say.
positional: _input
options:
  _input:
    description: The new release's figures.
    type: dict
    required: true
  baseline:
    description: The baseline's figures.
    type: dict
    required: true
  limits:
    description: "The largest regression allowed per figure, in percent, such as C({output_throughput: 10, p99_ttft_ms: 10})."
    type: dict
    required: true
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Refuse a release slower than the one it replaces
  ansible.builtin.assert:
    that: __slower | length == 0
    fail_msg: "{{ __slower | join('; ') }}"
  vars:
    __slower: "{{ new.figures | glm53.serving.bench_regressions(old.figures, {'output_throughput': 10}) }}"
"""

RETURN = r"""
_value:
  description: One message per figure that regressed past its limit.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

UNITS = {"output_throughput": "tok/s", "total_token_throughput": "tok/s", "request_throughput": "req/s"}


def _words(name):
    return name.replace("_ms", "").replace("_", " ").replace("ttft", "TTFT").replace("tpot", "TPOT").replace(
        "itl", "ITL")


def bench_regressions(new, baseline, limits):
    if not isinstance(new, dict) or not isinstance(baseline, dict) or not isinstance(limits, dict):
        raise AnsibleFilterError("bench_regressions: the figures and the limits must be mappings")
    out = []
    if int(new.get("failed") or 0) > 0:
        out.append("%d failed request(s) in the benchmark (the baseline had %d)" % (
            int(new["failed"]), int(baseline.get("failed") or 0)))
    for name in sorted(limits):
        limit = limits[name]
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit < 0:
            raise AnsibleFilterError("bench_regressions: the limit for %s must be a percentage >= 0, got %r" % (
                name, limit))
        higher_is_better = name.endswith("_throughput")
        if not higher_is_better and not name.endswith("_ms"):
            raise AnsibleFilterError("bench_regressions: %s is neither a throughput (*_throughput) nor a latency "
                                     "(*_ms) figure of vllm bench serve" % name)
        if not isinstance(new.get(name), (int, float)) or not isinstance(baseline.get(name), (int, float)):
            raise AnsibleFilterError("bench_regressions: %s is missing from the new or the baseline figures" % name)
        old, now = float(baseline[name]), float(new[name])
        if old <= 0:
            continue  # nothing to compare with (a latency of 0 ms, no throughput)
        change = (now - old) / old * 100.0
        worse = -change if higher_is_better else change
        if worse > limit:
            unit = UNITS.get(name, "ms")
            out.append("%s %.1f -> %.1f %s (%+.1f %%), limit %s %%" % (_words(name), old, now, unit, change, limit))
    return out


class FilterModule(object):
    def filters(self):
        return {"bench_regressions": bench_regressions}
