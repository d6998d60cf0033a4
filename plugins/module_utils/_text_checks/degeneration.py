# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Degenerate output: loops, token salad, digit garbage, invisible runs, template markup; and a token lost or
doubled in decoding.

Standard library only. The model card's failure signature on broken builds is "repetitive/scaled-token" output;
public reports add loops after a coherent start, token salad across scripts and digit garbage. These detectors read
the content and the reasoning alike (``garbage_findings``); the lost and doubled tokens are judged on the content of
the prose probes only.
"""

from __future__ import annotations

import re
from collections import Counter

from ansible_collections.glm53.serving.plugins.module_utils._response_contract import CODE_RE, excerpt
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.registry import Finding, finding, limit
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.text import (
    CJK_RE,
    FUNCTION_WORDS,
    LETTER_RUN_RE,
    URL_RE,
    is_invisible,
    normal_words,
    script_of,
    visible_length,
)

# Byte-level BPE artefacts (Ġ = space, Ċ = newline, ĉ = tab) leaking into text: a scaled-token signature.
_BPE_RE = re.compile(r"[ĠĊĉ]{%d,}|(?:Ġ\w+){%d,}" % (limit("scaled_token.bpe_markers"), limit("scaled_token.bpe_words")))
_SAME_CHAR_RE = re.compile(r"(\S)\1{%d,}" % (limit("scaled_token.same_char") - 1))
_SYMBOL_RUN_RE = re.compile(r"[^\w\s]{%d,}" % limit("scaled_token.symbol_run"), re.UNICODE)
# Markdown table rules (|---|:---:|) and horizontal rules (----, ====, ***) are layout, not a symbol run.
# Box-drawing tables (┌─┬─┐, │ a │ b │, ╞═╪═╡) and em- or en-dash rules (————) are layout too.
_RULE_LINE_RE = re.compile(r"(?m)^[ \t]*[-|:=+*_#~ \t\u2500-\u257f\u2010-\u2015\u2212]{3,}$")
_BOX_RE = re.compile(r"[\u2500-\u257f]")
_STRUCTURE_RE = re.compile(r"[.!?。！？;；:：,，、()\[\]\n-]")
# Chat-template and reasoning markup in the answer: the reasoning parser does not match the template
# (vllm-project/vllm#33348: GLM-4.7 under the glm45 parser puts its reasoning and </think> in content), or a
# special token was not stopped on or skipped in detokenizing (<|user|>, <|endoftext|>, [gMASK], <sop>).
_MARKUP_RE = re.compile(r"</?think>|<\|[A-Za-z][\w.-]{0,40}\|>|\[gMASK\]|\[sMASK\]|<sop>|<eop>")
# Opaque codes: whitespace-separated chunks of ASCII letters and digits mixed (base64, hex dumps, hashes).
_OPAQUE_RE = re.compile(r"^[A-Za-z0-9+/=_-]*(?:[A-Za-z][A-Za-z0-9+/=_-]*\d|\d[A-Za-z0-9+/=_-]*[A-Za-z])[A-Za-z0-9+/=_-]*$")


def invisible_run(text, least=None):
    """(start, length) of the first run of at least ``least`` invisible characters, else None."""
    least = limit("scaled_token.invisible_run") if least is None else least
    start = None
    for i, ch in enumerate((text or "") + "a"):
        if is_invisible(ch):
            start = i if start is None else start
            continue
        if start is not None and i - start >= least:
            return start, i - start
        start = None
    return None


def markup_leak(text):
    """The first chat-template or reasoning tag in the prose (code spans left out), else None."""
    m = _MARKUP_RE.search(CODE_RE.sub(" ", text or ""))
    return m.group(0) if m else None


def opaque_share(text):
    """(share of visible characters in opaque chunks, examples) over the prose without code and URLs.

    An opaque chunk mixes ASCII letters and digits (0x3f, SGVsbG8…); it counts when it is long (24 or
    more characters: base64, a hash) or when most chunks of a text of 8 or more are such codes (a hex dump).
    """
    prose = URL_RE.sub(" ", CODE_RE.sub(" ", text or ""))
    chunks = [c.strip(".,;:!?()[]{}\"'") for c in prose.split()]
    chunks = [c for c in chunks if c]
    total = sum(len(c) for c in chunks)
    if not total:
        return 0.0, []
    opaque = [c for c in chunks if _OPAQUE_RE.match(c)]
    counted = [c for c in opaque if len(c) >= limit("token_salad.opaque_chunk")]
    if len(chunks) >= limit("token_salad.opaque_chunks") and len(opaque) >= limit("token_salad.opaque_chunk_share") * len(chunks):
        counted = opaque
    return sum(len(c) for c in counted) / float(total), counted[:3]


def periodic_tail(text, max_unit=None, min_times=None, min_span=None):
    """(unit, times, start) when the text ends in one unit repeated (the last copy may be cut short)."""
    max_unit = limit("repetition_to_end.max_unit") if max_unit is None else max_unit
    min_times = limit("repetition_to_end.min_times") if min_times is None else min_times
    min_span = limit("repetition_to_end.min_span") if min_span is None else min_span
    t = text.rstrip()
    for length in range(1, max_unit + 1):
        if len(t) < max(min_span, length * min_times):
            break
        i = len(t) - length - 1
        while i >= 0 and t[i] == t[i + length]:
            i -= 1
        span = len(t) - (i + 1)
        if span >= max(min_span, length * min_times):
            start = i + 1
            unit = t[start:start + length]
            if _BOX_RE.sub("", unit).strip(" -=_|*#.\n\t\u2010\u2011\u2012\u2013\u2014\u2015\u2212") == "":
                continue  # a rule of dashes or dots is layout, not a loop
            return unit, span // length, start
    return None


def top_ngram(toks, n):
    """(gram, occurrences, share of the tokens its occurrences cover) of the most frequent n-gram.

    The share counts each token once, however many copies overlap it, so it never exceeds 100 %.
    """
    grams = Counter(tuple(toks[i:i + n]) for i in range(len(toks) - n + 1))
    if not grams:
        return None, 0, 0.0
    gram, count = grams.most_common(1)[0]
    covered = set()
    for i in range(len(toks) - n + 1):
        if tuple(toks[i:i + n]) == gram:
            covered.update(range(i, i + n))
    return gram, count, len(covered) / float(len(toks))


def repeated_ngram(toks):
    """(n, phrase, count, coverage) when one n-gram covers too much of the text, else None.

    A short text needs more evidence than a long one: 20-59 word tokens need 6 copies covering half of
    it, longer texts 4 copies covering 30 %.
    """
    if len(toks) < limit("repeated_ngram.min_tokens"):
        return None
    if len(toks) < limit("repeated_ngram.long_text"):
        need_count, need_cover = limit("repeated_ngram.short_count"), limit("repeated_ngram.short_cover")
    else:
        need_count, need_cover = limit("repeated_ngram.long_count"), limit("repeated_ngram.long_cover")
    for n in (3, 4, 5):
        gram, count, coverage = top_ngram(toks, n)
        if count >= need_count and coverage >= need_cover:
            return n, " ".join(gram), count, coverage
    return None


def _odd_mix(scripts):
    """A word that mixes scripts no language writes together (CJK or Hangul with Latin is normal)."""
    if len(scripts) < 2:
        return False
    rest = scripts - {"CJK", "HANGUL"}
    if "CJK" in scripts or "HANGUL" in scripts:
        return bool(rest - {"LATIN"})
    return True


# Chinese, Japanese and Korean text switches to Latin for names and terms (GPU, vLLM) as a matter of course.
_NORMAL_SWITCHES = frozenset([frozenset(("CJK", "LATIN")), frozenset(("HANGUL", "LATIN")), frozenset(("HANGUL", "CJK"))])


def salad_evidence(text):
    """Token-salad measures over the prose (code spans left out): dict, or None for a short text."""
    prose = CODE_RE.sub(" ", text or "")
    runs = LETTER_RUN_RE.findall(prose)
    if len(runs) < limit("token_salad.min_words"):
        return None
    run_scripts = [frozenset(script_of(c) for c in r) for r in runs]
    mixed = [r for r, s in zip(runs, run_scripts) if _odd_mix(s)]
    main = [min(s) if len(s) == 1 else "MIXED" for s in run_scripts]
    switches = sum(1 for a, b in zip(main, main[1:]) if a != b and frozenset((a, b)) not in _NORMAL_SWITCHES)
    scripts = Counter(sc for run in run_scripts for sc in run)
    latin = [r.lower() for r, s in zip(runs, main) if s == "LATIN"]
    func = sum(1 for w in latin if w in FUNCTION_WORDS)
    return {"words": len(runs), "mixed": mixed, "scripts": sorted(scripts),
            "switch_rate": switches / float(len(runs) - 1), "latin": len(latin),
            "function_ratio": func / float(len(latin)) if latin else None,
            "punctuated": bool(_STRUCTURE_RE.search(prose))}


def salad_finding(text):
    """The detail of a token-salad verdict, or None: words that mix scripts, scripts switching from word to
    word with no sentence in them, or a long run of Latin words without a single function word or stop."""
    ev = salad_evidence(text)
    if ev is None:
        return None
    fr = ev["function_ratio"]
    if len(ev["mixed"]) >= limit("token_salad.mixed_words") and len(ev["mixed"]) >= limit("token_salad.mixed_share") * ev["words"]:
        return "%d of %d words mix scripts (%s)" % (len(ev["mixed"]), ev["words"], " ".join(ev["mixed"][:4]))
    if (len(ev["scripts"]) >= limit("token_salad.scripts") and ev["switch_rate"] >= limit("token_salad.switch_rate")
            and (fr is None or fr < limit("token_salad.switch_function_ratio"))):
        return "%d scripts (%s) switching at %.0f%% of words, %s function words" % (
            len(ev["scripts"]), ", ".join(ev["scripts"]), 100 * ev["switch_rate"],
            "no" if not fr else "%.0f%%" % (100 * fr))
    if ev["latin"] >= limit("token_salad.latin_words") and fr is not None and (
            fr < limit("token_salad.latin_function_ratio") and not ev["punctuated"]
            or fr < limit("token_salad.long_function_ratio") and ev["latin"] >= limit("token_salad.long_latin_words")):
        return "%d Latin-script words with %.0f%% function words%s" % (
            ev["latin"], 100 * fr, "" if ev["punctuated"] else " and no punctuation")
    return None


def digit_salad(toks):
    """Numbers with next to no words around them, over a long answer: digit garbage."""
    if len(toks) < limit("digit_garbage.min_tokens"):
        return None
    numbers = sum(1 for t in toks if t.isdigit())
    if numbers >= limit("digit_garbage.share") * len(toks):
        return "%d of %d tokens are numbers" % (numbers, len(toks))
    return None


# ------------------------------------------------------------------ one text (content or reasoning)

def scaled_token_findings(text, field):
    layout = _BOX_RE.sub(" ", _RULE_LINE_RE.sub("", text))  # table rules, box drawing and horizontal rules are layout
    m = _BPE_RE.search(text) or _SAME_CHAR_RE.search(layout) or _SYMBOL_RUN_RE.search(layout)
    if m:
        return [finding("scaled_token", field, text, m.start(),
                        "a run of %d characters of one token or symbol class" % len(m.group(0)))]
    run = invisible_run(text)
    if run:
        return [finding("scaled_token", field, text, run[0], "a run of %d invisible or control characters (U+%04X first)"
                        % (run[1], ord(text[run[0]])))]
    return []


def markup_leak_findings(text, field):
    tag = markup_leak(text)
    if not tag:
        return []
    return [finding("markup_leak", field, text, text.find(tag), "chat-template or reasoning markup %r in the %s (does "
                    "the reasoning parser match the model's chat template?)" % (tag, field))]


def repetition_to_end_findings(text, field):
    tail = periodic_tail(text)
    if not tail:
        return []
    unit, times, start = tail
    return [finding("repetition_to_end", field, text, start, "%r repeated %d times up to the end" % (unit, times))]


def repeated_ngram_findings(text, field):
    toks = normal_words(text)
    rep = repeated_ngram(toks)
    if not rep:
        return []
    n, phrase, count, coverage = rep
    first = text.lower().find(phrase.split(" ", 1)[0])
    return [finding("repeated_ngram", field, text, first, "the %d-gram %r, %d times, makes up %d%% of %d word tokens"
                    % (n, phrase, count, 100 * coverage, len(toks)))]


def low_distinct_findings(text, field):
    toks = normal_words(text)
    if len(toks) < limit("low_distinct_ratio.min_tokens"):
        return []
    ratio = len(set(toks)) / float(len(toks))
    if ratio >= limit("low_distinct_ratio.ratio"):
        return []
    return [finding("low_distinct_ratio", field, text, 0,
                    "%d distinct of %d word tokens (%.2f)" % (len(set(toks)), len(toks), ratio))]


def token_salad_findings(text, field):
    salad = salad_finding(text)
    share, codes = opaque_share(text)
    if not salad and share >= limit("token_salad.opaque_share"):
        salad = "%.0f%% of the text is letter-and-digit codes (%s)" % (100 * share, ", ".join(c[:16] for c in codes))
    return [finding("token_salad", field, text, 0, salad)] if salad else []


# Arithmetic written out (1+2+3 = 6, 6 × 6 = 36 -> 9): working, whose numbers are joined by operators.
_ARITHMETIC_RE = re.compile(r"\d+(?:\s*(?:[-+*/×÷=^]|->|→|\u2212)\s*\d+)+")


def digit_garbage_findings(text, field):
    digits = digit_salad(normal_words(_ARITHMETIC_RE.sub(" ", text)))
    return [finding("digit_garbage", field, text, 0, digits)] if digits else []


# The checks of one text, in the order of PRECEDENCE's degeneration tier.
TEXT_DETECTORS = (scaled_token_findings, markup_leak_findings, repetition_to_end_findings, repeated_ngram_findings,
                  low_distinct_findings, token_salad_findings, digit_garbage_findings)


def garbage_findings(text, field):
    """Return a list of {signal, field, excerpt, detail} for one text (content or reasoning)."""
    if not text or not text.strip():
        return []
    found = []
    for detect in TEXT_DETECTORS:
        found += detect(text, field)
    return found


def on_both_fields(detect):
    """A detector of the chat answer that runs one text check on the content and on the reasoning. Content with
    nothing visible is judged by ``empty_findings`` alone."""
    def run(ctx):
        found = []
        for field in ("content", "reasoning"):
            text = ctx[field]
            if text and str(text).strip() and (field == "reasoning" or visible_length(str(text))):
                found += detect(str(text), field)
        return found
    run.__doc__ = detect.__doc__
    return run


def empty_findings(ctx):
    """No content: the reasoning used the whole budget (finish_reason=length), or the model stopped with nothing
    visible to say."""
    content, reasoning, finish_reason = ctx["content"], ctx["reasoning"], ctx["finish_reason"]
    if content is not None and str(content).strip() and not visible_length(str(content)):
        return [Finding("empty_content", "content", "", "no visible content: %d invisible or control characters "
                        "(finish_reason=%s)" % (len(str(content).strip()), finish_reason))]
    if content is not None and str(content).strip():
        return []
    if finish_reason == "length":
        return [finding("reasoning_ran_out_of_budget", "content", reasoning or "", len(reasoning or "") - 60,
                        "finish_reason=length with no content: the reasoning used the whole max_tokens budget "
                        "(raise max_tokens, or the model is looping)")]
    return [Finding("empty_content", "content", "", "no content (finish_reason=%s)" % finish_reason)]


def no_reasoning_findings(ctx):
    """The answer carries no reasoning while the probe requires it (the reasoning parser is not set)."""
    if not ctx["require_reasoning"] or (ctx["reasoning"] and str(ctx["reasoning"]).strip()):
        return []
    return [Finding("no_reasoning", "reasoning", excerpt(ctx["content"] or ""), "neither `reasoning` nor "
                    "`reasoning_content` is present (is the reasoning parser glm47 set?)")]


def judge_answer(content, reasoning, finish_reason, require_reasoning=True):
    """Findings for one chat completion's degeneration tier; empty when it looks like a coherent answer."""
    ctx = {"content": content, "reasoning": reasoning, "finish_reason": finish_reason,
           "require_reasoning": require_reasoning}
    found = empty_findings(ctx)
    for detect in TEXT_DETECTORS:
        found += on_both_fields(detect)(ctx)
    return found + no_reasoning_findings(ctx)


