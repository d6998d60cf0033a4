# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Judge generated text: the chat probes' detectors, one module per concern.

Standard library only (the probes run on any host). Each finding names its signal and quotes a short excerpt, so a
verdict can be read without the raw response. Thresholds are tuned on the labelled corpus in tests/corpus
(``hack/verdict_corpus.py``).

    registry      the Finding, the table of thresholds (THRESHOLDS) and the precedence of signals (PRECEDENCE)
    text          tokens, scripts and sentences, as every detector reads them
    contract      the glue to the response contract (_response_contract)
    degeneration  loops, token salad, digit garbage, invisible runs, template markup; a lost or doubled token
    language      Traditional Chinese, the prompt's script, a fragment of another script
    task_answers  the math product (the exact answers of the verifiable tasks are _exact_answer's)
    relevance     refusal, echo, repeated sentence, count, symbol flood, greeting, self-introduction, a prompt that
                  never arrived, swapped roles, another model's identity
    judge         the registry of detectors (DETECTORS), chat_findings and judge_chat

Every name the modules and tests use is offered here, so callers import from the package.
"""

from __future__ import annotations

from ansible_collections.glm53.serving.plugins.module_utils._exact_answer import exact_findings
from ansible_collections.glm53.serving.plugins.module_utils._response_contract import excerpt
from ansible_collections.glm53.serving.plugins.module_utils._text_checks import degeneration, language, relevance, task_answers
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.degeneration import (
    digit_salad,
    doubled_token,
    garbage_findings,
    invisible_run,
    judge_answer,
    lost_first_token,
    markup_leak,
    opaque_share,
    periodic_tail,
    repeated_ngram,
    salad_evidence,
    salad_finding,
    top_ngram,
)
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.judge import DETECTORS, chat_findings, judge_chat
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.language import (
    SIMPLIFIED_SHARE_LIMIT,
    chinese_script,
    foreign_fragment,
    script_units,
    traditional_chinese_findings,
)
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.registry import (
    PRECEDENCE,
    THRESHOLDS,
    Finding,
    finding,
    limit,
)
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.relevance import (
    ENUMERATION_LOOP,
    enumeration_run,
    generic_opener,
    greets,
    no_prompt_statement,
    prompt_echo,
    repeated_sentence,
    role_swap,
    symbol_flood,
    wrong_identity,
)
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.task_answers import (
    _eval_expr,
    arithmetic_plain,
    is_estimate,
    latex_plain,
    math_findings,
    numbers_in,
    partial_products,
)
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.text import (
    is_invisible,
    script_of,
    tokens,
    visible_length,
    word_tokens,
)

__all__ = (
    "DETECTORS", "ENUMERATION_LOOP", "Finding", "PRECEDENCE", "SIMPLIFIED_SHARE_LIMIT", "THRESHOLDS", "_eval_expr",
    "arithmetic_plain", "chat_findings", "chinese_script", "digit_salad", "doubled_token", "enumeration_run",
    "exact_findings", "excerpt", "finding", "foreign_fragment", "garbage_findings", "generic_opener", "greets",
    "invisible_run", "is_estimate", "is_invisible", "judge_answer", "judge_chat", "latex_plain", "limit",
    "lost_first_token", "markup_leak", "math_findings", "no_prompt_statement", "numbers_in", "opaque_share",
    "partial_products", "periodic_tail", "prompt_echo", "repeated_ngram", "repeated_sentence", "role_swap",
    "salad_evidence", "salad_finding", "script_of", "script_units", "symbol_flood", "tokens", "top_ngram",
    "traditional_chinese_findings", "visible_length", "word_tokens", "wrong_identity",
    "degeneration", "language", "relevance", "task_answers",
)
