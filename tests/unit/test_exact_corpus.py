"""The labelled answers of tests/corpus/exact.yml through the exact tasks' grammar (plugins/module_utils/
_exact_answer.py), as vllm_chat_probe judges them: every label held, printed as a table of classes."""
from __future__ import annotations

import os
from collections import Counter

import pytest
import yaml

import testlib  # noqa: F401  pylint: disable=unused-import
from ansible_collections.glm53.serving.plugins.module_utils._exact_answer import exact_findings, number_value

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "corpus", "exact.yml")
DATA = yaml.safe_load(open(CORPUS, encoding="utf-8"))
# the batch's other answers: each task is judged against the others of the batch and the table's rows
BATCH = [DATA["facts"]["copy"], DATA["facts"]["lookup"]["value"]] + list(DATA["facts"]["zh_fact"].values())


def accepted_and_others(case):
    facts = DATA["facts"]
    if case["task"] == "copy":
        accepted = [facts["copy"]]
    elif case["task"] == "lookup":
        accepted = [facts["lookup"]["value"]]
    else:
        accepted = [facts["zh_fact"][case["fact"]]]
    others = [o for o in BATCH + facts["lookup"]["others"] if o not in accepted]
    return accepted, others


def test_every_label_holds_and_the_table_is_printed():
    wrong, by_class = [], Counter()
    for case in DATA["cases"]:
        accepted, others = accepted_and_others(case)
        findings = exact_findings(case["content"], accepted, others)
        passed = not findings
        by_class[(case["label"], case["class"])] += 1
        if passed != (case["label"] == "pass"):
            detail = findings[0]["detail"] if findings else "passed"
            wrong.append("%s %s %r: %s" % (case["task"], case["label"], case["content"], detail))
    labels = Counter(c["label"] for c in DATA["cases"])
    print("\n%d labelled exact answers (%d pass, %d fail) in %d classes; %d judged against their label" % (
        len(DATA["cases"]), labels["pass"], labels["fail"], len(by_class), len(wrong)))
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("text, value", [
    ("4817", 4817), ("4,817", 4817), ("4 817", 4817), ("１２３", 123), ("四千八百一十七", 4817), ("十七", 17),
    ("1萬2千", 12000), ("兩萬", 20000), ("三億零五", 300000005), ("4千8百17", 4817), ("12,345,678", 12345678),
    ("4,81", None), ("48,17", None), ("4817a", None), ("", None), ("萬", 10000), ("一七", 17)])
def test_numbers_are_read_whatever_their_presentation(text, value):
    assert number_value(text) == value


def test_a_finding_names_what_was_stated():
    (f,) = exact_findings("2390", ["4817"], ["2390", "7154"])
    assert f["signal"] == "conflicting_answer" and "'2390'" in f["detail"] and "'4817'" in f["detail"]
    (f,) = exact_findings("Not 2390, but 4817.", ["4817"], ["2390"])
    assert f["signal"] == "wrong_answer" and "states no single value" in f["detail"]
    (f,) = exact_findings("4871", ["4817"], [])
    assert f["signal"] == "wrong_answer" and "states 4871" in f["detail"]