# ------------------------------------------------------------------ a token lost or doubled in decoding

# The words an answer to the probes opens with. A first word that is one of them with its first letters cut
# ("ello", "i there", "ey") is the first token lost between the engine and the client.
OPENING_WORDS = ("hello", "hi", "hey", "hiya", "howdy", "greetings", "good", "nice", "great", "welcome", "sure",
                 "certainly", "absolutely", "thanks", "thank", "of", "okay", "here", "the", "let", "as", "yes", "well")
# A first word that starts in lower case and is an identifier, not a sentence's word: vLLM, iPhone, glm-5.3, e.g.
_IDENTIFIER_START_RE = re.compile(r"^[a-z]+(?:[A-Z]|[-._/\d]\S)")
# Punctuation no sentence starts with; after it, a word: the token before the punctuation was lost ("! Nice to meet
# you", ", I'm GLM", "'m GLM"). An ellipsis, quotes, brackets, list and Markdown marks are honest starts.
_LOST_HEAD_RE = re.compile(r"^(?:[,!?;:\uff0c\uff01\uff1f\uff1b\uff1a\u3002\u3001](?!\.)\s*[^\W\d_]"
                           r"|\.(?!\.)\s+[^\W\d_]|['\u2019](?:m|s|re|ll|ve|d)\b)", re.UNICODE)
