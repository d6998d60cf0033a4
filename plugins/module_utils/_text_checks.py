# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Judge generated text: the garbage detector, the Traditional Chinese check and the arithmetic check.

Standard library only. The model card's failure signature on broken builds is "repetitive/scaled-token"
output; public reports add loops after a coherent start, token salad across scripts and digit garbage.
Each finding names its signal and quotes a short excerpt, so a verdict can be read without the raw
response. Thresholds are tuned on the labelled corpus in tests/corpus (``hack/verdict_corpus.py``).
"""

from __future__ import annotations

import ast
import difflib
import operator
import re
import unicodedata
from collections import Counter

from ansible_collections.glm53.serving.plugins.module_utils._response_contract import (
    CODE_RE,
    chat_response,
    excerpt,
    nfkc_digits,
)
from ansible_collections.glm53.serving.plugins.module_utils._zh_script_data import (
    SIMPLIFIED_ONLY,
    SOURCE as ZH_SCRIPT_SOURCE,
    TRADITIONAL_ONLY,
)

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_TOKEN_RE = re.compile(r"[%s]|[^\W\d_]+|\d+|[^\w\s]" % _HAN, re.UNICODE)
_CJK_RE = re.compile(r"[%s]" % _HAN)
_KANA_RE = re.compile(r"[\u3040-\u309f\u30a0-\u30ff]")
_LETTER_RE = re.compile(r"[^\W\d_]", re.UNICODE)
_LETTER_RUN_RE = re.compile(r"[^\W\d_]+", re.UNICODE)
_PUNCT_ONLY_RE = re.compile(r"^[^\w\s]+$", re.UNICODE)
# Byte-level BPE artefacts (Ġ = space, Ċ = newline, ĉ = tab) leaking into text: a scaled-token signature.
_BPE_RE = re.compile(r"[ĠĊĉ]{4,}|(?:Ġ\w+){6,}")
_SAME_CHAR_RE = re.compile(r"(\S)\1{15,}")
_SYMBOL_RUN_RE = re.compile(r"[^\w\s]{30,}", re.UNICODE)
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
_URL_RE = re.compile(r"\b(?:https?|ftp)://\S+")
# Control and format characters other than tab and line breaks (NUL, zero-width spaces, BOM, private use).
_INVISIBLE_CATEGORIES = frozenset(("Cc", "Cf", "Co", "Cn", "Cs"))

# Words that make a sentence in the languages a greeting or an explanation may use. Token salad (random
# vocabulary pieces) has almost none of them.
_FUNCTION_WORDS = frozenset(
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
    return _TOKEN_RE.findall(text or "")


def word_tokens(text):
    """Tokens that carry words or numbers: punctuation-only tokens (Markdown pipes, list dots) are left out."""
    return [t for t in tokens(text) if not _PUNCT_ONLY_RE.match(t)]


def _normal_words(text):
    """Lower-case word tokens (each Han character one token), punctuation dropped: for n-grams, echo and repeats."""
    return [t.lower() for t in word_tokens(text)]


def is_invisible(ch):
    """A character a reader cannot see: control, format, private-use or unassigned (tab and newlines are text)."""
    return ch not in "\t\n\r" and unicodedata.category(ch) in _INVISIBLE_CATEGORIES


def visible_length(text):
    """How many characters of the text a reader sees (whitespace and invisible characters left out)."""
    return sum(1 for ch in (text or "") if not ch.isspace() and not is_invisible(ch))


def invisible_run(text, least=4):
    """(start, length) of the first run of at least ``least`` invisible characters, else None."""
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
    prose = _URL_RE.sub(" ", CODE_RE.sub(" ", text or ""))
    chunks = [c.strip(".,;:!?()[]{}\"'") for c in prose.split()]
    chunks = [c for c in chunks if c]
    total = sum(len(c) for c in chunks)
    if not total:
        return 0.0, []
    opaque = [c for c in chunks if _OPAQUE_RE.match(c)]
    counted = [c for c in opaque if len(c) >= 24]
    if len(chunks) >= 8 and len(opaque) >= 0.6 * len(chunks):
        counted = opaque
    return sum(len(c) for c in counted) / float(total), counted[:3]


def periodic_tail(text, max_unit=64, min_times=5, min_span=40):
    """(unit, times, start) when the text ends in one unit repeated (the last copy may be cut short)."""
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
    if len(toks) < 20:
        return None
    need_count, need_cover = (6, 0.5) if len(toks) < 60 else (4, 0.3)
    for n in (3, 4, 5):
        gram, count, coverage = top_ngram(toks, n)
        if count >= need_count and coverage >= need_cover:
            return n, " ".join(gram), count, coverage
    return None


def script_of(ch):
    """A coarse script name for a letter: LATIN, CYRILLIC, GREEK, ARABIC, CJK (Han and kana), HANGUL, ..."""
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return "OTHER"
    first = name.split(" ", 1)[0]
    if first in ("CJK", "HIRAGANA", "KATAKANA") or _CJK_RE.match(ch):
        return "CJK"
    if first in ("MICRO", "FEMININE", "MASCULINE"):
        return "LATIN"
    return first


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
    runs = _LETTER_RUN_RE.findall(prose)
    if len(runs) < 8:
        return None
    run_scripts = [frozenset(script_of(c) for c in r) for r in runs]
    mixed = [r for r, s in zip(runs, run_scripts) if _odd_mix(s)]
    main = [min(s) if len(s) == 1 else "MIXED" for s in run_scripts]
    switches = sum(1 for a, b in zip(main, main[1:]) if a != b and frozenset((a, b)) not in _NORMAL_SWITCHES)
    scripts = Counter(sc for run in run_scripts for sc in run)
    latin = [r.lower() for r, s in zip(runs, main) if s == "LATIN"]
    func = sum(1 for w in latin if w in _FUNCTION_WORDS)
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
    if len(ev["mixed"]) >= 3 and len(ev["mixed"]) >= 0.15 * ev["words"]:
        return "%d of %d words mix scripts (%s)" % (len(ev["mixed"]), ev["words"], " ".join(ev["mixed"][:4]))
    if len(ev["scripts"]) >= 3 and ev["switch_rate"] >= 0.3 and (fr is None or fr < 0.12):
        return "%d scripts (%s) switching at %.0f%% of words, %s function words" % (
            len(ev["scripts"]), ", ".join(ev["scripts"]), 100 * ev["switch_rate"],
            "no" if not fr else "%.0f%%" % (100 * fr))
    if ev["latin"] >= 15 and fr is not None and (fr < 0.08 and not ev["punctuated"] or fr < 0.03 and ev["latin"] >= 40):
        return "%d Latin-script words with %.0f%% function words%s" % (
            ev["latin"], 100 * fr, "" if ev["punctuated"] else " and no punctuation")
    return None


def digit_salad(toks):
    """Numbers with next to no words around them, over a long answer: digit garbage."""
    if len(toks) < 30:
        return None
    numbers = sum(1 for t in toks if t.isdigit())
    if numbers >= 0.8 * len(toks):
        return "%d of %d tokens are numbers" % (numbers, len(toks))
    return None


def garbage_findings(text, field):
    """Return a list of {signal, field, excerpt, detail} for one text (content or reasoning)."""
    if not text or not text.strip():
        return []
    found = []

    def add(signal, start, detail):
        found.append({"signal": signal, "field": field, "excerpt": excerpt(text, start), "detail": detail})

    layout = _BOX_RE.sub(" ", _RULE_LINE_RE.sub("", text))  # table rules, box drawing and horizontal rules are layout
    m = _BPE_RE.search(text) or _SAME_CHAR_RE.search(layout) or _SYMBOL_RUN_RE.search(layout)
    if m:
        add("scaled_token", m.start(), "a run of %d characters of one token or symbol class" % len(m.group(0)))
    else:
        run = invisible_run(text)
        if run:
            add("scaled_token", run[0], "a run of %d invisible or control characters (U+%04X first)"
                % (run[1], ord(text[run[0]])))
    tag = markup_leak(text)
    if tag:
        add("markup_leak", max(0, text.find(tag)), "chat-template or reasoning markup %r in the %s (does the "
            "reasoning parser match the model's chat template?)" % (tag, field))
    tail = periodic_tail(text)
    if tail:
        unit, times, start = tail
        add("repetition_to_end", start, "%r repeated %d times up to the end" % (unit, times))
    toks = _normal_words(text)
    rep = repeated_ngram(toks)
    if rep:
        n, phrase, count, coverage = rep
        first = text.lower().find(phrase.split(" ", 1)[0])
        add("repeated_ngram", max(0, first),
            "the %d-gram %r, %d times, makes up %d%% of %d word tokens" % (n, phrase, count, 100 * coverage, len(toks)))
    if len(toks) >= 40:
        ratio = len(set(toks)) / float(len(toks))
        if ratio < 0.25:
            add("low_distinct_ratio", 0, "%d distinct of %d word tokens (%.2f)" % (len(set(toks)), len(toks), ratio))
    salad = salad_finding(text)
    share, codes = opaque_share(text)
    if not salad and share >= 0.6:
        salad = "%.0f%% of the text is letter-and-digit codes (%s)" % (100 * share, ", ".join(c[:16] for c in codes))
    if salad:
        add("token_salad", 0, salad)
    digits = digit_salad(toks)
    if digits:
        add("digit_garbage", 0, digits)
    return found


def judge_answer(content, reasoning, finish_reason, require_reasoning=True):
    """Findings for one chat completion; empty when it looks like a coherent answer."""
    findings = []
    if content is not None and str(content).strip() and not visible_length(str(content)):
        findings.append({"signal": "empty_content", "field": "content", "excerpt": "",
                         "detail": "no visible content: %d invisible or control characters (finish_reason=%s)"
                                   % (len(str(content).strip()), finish_reason)})
        return findings
    if content is None or not str(content).strip():
        if finish_reason == "length":
            findings.append({"signal": "reasoning_ran_out_of_budget", "field": "content",
                             "excerpt": excerpt(reasoning or "", max(0, len(reasoning or "") - 60)),
                             "detail": "finish_reason=length with no content: the reasoning used the whole "
                                       "max_tokens budget (raise max_tokens, or the model is looping)"})
        else:
            findings.append({"signal": "empty_content", "field": "content", "excerpt": "",
                             "detail": "no content (finish_reason=%s)" % finish_reason})
    findings += garbage_findings(content, "content")
    findings += garbage_findings(reasoning, "reasoning")
    if require_reasoning and not (reasoning and str(reasoning).strip()):
        findings.append({"signal": "no_reasoning", "field": "reasoning", "excerpt": excerpt(content or ""),
                         "detail": "neither `reasoning` nor `reasoning_content` is present (is the reasoning "
                                   "parser glm47 set?)"})
    return findings


# A Traditional answer may quote a Simplified name (智谱, say); a Simplified one has many such characters.
SIMPLIFIED_SHARE_LIMIT = 0.25


def chinese_script(text):
    """(cjk count, Simplified-only characters, Traditional-only characters) of a text, in order of use."""
    cjk = _CJK_RE.findall(text or "")
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
    letters = _LETTER_RE.findall(prose)
    kana = _KANA_RE.findall(prose)
    if n_cjk < 4 or n_cjk < 0.3 * max(1, len(letters)) or len(kana) >= max(2, 0.2 * n_cjk):
        return [{"signal": "not_chinese", "field": "content", "excerpt": excerpt(text),
                 "detail": "%d Chinese characters of %d letters%s" % (
                     n_cjk, len(letters), ", %d Japanese kana" % len(kana) if kana else "")}]
    if simp and len(simp) >= SIMPLIFIED_SHARE_LIMIT * (len(simp) + len(trad)):
        names = "".join(sorted(set(simp), key=simp.index))
        return [{"signal": "simplified_chinese", "field": "content", "excerpt": excerpt(text, text.find(simp[0])),
                 "detail": "%d Simplified-only against %d Traditional-only characters (%s): %s"
                           % (len(simp), len(trad), ZH_SCRIPT_SOURCE.split(" ", 1)[0], names[:20])}]
    # Whole sentences in Simplified inside a longer Traditional answer: judged sentence by sentence too. A
    # quoted Simplified name (two characters) is not a sentence in Simplified.
    for sent in _SENTENCE_END_RE.split(prose):
        _n, s_simp, s_trad = chinese_script(sent or "")
        if len(s_simp) >= 3 and len(s_simp) >= 0.6 * (len(s_simp) + len(s_trad)):
            return [{"signal": "simplified_chinese", "field": "content", "excerpt": excerpt(text, text.find(sent.strip())),
                     "detail": "a sentence in Simplified Chinese (%d Simplified-only against %d Traditional-only "
                               "characters in it, %d against %d in the whole answer): %s"
                               % (len(s_simp), len(s_trad), len(simp), len(trad), sent.strip()[:30])}]
    return []


# ------------------------------------------------------------------ arithmetic

# Thousands separators: comma, space, no-break, narrow no-break and thin spaces, apostrophes (56'088), underscores.
_SEP_CHARS = ",\u00a0\u202f\u2009'\u2019_"  # and a plain space, outside an expression
_SEP = "[ " + _SEP_CHARS + "]"
_NUMBER_RE = re.compile(r"(?<![\w.])-?\d{1,3}(?:" + _SEP + r"\d{3})+(?:\.\d+)?(?![\d])|(?<![\w.])-?\d+(?:\.\d+)?(?![\d])")
_LIST_MARKER_RE = re.compile(r"(?m)^\s*(?:\d{1,2}[.)]|step\s+\d{1,2}\s*[:.)])\s", re.I)
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_EXPR_CHARS = re.compile(r"^[\d\s.,+\-*/()]+$")
# LaTeX an answer may typeset its arithmetic in: $…$, \(…\), \[…\], \times, \cdot, 56{,}088, 56\,088, \boxed{…}.
_LATEX_SUBS = ((re.compile(r"\\(?:times|cdot)\b"), " × "), (re.compile(r"\\div\b"), " ÷ "),
               (re.compile(r"\{,\}"), ","), (re.compile(r"\\,"), "\u2009"), (re.compile(r"\\[!;: ]"), " "),
               (re.compile(r"\$+|\\[()\[\]]"), " "), (re.compile(r"\^\{(\d{1,2})\}"), r"^\1"))
_LATEX_GROUP_RE = re.compile(r"\\(?:boxed|text|mathrm|mathbf|textbf|displaystyle)\s*\{([^{}]*)\}")
_MAX_EXPONENT = 12


def latex_plain(text):
    """The text with the LaTeX of arithmetic written plainly (operators, separators, boxes and delimiters)."""
    text = text or ""
    for _depth in range(3):
        text = _LATEX_GROUP_RE.sub(r"\1", text)
    for rx, repl in _LATEX_SUBS:
        text = rx.sub(repl, text)
    return text


def numbers_in(text):
    """[(value, start, end)] of the numbers a text states; thousands separators allowed."""
    out = []
    for m in _NUMBER_RE.finditer(text or ""):
        raw = re.sub(_SEP, "", m.group(0))
        try:
            out.append((float(raw), m.start(), m.end()))
        except ValueError:
            continue
    return out


def _eval_expr(expr):
    """The value of a plain arithmetic expression (numbers, + - * / and parentheses), else None."""
    expr = expr.replace("×", "*").replace("·", "*").replace("÷", "/").replace("−", "-").replace("^", "**")
    expr = re.sub(r"(?<=\d)\s*[xX]\s*(?=\d)", "*", expr)
    # separators inside an expression, but not a space: "123 456" is two numbers there
    expr = re.sub(r"(?<=\d)[" + _SEP_CHARS + r"](?=\d{3}\b)", "", expr).strip()
    if not expr or not _EXPR_CHARS.match(expr):
        return None

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            exponent = ev(node.right)  # 5.6088 × 10^4; a bounded power, never a huge one
            if exponent != int(exponent) or abs(exponent) > _MAX_EXPONENT:
                raise ValueError(node)
            return ev(node.left) ** int(exponent)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError(node)

    try:
        return ev(ast.parse(expr, mode="eval"))
    except (SyntaxError, ValueError, ZeroDivisionError, TypeError, OverflowError, RecursionError):
        return None


def _equation_chains(text):
    """Chains 'e1 = e2 = ... = en' of plain arithmetic: [(values of each side, (start, end))]."""
    chains = []
    side = r"[\d \t.+\-*/()×x·÷−^" + _SEP_CHARS + "]+"
    for m in re.finditer(r"%s(?:(?:=|equals|is)%s)+" % (side, side), text or ""):
        parts = re.split(r"=|equals|is", m.group(0))
        values = [_eval_expr(p) for p in parts]
        if len([v for v in values if v is not None]) >= 2:
            chains.append((values, (m.start(), m.end())))
    return chains


def partial_products(a, b):
    """The numbers long multiplication writes on the way to a*b, either operand on top: each digit's
    product with its trailing zeros (123 x 456: 738, 6150, 49200), without them (615, 492), and the
    running sums (6888)."""
    out = set()
    for top, bottom in ((a, b), (b, a)):
        digits = str(abs(int(bottom)))[::-1]
        running = 0
        for place, d in enumerate(digits):
            part = abs(int(top)) * int(d)
            out.update((float(part), float(part * 10 ** place)))
            running += part * 10 ** place
            out.add(float(running))
    return out


# Operators and equalities in words: "123 times 456 equals 56,088" is the equation 123 × 456 = 56088.
_WORD_OPS = ((re.compile(r"(?<=\d)\s+(?:times|multiplied by)\s+(?=[-\d])", re.I), " × "),
             (re.compile(r"(?<=\d)\s+plus\s+(?=[-\d])", re.I), " + "),
             (re.compile(r"(?<=\d)\s+minus\s+(?=[-\d])", re.I), " - "),
             (re.compile(r"(?<=\d)\s+divided by\s+(?=[-\d])", re.I), " ÷ "),
             (re.compile(r"(?<=[\d)])\s*(?:\*\*)?\s*(?:equals|is equal to|equal to|gives|makes|yields|comes to|=)\s*"
                         r"(?:\*\*)?\s*(?=[-\d(])", re.I), " = "))
# A number given as an estimate or a check is not a result: after ≈, ~, "about", "roughly", "approximately", "around",
# "estimate", "ballpark", "as a check", or followed by "(estimate)".
_ESTIMATE_BEFORE_RE = re.compile(r"(?:[\u2248\u2243\u2245~\u223c]|\b(?:about|roughly|approximately|approx\.?|around|"
                                 r"nearly|almost|close to|estimated?|estimating|ballpark|order of|just under|just over|"
                                 r"as a (?:sanity )?check|sanity check|rough(?:ly)?|check:?))\s*(?:of\s+|at\s+|is\s+|:\s*)?"
                                 r"[$\s(]*$", re.I)
# A bound is not a result either: "< 60,000", "more than 50,000", "between 50,000 and 60,000".
_BOUND_BEFORE_RE = re.compile(r"(?:[<>\u2264\u2265\u2266\u2267\u226a\u226b]=?|\b(?:less|more|greater|fewer|bigger|smaller|"
                              r"higher|lower) than|\b(?:under|over|below|above|between|at least|at most|exceeds?|"
                              r"between [\d,. ]+ and))\s*$", re.I)
_ESTIMATE_AFTER_RE = re.compile(r"^\s*\(?(?:as an? )?(?:estimate|approximation|rough|ballpark|check)", re.I)


def arithmetic_plain(content):
    """The text with its digits in ASCII, the Unicode minus read, LaTeX written plainly and word operators as
    symbols: what the arithmetic check reads."""
    text = latex_plain(nfkc_digits(content or ""))
    for rx, repl in _WORD_OPS:
        text = rx.sub(repl, text)
    return text


def is_estimate(text, start, end):
    """Whether the number at text[start:end] is labelled as an estimate or a check, or is a bound (< 60,000)."""
    before = text[max(0, start - 30):start]
    return bool(_ESTIMATE_BEFORE_RE.search(before) or _BOUND_BEFORE_RE.search(before)
                or _ESTIMATE_AFTER_RE.match(text[end:end + 30]))


def math_findings(content, a, b):
    """The product a*b must be stated, and no other result.

    Restated operands are ignored, and so are the steps of correct working ('123 × 400 = 49,200'); a chain
    of equalities that does not hold, or a stated number that is neither an operand, nor the product, nor
    part of correct working, is a conflicting result. List markers ('1.', 'Step 2:') are not results.
    """
    text = arithmetic_plain(content)
    want = float(a * b)
    prose = _LIST_MARKER_RE.sub(" ", text)
    nums = numbers_in(prose)
    stated = [v for v, _s, _e in nums]
    covered = []
    conflicts = []
    for values, (start, end) in _equation_chains(prose):
        known = [v for v in values if v is not None]
        if any(abs(v - known[0]) > 1e-6 for v in known):
            wrong = [v for v in known if abs(v - want) > 1e-6]
            conflicts += wrong[-1:] if wrong else []
        covered.append((start, end))
    working = partial_products(a, b)
    for v, s, e in nums:
        inside = any(cs <= s and e <= ce for cs, ce in covered)
        if inside or abs(v - want) < 1e-6 or v in (float(a), float(b)) or v in working or is_estimate(prose, s, e):
            continue
        # a result has the product's size or follows "="; "two 3-digit numbers" states no result
        if abs(v) >= 1000 or re.search(r"=\s*$", prose[:s]):
            conflicts.append(v)

    def fmt(v):
        return "%d" % v if v == int(v) else "%g" % v

    if not any(abs(v - want) < 1e-6 for v in stated):
        got = ", ".join(fmt(v) for v in stated if v not in (float(a), float(b))) or "no result"
        return [{"signal": "wrong_answer", "field": "content", "excerpt": excerpt(text),
                 "detail": "%d * %d = %d is not stated (the answer states: %s)" % (a, b, a * b, got)}]
    if conflicts:
        others = ", ".join(sorted(set(fmt(v) for v in conflicts)))
        return [{"signal": "conflicting_answer", "field": "content", "excerpt": excerpt(text),
                 "detail": "%d * %d = %d is stated, and so is %s" % (a, b, a * b, others)}]
    return []


# ------------------------------------------------------------------ relevance: did it answer the prompt?

# A refusal in the languages the probes use: a refusal verb, then what is refused (help, answer, comply...).
# "I can't wait to help" and "I cannot browse the web, but ..." are not refusals.
_REFUSAL_RE = re.compile(
    r"\b(?:i|we)(?: am|'m|\u2019m)?\s+(?:really\s+)?(?:can ?not|can['\u2019]?t|won['\u2019]?t|will not|"
    r"(?:am |'m |\u2019m )?(?:unable|not able) to|refuse to|must decline to|have to decline to)\s+"
    r"(?:help|assist|comply|fulfil+|answer|respond|provide|do (?:that|this)|engage|complete|support|continue)\b"
    r"|\b(?:i|we)\s+(?:must|have to)\s+decline\b"
    r"|\b(?:i|we)\s+(?:can['\u2019]?t|cannot|won['\u2019]?t)\s*[.!]"
    r"|\bi(?:'m|\u2019m| am) (?:sorry|afraid),? but i (?:can ?not|can['\u2019]?t|won['\u2019]?t|am unable|'m unable|\u2019m unable)"
    r"|(?:無法|无法|不能|不便|拒絕|拒绝)(?:協助|协助|幫助|帮助|回答|提供|完成|處理|处理|滿足|满足|回應|回应|配合)"
    r"|(?:抱歉|對不起|对不起)[，,、\s]*(?:我)?(?:無法|无法|不能)", re.I)
_GREETING_WORDS_RE = re.compile(
    r"\b(?:hello|hi|hiya|hey|heya|howdy|greetings|salutations|good (?:morning|afternoon|evening|day)|welcome|g['\u2019]day|"
    r"yo|aloha|namaste|cheers|"
    r"(?:nice|pleased|glad|great|lovely|good|a pleasure|a joy|delighted|happy) to (?:meet|see|hear from|have|chat with) you|"
    r"(?:it['\u2019]?s |what )?a (?:pleasure|joy|delight)(?: to (?:meet|chat with|hear from) you)?|"
    r"how are you|how(?:'s|\u2019s| is) it going|how do you do|"
    r"bonjour|salut|hola|hallo|ciao|servus|ol[aá]|privet)\b|你好|您好|嗨|哈囉|哈啰|早安|午安|晚安|早上好|こんにちは|안녕|привет|здравствуй",
    re.I)
# A greeting word greets when it addresses the reader: followed by punctuation, the end, a form of address or "you"
# ("Hello!", "Hi there,", "G'day, mate"), not when it starts a sentence about something else ("Welcome to the jungle
# is a song", "Hello World is a program").
_ADDRESS_AFTER_RE = re.compile(r"^(?:\s*[!,.~;:?\u3002\uff01\uff0c\uff1f]|\s*\u2014|\s+[\u2013-]\s|\s*$|\s+(?:there|again|friend|"
                               r"friends|everyone|all|folks|mate|y['\u2019]all|to you|back|and|et|y|und|e)\b|\s*[\U0001F300-\U0001FAFF\u2600-\u27bf])",
                               re.I)
_FIRST_SENTENCES = 2


def greets(text):
    """Whether one of the first sentences greets the reader: a greeting that addresses them (see _ADDRESS_AFTER_RE),
    or a phrase that names "you" (nice to meet you, how are you)."""
    parts = [p for p in _SENTENCE_END_RE.split(CODE_RE.sub(" ", text or "")) if p and p.strip()]
    head = " ".join(parts[:_FIRST_SENTENCES]) if parts else ""
    for m in _GREETING_WORDS_RE.finditer(head):
        if re.search(r"\byou\b", m.group(0), re.I) or _CJK_RE.search(m.group(0)) or _KANA_RE.search(m.group(0)):
            return True
        if _ADDRESS_AFTER_RE.match(head[m.end():]) or not re.match(r"\s*[\w'\u2019-]", head[m.end():]):
            return True
    return False


_SENTENCE_END_RE = re.compile(r"(?<=[.!?。！？;；])\s*|\n+")
_ENUM_NUMBER_RE = re.compile(r"(?<![\d.,])\d{1,4}(?![\d])")
ENUMERATION_LOOP = 25  # consecutive integers no greeting, self-introduction or product needs
_LAYOUT_CHUNKS = frozenset("|-—–:*#>+=~_•·")

# What each probe's prompt asks for: the script the answer must be written in (the prompt's own).
_PROBE_SCRIPT = {"greeting": "LATIN", "chinese": "CJK", "math": "LATIN"}


def prompt_echo(content, prompt):
    """A detail when the answer is the prompt given back (whole, or all but a few words), else None."""
    if not prompt:
        return None
    said, asked = _normal_words(content), _normal_words(prompt)
    if len(asked) < 2 or not said:
        return None
    rest = list(said)
    found = 0
    while rest:  # take out each copy of (most of) the prompt, word for word
        m = difflib.SequenceMatcher(None, rest, asked, autojunk=False).find_longest_match(0, len(rest), 0, len(asked))
        if m.size < max(2, 0.8 * len(asked)):
            break
        del rest[m.a:m.a + m.size]
        found += 1
    if found and len(rest) < max(3, 0.3 * len(said)):
        return "the answer repeats the prompt%s and adds %d word%s" % (
            " %d times" % found if found > 1 else "", len(rest), "" if len(rest) == 1 else "s")
    common = sum((Counter(said) & Counter(asked)).values())
    if common >= 0.85 * max(len(said), len(asked)):
        return "the answer is the prompt's words again (%d of %d)" % (common, len(said))
    return None


def repeated_sentence(text):
    """(sentence, times) when one sentence is said again and again: 3 times, or twice when it is long."""
    parts = [p.strip() for p in _SENTENCE_END_RE.split(CODE_RE.sub(" ", text or "")) if p and p.strip()]
    seen = Counter()
    first = {}
    for p in parts:
        words = _normal_words(p)
        if not any(_LETTER_RE.search(w) for w in words):
            continue  # a number, a table rule or a bullet alone is no sentence
        key = " ".join(words)
        seen[key] += 1
        first.setdefault(key, p)
    if not seen:
        return None
    key, times = seen.most_common(1)[0]
    if times >= 3 or (times >= 2 and len(key.split()) >= 5):
        return first[key], times
    return None


def enumeration_run(text):
    """(first, last) of the longest run of consecutive integers the text counts through, in order."""
    best, ends = (0, 0, 0), {}
    for m in _ENUM_NUMBER_RE.finditer(text or ""):
        n = int(m.group(0))
        length = ends.get(n - 1, 0) + 1
        ends[n] = max(ends.get(n, 0), length)
        if length > best[0]:
            best = (length, n - length + 1, n)
    return best


def symbol_flood(text):
    """A detail when most whitespace-separated chunks are symbols or emoji (no letter, no digit)."""
    chunks = [c for c in CODE_RE.sub(" ", text or "").split() if c not in _LAYOUT_CHUNKS and set(c) - _LAYOUT_CHUNKS]
    if len(chunks) < 16:
        return None
    symbols = [c for c in chunks if not any(ch.isalnum() for ch in c)]
    if len(symbols) >= 16 and len(symbols) >= 0.6 * len(chunks):
        return "%d of %d chunks are symbols or emoji with no word (%s)" % (
            len(symbols), len(chunks), " ".join(symbols[:6]))
    return None


def script_units(text):
    """Counter of writing units by script: a Han or kana character is one unit, a run of other letters one."""
    units = Counter()
    for run in _LETTER_RUN_RE.findall(_URL_RE.sub(" ", CODE_RE.sub(" ", text or ""))):
        cjk = len(_CJK_RE.findall(run)) + len(_KANA_RE.findall(run))
        if cjk:
            units["CJK"] += cjk
        rest = _KANA_RE.sub(" ", _CJK_RE.sub(" ", run)).split()
        for r in rest:
            units[script_of(r[0])] += 1
    return units


# Prompts that ask the model about itself, and the first person an answer to them must use.
_SELF_PROMPT_RE = re.compile(r"介紹自己|介绍自己|自我介紹|自我介绍|你是誰|你是谁|introduce yourself|who are you", re.I)
_SELF_REF_RE = re.compile(r"[我吾咱俺]|本人|本(?:模型|助理|助手|系統|系统)|\b(?:I|I'm|I\u2019m|me|my)\b")
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
    prose = _URL_RE.sub(" ", CODE_RE.sub(" ", text or ""))
    for sent in re.split(r"[.!?;:\n\u3002\uff01\uff1f\uff1b\uff1a\u3001,\uff0c()\uff08\uff09\"\u201c\u201d\u300c\u300d]", prose):
        runs = []  # (script, text, start) of each letter run
        for m in _LETTER_RUN_RE.finditer(sent):
            for piece in re.finditer(r"[%s]+|[\u3040-\u30ff]+|[^%s\u3040-\u30ff]+" % (_HAN, _HAN), m.group(0)):
                ch = piece.group(0)[0]
                sc = "KANA" if _KANA_RE.match(ch) else script_of(ch)
                runs.append((sc, piece.group(0), m.start() + piece.start()))
        for i, (sc, word, start) in enumerate(runs):
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


def relevance_findings(probe, content, prompt, finish_reason):
    """Whether the answer answers the prompt: not cut at the token limit, not a refusal, not an echo, not
    a sentence said again and again, not a count that runs on, not a symbol flood, in the prompt's script,
    and (greeting) a greeting."""
    text = str(content or "")
    found = []

    def add(signal, start, detail):
        found.append({"signal": signal, "field": "content", "excerpt": excerpt(text, max(0, start)), "detail": detail})

    if finish_reason == "length":
        add("hit_token_limit", len(text) - 60, "finish_reason=length: the %s answer ran to the max_tokens budget "
            "(a short answer was asked; a model that stops only at the limit is looping)" % probe)
    m = _REFUSAL_RE.search(text)
    if m:
        add("refusal", m.start(), "the answer refuses the %s prompt: %r" % (probe, m.group(0).strip()))
    echo = prompt_echo(text, prompt)
    if echo:
        add("prompt_echo", 0, echo)
    rep = repeated_sentence(text)
    if rep:
        add("repeated_sentence", text.find(rep[0]), "the sentence %r is said %d times" % (rep[0][:60], rep[1]))
    run, lo, hi = enumeration_run(text)
    if run >= ENUMERATION_LOOP:
        add("enumeration_loop", text.find(str(lo)), "counts %d to %d (%d steps): a loop, not an answer" % (lo, hi, run))
    flood = symbol_flood(text)
    if flood:
        add("symbol_flood", 0, flood)
    want = _PROBE_SCRIPT.get(probe)
    units = script_units(text)
    total = sum(units.values())
    if want and want != "CJK" and total >= 3 and units[want] < 0.5 * total:
        main = units.most_common(1)[0][0]
        add("wrong_language", 0, "the prompt is in %s script, the answer mostly in %s (%d of %d words)" % (
            want.title(), main.title(), units[main], total))
    if probe == "greeting" and not found and not greets(text):
        add("no_greeting", 0, "the first sentences do not greet the reader (a greeting that addresses them, or a "
                              "phrase to them: hello!, hi there, nice to meet you, 你好)")

    return found


def chat_findings(probe, content, reasoning, finish_reason, require_reasoning=True, operands=None, prompt=None):
    """Every finding for one chat-probe answer: the garbage detector first, then whether it answers the
    prompt (relevance_findings), then the probe's own check (``chinese``: Traditional Chinese; ``math``: the
    product of ``operands``; ``greeting``: a greeting)."""
    findings = judge_answer(content, reasoning, finish_reason, require_reasoning)
    if findings:
        return findings
    findings = relevance_findings(probe, content, prompt, finish_reason)
    if findings:
        return findings
    if probe == "chinese":
        findings = traditional_chinese_findings(content)
    elif probe == "math":
        findings = math_findings(content, *operands)
    if findings:
        return findings
    frag = foreign_fragment(content, _PROBE_SCRIPT.get(probe))
    if frag:
        return [{"signal": "foreign_fragment", "field": "content", "excerpt": excerpt(content, frag[0]),
                 "detail": frag[1]}]
    if _SELF_PROMPT_RE.search(prompt or "") and not _SELF_REF_RE.search(content or ""):
        return [{"signal": "not_self_introduction", "field": "content", "excerpt": excerpt(content),
                 "detail": "the prompt asks the model to introduce itself, and the answer never speaks of itself "
                           "(no first person: 我, 本人, I)"}]
    return []


def judge_chat(probe, body, served_model_name=None, prompt=None, operands=None, require_reasoning=True):
    """(fields, findings) for one chat-probe answer as the engine sent it: the response contract first (a body that
    is not a chat completion is judged on that alone), then chat_findings on its text. Never raises."""
    fields, findings = chat_response(body, served_model_name)
    if any(f["signal"] in ("not_json", "bad_shape") for f in findings):
        return fields, findings
    seen = set((f["signal"], f["field"]) for f in findings)
    for f in chat_findings(probe, fields["content"], fields["reasoning"], fields["finish_reason"], require_reasoning,
                           operands, prompt=prompt):
        if (f["signal"], f["field"]) not in seen:
            findings.append(f)
            seen.add((f["signal"], f["field"]))
    return fields, findings
