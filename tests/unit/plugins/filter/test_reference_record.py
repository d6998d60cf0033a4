"""glm53.serving.reference_record: the weights' reference is recorded once from hosts whose every proof passed,
provisional on one host and confirmed when a second agrees, never replaced by a later release, and a drifted host is
never part of it."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.filter.reference_record import reference_record

W = "zai-org/GLM-5.3-Flash-AWQ-INT4@abc123"
GOOD = {"english": 2.2415, "chinese": 2.6012, "code": 1.9021}


def host(name, shift=0.0, passed=True, weights=W, ref_passed=True):
    return {"host": name, "passed": passed,
            "reference": {"passed": ref_passed, "weights": weights, "release": "r1",
                          "figures": dict((k, round(v + shift, 4)) for k, v in GOOD.items())}}


def test_one_host_records_a_provisional_reference_and_a_second_confirms_it():
    first = reference_record({}, [host("node1")], W, release="r1")
    assert first == {"weights": W, "figures": GOOD, "hosts": ["node1"], "release": "r1", "state": "provisional"}
    second = reference_record(first, [host("node2", 0.01)], W, release="r2")
    assert second["state"] == "confirmed" and second["hosts"] == ["node1", "node2"]
    assert second["figures"] == GOOD and second["release"] == "r1"  # the figures and their origin never move
    assert reference_record(second, [host("node1"), host("node2")], W) is second  # nothing new: unchanged


def test_a_fleet_records_its_median_less_the_host_that_drifted():
    record = reference_record({}, [host("a"), host("b", 0.02), host("c", 0.3)], W)
    assert record["hosts"] == ["a", "b"] and record["state"] == "confirmed"
    assert record["figures"]["english"] == round(GOOD["english"] + 0.01, 4)


def test_a_drifted_or_failing_host_is_never_recorded_and_never_confirms():
    kept = reference_record({}, [host("node1")], W)
    assert reference_record(kept, [host("fresh", 0.1)], W) is kept  # drifted by 0.1 nats: not one of its hosts
    assert reference_record(kept, [host("other", passed=False)], W) is kept  # its verdict failed
    assert reference_record(kept, [host("other", weights="other@1")], W) is kept  # other weights
    assert reference_record({}, [host("x", passed=False), host("y", ref_passed=False)], W) == {}
    assert reference_record({}, [], W) == {}


def test_two_small_steps_do_not_move_the_reference():
    """Each release is held to the weights' figures, not to the release before it: +0.06 is within the tolerance,
    +0.12 (two such upgrades) is not, so the second never joins (and its verdict fails on the same figures)."""
    kept = reference_record({}, [host("a"), host("b")], W)
    assert reference_record(kept, [host("c", 0.06)], W)["hosts"] == ["a", "b", "c"]
    assert reference_record(kept, [host("d", 0.12)], W) is kept


def test_bad_input_is_refused():
    with pytest.raises(AnsibleFilterError, match="kept record"):
        reference_record([], [], W)
    with pytest.raises(AnsibleFilterError, match="weights"):
        reference_record({}, [], "")
    with pytest.raises(AnsibleFilterError, match="not 'other'"):
        reference_record(reference_record({}, [host("a")], W), [], "other")
