# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: bench_gate
short_description: Decide, figure by figure, whether a release is slower than its baseline beyond limit and noise
version_added: "0.3.0"
description:
  - Takes the figures of the C(bench_serve) module for a new release and for the baseline (the release that served
    before), a limit in percent per figure, and each side's runs. A throughput (C(*_throughput)) regresses when it
    falls, a latency (C(*_ms)) when it grows, by more than its limit B(and) by more than its noise.
  - A figure's noise is its run-to-run spread, (largest - smallest) / median in percent, over the runs of each side
    that has two or more, the larger of the two. With one run a side the noise is not measured and the limit alone
    decides. The two releases cannot be measured interleaved on one canary (one engine holds the GPUs at a time), so
    each side's spread is measured on its own.
  - Failed requests in the new release's runs are a regression whatever the limits say.
  - Returns the regressions (messages), each figure's decision, and one line per figure for the record, such as
    C(output throughput 812.0 -> 806.1 tok/s (-0.7 %) - within limit (limit 10 %, noise +/-2.1 % (3+3 runs))).
positional: _input, baseline, limits
options:
  _input:
    description: The new release's figures (the module's C(figures), medians over its runs).
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
    description: The new release's runs (the module's C(runs)).
    type: list
    elements: dict
    default: []
  baseline_runs:
    description: The baseline's runs.
    type: list
    elements: dict
    default: []
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Refuse a release slower than the one it replaces, beyond its limit and its noise
  ansible.builtin.assert:
    that: __gate.regressions | length == 0
    fail_msg: "{{ __gate.regressions | join('; ') }}"
    success_msg: "{{ __gate.lines | join('; ') }}"
  vars:
    __gate: "{{ new.figures | glm53.serving.bench_gate(old.figures, {'output_throughput': 10}, new.runs, old.runs) }}"
"""

RETURN = r"""
_value:
  description: The decision.
  type: dict
  contains:
    regressions:
      description: One message per figure that regressed past its limit and its noise (and one for failed requests).
      type: list
      elements: str
    figures:
      description: Per figure, C(baseline), C(new), C(change_pct), C(limit_pct), C(noise_pct) and C(verdict)
        (C(within limit), C(within noise), C(regressed) or C(not compared)).
      type: dict
    lines:
      description: One line per figure, for the record.
      type: list
      elements: str
"""

import math

from ansible.errors import AnsibleFilterError

UNITS = {"output_throughput": "tok/s", "total_token_throughput": "tok/s", "request_throughput": "req/s"}


def _words(name):
    return name.replace("_ms", "").replace("_", " ").replace("ttft", "TTFT").replace("tpot", "TPOT").replace(
        "itl", "ITL")


def _spread(runs, name):
    values = sorted(float(r[name]) for r in runs or [] if isinstance(r, dict) and isinstance(r.get(name), (int, float))
                    and not isinstance(r.get(name), bool))
    if len(values) < 2:
        return None
    mid = values[len(values) // 2] if len(values) % 2 else (values[len(values) // 2 - 1] + values[len(values) // 2]) / 2
    return (values[-1] - values[0]) / mid * 100.0 if mid > 0 else None


def bench_gate(new, baseline, limits, new_runs=None, baseline_runs=None):
    """{'regressions': [msg], 'figures': {name: {...}}, 'lines': [one line per figure]}."""
    if not isinstance(new, dict) or not isinstance(baseline, dict) or not isinstance(limits, dict):
        raise AnsibleFilterError("bench_gate: the figures and the limits must be mappings")
    if not isinstance(new_runs or [], list) or not isinstance(baseline_runs or [], list):
        raise AnsibleFilterError("bench_gate: new_runs and baseline_runs must be lists of runs")
    out, figures, lines = [], {}, []
    if int(new.get("failed") or 0) > 0:
        out.append("%d failed request(s) in the benchmark (the baseline had %d)" % (
            int(new["failed"]), int(baseline.get("failed") or 0)))
    for name in sorted(limits):
        limit = limits[name]
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not math.isfinite(limit) or limit < 0:
            raise AnsibleFilterError("bench_gate: the limit for %s must be a finite percentage >= 0, got %r" % (
                name, limit))
        higher_is_better = name.endswith("_throughput")
        if not higher_is_better and not name.endswith("_ms"):
            raise AnsibleFilterError("bench_gate: %s is neither a throughput (*_throughput) nor a latency "
                                     "(*_ms) figure of vllm bench serve" % name)
        if not isinstance(new.get(name), (int, float)) or not isinstance(baseline.get(name), (int, float)):
            raise AnsibleFilterError("bench_gate: %s is missing from the new or the baseline figures" % name)
        old, now = float(baseline[name]), float(new[name])
        spreads = [x for x in (_spread(baseline_runs, name), _spread(new_runs, name)) if x is not None]
        noise = max(spreads) if spreads else None
        unit = UNITS.get(name, "ms")
        noise_words = ("noise +/-%.1f %% (%d+%d runs)" % (noise, len(baseline_runs or []), len(new_runs or []))
                       if noise is not None else "noise not measured (one run a side)")
        if old <= 0:  # nothing to compare with (a latency of 0 ms, no throughput)
            figures[name] = {"baseline": old, "new": now, "change_pct": None, "limit_pct": limit, "noise_pct": noise,
                             "verdict": "not compared"}
            lines.append("%s %.1f -> %.1f %s: not compared (the baseline's is 0)" % (_words(name), old, now, unit))
            continue
        change = (now - old) / old * 100.0
        worse = -change if higher_is_better else change
        if worse > limit and (noise is None or worse > noise):
            verdict = "regressed"
            out.append("%s %.1f -> %.1f %s (%+.1f %%), limit %s %%, %s" % (
                _words(name), old, now, unit, change, limit, noise_words))
        elif worse > limit:
            verdict = "within noise"
        else:
            verdict = "within limit"
        figures[name] = {"baseline": round(old, 3), "new": round(now, 3), "change_pct": round(change, 2),
                         "limit_pct": limit, "noise_pct": None if noise is None else round(noise, 2), "verdict": verdict}
        lines.append("%s %.1f -> %.1f %s (%+.1f %%): %s (limit %s %%, %s)" % (
            _words(name), old, now, unit, change, verdict, limit, noise_words))
    return {"regressions": out, "figures": figures, "lines": lines}


class FilterModule(object):
    def filters(self):
        return {"bench_gate": bench_gate}
