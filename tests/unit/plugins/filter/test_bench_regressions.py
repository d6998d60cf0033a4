"""bench_regressions: the performance gate's comparison, figure by figure, in the direction each figure improves."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.filter.bench_regressions import bench_regressions

OLD = {"output_throughput": 812.0, "request_throughput": 3.2, "p99_ttft_ms": 400.0, "median_tpot_ms": 9.0,
       "completed": 64, "failed": 0}
LIMITS = {"output_throughput": 10, "p99_ttft_ms": 10}


def test_a_slower_release_is_named_with_both_figures_and_the_change():
    new = dict(OLD, output_throughput=611.0)
    assert bench_regressions(new, OLD, LIMITS) == ["output throughput 812.0 -> 611.0 tok/s (-24.8 %), limit 10 %"]


def test_a_latency_regresses_when_it_grows():
    new = dict(OLD, p99_ttft_ms=480.0)
    assert bench_regressions(new, OLD, LIMITS) == ["p99 TTFT 400.0 -> 480.0 ms (+20.0 %), limit 10 %"]


def test_within_the_limits_and_improvements_pass():
    assert bench_regressions(dict(OLD, output_throughput=740.0, p99_ttft_ms=430.0), OLD, LIMITS) == []
    assert bench_regressions(dict(OLD, output_throughput=2000.0, p99_ttft_ms=100.0), OLD, LIMITS) == []
    assert bench_regressions(OLD, OLD, {"output_throughput": 0}) == []


def test_a_failed_request_is_a_regression_whatever_the_limits():
    out = bench_regressions(dict(OLD, failed=2), OLD, {})
    assert out == ["2 failed request(s) in the benchmark (the baseline had 0)"]


@pytest.mark.parametrize("limits, word", [({"output_throughput": -1}, "percentage"),
                                           ({"output_throughput": True}, "percentage"),
                                           ({"completed": 10}, "neither a throughput"),
                                           ({"p50_foo_ms": 10}, "missing")])
def test_limits_it_cannot_apply_are_refused(limits, word):
    with pytest.raises(AnsibleFilterError, match=word):
        bench_regressions(OLD, OLD, limits)
