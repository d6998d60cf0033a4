"""The probes' verdict, decided by the probe_verdict filter (the evidence template only prints it)."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.filter.probe_verdict import probe_verdict

READY = {"ready": True, "version": "0.28.1.dev3+gf2935ce32.d20261201", "msg": ""}
SKIPPED = {"skipped": True, "changed": False, "skip_reason": "Conditional result was False"}


def test_a_ready_engine_whose_probes_pass_passes():
    v = probe_verdict(READY, {"passed": True, "summary": []}, {"passed": True})
    assert v == {"passed": True, "failures": [], "engine_commit": "f2935ce32"}


def test_probes_that_did_not_run_are_left_out():
    assert probe_verdict(READY, SKIPPED, None)["passed"] is True
    assert probe_verdict(READY)["passed"] is True


def test_a_not_ready_engine_fails_with_its_reason_and_skipped_probes_add_nothing():
    v = probe_verdict({"ready": False, "msg": "port 8000 never opened"}, SKIPPED, SKIPPED)
    assert v["passed"] is False and v["failures"] == ["health: port 8000 never opened"]
    assert probe_verdict({"ready": False, "msg": ""})["failures"] == ["health: not ready"]


def test_each_failing_probe_gives_its_summary_lines_or_its_message():
    chat = {"passed": False, "summary": ["math: answered 5, expected 4", "greeting: a refusal"]}
    needle = {"passed": False, "summary": [], "msg": "450000-token target: 2/5 retrieved"}
    v = probe_verdict(READY, chat, needle)
    assert v["passed"] is False
    assert v["failures"] == ["chat math: answered 5, expected 4", "chat greeting: a refusal",
                             "needle 450000-token target: 2/5 retrieved"]
    assert probe_verdict(READY, {"passed": False})["failures"] == ["chat chat probe failed"]


def test_a_probe_result_without_passed_is_a_failure_not_a_pass():
    assert probe_verdict(READY, {"summary": []})["passed"] is False


@pytest.mark.parametrize("version", [None, "0.28.0", "0.28.1+cu130", 7])
def test_no_commit_in_the_version_gives_none(version):
    assert probe_verdict(dict(READY, version=version))["engine_commit"] is None


def test_a_health_result_that_is_not_a_mapping_is_refused():
    with pytest.raises(AnsibleFilterError):
        probe_verdict("ready")


def test_a_benchmark_that_failed_or_lost_requests_fails_the_host_a_slow_one_does_not():
    ran = {"changed": False, "figures": {"output_throughput": 10.0, "completed": 64, "failed": 0}}
    assert probe_verdict(READY, bench=ran)["passed"]  # how fast is the rollout gate's to judge
    # failed_when: false keeps "failed" off: a result without figures is a run that failed
    broken = {"changed": False, "failed": False, "msg": "vllm bench serve failed (exit 1) against x: boom"}
    assert probe_verdict(READY, bench=broken)["failures"] == ["bench vllm bench serve failed (exit 1) against x: boom"]
    lost = {"figures": {"completed": 60, "failed": 4}}
    assert probe_verdict(READY, bench=lost)["failures"] == ["bench 4 of 64 requests failed"]
    assert probe_verdict(READY, bench={"skipped": True})["passed"]
