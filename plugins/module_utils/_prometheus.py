# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Prometheus text exposition, as vLLM's /metrics writes it: just enough to read gauges and counters."""

from __future__ import annotations

import re

_NAME = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)")
# A label value is quoted; inside it \\, \" and \n are escapes, and '}' or ',' are plain characters.
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|\})')
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def _unescape(value):
    return re.sub(r"\\[\\\"n]", lambda m: _ESCAPES[m.group(0)], value)


def _labels(line, start):
    """({label: value}, index after the closing brace), following the exposition format's escaping."""
    labels, i = {}, start + 1
    if line[i:].lstrip().startswith("}"):
        return labels, line.index("}", i) + 1
    while True:
        m = _LABEL.match(line, i)
        if not m:
            return None, None
        labels[m.group(1)] = _unescape(m.group(2))
        i = m.end()
        if m.group(3) == "}":
            return labels, i
        if line[i:].lstrip().startswith("}"):  # a trailing comma before the brace
            return labels, line.index("}", i) + 1


def parse(text):
    """[(name, {label: value}, float)] for every sample line; comments and unparsable values skipped."""
    samples = []
    for line in (text or "").splitlines():
        if not line or line.startswith("#"):
            continue
        m = _NAME.match(line)
        if not m:
            continue
        rest, labels = m.end(), {}
        if line[rest:rest + 1] == "{":
            labels, rest = _labels(line, rest)
            if labels is None:
                continue
        fields = line[rest:].split()
        if not fields:
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue
        samples.append((m.group(1), labels, value))
    return samples


def totals(samples, names):
    """{name: sum over its series} for the given names (absent names are left out)."""
    out = {}
    for name, _labels, value in samples:
        if name in names:
            out[name] = out.get(name, 0.0) + value
    return out
