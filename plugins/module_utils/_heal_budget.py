# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""heal_min_serving's meaning, shared by the heal_step filter (one controller's view) and the fleet_claim module
(the whole pool's, through the store)."""

from __future__ import annotations


def minimum(min_serving, pool):
    """heal_min_serving as a number of hosts: a count, or a percentage of the pool rounded down."""
    text = str(min_serving)
    if text.endswith("%"):
        return int(int(text[:-1]) * int(pool) // 100)
    return int(text)
