"""The garbage detector: each signal fires on its pattern and stays quiet on coherent text."""
from __future__ import annotations

import pytest

from ansible_collections.glm53.serving.plugins.module_utils._text_checks import (
    garbage_findings,
    judge_answer,
    last_number,
)

GOOD = [
    "Hello! I'm GLM-5.3-Flash, an AI assistant. How can I help you today?",
    "我是一個由智譜訓練的大型語言模型，能夠回答問題、撰寫文章、翻譯語言與協助程式設計。",
    "The user wants 123 * 456. 123 * 400 = 49200 and 123 * 56 = 6888, so the total is 56088.",
    ("To compare the options, first list the costs of each plan, then weigh the risks: the first plan is "
     "cheaper but slower, the second is faster and needs more staff, and the third sits between them."),
]


@pytest.mark.parametrize("text", GOOD)
def test_coherent_text_has_no_findings(text):
    assert garbage_findings(text, "content") == []


@pytest.mark.parametrize("text,signal", [
    ("of the of the of the of the of the of the of the of the of the of the", "repeated_ngram"),
    ("The answer is " + "ĠĠĠĠĠĠĠĠĠĠĠĠ", "scaled_token"),
    ("Sure" + "!" * 40, "scaled_token"),
    ("好" * 30, "scaled_token"),
    ("I think the answer is 42. " + "yes " * 30, "repetition_to_end"),
    (" ".join(["alpha", "beta", "gamma", "delta"] * 15), "low_distinct_ratio"),
])
def test_each_signal_fires(text, signal):
    found = garbage_findings(text, "content")
    assert signal in {f["signal"] for f in found}
    assert all(f["excerpt"] and f["field"] == "content" for f in found)


def test_empty_and_budget_verdicts():
    assert judge_answer(None, "thinking...", "length")[0]["signal"] == "reasoning_ran_out_of_budget"
    assert judge_answer("", "thinking", "stop")[0]["signal"] == "empty_content"
    assert judge_answer("Hi there, how are you?", None, "stop")[0]["signal"] == "no_reasoning"
    assert judge_answer("Hi there, how are you?", None, "stop", require_reasoning=False) == []


@pytest.mark.parametrize("text,value", [("= 56,088", 56088.0), ("The result is 391.", 391.0), ("none", None),
                                        ("123 * 456 = 56088", 56088.0)])
def test_last_number(text, value):
    assert last_number(text) == value
