# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The registry of detectors and the verdict of a chat probe's answer. Standard library only.

``DETECTORS`` names every detector with the signals it gives, the probes it judges (None: every probe) and the
thresholds it reads. ``chat_findings`` runs them tier by tier in the order of ``registry.PRECEDENCE``: the first tier
with a finding is the verdict.
"""

from __future__ import annotations

from collections import namedtuple

from ansible_collections.glm53.serving.plugins.module_utils._text_checks import degeneration, language, relevance, task_answers
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.contract import contract_findings
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.registry import PRECEDENCE, order_findings, rank

Detector = namedtuple("Detector", "name function signals probes thresholds")

_PROSE = ("greeting", "chinese", "math")  # the probes whose answer is free prose (the verifiable tasks' is one value)

DETECTORS = (
    Detector("empty", degeneration.empty_findings, ("empty_content", "reasoning_ran_out_of_budget"), None, ()),
    Detector("scaled_token", degeneration.on_both_fields(degeneration.scaled_token_findings), ("scaled_token",), None,
             ("scaled_token.same_char", "scaled_token.symbol_run", "scaled_token.bpe_markers", "scaled_token.bpe_words",
              "scaled_token.invisible_run")),
    Detector("markup_leak", degeneration.on_both_fields(degeneration.markup_leak_findings), ("markup_leak",), None, ()),
    Detector("repetition_to_end", degeneration.on_both_fields(degeneration.repetition_to_end_findings),
             ("repetition_to_end",), None,
             ("repetition_to_end.max_unit", "repetition_to_end.min_times", "repetition_to_end.min_span")),
    Detector("repeated_ngram", degeneration.on_both_fields(degeneration.repeated_ngram_findings), ("repeated_ngram",),
             None, ("repeated_ngram.min_tokens", "repeated_ngram.long_text", "repeated_ngram.short_count",
                    "repeated_ngram.short_cover", "repeated_ngram.long_count", "repeated_ngram.long_cover")),
    Detector("low_distinct_ratio", degeneration.on_both_fields(degeneration.low_distinct_findings),
             ("low_distinct_ratio",), None, ("low_distinct_ratio.min_tokens", "low_distinct_ratio.ratio")),
    Detector("token_salad", degeneration.on_both_fields(degeneration.token_salad_findings), ("token_salad",), None,
             ("token_salad.min_words", "token_salad.mixed_words", "token_salad.mixed_share", "token_salad.scripts",
              "token_salad.switch_rate", "token_salad.switch_function_ratio", "token_salad.latin_words",
              "token_salad.latin_function_ratio", "token_salad.long_latin_words", "token_salad.long_function_ratio",
              "token_salad.opaque_chunk", "token_salad.opaque_chunks", "token_salad.opaque_chunk_share",
              "token_salad.opaque_share")),
    Detector("digit_garbage", degeneration.on_both_fields(degeneration.digit_garbage_findings), ("digit_garbage",), None,
             ("digit_garbage.min_tokens", "digit_garbage.share")),
    Detector("no_reasoning", degeneration.no_reasoning_findings, ("no_reasoning",), None, ()),
    Detector("hit_token_limit", relevance.hit_token_limit_findings, ("hit_token_limit",), None, ()),
    Detector("refusal", relevance.refusal_findings, ("refusal",), None, ()),
    Detector("prompt_echo", relevance.prompt_echo_findings, ("prompt_echo",), None,
             ("prompt_echo.share", "prompt_echo.rest_words", "prompt_echo.rest_share", "prompt_echo.same_words")),
    Detector("repeated_sentence", relevance.repeated_sentence_findings, ("repeated_sentence",), None,
             ("repeated_sentence.times", "repeated_sentence.long_words")),
    Detector("enumeration_loop", relevance.enumeration_loop_findings, ("enumeration_loop",), None,
             ("enumeration_loop.run",)),
    Detector("symbol_flood", relevance.symbol_flood_findings, ("symbol_flood",), None,
             ("symbol_flood.chunks", "symbol_flood.share")),
    Detector("wrong_language", language.wrong_language_findings, ("wrong_language",), ("greeting", "math"),
             ("wrong_language.min_units", "wrong_language.share")),
    Detector("prompt_not_received", relevance.prompt_not_received_findings, ("prompt_not_received",), None,
             ("prompt_not_received.opener_words",)),
    Detector("role_swap", relevance.role_swap_findings, ("role_swap",), _PROSE, ()),
    Detector("wrong_identity", relevance.wrong_identity_findings, ("wrong_identity",), _PROSE,
             ("wrong_identity.claim_gap",)),
    Detector("lost_first_token", degeneration.lost_first_token_findings, ("lost_first_token",), _PROSE, ()),
    Detector("doubled_token", degeneration.doubled_token_findings, ("doubled_token",), _PROSE, ()),
    Detector("no_greeting", relevance.no_greeting_findings, ("no_greeting",), ("greeting",),
             ("no_greeting.first_sentences",)),
    Detector("traditional_chinese", language.traditional_chinese_detector, ("not_chinese", "simplified_chinese"),
             ("chinese",), ("not_chinese.min_han", "not_chinese.han_share", "not_chinese.kana_least",
                            "not_chinese.kana_share", "simplified_chinese.share", "simplified_chinese.sentence_chars",
                            "simplified_chinese.sentence_share")),
    Detector("math", task_answers.math_detector, ("wrong_answer", "conflicting_answer"), ("math",),
             ("math.max_exponent", "math.result_size")),
    Detector("foreign_fragment", language.foreign_fragment_findings, ("foreign_fragment",), _PROSE, ()),
    Detector("not_self_introduction", relevance.not_self_introduction_findings, ("not_self_introduction",), None, ()),
)


def detectors_by_tier():
    """[(tier name, [detectors])] in the order of PRECEDENCE; a detector sits in the tier of its first signal."""
    tiers = [(name, []) for name, _signals in PRECEDENCE]
    for det in DETECTORS:
        tiers[rank(det.signals[0])[0]][1].append(det)
    return tiers


def chat_findings(probe, content, reasoning, finish_reason, require_reasoning=True, operands=None, prompt=None):
    """Every finding for one chat-probe answer: the detectors that judge this probe, tier by tier (PRECEDENCE); the
    first tier with a finding gives the verdict."""
    ctx = {"probe": probe, "content": content, "reasoning": reasoning, "finish_reason": finish_reason,
           "require_reasoning": require_reasoning, "operands": operands, "prompt": prompt}
    for _tier, dets in detectors_by_tier():
        found = []
        for det in dets:
            if det.probes is None or probe in det.probes:
                found += det.function(ctx)
        if found:
            return order_findings(found)
    return []


def judge_chat(probe, body, served_model_name=None, prompt=None, operands=None, require_reasoning=True):
    """(fields, findings) for one chat-probe answer as the engine sent it: the response contract first (a body that
    is not a chat completion is judged on that alone), then chat_findings on its text. Never raises."""
    fields, findings, final = contract_findings(body, served_model_name)
    if final:
        return fields, findings
    seen = set((f["signal"], f["field"]) for f in findings)
    for f in chat_findings(probe, fields["content"], fields["reasoning"], fields["finish_reason"], require_reasoning,
                           operands, prompt=prompt):
        if (f["signal"], f["field"]) not in seen:
            findings.append(f)
            seen.add((f["signal"], f["field"]))
    return fields, findings
