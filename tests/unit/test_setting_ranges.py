"""Every number a user sets has a range and a reason, and docs/settings.md's table of them is the rules' own.

hack/settings_ranges.py reads the public roles' argument specs (which options are numbers) and meta/rules.yml (the
bounds the checks use, and their `hint`): a number setting without a bounded rule, or a bounded rule without its
reason, is a problem; the page's table between its markers must be what the script makes. Then the bounds work as
written: a duration past its range and a number past its range are refused, naming the setting and the reason.
"""
from __future__ import annotations

import os
import subprocess
import sys

from ansible_collections.glm53.serving.plugins.filter.setting_problems import setting_problems
from ansible_collections.glm53.serving.plugins.filter.setting_rules import setting_rules
from testlib import REPO


def test_every_number_has_a_range_with_its_reason_and_the_page_shows_them():
    proc = subprocess.run([sys.executable, os.path.join(REPO, "hack", "settings_ranges.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    shown = subprocess.run([sys.executable, os.path.join(REPO, "hack", "settings_ranges.py")], capture_output=True,
                           text=True, check=True).stdout
    for name in ("serve_max_model_len", "service_gate_timeout", "probes_needle_max_tokens", "monitoring_ttft_for",
                 "rollout_silence_duration_s", "venv_releases_keep"):
        assert "| `%s` |" % name in shown, name


def test_a_duration_past_its_range_is_refused_with_the_bounds():
    checks = [{"name": "monitoring_ttft_for", "value": value, "rule": "duration", "min": 0, "max": 86400, "hint": "H."}
              for value in ("365d", "1d1s", "1d", "0s", "90m")]
    assert setting_problems(checks) == [
        'monitoring_ttft_for="365d" must be a Prometheus duration from 0s to 1d. H.',
        'monitoring_ttft_for="1d1s" must be a Prometheus duration from 0s to 1d. H.']


def test_the_roles_bounds_refuse_absurd_values():
    problems = setting_rules(["monitoring"], {"monitoring_queue_for": "100y", "monitoring_scrape_interval": "10m"})
    assert any(p.startswith('monitoring_queue_for="100y" must be a Prometheus duration from 0s to 1d.') for p in problems)
    assert any(p.startswith('monitoring_scrape_interval="10m" must be a Prometheus duration from 1s to 5m.')
               for p in problems)
    problems = setting_rules(["service"], {"service_gate_timeout": 10 ** 9})
    assert problems and problems[0].startswith("service_gate_timeout=1000000000 must be a whole number from 60 to 3600.")
