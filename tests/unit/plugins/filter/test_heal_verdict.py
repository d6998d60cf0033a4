"""heal.yml's state for a host, decided by the heal_verdict filter (survey.yml only passes it what it read)."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.filter.heal_verdict import heal_verdict

PASSED = {"passed": True, "failures": []}
FAILED = {"passed": False, "failures": ["health: /health got no answer in 30 s (frozen)", "chat: not run"]}
RECORD = {"state": "drained", "since": "2026-12-05T10:00:00Z", "reason": "needle failed", "release": "r1"}


def test_a_host_whose_probes_pass_is_healthy_whatever_else_holds():
    assert heal_verdict(PASSED, True, RECORD, "systemd", ["failed", "exit-code"]) == {"state": "healthy", "reason": ""}


def test_a_marked_host_is_left_drained_and_says_since_when_and_why():
    v = heal_verdict(FAILED, True, RECORD, "systemd", ["failed"])
    assert v == {"state": "marked", "reason": "left drained by heal.yml since 2026-12-05T10:00:00Z: needle failed"}


@pytest.mark.parametrize("mode, lines", [("systemd", ["failed", "exit-code"]), ("tmux", ["glm53: gave up after 5 starts"])])
def test_a_crash_loop_is_reported_not_restarted(mode, lines):
    v = heal_verdict(FAILED, False, {}, mode, lines)
    assert v["state"] == "gave_up" and v["reason"].endswith(" ".join(lines))


@pytest.mark.parametrize("mode, lines", [("systemd", ["active", "success"]), ("systemd", []),
                                         ("tmux", ["glm53: ready pid 12"]), ("none", ["failed"])])
def test_any_other_failing_host_is_healed_with_its_probes_failures(mode, lines):
    v = heal_verdict(FAILED, "false", None, mode, lines)
    assert v == {"state": "failing", "reason": " | ".join(FAILED["failures"])}


def test_something_that_is_no_probes_result_is_an_error():
    with pytest.raises(AnsibleFilterError):
        heal_verdict({"failures": []})
