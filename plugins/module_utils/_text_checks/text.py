# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""How the detectors read a text: tokens, scripts, sentences and what a reader can see. Standard library only."""

from __future__ import annotations

import re
import unicodedata

from ansible_collections.glm53.serving.plugins.module_utils._exact_answer import number_value

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
TOKEN_RE = re.compile(r"[%s]|[^\W\d_]+|\d+|[^\w\s]" % HAN, re.UNICODE)
CJK_RE = re.compile(r"[%s]" % HAN)
KANA_RE = re.compile(r"[\u3040-\u309f\u30a0-\u30ff]")
LETTER_RE = re.compile(r"[^\W\d_]", re.UNICODE)
LETTER_RUN_RE = re.compile(r"[^\W\d_]+", re.UNICODE)
PUNCT_ONLY_RE = re.compile(r"^[^\w\s]+$", re.UNICODE)
URL_RE = re.compile(r"\b(?:https?|ftp)://\S+")
SENTENCE_END_RE = re.compile(r"(?<=[.!?。！？;；])\s*|\n+")
# Control and format characters other than tab and line breaks (NUL, zero-width spaces, BOM, private use).
_INVISIBLE_CATEGORIES = frozenset(("Cc", "Cf", "Co", "Cn", "Cs"))

# Words that make a sentence in the languages a greeting or an explanation may use. Token salad (random
# vocabulary pieces) has almost none of them.
FUNCTION_WORDS = frozenset(
    "a an the is are was were be been am do does did have has had i you he she it we they me my your our "
    "their this that these those of to in on at by for with from as and or but not no so if then than "
    "what which who how when where there here can could will would should may might must shall let just "
    "also very all any some each more most other into about up out over only its it's i'm you're let's "
    "hello hi thanks please yes "
    "der die das und ist nicht ich du wir sie ein eine zu mit von den dem für auf es "
    "le la les et est je tu nous vous il elle un une des du pour pas que qui dans sur avec "
    "el los las y es yo tú él ella una por con para que muy como pero "
    "il lo gli e è io un una di che per non con sono".split())


def tokens(text):
    return TOKEN_RE.findall(text or "")


def word_tokens(text):
    """Tokens that carry words or numbers: punctuation-only tokens (Markdown pipes, list dots) are left out."""
    return [t for t in tokens(text) if not PUNCT_ONLY_RE.match(t)]


def normal_words(text):
    """Lower-case word tokens (each Han character one token), punctuation dropped: for n-grams, echo and repeats."""
    return [t.lower() for t in word_tokens(text)]


def is_invisible(ch):
    """A character a reader cannot see: control, format, private-use or unassigned (tab and newlines are text)."""
    return ch not in "\t\n\r" and unicodedata.category(ch) in _INVISIBLE_CATEGORIES


def visible_length(text):
    """How many characters of the text a reader sees (whitespace and invisible characters left out)."""
    return sum(1 for ch in (text or "") if not ch.isspace() and not is_invisible(ch))


def script_of(ch):
    """A coarse script name for a letter: LATIN, CYRILLIC, GREEK, ARABIC, CJK (Han and kana), HANGUL, ..."""
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return "OTHER"
    first = name.split(" ", 1)[0]
    if first in ("CJK", "HIRAGANA", "KATAKANA") or CJK_RE.match(ch):
        return "CJK"
    if first in ("MICRO", "FEMININE", "MASCULINE"):
        return "LATIN"
    return first


# A number written with Chinese units (5萬6088, 5万6,088, 五萬六千零八十八): read as its value.
_HAN_NUMBER_RUN_RE = re.compile(r"[0-9零〇一壹二貳贰兩两三參叁四肆五伍六陸陆七柒八捌九玖十拾百佰千仟萬万億亿]*[萬万億亿千仟]"
                                r"[0-9,零〇一壹二貳贰兩两三參叁四肆五伍六陸陆七柒八捌九玖十拾百佰千仟]*")


def han_numbers_plain(text):
    """The text with each number written with 萬, 億 or 千 in digits (5萬6088 -> 56088); a run that does not parse
    as one number stays as it is."""
    def value(m):
        run = m.group(0)
        parsed = number_value(re.sub(r"(?<=\d),(?=\d{3})", "", run))
        return str(parsed) if parsed is not None else run
    return _HAN_NUMBER_RUN_RE.sub(value, text)