_FIRST_WORD_RE = re.compile(r"^[^\W\d_]+", re.UNICODE)


def lost_first_token(text):
    """(start, detail) when the answer's first token looks lost: it opens with punctuation that ends a word, or its
    first word starts in lower case where a sentence starts and is not a whole opening word (named when it is an
    opening word with its first letters cut: 'ello' for 'hello'). None for an honest start."""
    head = (text or "").lstrip()
    if not head:
        return None
    offset = len(text) - len(head)
    m = _LOST_HEAD_RE.match(head)
    if m:
        return offset, "the answer opens with %r: the token before it is missing" % head[:12]
    m = _FIRST_WORD_RE.match(head)
    if not m or not m.group(0)[0].islower() or not m.group(0)[0].isascii() or _IDENTIFIER_START_RE.match(head):
        return None
    word = m.group(0).lower()
    if word in OPENING_WORDS:
        return None  # "hello! nice to meet you": a whole word in lower case is a style, no token lost
    cut = [w for w in OPENING_WORDS if w.endswith(word) and 1 <= len(w) - len(word) <= 3]
    return offset, "the answer's first word %r starts in lower case%s: its first token is missing" % (
        m.group(0), " (%r without its first letters)" % cut[0].capitalize() if cut else "")


# Words a writer doubles on purpose (that that, had had, bye bye, no no): never a doubling fault.
_GRAMMATICAL_DOUBLES = frozenset("that had do is no so yes very really bye now there well many far long".split())
# The words whose doubling is a decoding fault: function words and greetings; a doubled name (Bora Bora) is a name.
_DOUBLING_WORDS = (FUNCTION_WORDS | frozenset(OPENING_WORDS) | frozenset(("i",))) - _GRAMMATICAL_DOUBLES
_WORD_PAIR_RE = re.compile(r"(?<![^\W\d_])([^\W\d_]+) \1(?![^\W\d_])", re.UNICODE)
# Han function characters that Chinese never reduplicates (是是, 我我, 的的 outside 的的確確).
_HAN_DOUBLING = "是我你他她它們们在了和與与能為为這这那也都就會会將将於于由及或並并對对從从把被而之其有"
_HAN_PAIR_RE = re.compile(r"([%s])\1" % _HAN_DOUBLING)


