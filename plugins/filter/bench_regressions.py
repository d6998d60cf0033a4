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
  - With O(new_runs) and O(baseline_runs), a difference inside the figure's measured run-to-run spread is noise, not
    a regression (the message of a regression names the noise). The P(glm53.serving.bench_gate#filter) filter returns
    each figure's decision, for the record.
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
  new_runs:
    description:
      - The new release's runs (the module's C(runs)). With two or more runs on either side, a figure's noise is
        its spread over the runs, (largest - smallest) / median in percent, the larger of the two sides; a figure
        regresses only when it is worse by more than its limit and by more than that noise.
    type: list
    elements: dict
    default: []
  baseline_runs:
    description: The baseline's runs (see O(new_runs)).
    type: list
    elements: dict
    default: []
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
  description: One message per figure that regressed past its limit (and past its measured noise).
  type: list
  elements: str
"""

from ansible_collections.glm53.serving.plugins.filter.bench_gate import bench_gate


def bench_regressions(new, baseline, limits, new_runs=None, baseline_runs=None):
    return bench_gate(new, baseline, limits, new_runs, baseline_runs)["regressions"]


class FilterModule(object):
    def filters(self):
        return {"bench_regressions": bench_regressions}
