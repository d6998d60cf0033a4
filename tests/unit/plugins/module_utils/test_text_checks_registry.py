"""The registry of detectors: every detector is named with its signals and thresholds, every threshold is in the one
table with its reason, and the precedence names every signal a detector gives."""
from __future__ import annotations

import inspect
import re

import pytest

from ansible_collections.glm53.serving.plugins.module_utils import _text_checks
from ansible_collections.glm53.serving.plugins.module_utils._text_checks import (
    DETECTORS,
    PRECEDENCE,
    THRESHOLDS,
    chat_findings,
    degeneration,
    language,
    relevance,
    task_answers,
)
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.registry import CONTRACT_SIGNALS, Finding, rank

PRECEDENCE_SIGNALS = [s for _tier, signals in PRECEDENCE for s in signals]
DETECTOR_MODULES = (degeneration, language, relevance, task_answers)


def test_every_detector_has_a_unique_name_a_function_and_signals():
    names = [d.name for d in DETECTORS]
    assert len(names) == len(set(names))
    for det in DETECTORS:
        assert re.match(r"^[a-z_]+$", det.name) and callable(det.function) and det.signals, det
        assert det.probes is None or set(det.probes) <= {"greeting", "chinese", "math", "copy", "lookup", "zh_fact"}


def test_the_precedence_names_every_signal_once_and_only_those_detectors_give():
    assert len(PRECEDENCE_SIGNALS) == len(set(PRECEDENCE_SIGNALS))
    given = {s for d in DETECTORS for s in d.signals}
    assert given == set(PRECEDENCE_SIGNALS)


def test_a_detectors_signals_sit_in_one_tier():
    for det in DETECTORS:
        assert len({rank(s)[0] for s in det.signals}) == 1, det.name


def test_every_threshold_has_a_value_and_a_reason_and_belongs_to_a_detector():
    claimed = [t for d in DETECTORS for t in d.thresholds]
    assert set(claimed) <= set(THRESHOLDS), set(claimed) - set(THRESHOLDS)
    assert set(THRESHOLDS) == set(claimed), set(THRESHOLDS) - set(claimed)
    for name, (value, reason) in THRESHOLDS.items():
        assert isinstance(value, (int, float)) and not isinstance(value, bool), name
        assert isinstance(reason, str) and len(reason) > 10, name


def test_the_code_reads_only_thresholds_of_the_table():
    read = set()
    for module in DETECTOR_MODULES:
        read |= set(re.findall(r"limit\(\"([\w.]+)\"\)", inspect.getsource(module)))
    assert read and read <= set(THRESHOLDS), read - set(THRESHOLDS)
    assert set(THRESHOLDS) <= read, set(THRESHOLDS) - read


def test_contract_signals_are_not_text_signals_except_the_shared_markup_leak():
    assert set(CONTRACT_SIGNALS) & set(PRECEDENCE_SIGNALS) == {"markup_leak"}


def test_a_finding_is_the_evidence_dict():
    f = Finding("doubled_token", "content", "Hello Hello", "'Hello' twice")
    assert f == {"signal": "doubled_token", "field": "content", "excerpt": "Hello Hello", "detail": "'Hello' twice"}
    assert type(f).__mro__[1] is dict


@pytest.mark.parametrize("probe,content,prompt,signal", [
    # a degenerate answer is judged as degenerate, not also for its greeting or its identity
    ("greeting", "I'm ChatGPT. " + "yes " * 40, "Hello!", "repetition_to_end"),
    # the relevance tier wins over the task tier: a lost prompt, not a wrong product
    ("math", "How can I help you today?", "What is 123 * 456?", "prompt_not_received"),
    ("chinese", "Please introduce yourself.", "用一句話介紹自己", "role_swap"),
])
def test_the_first_tier_with_a_finding_is_the_verdict(probe, content, prompt, signal):
    found = chat_findings(probe, content, "Some reasoning.", "stop", True, (123, 456), prompt)
    assert found and found[0]["signal"] == signal
    tiers = {rank(f["signal"])[0] for f in found}
    assert len(tiers) == 1


def test_the_package_offers_the_names_its_callers_import():
    for name in ("judge_chat", "excerpt", "foreign_fragment", "garbage_findings", "visible_length",
                 "traditional_chinese_findings", "judge_answer", "math_findings", "numbers_in", "repeated_ngram",
                 "word_tokens", "_eval_expr", "exact_findings", "no_prompt_statement"):
        assert callable(getattr(_text_checks, name)), name
