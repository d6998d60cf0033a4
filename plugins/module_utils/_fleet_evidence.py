# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The probe evidence the controller keeps in the report folder (<host>.json), merged with a run's own, for the
fleet_evidence and fleet_report filters. Controller-side: not for modules."""

from __future__ import annotations

import json
import os


def read_json(path):
    """A JSON file's content, or None when it cannot be read or parsed."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def merge_evidence(evidence, order=None, kept_dir=None):
    """This run's evidence merged with the evidence kept in kept_dir for the hosts of order it does not hold,
    in inventory order (the hosts not in order last, by name)."""
    order = list(order or [])
    rank = dict((h, i) for i, h in enumerate(order))
    by_host = {}
    if kept_dir:
        this_run = set(e["host"] for e in evidence)
        for name in order:
            if name not in this_run:
                kept = read_json(os.path.join(kept_dir, name + ".json"))
                if isinstance(kept, dict) and kept.get("host") == name:
                    by_host[name] = kept
    for e in evidence:
        by_host[e["host"]] = e  # this run's evidence over a kept file
    return [by_host[h] for h in sorted(by_host, key=lambda h: (rank.get(h, len(order)), h))]
