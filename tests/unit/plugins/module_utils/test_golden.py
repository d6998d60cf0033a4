"""module_utils/_golden: the golden record's decision for one probe, on figures alone. It catches what the text checks
pass: a lost first token, a doubled token and another request's answer (a token the engine's own scores put far
below the likeliest one), a changed chat template and numerics that drift by 0.1 nats (the recorded answer became
less likely), and lets a near tie through to the text checks."""
from __future__ import annotations

import pytest
from ansible_collections.glm53.serving.plugins.module_utils import _golden

GOLDEN = {"name": "greeting", "prompt": "Hi", "content": "Hello! Nice to meet you.", "tokens": 8, "nll": 0.62}


def test_the_recorded_answer_passes_on_the_record():
    findings, info = _golden.judge("  Hello! Nice to meet you.\n", GOLDEN, {"nll": 0.625})
    assert findings == [] and info["layer"] == "golden" and not info["differs"]


@pytest.mark.parametrize("why, nll_now", [("numerics drift by 0.1 nats a token", 0.72),
                                          ("a changed chat template makes the recorded answer unlikely", 1.9)])
def test_a_recorded_answer_that_became_less_likely_fails(why, nll_now):
    findings, info = _golden.judge(GOLDEN["content"], GOLDEN, {"nll": nll_now})
    assert [f["signal"] for f in findings] == ["golden_drift"], why
    assert "tolerance 0.080 nats" in findings[0]["detail"] and info["layer"] == "golden"


@pytest.mark.parametrize("content, tops", [
    ("ello! Nice to meet you.", [(-3.4, -0.4, "ello", "Hello")]),                                     # lost
    ("Hello Hello! Nice to meet you.", [(-0.4, -0.4, "Hello", "Hello"), (-6.0, -0.3, " Hello", "!")]),  # doubled
    ("4817", [(-9.0, -0.4, "4817", "Hello")]),                                            # another request's answer
])
def test_a_token_far_below_the_likeliest_is_not_greedy_decodings_own(content, tops):
    departure = _golden.first_departure(tops)
    findings, info = _golden.judge(content, GOLDEN, {"nll": 0.62}, departure)
    assert [f["signal"] for f in findings] == ["not_own_answer"] and info["layer"] == "golden"
    assert "the release's recorded answer is «Hello! Nice to meet you.»" in findings[0]["detail"]


def test_a_near_tie_goes_to_the_text_checks_beside_the_record():
    departure = _golden.first_departure([(-0.70, -0.69, "Hi", "Hello"), (-0.2, -0.2, "!", "!")])
    findings, info = _golden.judge("Hi! Nice to meet you.", GOLDEN, {"nll": 0.62}, departure)
    assert departure is None and findings == [] and info["layer"] == "text"
    assert info["recorded_excerpt"] == "Hello! Nice to meet you."


def test_a_record_entry_keeps_the_task_and_gives_it_back():
    task = {"name": "math", "prompt": "What is 2 * 3?", "operands": (2, 3), "accepted": None}
    entry = _golden.record_entry(task, "6", [9], {"tokens": 1, "nll": 0.4})
    assert entry == {"name": "math", "prompt": "What is 2 * 3?", "operands": [2, 3], "content": "6", "token_ids": [9],
                     "tokens": 1, "nll": 0.4}
    assert _golden.task_of(entry) == {"name": "math", "prompt": "What is 2 * 3?", "operands": (2, 3)}
