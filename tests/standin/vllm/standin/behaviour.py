# Test double: what the fake GLM-5.3 "model" says, in good and in known-bad behaviours.
"""Answer generation for the stand-in engine.

Each behaviour returns ``(reasoning_text, closes_reasoning, content_text, runs_to_limit)``:
the model writes ``reasoning</think>content``; when ``closes_reasoning`` is false it never
writes ``</think>`` (vLLM's glm47 parser then puts everything in ``reasoning`` and leaves
``content`` null); when ``runs_to_limit`` is true the text repeats until ``max_tokens``.

Behaviours (``VLLM_STANDIN_BEHAVIOUR``):
  good                answers greetings, Chinese in Traditional Chinese, arithmetic, needles
  gibberish           repetitive n-gram garbage to the token limit
  scaled              the "scaled-token" signature: one symbol repeated to the limit
  unclosed_reasoning  reasons forever: no ``</think>``, content null, finish_reason length
  needle_lossy        like good, but the digits of a retrieved needle value come out wrong
                      (the sm89 indexer bug: words survive, digits do not)
  needle_blind        like good, but never finds a needle
"""
from __future__ import annotations

import re

BEHAVIOURS = ("good", "gibberish", "scaled", "unclosed_reasoning", "needle_lossy", "needle_blind")

_CJK_RE = re.compile(r"[\u4e00-\u9fff]")
_GREETING_RE = re.compile(r"\b(hello|hi|hey|greetings|good (morning|afternoon|evening))\b", re.I)
_WORD_OPS = {"plus": "+", "minus": "-", "times": "*", "multiplied by": "*", "divided by": "/"}
_ARITH_RE = re.compile(
    r"(-?\d+(?:\.\d+)?)\s*(\+|-|\*|/|×|÷|x|plus|minus|times|multiplied by|divided by)\s*(-?\d+(?:\.\d+)?)",
    re.I,
)
# RULER-style needles: "One of the special magic numbers for {key} is: {value}."
_NEEDLE_RE = re.compile(
    r"special magic (?:numbers?|uuids?|values?|words?) for ([\w-]+) is:?\s*([\w-]+)", re.I)
_QUESTION_RE = re.compile(
    r"(?:what|which) (?:is|are) (?:all )?(?:the )?special magic (numbers?|uuids?|values?|words?) for ([\w-]+)",
    re.I)

TRADITIONAL_SELF_INTRO = "我是一個由智譜訓練的大型語言模型，能夠回答問題、撰寫文章、翻譯語言與協助程式設計。"


def _fmt_number(value: float) -> str:
    if abs(value - round(value)) < 1e-9:
        return str(int(round(value)))
    return f"{value:.6g}"


def _arithmetic(text: str):
    m = _ARITH_RE.search(text)
    if not m:
        return None
    a, op, b = float(m.group(1)), m.group(2).lower(), float(m.group(3))
    op = _WORD_OPS.get(op, op)
    op = {"×": "*", "x": "*", "÷": "/"}.get(op, op)
    if op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    else:
        if b == 0:
            return (f"{m.group(0)}", "Division by zero is undefined.")
        r = a / b
    expr = f"{_fmt_number(a)} {op} {_fmt_number(b)}"
    return expr, _fmt_number(r)


def _corrupt_digits(value: str) -> str:
    """Shift every digit by one: same shape, wrong number (what a lossy indexer produces)."""
    return "".join(str((int(c) + 1) % 10) if c.isdigit() else c for c in value)


def _needle(prompt: str, question: str, behaviour: str):
    q = _QUESTION_RE.search(question)
    if not q:
        return None
    kind, key = q.group(1).lower(), q.group(2)
    noun = "number" if kind.startswith("number") else kind.rstrip("s")
    if behaviour == "needle_blind":
        return (f"The user asks for the special magic {noun} for {key}. I scan the text but find no such statement.",
                f"I could not find a special magic {noun} for {key} in the provided text.")
    values = [v for k, v in _NEEDLE_RE.findall(prompt) if k == key]
    if not values:
        return (f"The user asks for the special magic {noun} for {key}. The text does not state it.",
                f"The provided text does not mention a special magic {noun} for {key}.")
    if behaviour == "needle_lossy":
        values = [_corrupt_digits(v) for v in values]
    joined = ", ".join(values)
    return (f"The user asks for the special magic {noun} for {key}. I found it in the text: {joined}.",
            f"The special magic {noun} for {key} mentioned in the provided text is: {joined}.")


def respond(prompt_text: str, user_text: str, behaviour: str):
    """Return (reasoning, closes_reasoning, content, runs_to_limit)."""
    if behaviour == "gibberish":
        return ("Okay so the the user user wants wants ", True,
                "of the of the model model of the of the ", True)
    if behaviour == "scaled":
        return ("ĠĠĠĠĠĠĠĠ", True, "！！！！！！！！", True)
    if behaviour == "unclosed_reasoning":
        return ("Let me think about this carefully. First I consider what the user wants, "
                "then I consider it again from another angle. ", False, "", True)

    needle = _needle(prompt_text, user_text, behaviour)
    if needle:
        return needle[0], True, needle[1], False
    arith = _arithmetic(user_text)
    if arith:
        expr, result = arith
        return (f"The user wants a calculation: {expr}. Computing it step by step gives {result}.", True,
                f"{expr} = {result}", False)
    if _CJK_RE.search(user_text):
        return ("The user writes in Chinese and asks me to introduce myself in one sentence. "
                "I should answer in Traditional Chinese.", True, TRADITIONAL_SELF_INTRO, False)
    if _GREETING_RE.search(user_text):
        return ("The user greets me. I should greet back and offer help.", True,
                "Hello! I'm GLM-5.3-Flash, an AI assistant. How can I help you today?", False)
    return ("The user asks a general question. I will give a short, helpful answer.", True,
            "I'm GLM-5.3-Flash. I understood your message and I'm happy to help with it.", False)
