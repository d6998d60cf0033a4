"""Every labelled answer in tests/corpus/verdicts.yml is judged as labelled: no false pass, no false failure."""
from __future__ import annotations

import os
import sys
from collections import Counter

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "corpus"))
import corpus  # noqa: E402  pylint: disable=wrong-import-position

DATA = corpus.load()


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["id"] for c in DATA["cases"]])
def test_case_is_judged_as_labelled(case):
    result, signals, detail = corpus.outcome(case, DATA)
    assert result == "ok", "%s: %s (judged %s: %s)" % (case["id"], result, signals, detail)


def test_corpus_covers_every_class():
    ids = [c["id"] for c in DATA["cases"]]
    assert len(ids) == len(set(ids)) and len(ids) >= 280
    counts = Counter((c["probe"], c["expect"]) for c in DATA["cases"])
    for probe in ("greeting", "chinese", "math", "needle", "control"):
        assert counts[(probe, "pass")] >= 4 and counts[(probe, "fail")] >= 4, (probe, counts)
    signals = {c.get("signal") for c in DATA["cases"]}
    assert {"token_salad", "digit_garbage", "repeated_ngram", "repetition_to_end", "scaled_token",
            "simplified_chinese", "conflicting_answer", "ambiguous", "distractor", "partial", "missed",
            "markup_leak", "empty_content", "garbage", "no_answer",
            # the response contract and the general rules
            "turn_runover", "encoding_corruption", "foreign_fragment", "unfinished", "not_json", "bad_shape",
            "model_mismatch", "unasked_tool_call", "not_self_introduction", "ignored", "wrong_answer"} <= signals
