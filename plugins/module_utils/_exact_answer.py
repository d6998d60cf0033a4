# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The answer to a task checked exactly (repeat a string, look a number up in a table, a one-word fact), read by a
short grammar instead of searched for: the content must state one value and nothing else.

    answer   := lead? wrapped unit? end?
    lead     := a short lead-in ending in a colon ("Answer:", "apple-red:", "答案："), at most LEAD_WORDS words
                and LEAD_CHARS characters, no negation, no digit
    wrapped  := the value, or the value in quotes, a code span or fence, bold or italics (nested at most twice)
    unit     := for a number, a measure word of at most UNIT_CHARS Han characters ("7天")
    end      := one closing full stop or exclamation mark

The value of a number is read whatever its presentation: digit grouping ("4,817", "4 817", "4'817"), any script's
digits (full-width "４８１７"), Chinese numerals ("四千八百一十七", "1萬2千", "兩萬"). A string is compared as it
is. What does not parse (a sentence that narrates the task, "not X, but Y", the value inside a word, the value
after a greeting meant for another request) states no value, and the verdict names what it found instead.
Standard library only: the probes run on any host.
"""
from __future__ import annotations

import re

from ansible_collections.glm53.serving.plugins.module_utils._response_contract import excerpt, nfkc_digits

# Thresholds, each with its reason.
LEAD_WORDS = 8  # "The value for apple-red in the table is:" is 8 words; a longer lead is a sentence, not a label
LEAD_CHARS = 60  # the same, in characters (a Chinese lead has no spaces to count)
UNIT_CHARS = 2  # 天, 個, 公尺: a measure word after a number; a longer tail is a sentence
WRAP_DEPTH = 2  # **`4817`** is honest; deeper nesting is not an answer's presentation

_WRAPS = (("```", "```"), ("**", "**"), ("__", "__"), ("`", "`"), ("*", "*"), ("_", "_"), ('"', '"'), ("'", "'"),
          ("\u201c", "\u201d"), ("\u2018", "\u2019"), ("\u300c", "\u300d"), ("\u300e", "\u300f"),
          ("\u00ab", "\u00bb"))
_END = ".\u3002!\uff01"
_LEAD_RE = re.compile(r"^(?P<lead>[^\n:\uff1a]{1,%d})[:\uff1a][ \t]*(?:\n[ \t]*)?" % LEAD_CHARS)
_NEGATION_RE = re.compile(r"\b(?:not|no|never|isn'?t|wasn'?t|instead|rather|but)\b|不是|並非|并非|而是|不", re.I)
_GROUPED_RE = re.compile(r"^-?\d{1,3}(?:([,\u00a0\u202f\u2009' _.])\d{3})(?:\1\d{3})*$")
_PLAIN_RE = re.compile(r"^-?\d+$")
_HAN_DIGITS = {"零": 0, "〇": 0, "一": 1, "壹": 1, "二": 2, "貳": 2, "贰": 2, "兩": 2, "两": 2, "三": 3, "參": 3,
               "叁": 3, "四": 4, "肆": 4, "五": 5, "伍": 5, "六": 6, "陸": 6, "陆": 6, "七": 7, "柒": 7, "八": 8,
               "捌": 8, "九": 9, "玖": 9}
_HAN_SMALL = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}
_HAN_LARGE = {"萬": 10 ** 4, "万": 10 ** 4, "億": 10 ** 8, "亿": 10 ** 8}
_HAN_NUMBER_RE = re.compile(r"^[0-9零〇一壹二貳贰兩两三參叁四肆五伍六陸陆七柒八捌九玖十拾百佰千仟萬万億亿]+$")
_HAN = "\u3400-\u4dbf\u4e00-\u9fff"
_HAN_RE = re.compile(r"[%s]" % _HAN)
_UNIT_RE = re.compile(r"^(.*?)([%s]{1,%d})$" % (_HAN, UNIT_CHARS))  # a number, then a measure word


def _han_section(text):
    """A number below 10,000 in Chinese numerals or mixed digits (四千八百一十七, 4千8百17, 十七); None if not one."""
    total, digit, seen = 0, None, False
    for ch in text:
        if ch.isdigit() and ch.isascii():
            digit = (digit or 0) * 10 + int(ch)
        elif ch in _HAN_DIGITS:
            if digit is not None and not seen:
                digit = digit * 10 + _HAN_DIGITS[ch]  # 一七 is not a number anyone writes; 17 in Han digits is
            else:
                digit = _HAN_DIGITS[ch]
        elif ch in _HAN_SMALL:
            total += (1 if digit is None else digit) * _HAN_SMALL[ch]
            digit, seen = None, True
        else:
            return None
    return total + (digit or 0)


def number_value(text):
    """The integer a number is written as, or None: grouped or plain digits, Chinese numerals with 萬 and 億."""
    text = nfkc_digits(text.strip())
    if _PLAIN_RE.match(text):
        return int(text)
    m = _GROUPED_RE.match(text)
    if m:
        return int(re.sub(r"[^\d-]", "", text))
    if not _HAN_NUMBER_RE.match(text) or text.isdigit():
        return None
    total, rest = 0, text
    for mark, scale in sorted(_HAN_LARGE.items(), key=lambda kv: -kv[1]):
        if mark in rest:
            head, rest = rest.split(mark, 1)
            part = _han_section(head) if head else 1
            if part is None:
                return None
            total += part * scale
    if rest:
        part = _han_section(rest)
        if part is None:
            return None
        total += part
    return total


def _unwrap(core):
    for _depth in range(WRAP_DEPTH):
        for left, right in _WRAPS:
            if len(core) > len(left) + len(right) and core.startswith(left) and core.endswith(right):
                core = core[len(left):len(core) - len(right)].strip()
                if left == "```":  # a fence may name its language on its first line
                    core = re.sub(r"^[A-Za-z]*\n", "", core).strip()
                break
        else:
            break
    return core


def _cores(content):
    """The candidate values the content states: the whole, and after a short lead-in ending in a colon."""
    text = nfkc_digits(content or "").strip()
    out = [text]
    m = _LEAD_RE.match(text)
    if m:
        lead = m.group("lead").strip()
        if len(lead.split()) <= LEAD_WORDS and not _NEGATION_RE.search(lead) and not re.search(r"\d", lead):
            out.append(text[m.end():])
    cores = []
    for core in out:
        core = core.strip()
        if core and core[-1] in _END:
            core = core[:-1].rstrip()
        core = _unwrap(core)
        if core and core[-1] in _END:  # "**4817.**"
            core = core[:-1].rstrip()
        if core:
            cores.append(core)
    return cores


def stated(content, numeric, spaced=False):
    """The values the content may state as its answer, the whole first and then what follows a short lead-in (a
    string, or an int for a number); empty when it states no single value (a sentence, a negation, more than one
    line of text)."""
    values = []
    for core in _cores(content):
        if numeric:
            value = number_value(core)
            if value is None:
                m = _UNIT_RE.match(core)
                if m and m.group(1) and not _HAN_RE.search(m.group(1)[-1:]):
                    value = number_value(m.group(1))
            if value is not None:
                values.append(value)
        elif "\n" not in core and (spaced or not re.search(r"\s", core)):  # a sentence states no value
            values.append(core)
    return values


def exact_findings(content, accepted, others=()):
    """Findings for an answer checked exactly: ``accepted`` are the right values (strings; a number when every one
    is), ``others`` the other values of the batch and the table (another request's answer, another row). Findings:
    wrong_answer (no value stated, or another one) or conflicting_answer (another request's value given)."""
    parsed = [number_value(a) for a in accepted]
    numeric = all(v is not None for v in parsed)
    want = parsed if numeric else list(accepted)
    values = stated(content, numeric, spaced=any(re.search(r"\s", a) for a in accepted))
    text = nfkc_digits(content or "")
    if any(v in want for v in values):
        return []
    value = values[-1] if values else None
    other_values = {(number_value(o) if numeric else o): o for o in others if o not in accepted}
    if numeric:
        other_values.pop(None, None)
    if value is not None and value in other_values:
        return [{"signal": "conflicting_answer", "field": "content", "excerpt": excerpt(text),
                 "detail": "states %r, another request's answer or another row of the table (expected %s)" % (
                     other_values[value], " or ".join(repr(a) for a in accepted[:3]))}]
    if value is not None:
        return [{"signal": "wrong_answer", "field": "content", "excerpt": excerpt(text),
                 "detail": "states %r (expected %s)" % (value, " or ".join(repr(a) for a in accepted[:3]))}]
    return [{"signal": "wrong_answer", "field": "content", "excerpt": excerpt(text),
             "detail": "states no single value (expected %s alone; quotes, a code span, bold, a lead-in ending in a "
                       "colon and a closing full stop are fine, a sentence around it, a negation or another "
                       "request's text are not)" % " or ".join(repr(a) for a in accepted[:3])}]
