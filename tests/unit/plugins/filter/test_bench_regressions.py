"""bench_gate and bench_regressions: the performance gate's comparison, figure by figure, in the direction each figure
improves, above the limit and the measured run-to-run noise."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.filter.bench_gate import bench_gate
from ansible_collections.glm53.serving.plugins.filter.bench_regressions import bench_regressions

OLD = {"output_throughput": 812.0, "request_throughput": 3.2, "p99_ttft_ms": 400.0, "median_tpot_ms": 9.0,
       "completed": 64, "failed": 0}
LIMITS = {"output_throughput": 10, "p99_ttft_ms": 10}


def test_a_slower_release_is_named_with_both_figures_and_the_change():
    new = dict(OLD, output_throughput=611.0)
    assert bench_regressions(new, OLD, LIMITS) == [
        "output throughput 812.0 -> 611.0 tok/s (-24.8 %), limit 10 %, noise not measured (one run a side)"]


def test_a_latency_regresses_when_it_grows():
    new = dict(OLD, p99_ttft_ms=480.0)
    assert bench_regressions(new, OLD, LIMITS) == [
        "p99 TTFT 400.0 -> 480.0 ms (+20.0 %), limit 10 %, noise not measured (one run a side)"]


def test_within_the_limits_and_improvements_pass():
    assert bench_regressions(dict(OLD, output_throughput=740.0, p99_ttft_ms=430.0), OLD, LIMITS) == []
    assert bench_regressions(dict(OLD, output_throughput=2000.0, p99_ttft_ms=100.0), OLD, LIMITS) == []
    assert bench_regressions(OLD, OLD, {"output_throughput": 0}) == []


def test_a_failed_request_is_a_regression_whatever_the_limits():
    out = bench_regressions(dict(OLD, failed=2), OLD, {})
    assert out == ["2 failed request(s) in the benchmark (the baseline had 0)"]


def test_a_difference_inside_the_measured_noise_is_not_a_regression_and_one_above_it_is():
    """p99 TTFT spread 2569.7 to 2945.5 ms over three runs of one release (14.6 %): +12 % is noise, +30 % is not."""
    base_runs = [dict(OLD, p99_ttft_ms=v) for v in (2569.7, 2945.1, 2945.5)]
    old = dict(OLD, p99_ttft_ms=2945.1)
    gate = bench_gate(dict(OLD, p99_ttft_ms=3298.5), old, LIMITS, [dict(OLD, p99_ttft_ms=3298.5)] * 3, base_runs)
    assert gate["regressions"] == [], gate
    figure = gate["figures"]["p99_ttft_ms"]
    assert figure["verdict"] == "within noise" and figure["noise_pct"] == pytest.approx(12.76, abs=0.01)
    assert "p99 TTFT 2945.1 -> 3298.5 ms (+12.0 %): within noise (limit 10 %, noise +/-12.8 % (3+3 runs))" in gate["lines"]
    slower = dict(OLD, p99_ttft_ms=3830.0)
    out = bench_regressions(slower, old, LIMITS, [slower] * 3, base_runs)
    assert out == ["p99 TTFT 2945.1 -> 3830.0 ms (+30.0 %), limit 10 %, noise +/-12.8 % (3+3 runs)"]
    # the candidate's own spread counts too (the larger side), and a throughput falls to regress
    noisy = [dict(OLD, output_throughput=v) for v in (600.0, 700.0, 800.0)]
    gate = bench_gate(dict(OLD, output_throughput=700.0), OLD, LIMITS, noisy, [OLD, OLD])
    assert gate["figures"]["output_throughput"]["verdict"] == "within noise", gate
    assert bench_gate(OLD, OLD, LIMITS, [OLD] * 3, [OLD] * 3)["figures"]["output_throughput"]["verdict"] == "within limit"


@pytest.mark.parametrize("limits, word", [({"output_throughput": -1}, "percentage"),
                                           ({"output_throughput": float("nan")}, "percentage"),
                                           ({"output_throughput": float("inf")}, "percentage"),
                                           ({"output_throughput": True}, "percentage"),
                                           ({"completed": 10}, "neither a throughput"),
                                           ({"p50_foo_ms": 10}, "missing")])
def test_limits_it_cannot_apply_are_refused(limits, word):
    with pytest.raises(AnsibleFilterError, match=word):
        bench_regressions(OLD, OLD, limits)
