# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Prometheus text exposition, as vLLM's /metrics writes it: just enough to read gauges and counters."""

from __future__ import annotations

import re

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """[(name, {label: value}, float)] for every sample line; comments and unparsable values skipped."""
    samples = []
    for line in (text or "").splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        labels = dict(_LABEL.findall(m.group(2) or ""))
        samples.append((m.group(1), labels, value))
    return samples


def totals(samples, names):
    """{name: sum over its series} for the given names (absent names are left out)."""
    out = {}
    for name, _labels, value in samples:
        if name in names:
            out[name] = out.get(name, 0.0) + value
    return out
