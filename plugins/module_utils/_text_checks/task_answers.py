# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Task answers: the math probe's product, stated once and never contradicted. Standard library only.

The verifiable tasks' answers (a copied string, a looked-up value, a one-word fact) are read by the grammar of
``_exact_answer``; the package offers its ``exact_findings`` beside ``math_findings``.
"""

from __future__ import annotations

import ast
import operator
import re

from ansible_collections.glm53.serving.plugins.module_utils._response_contract import nfkc_digits
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.registry import finding, limit
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.text import han_numbers_plain


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
            if exponent != int(exponent) or abs(exponent) > limit("math.max_exponent"):
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
    """The text with its digits in ASCII, the Unicode minus read, numbers with Chinese units in digits, LaTeX written
    plainly and word operators as symbols: what the arithmetic check reads."""
    text = latex_plain(han_numbers_plain(nfkc_digits(content or "")))
    for rx, repl in _WORD_OPS:
        text = rx.sub(repl, text)
    return text


def is_estimate(text, start, end):
    """Whether the number at text[start:end] is labelled as an estimate or a check, or is a bound (< 60,000)."""
    before = text[max(0, start - 30):start]
    return bool(_ESTIMATE_BEFORE_RE.search(before) or _BOUND_BEFORE_RE.search(before)
                or _ESTIMATE_AFTER_RE.match(text[end:end + 30]))


# A check of the result by digit sums (casting out nines, mod 9) or a verification: from its announcement to the end
# of the paragraph, its small numbers are residues and digit sums (15 -> 6, 36 = 9), not results.
_CHECK_RE = re.compile(r"\b(?:check\w*|verif\w*|casting out nines|cast out nines|digit(?:al)? (?:sums?|roots?)|"
                       r"mod(?:ulo)? 9|sanity)\b|驗算|验算|檢查|检查|驗證|验证", re.I)


def check_spans(text):
    """[(start, end)] of the parts of a text that check a result: from a check's announcement to the paragraph's end."""
    spans = []
    for m in _CHECK_RE.finditer(text):
        end = text.find("\n\n", m.start())
        spans.append((m.start(), len(text) if end < 0 else end))
    return spans


def math_findings(content, a, b):
    """The product a*b must be stated, and no other result.

    Restated operands are ignored, and so are the steps of correct working ('123 × 400 = 49,200'); a chain
    of equalities that does not hold, or a stated number that is neither an operand, nor the product, nor
    part of correct working, is a conflicting result. List markers ('1.', 'Step 2:') are not results, and
    neither are the small numbers of a check by digit sums ('4+5+6 = 15 = 6', '6 × 6 = 36 -> 9').
    """
    text = arithmetic_plain(content)
    want = float(a * b)
    prose = _LIST_MARKER_RE.sub(" ", text)
    nums = numbers_in(prose)
    stated = [v for v, _s, _e in nums]
    covered = []
    conflicts = []
    checks = check_spans(prose)
    small = limit("math.result_size")

    def in_check(start, end, values):
        return all(abs(v) < small for v in values) and any(cs <= start and end <= ce for cs, ce in checks)

    for values, (start, end) in _equation_chains(prose):
        known = [v for v in values if v is not None]
        if any(abs(v - known[0]) > 1e-6 for v in known) and not in_check(start, end, known):
            wrong = [v for v in known if abs(v - want) > 1e-6]
            conflicts += wrong[-1:] if wrong else []
        covered.append((start, end))
    working = partial_products(a, b)
    for v, s, e in nums:
        inside = any(cs <= s and e <= ce for cs, ce in covered)
        if inside or abs(v - want) < 1e-6 or v in (float(a), float(b)) or v in working or is_estimate(prose, s, e) \
                or in_check(s, e, [v]):
            continue
        # a result has the product's size or follows "="; "two 3-digit numbers" states no result
        if abs(v) >= limit("math.result_size") or re.search(r"=\s*$", prose[:s]):
            conflicts.append(v)

    def fmt(v):
        return "%d" % v if v == int(v) else "%g" % v

    if not any(abs(v - want) < 1e-6 for v in stated):
        got = ", ".join(fmt(v) for v in stated if v not in (float(a), float(b))) or "no result"
        return [finding("wrong_answer", "content", text, 0, "%d * %d = %d is not stated (the answer states: %s)" % (a, b, a * b, got))]
    if conflicts:
        others = ", ".join(sorted(set(fmt(v) for v in conflicts)))
        return [finding("conflicting_answer", "content", text, 0, "%d * %d = %d is stated, and so is %s" % (a, b, a * b, others))]
    return []


def math_detector(ctx):
    """The math probe's product of its operands, stated and not contradicted."""
    return math_findings(ctx["content"], *ctx["operands"])
