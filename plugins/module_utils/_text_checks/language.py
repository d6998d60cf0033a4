# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Language and script: the Chinese answer in Traditional characters, an answer in the prompt's script, and a piece
of another script inside a sentence. Standard library only."""

from __future__ import annotations

import re
from collections import Counter

from ansible_collections.glm53.serving.plugins.module_utils._response_contract import CODE_RE
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.registry import finding, limit
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.text import (
    CJK_RE,
    HAN,
    KANA_RE,
    LETTER_RE,
    LETTER_RUN_RE,
    SENTENCE_END_RE,
    URL_RE,
    han_numbers_plain,
    script_of,
)
from ansible_collections.glm53.serving.plugins.module_utils._zh_script_data import (
    SIMPLIFIED_ONLY,
    SOURCE as ZH_SCRIPT_SOURCE,
    TRADITIONAL_ONLY,
)

SIMPLIFIED_SHARE_LIMIT = limit("simplified_chinese.share")
# What each probe's prompt asks for: the script the answer must be written in (the prompt's own).
PROBE_SCRIPT = {"greeting": "LATIN", "chinese": "CJK", "math": "LATIN"}


def chinese_script(text):
    """(cjk count, Simplified-only characters, Traditional-only characters) of a text, in order of use."""
    cjk = CJK_RE.findall(text or "")
    return len(cjk), [c for c in cjk if c in SIMPLIFIED_ONLY], [c for c in cjk if c in TRADITIONAL_ONLY]


def traditional_chinese_findings(content):
    """The answer must be Chinese, and Traditional.

    Decided from the share of Simplified-only characters among the characters whose form tells the two
    scripts apart (OpenCC's tables, see ZH_SCRIPT_SOURCE): a Traditional answer that quotes one Simplified
    name passes; a Simplified answer fails even when it is short or avoids the commonest characters.
    """
    text = content or ""
    prose = CODE_RE.sub(" ", text)
    n_cjk, simp, trad = chinese_script(prose)
    letters = LETTER_RE.findall(prose)
    kana = KANA_RE.findall(prose)
    if (n_cjk < limit("not_chinese.min_han") or n_cjk < limit("not_chinese.han_share") * max(1, len(letters))
            or len(kana) >= max(limit("not_chinese.kana_least"), limit("not_chinese.kana_share") * n_cjk)):
        return [finding("not_chinese", "content", text, 0, "%d Chinese characters of %d letters%s" % (
            n_cjk, len(letters), ", %d Japanese kana" % len(kana) if kana else ""))]
    if simp and len(simp) >= SIMPLIFIED_SHARE_LIMIT * (len(simp) + len(trad)):
        names = "".join(sorted(set(simp), key=simp.index))
        return [finding("simplified_chinese", "content", text, text.find(simp[0]),
                        "%d Simplified-only against %d Traditional-only characters (%s): %s"
                        % (len(simp), len(trad), ZH_SCRIPT_SOURCE.split(" ", 1)[0], names[:20]))]
    # Whole sentences in Simplified inside a longer Traditional answer: judged sentence by sentence too. A
    # quoted Simplified name (two characters) is not a sentence in Simplified.
    for sent in SENTENCE_END_RE.split(prose):
        _n, s_simp, s_trad = chinese_script(sent or "")
        if (len(s_simp) >= limit("simplified_chinese.sentence_chars")
                and len(s_simp) >= limit("simplified_chinese.sentence_share") * (len(s_simp) + len(s_trad))):
            return [finding("simplified_chinese", "content", text, text.find(sent.strip()),
                            "a sentence in Simplified Chinese (%d Simplified-only against %d Traditional-only "
                            "characters in it, %d against %d in the whole answer): %s"
                            % (len(s_simp), len(s_trad), len(simp), len(trad), sent.strip()[:30]))]
    return []


def script_units(text):
    """Counter of writing units by script: a Han or kana character is one unit, a run of other letters one."""
    units = Counter()
    for run in LETTER_RUN_RE.findall(URL_RE.sub(" ", CODE_RE.sub(" ", text or ""))):
        cjk = len(CJK_RE.findall(run)) + len(KANA_RE.findall(run))
        if cjk:
            units["CJK"] += cjk
        rest = KANA_RE.sub(" ", CJK_RE.sub(" ", run)).split()
        for r in rest:
            units[script_of(r[0])] += 1
    return units


def wrong_language_findings(ctx):
    """The greeting or the math answer mostly in another script than the English prompt (the Chinese probe has
    not_chinese)."""
    want = PROBE_SCRIPT.get(ctx["probe"])
    text = str(ctx["content"] or "")
    units = script_units(han_numbers_plain(text))  # 五萬六千 is a number, not words of Chinese
    total = sum(units.values())
    if not want or want == "CJK" or total < limit("wrong_language.min_units") or units[want] >= limit("wrong_language.share") * total:
        return []
    main = units.most_common(1)[0][0]
    return [finding("wrong_language", "content", text, 0, "the prompt is in %s script, the answer mostly in %s "
                    "(%d of %d words)" % (want.title(), main.title(), units[main], total))]


# Scripts a sentence of the probes' languages may carry inside it: its own, Latin names and terms, and digits.
_EMBEDDABLE = {"LATIN": {"LATIN", "CJK"}, "CJK": {"CJK", "LATIN"}}


def foreign_fragment(text, script):
    """(start, detail) when a sentence in ``script`` (LATIN or CJK) carries a piece of another script inside it, with
    its own script's letters on both sides (a Hangul, Thai or Cyrillic fragment mid-sentence: a sign of quantisation
    damage). A foreign word that stands as its own sentence or clause ("Привет!") is not a fragment. Chinese may sit
    inside an English sentence (the model's two languages), Japanese kana inside either count as foreign; Greek letters
    are symbols in any language (Δx, μs)."""
    if script not in _EMBEDDABLE:
        return None
    prose = URL_RE.sub(" ", CODE_RE.sub(" ", text or ""))
    for sent in re.split(r"[.!?;:\n\u3002\uff01\uff1f\uff1b\uff1a\u3001,\uff0c()\uff08\uff09\"\u201c\u201d\u300c\u300d]", prose):
        runs = []  # (script, text, start) of each letter run
        for m in LETTER_RUN_RE.finditer(sent):
            for piece in re.finditer(r"[%s]+|[\u3040-\u30ff]+|[^%s\u3040-\u30ff]+" % (HAN, HAN), m.group(0)):
                ch = piece.group(0)[0]
                sc = "KANA" if KANA_RE.match(ch) else script_of(ch)
                runs.append((sc, piece.group(0), m.start() + piece.start()))
        for i, (sc, word, _start) in enumerate(runs):
            if sc in _EMBEDDABLE[script] or sc == "GREEK" or len(word) < 2 and sc != "HANGUL":
                continue
            before = [r for r in runs[:i] if r[0] == script]
            after = [r for r in runs[i + 1:] if r[0] == script]
            if before and after:
                where = (text or "").find(word)
                return max(0, where), ("%r (%s) inside a %s sentence (%r ... %r): a fragment of another script "
                                       "mid-sentence" % (word[:20], sc.title(), script.title(),
                                                         before[-1][1][-12:], after[0][1][:12]))
    return None


def foreign_fragment_findings(ctx):
    """A piece of another script inside a sentence in the probe's script."""
    frag = foreign_fragment(ctx["content"], PROBE_SCRIPT.get(ctx["probe"]))
    return [finding("foreign_fragment", "content", ctx["content"], frag[0], frag[1])] if frag else []


def traditional_chinese_detector(ctx):
    """The Chinese probe's answer in Traditional Chinese."""
    return traditional_chinese_findings(ctx["content"])
