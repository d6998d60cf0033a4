"""The fleet summary (fleet_report): counts per group, failures grouped by cause, one-line reasons, changes since the
last run, and the merge of kept evidence with this run's."""
from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.filter.fleet_evidence import fleet_evidence
from ansible_collections.glm53.serving.plugins.filter.fleet_report import fleet_report, host_causes, host_reason


def ok(host, version="0.28.1.dev7+gf2935ce32"):
    return {"host": host, "passed": True, "engine_version": version, "health": {"ready": True}, "failures": []}


def dead(host, port=8000):
    msg = "connection refused: http://10.0.0.%d:%d/health" % (len(host), port)
    return {"host": host, "passed": False, "engine_version": None, "health": {"ready": False, "msg": msg},
            "failures": ["health: " + msg]}


def looping(host, question="math", excerpt="the the the"):
    return {"host": host, "passed": False, "engine_version": "0.28.1.dev7+gf2935ce32", "health": {"ready": True},
            "chat": {"passed": False, "probes": [{"name": question, "findings": [
                {"signal": "repeated_ngram", "field": "content", "excerpt": excerpt}]}]},
            "failures": ["chat %s: repeated_ngram in content: «%s»" % (question, excerpt)]}


def missed(host, depths=(10, 50)):
    return {"host": host, "passed": False, "engine_version": "0.28.1.dev7+gf2935ce32", "health": {"ready": True},
            "needle": {"passed": False, "results": [{"target": 450000, "depths": [
                {"depth": d, "verdict": "missed"} for d in depths] + [{"depth": 90, "verdict": "retrieved"}]}]},
            "failures": ["needle 450000 tokens (449871 sent), depth %d: missed: no key" % d for d in depths]}


def test_hosts_that_fail_the_same_way_are_one_cause_whatever_their_figures():
    summary = fleet_report([dead("a1"), dead("bb2", 8001), looping("c3", "greeting", "hi hi hi"), looping("d4"),
                            missed("e5"), ok("f6")])
    assert [(c["cause"], c["count"], c["hosts"]) for c in summary["causes"]] == [
        ("chat: repeated_ngram", 2, ["c3", "d4"]),
        ("engine not ready: connection refused: <url>", 2, ["a1", "bb2"]),
        ("needle: missed", 1, ["e5"])]
    assert (summary["total"], summary["passed"], summary["failed"]) == (6, 1, 5)


def test_every_failing_host_has_a_one_line_reason_and_passing_hosts_none():
    assert host_reason(missed("x")) == "needle 450000 tokens (449871 sent), depth 10: missed: no key (and 1 more)"
    assert host_reason(ok("y")) == ""
    long = dict(dead("z"), failures=["health: " + "x" * 500 + "\nsecond line"])
    assert len(host_reason(long)) == 200 and "\n" not in host_reason(long)
    assert host_reason({"host": "w", "passed": False}) == "failed, no reason recorded"


def test_a_failure_without_structure_is_grouped_by_its_message_class():
    odd = {"host": "o", "passed": False, "health": {"ready": True}, "failures": ["bench 3 of 16 requests failed"]}
    assert host_causes(odd) == ["bench N of N requests failed"]
    assert host_causes({"host": "p", "passed": False, "health": {"ready": True}}) == ["failed, no reason recorded"]
    cannot = {"host": "q", "passed": False, "health": {"ready": True}, "needle": {"passed": False, "results": [
        {"target": 600000, "verdict": "cannot_test", "depths": []},
        {"target": 60000, "verdict": "failed", "depths": [{"depth": 50, "verdict": "retrieved"}],
         "control": {"verdict": "failed"}}]}}
    assert host_causes(cannot) == ["needle: cannot test (context too small)", "needle: control failed"]


def test_failing_hosts_come_first_each_verdict_in_inventory_order():
    summary = fleet_report([ok("n3"), dead("n2"), ok("n1"), looping("n4"), ok("zz")], order=["n1", "n2", "n3", "n4"])
    assert [h["host"] for h in summary["hosts"]] == ["n2", "n4", "n1", "n3", "zz"]


