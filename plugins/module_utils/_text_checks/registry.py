# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What every detector shares: the finding it gives, the one table of thresholds, and the precedence.

Standard library only. A finding is the dict the evidence carries, ``{signal, field, excerpt, detail}``. The
thresholds sit in ``THRESHOLDS`` (name -> value and the reason for it), so one table shows every number a verdict
rests on; a detector reads its numbers with ``limit(name)``. ``PRECEDENCE`` decides which findings are reported
when several detectors fire: the first tier that holds a finding wins, and every finding of that tier is reported,
the content's first, each in the order the tier lists its signals.
"""

from __future__ import annotations

from collections import namedtuple

from ansible_collections.glm53.serving.plugins.module_utils._response_contract import excerpt


class Finding(dict):
    """One finding: a plain dict ``{signal, field, excerpt, detail}`` (the evidence's JSON shape)."""

    def __init__(self, signal, field, excerpt_text, detail):
        super().__init__(signal=signal, field=field, excerpt=excerpt_text, detail=detail)


def finding(signal, field, text, start, detail):
    """A Finding that quotes ``text`` from ``start`` (a short excerpt)."""
    return Finding(signal, field, excerpt(text or "", max(0, start)), detail)


Threshold = namedtuple("Threshold", "value reason")

# Every number a text check decides by, with the reason for it. Tuned on the labelled corpus (tests/corpus).
THRESHOLDS = {
    # degeneration
    "scaled_token.same_char": Threshold(16, "one character 16 times in a row is no word of any language"),
    "scaled_token.symbol_run": Threshold(30, "30 symbols in a row outside table rules and box drawing is no layout"),
    "scaled_token.bpe_markers": Threshold(4, "four byte-level BPE markers (Ġ Ċ ĉ) in a row never appear in text"),
    "scaled_token.bpe_words": Threshold(6, "six words glued to Ġ markers: the tokenizer's pieces leak as text"),
    "scaled_token.invisible_run": Threshold(4, "a zero-width joiner or two occur in emoji; four in a row do not"),
    "repetition_to_end.max_unit": Threshold(64, "the longest unit a loop is looked for in (a sentence or two)"),
    "repetition_to_end.min_times": Threshold(5, "five copies of a unit up to the end is a loop, not emphasis"),
    "repetition_to_end.min_span": Threshold(40, "a loop covers 40 characters at least (short tails are punctuation)"),
    "repeated_ngram.min_tokens": Threshold(20, "under 20 word tokens a repeated phrase is a greeting's echo"),
    "repeated_ngram.long_text": Threshold(60, "from 60 word tokens the weaker evidence below suffices"),
    "repeated_ngram.short_count": Threshold(6, "a short text (20-59 tokens) needs 6 copies of one phrase"),
    "repeated_ngram.short_cover": Threshold(0.5, "... covering half of it"),
    "repeated_ngram.long_count": Threshold(4, "a long text needs 4 copies of one phrase"),
    "repeated_ngram.long_cover": Threshold(0.3, "... covering 30 % of it"),
    "low_distinct_ratio.min_tokens": Threshold(40, "a distinct-word ratio says nothing of a short text"),
    "low_distinct_ratio.ratio": Threshold(0.25, "coherent prose keeps 40 % or more distinct words; loops fall below"),
    "token_salad.min_words": Threshold(8, "fewer letter runs than this are too few to judge"),
    "token_salad.mixed_words": Threshold(3, "three words that mix scripts no language mixes"),
    "token_salad.mixed_share": Threshold(0.15, "... making 15 % of the words"),
    "token_salad.scripts": Threshold(3, "three scripts or more switching word to word"),
    "token_salad.switch_rate": Threshold(0.3, "... at 30 % of words or more"),
    "token_salad.switch_function_ratio": Threshold(0.12, "... with under 12 % function words"),
    "token_salad.latin_words": Threshold(15, "15 Latin-script words without function words and punctuation"),
    "token_salad.latin_function_ratio": Threshold(0.08, "English prose has 40 % function words; salad under 8 %"),
    "token_salad.long_latin_words": Threshold(40, "40 Latin words or more need only 3 % function words to be salad"),
    "token_salad.long_function_ratio": Threshold(0.03, "... even with punctuation in them"),
    "token_salad.opaque_chunk": Threshold(24, "a letter-and-digit chunk of 24 characters is a code (base64, a hash)"),
    "token_salad.opaque_chunks": Threshold(8, "from 8 chunks on, a text mostly of short codes is a hex dump"),
    "token_salad.opaque_chunk_share": Threshold(0.6, "... when 60 % of its chunks are codes"),
    "token_salad.opaque_share": Threshold(0.6, "60 % of the visible text in codes is no answer"),
    "digit_garbage.min_tokens": Threshold(30, "a short answer may be a number or a table of numbers"),
    "digit_garbage.share": Threshold(0.8, "80 % bare numbers in a longer answer is digit garbage"),
    # language and script
    "not_chinese.min_han": Threshold(4, "a Chinese sentence has more than 3 Chinese characters"),
    "not_chinese.han_share": Threshold(0.3, "Chinese characters under 30 % of the letters: the answer is not Chinese"),
    "not_chinese.kana_least": Threshold(2, "two kana may be a quoted Japanese word; more is Japanese"),
    "not_chinese.kana_share": Threshold(0.2, "kana making 20 % of the Han count: the answer is Japanese"),
    "simplified_chinese.share": Threshold(0.25, "a Traditional answer may quote a Simplified name (智谱); a "
                                                "Simplified one has many such characters"),
    "simplified_chinese.sentence_chars": Threshold(3, "a quoted two-character Simplified name is no sentence"),
    "simplified_chinese.sentence_share": Threshold(0.6, "a sentence mostly in Simplified forms is in Simplified"),
    "wrong_language.min_units": Threshold(3, "an answer of one or two words may be a name"),
    "wrong_language.share": Threshold(0.5, "under half the words in the prompt's script: another language"),
    # task answers
    "math.max_exponent": Threshold(12, "5.6088 × 10^4 is read; a huge power is never evaluated"),
    "math.result_size": Threshold(1000, "a stated number this large reads as a result (the product has 5 digits)"),
    # relevance
    "prompt_echo.share": Threshold(0.8, "a copy of 80 % of the prompt's words in a row is the prompt"),
    "prompt_echo.rest_words": Threshold(3, "an echo adds fewer than 3 words ..."),
    "prompt_echo.rest_share": Threshold(0.3, "... or fewer than 30 % of the answer"),
    "prompt_echo.same_words": Threshold(0.85, "85 % of the same words in any order is the prompt again"),
    "repeated_sentence.times": Threshold(3, "one sentence three times is a loop"),
    "repeated_sentence.long_words": Threshold(5, "a sentence of 5 words or more said twice is a loop already"),
    "enumeration_loop.run": Threshold(25, "consecutive integers no greeting, self-introduction or product needs"),
    "symbol_flood.chunks": Threshold(16, "16 emoji or symbol chunks with no word"),
    "symbol_flood.share": Threshold(0.6, "... making 60 % of the answer"),
    "no_greeting.first_sentences": Threshold(2, "a greeting comes first: the first two sentences are read"),
    "prompt_not_received.opener_words": Threshold(25, "a generic opener is short; a longer answer says more than "
                                                      "hello and an offer of help"),
    "wrong_identity.claim_gap": Threshold(40, "a claim names its model right after 'I am' or 'made by'; further "
                                              "away the name is something the answer speaks about"),
}


def limit(name):
    """The value of one threshold (KeyError for a name that is not in THRESHOLDS)."""
    return THRESHOLDS[name].value


# Which findings win. Tiers in order: the first tier that holds a finding is reported, the later ones are not run
# (an answer that is garbage is not also judged for its greeting; an answer that does not address the prompt is not
# also judged as arithmetic). Inside a tier every finding is reported, ranked by this order.
PRECEDENCE = (
    # the text is no answer at all: empty, cut by the budget, degenerate, or missing its reasoning
    ("degeneration", ("empty_content", "reasoning_ran_out_of_budget", "scaled_token", "markup_leak",
                      "repetition_to_end", "repeated_ngram", "low_distinct_ratio", "token_salad", "digit_garbage",
                      "no_reasoning")),
    # a readable text that does not answer the prompt, or was damaged on its way out of the model
    ("relevance", ("hit_token_limit", "refusal", "prompt_echo", "repeated_sentence", "enumeration_loop",
                   "symbol_flood", "wrong_language", "prompt_not_received", "role_swap", "wrong_identity",
                   "lost_first_token", "doubled_token")),
    # the greeting's own check, only when nothing above was found
    ("greeting", ("no_greeting",)),
    # the probe's task: the script of the Chinese answer, the product of the math answer
    ("task", ("not_chinese", "simplified_chinese", "wrong_answer", "conflicting_answer")),
    ("fragment", ("foreign_fragment",)),
    ("self", ("not_self_introduction",)),
)

# The response contract's signals (plugins/module_utils/_response_contract.py): reported beside the text's
# findings, never instead of them, except not_json and bad_shape, which leave no text to judge.
CONTRACT_SIGNALS = ("not_json", "bad_shape", "model_mismatch", "unfinished", "unasked_tool_call", "markup_leak",
                    "turn_runover", "encoding_corruption")
CONTRACT_FINAL = ("not_json", "bad_shape")

FIELD_ORDER = ("content", "reasoning")


def rank(signal):
    """(tier index, rank in the tier) of a text signal; KeyError for a signal PRECEDENCE does not name."""
    for tier, (_name, signals) in enumerate(PRECEDENCE):
        if signal in signals:
            return tier, signals.index(signal)
    raise KeyError(signal)


def order_findings(findings):
    """The findings of one tier in precedence order: the content's before the reasoning's, each by signal rank."""
    return sorted(findings, key=lambda f: (FIELD_ORDER.index(f["field"]) if f["field"] in FIELD_ORDER else 0,
                                           rank(f["signal"])[1]))