def doubled_token(text):
    """(start, detail) when one token comes twice in a row: a function word or greeting repeated, identical, with only
    a space between ("the the", "Hello Hello"), or a Han function character doubled ("我是是"). A repetition a writer
    makes differs in case or has punctuation between ("Hello hello!", "Hello, hello!"); AABB reduplication
    (是是非非) is Chinese grammar."""
    prose = CODE_RE.sub(" ", text or "")
    for m in _WORD_PAIR_RE.finditer(prose):
        if m.group(1).lower() in _DOUBLING_WORDS:
            return m.start(), "%r twice in a row: a token doubled in decoding" % m.group(1)
    for m in _HAN_PAIR_RE.finditer(prose):
        nxt = prose[m.end():m.end() + 2]
        prev = prose[max(0, m.start() - 2):m.start()]
        if len(nxt) == 2 and nxt[0] == nxt[1] and CJK_RE.match(nxt[0]) or len(prev) == 2 and prev[0] == prev[1]:
            continue  # AABB: 是是非非, 的的確確
        return m.start(), "%r twice in a row: a token doubled in decoding" % m.group(1)
    return None


def lost_first_token_findings(ctx):
    found = lost_first_token(str(ctx["content"] or ""))
    return [finding("lost_first_token", "content", ctx["content"], found[0], found[1])] if found else []


def doubled_token_findings(ctx):
    found = doubled_token(str(ctx["content"] or ""))
    return [finding("doubled_token", "content", ctx["content"], found[0], found[1])] if found else []
