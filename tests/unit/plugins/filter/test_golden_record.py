"""glm53.serving.golden_record and answer_agreement: a release's golden record is taken from the hosts that first
proved it (the answers most of them gave), provisional on one host, confirmed by a second, never replaced; and a host
whose answers differ from most hosts of its release is named."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.glm53.serving.plugins.filter.answer_agreement import answer_agreement
from ansible_collections.glm53.serving.plugins.filter.golden_record import golden_record

SET = "r1/GLM"


def answers(greeting="Hello!", nll=0.6):
    return [{"name": "greeting", "prompt": "Hi", "content": greeting, "token_ids": [1, 2], "tokens": 2, "nll": nll},
            {"name": "lookup", "prompt": "table", "content": "4817", "token_ids": [3], "tokens": 4, "nll": 0.5}]


def host(name, passed=True, greeting="Hello!", probe_set=SET, scored=True, golden_release=None):
    chat = {"passed": passed, "probe_set": probe_set, "golden_release": golden_release,
            "answers": answers(greeting) if scored else [{"name": "greeting", "content": greeting},
                                                         {"name": "lookup", "content": "4817"}]}
    return {"host": name, "passed": passed, "chat": chat}


def test_one_host_records_a_provisional_record_and_a_second_confirms_it():
    first = golden_record({}, [host("a")], SET, "r1")
    assert first["state"] == "provisional" and first["hosts"] == ["a"] and first["probes"] == answers()
    assert first["release"] == "r1" and first["probe_set"] == SET
    again = golden_record(first, [host("b", scored=False, golden_release="r1")], SET, "r1")
    assert again["state"] == "confirmed" and again["hosts"] == ["a", "b"] and again["probes"] == first["probes"]
    assert golden_record(again, [host("b", scored=False, golden_release="r1")], SET, "r1") is again


def test_the_answers_most_hosts_gave_are_recorded():
    rec = golden_record({}, [host("a", greeting="ello!"), host("b"), host("c")], SET, "r1")
    assert rec["hosts"] == ["b", "c"] and rec["state"] == "confirmed" and rec["probes"][0]["content"] == "Hello!"


def test_a_record_is_never_replaced_and_a_differing_host_never_joins_it():
    kept = golden_record({}, [host("a")], SET, "r1")
    assert golden_record(kept, [host("b", greeting="Hi!", golden_release="r1")], SET, "r1") is kept


@pytest.mark.parametrize("result", [
    host("a", passed=False),                      # the host's verdict failed
    host("a", probe_set="r2/GLM"),                # another release's probe set
    host("a", scored=False),                      # answers not scored (a run with a record, or record off)
    {"host": "a", "passed": True, "chat": None},  # no chat probe
])
def test_only_a_host_whose_every_proof_passed_with_scored_answers_records(result):
    assert golden_record({}, [result], SET, "r1") == {}


def test_bad_input_is_refused():
    with pytest.raises(AnsibleFilterError, match="kept golden record answers"):
        golden_record({"probe_set": "r0/GLM", "probes": answers()}, [], SET, "r1")
    with pytest.raises(AnsibleFilterError, match="probe set's name"):
        golden_record({}, [], "", "r1")


def hv(name, greeting, probe_set=SET):
    return {"inventory_hostname": name, "__probes_chat": {"probe_set": probe_set, "answers": [
        {"name": "greeting", "content": greeting}, {"name": "lookup", "content": "4817"}]}}


def test_a_host_that_differs_from_most_hosts_of_its_release_is_named():
    fleet = [hv("a", "Hello!"), hv("b", "Hello! "), hv("c", "ello!")]
    assert answer_agreement(fleet, "c", SET) == {
        "greeting": {"agree": 2, "of": 3, "majority": "Hello!", "hosts": ["a", "b"]}}
    assert answer_agreement(fleet, "a", SET) == {}


def test_no_majority_or_too_few_hosts_names_nobody():
    assert answer_agreement([hv("a", "Hello!"), hv("b", "Hi!"), hv("c", "Hey!")], "a", SET) == {}
    assert answer_agreement([hv("a", "Hello!"), hv("c", "ello!")], "c", SET) == {}
    # hosts asked another probe set (another release) are not compared
    assert answer_agreement([hv("a", "Hello!", "r2/GLM"), hv("b", "Hello!", "r2/GLM"), hv("c", "ello!")], "c", SET) == {}


def test_the_stores_evidence_of_other_hosts_counts_and_the_plays_own_wins():
    # a slice sees two hosts; the store holds the fleet's others (evidence: host and chat), so a majority is found
    play = [hv("c", "ello!"), hv("d", "Hello!")]
    kept = [host("a"), host("b"), host("e", probe_set="r2/GLM"), host("c", greeting="Hello!")]
    assert answer_agreement(play, "c", SET) == {}  # two hosts alone: too few
    assert answer_agreement(play, "c", SET, kept=kept) == {
        "greeting": {"agree": 3, "of": 4, "majority": "Hello!", "hosts": ["a", "b", "d"]}}
    with pytest.raises(AnsibleFilterError, match="kept must be a list"):
        answer_agreement(play, "c", SET, kept="a")
