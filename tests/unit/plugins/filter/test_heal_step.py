"""heal.yml's whole decision for a host is glm53.serving.heal_step's state machine: the survey's state from what the
run read, the pool's budget, and the restart turn's outcome; each state says what the role does with it."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.filter.heal_step import STATES, TRANSITIONS, heal_step, minimum

PASSED = {"passed": True, "failures": []}
FAILED = {"passed": False, "failures": ["health: /health got no answer in 30 s (frozen)", "chat: not run"]}
MARK = {"state": "drained", "since": "2026-12-05T10:00:00Z", "reason": "needle failed", "release": "r1"}


def survey(result=FAILED, record=None, release="r1", clear=False, mode="systemd", lines=()):
    return heal_step({}, "survey", probes_result=result, record=record or {}, release=release, clear=clear,
                     service_mode=mode, manager_lines=list(lines), detected=100.0)


@pytest.mark.parametrize("kwargs, state, marked", [
    ({"result": PASSED, "record": MARK, "lines": ["failed"]}, "healthy", True),  # passing wins over everything
    ({"record": MARK, "lines": ["failed"]}, "marked", True),                    # the mark holds: same release
    ({"record": MARK, "release": "r2"}, "failing", False),                      # a new release clears the mark
    ({"record": MARK, "clear": True}, "failing", False),                        # so does heal_clear
    ({"lines": ["failed", "exit-code"]}, "gave_up", False),                     # systemd gave up: a crash loop
    ({"mode": "tmux", "lines": ["glm53: gave up after 5 starts"]}, "gave_up", False),
    ({"lines": ["active", "success"]}, "failing", False),
    ({"mode": "none", "lines": ["failed"]}, "failing", False),
])
def test_the_survey(kwargs, state, marked):
    out = survey(**kwargs)
    assert out["state"] == state and out["marked"] is marked and out["detected"] == 100.0
    if state == "marked":
        assert out["reason"] == "left drained by heal.yml since 2026-12-05T10:00:00Z: needle failed"
    if state == "failing":
        assert out["reason"] == " | ".join(FAILED["failures"])


@pytest.mark.parametrize("passing, pool, least, held", [(29, 40, "75%", True), (30, 40, "75%", False),
                                                       (2, 3, 2, False), (1, 3, "2", True), (0, 1, "0", False)])
def test_the_budget_holds_a_failing_host_when_too_few_pass(passing, pool, least, held):
    out = heal_step(survey(), "budget", passing=passing, pool=pool, min_serving=least)
    assert out["state"] == ("held" if held else "failing")
    if held:
        assert out["reason"].startswith("not healed: %d of %d hosts pass, below heal_min_serving=%s (%d)"
                                         % (passing, pool, least, minimum(least, pool)))
        assert out["reason"].endswith(FAILED["failures"][1]) and out["needs_person"]


def test_the_stores_claim_holds_a_failing_host_when_the_pools_budget_is_spent():
    # sliced runs: the store (fleet_claim) counted the whole pool; a refused claim holds, a granted one heals
    refused = {"claimed": False, "reason": "refused: 3 of 12 hosts would be out of the pool, over its budget of 2"}
    out = heal_step(survey(), "budget", claim=refused)
    assert out["state"] == "held" and out["needs_person"] and out["metric"] == "failing"
    assert out["reason"].startswith("not healed: the pool's budget in the store (sliced runs) is spent, refused: 3 of 12")
    assert out["reason"].endswith(FAILED["failures"][1])
    granted = heal_step(survey(), "budget", claim={"claimed": True, "reason": ""})
    assert granted["state"] == "failing" and granted["claimed"] is True and not granted["needs_person"]
    # a host held by the counts is never asked about its claim: the event has no row from held
    held = heal_step(survey(), "budget", passing=0, pool=3, min_serving=2)
    assert heal_step(held, "budget", claim={"claimed": True}) == held


def test_a_percentage_rounds_down():
    assert minimum("75%", 41) == 30 and minimum("50%", 3) == 1 and minimum(2, 10) == 2


@pytest.mark.parametrize("steps, state, reason", [
    (["drained", "stopped", "relaunched"], "drained", "failed again after its relaunch: probes failed"),
    (["drained"], "unhealed", "not relaunched (drained was the last step done): probes failed"),
    ([], "unhealed", "not relaunched (nothing was the last step done): probes failed"),
])
def test_a_failed_turn_is_drained_once_the_engine_was_stopped(steps, state, reason):
    out = heal_step(survey(), "turn_failed", steps=steps, error=" probes failed\n")
    assert (out["state"], out["reason"], out["steps"]) == (state, reason, steps)
    assert out["first_reason"] == " | ".join(FAILED["failures"]) and out["needs_person"]


def test_a_turn_done_is_healed_and_recorded():
    out = heal_step(survey(), "turn_done", steps=["drained", "stopped", "relaunched", "proved"], seconds=74.2)
    assert out["state"] == "healed" and out["seconds"] == 74.2 and out["record"] and not out["needs_person"]


def test_an_event_with_no_row_changes_nothing():
    healthy = survey(result=PASSED)
    assert heal_step(healthy, "budget", passing=0, pool=3, min_serving="100%") == healthy
    assert heal_step(healthy, "turn_done", steps=[], seconds=1.0) == healthy
    held = heal_step(survey(), "budget", passing=0, pool=3, min_serving=2)
    assert heal_step(held, "turn_failed", steps=[]) == held


def test_every_state_says_what_is_done_with_it():
    assert {s for s in STATES} >= {"healthy", "marked", "gave_up", "failing", "held", "healed", "drained", "unhealed"}
    assert {s for s, (_m, record, _p) in STATES.items() if record} == {"drained", "healed"}
    assert {s for s, (_m, _r, person) in STATES.items() if person} == {"held", "unhealed", "drained", "marked",
                                                                        "gave_up"}
    assert all(state in (None, "failing") for state, _event in TRANSITIONS)


def test_bad_calls_are_refused():
    with pytest.raises(AnsibleFilterError, match="unknown event"):
        heal_step({}, "reboot")
    with pytest.raises(AnsibleFilterError, match="surveyed once"):
        heal_step(survey(), "survey", probes_result=FAILED)
    with pytest.raises(AnsibleFilterError, match="probes_result"):
        heal_step({}, "survey", probes_result={"failures": []})