def test_groups_count_their_hosts_and_leave_out_all_and_ungrouped():
    summary = fleet_report([ok("a"), dead("b"), ok("c")],
                           groups={"all": ["a", "b", "c"], "ungrouped": [], "rack1": ["a", "b"], "rack2": ["c", "x"],
                                   "empty": ["x"]})
    assert summary["groups"] == [{"group": "rack1", "hosts": 2, "passed": 1, "failed": 1},
                                 {"group": "rack2", "hosts": 1, "passed": 1, "failed": 0}]


def test_a_limited_run_merges_into_the_kept_state_and_says_which_hosts_it_probed():
    kept = [ok("a"), ok("b"), ok("c")]
    summary = fleet_report(kept + [dead("b")], order=["a", "b", "c"], probed=["b"])
    assert summary["total"] == 3 and [h["host"] for h in summary["hosts"]] == ["b", "a", "c"]
    assert summary["run"]["probed"] == ["b"] and summary["run"]["kept"] == ["a", "c"]
    assert [h["probed"] for h in summary["hosts"]] == [True, False, False]


def test_changes_are_counted_against_the_last_run_and_batches_of_one_run_share_its_base():
    first = fleet_report([ok("a", "0.28.1+gaaaaaaa"), dead("b"), ok("c")], run={"id": "r1"})
    assert first["changes"]["since"] is None and first["baseline"] is None
    batch1 = fleet_report([ok("a", "0.28.1+gbbbbbbb"), ok("b"), ok("c")], previous=first, run={"id": "r2"})
    assert batch1["changes"] == {"since": "r1", "started_passing": ["b"], "stopped_passing": [], "new_hosts": [],
                                 "engine_moved": [{"host": "a", "from": "0.28.1+gaaaaaaa", "to": "0.28.1+gbbbbbbb"}]}
    # a later batch of run r2: still counted against r1, not against batch1's summary
    batch2 = fleet_report([ok("a", "0.28.1+gbbbbbbb"), ok("b"), dead("c"), ok("d")], previous=batch1,
                          run={"id": "r2"})
    assert batch2["changes"]["since"] == "r1" and batch2["changes"]["started_passing"] == ["b"]
    assert batch2["changes"]["stopped_passing"] == ["c"] and batch2["changes"]["new_hosts"] == ["d"]
    nxt = fleet_report([ok("a", "0.28.1+gbbbbbbb"), ok("b"), dead("c"), ok("d")], previous=batch2, run={"id": "r3"})
    assert nxt["changes"] == {"since": "r2", "started_passing": [], "stopped_passing": [], "new_hosts": [],
                              "engine_moved": []}


def test_the_input_is_checked():
    with pytest.raises(AnsibleFilterError):
        fleet_report([{"passed": True}])
    with pytest.raises(AnsibleFilterError):
        fleet_report("a")
    with pytest.raises(AnsibleFilterError):
        fleet_report([ok("a")], previous="not a summary")


def test_kept_evidence_and_the_last_summary_are_read_from_the_report_folder(tmp_path):
    for e in (ok("a"), ok("b"), ok("gone")):  # "gone" is no longer in the inventory
        (tmp_path / ("%s.json" % e["host"])).write_text(json.dumps(e))
    (tmp_path / "c.json").write_text("{not json")
    (tmp_path / "d.json").write_text(json.dumps(ok("someone-else")))  # not the host its name says
    last = fleet_report([ok("a"), ok("b")], run={"id": "r1"})
    (tmp_path / "summary.json").write_text(json.dumps(last))
    summary = fleet_report([dead("b")], order=["a", "b", "c", "d"], probed=["b"], run={"id": "r2"},
                           kept_dir=str(tmp_path))
    assert [h["host"] for h in summary["hosts"]] == ["b", "a"]
    assert summary["run"]["kept"] == ["a"] and summary["changes"]["stopped_passing"] == ["b"]
    assert summary["changes"]["since"] == "r1"
    (tmp_path / "summary.json").write_text("[]")
    assert fleet_report([ok("a")], order=["a"], kept_dir=str(tmp_path))["changes"]["since"] is None
    merged = fleet_evidence([dead("b")], order=["b", "a", "c", "d"], kept_dir=str(tmp_path))
    assert [(e["host"], e["passed"]) for e in merged] == [("b", False), ("a", True)]
    with pytest.raises(AnsibleFilterError):
        fleet_evidence([{"passed": True}])
