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
  needle_all_values   lists every needle's value in the text (ambiguous)
  needle_hedge        "either <another needle's value> or <the value>" (ambiguous)
  needle_reasoning_only  finds the value in its reasoning, then answers "not found" (missed)
  needle_distractor   answers another needle's value (distractor)
  needle_control_answers  for a key that is not in the text, answers another needle's value
  needle_lists_found  good; for a key that is not in the text says so, then lists the keys it found
  math_restates       good; states the product, then restates the operands
  math_separators     good; the product with thousands separators
  math_conflict       states the product, then "corrects" it to another number
  simplified          like good, but answers Chinese in Simplified Chinese
  salad               token salad: vocabulary pieces of several scripts, no sentence
  refusal             refuses every chat prompt ("I'm sorry, but I can't help with that."); needles good
  echo                gives every chat prompt back as its answer; needles good
  enumeration_loop    greets, then counts "Step 1. ... Step 1500." until the token limit cuts it
  emoji_flood         answers the greeting with emoji separated by spaces
  mixed_script        a long Traditional self-introduction with one whole sentence in Simplified
  needle_dots         good; needle values grouped with dots (4.729.103)
  needle_keyed_others good; the value, then the other needles' values, each with its key
  math_long           good; the product by long multiplication, partial products with their zeros
  control_substitute  for a key that is not in the text, says so, then "use <another value> instead"
  layout_table        good; the greeting lays out what it can do as a box-drawing table under an em-dash rule
  reasoning_proxy     good, with the reasoning where a proxy puts it: `reasoning_content`, `reasoning` empty
                      (server.py writes the fields)
  needle_disown       good; the value, then a distractor's value quoted to disown it ("not N, which is K's")
"""
from __future__ import annotations

import re

BEHAVIOURS = ("good", "gibberish", "scaled", "unclosed_reasoning", "needle_lossy", "needle_blind",
              "needle_all_values", "needle_hedge", "needle_reasoning_only", "needle_distractor",
              "needle_control_answers", "needle_lists_found", "math_restates", "math_separators", "math_conflict",
              "simplified", "salad", "refusal", "echo", "enumeration_loop", "emoji_flood", "mixed_script",
              "needle_dots", "needle_keyed_others", "math_long", "control_substitute", "layout_table",
              "reasoning_proxy", "needle_disown")
_STEP_VERBS = ("Greet the user.", "Smile warmly.", "Offer help.", "Ask a question.", "Listen closely.", "Be kind.",
               "Say thanks.", "Wave goodbye.")
_EMOJI = "😀😃😄😁😆😅😂🙂😉😊😇🥰😍🤩😘😗"
MIXED_SELF_INTRO = ("我是一個由智譜訓練的大型語言模型，能夠回答問題、撰寫文章、翻譯語言與協助程式設計。"
                    "我也可以協助你規劃旅遊、學習語言、整理筆記與撰寫報告。我會用繁體中文與你對話，並且盡量說明清楚。"
                    "我会尽力帮助你解决各种问题。很高興認識你，歡迎隨時發問。")

LAYOUT_GREETING = "\n".join([
    "Hello! I'm GLM-5.3-Flash. Here is what I can do for you:",
    "\u2014" * 24,
    "\u250c" + "\u2500" * 12 + "\u252c" + "\u2500" * 24 + "\u2510",
    "\u2502 Task       \u2502 Example                \u2502",
    "\u251c" + "\u2500" * 12 + "\u253c" + "\u2500" * 24 + "\u2524",
    "\u2502 Answer     \u2502 questions on any topic \u2502",
    "\u2502 Write      \u2502 emails and reports     \u2502",
    "\u2502 Code       \u2502 Python, Go and Rust    \u2502",
    "\u2514" + "\u2500" * 12 + "\u2534" + "\u2500" * 24 + "\u2518",
    "\u2014" * 24,
    "How can I help you today?"])
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
SIMPLIFIED_SELF_INTRO = "我是一个由智谱训练的大型语言模型，能够回答问题、撰写文章、翻译语言与协助程序设计。"
SALAD = ("ersions Lloyd inev uploaded Пол Reverse戦 grabs Opp مرکز mortgages совет kalau ดี Bruno предложения "
         "ließ kontrol秘书 skor pedido Tb ауд ثبت bevor 浏览 ")


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
    needles = _NEEDLE_RE.findall(prompt)
    values = [v for k, v in needles if k == key]
    others = [(k, v) for k, v in needles if k != key]
    if not values:
        if behaviour == "needle_control_answers" and others:
            return (f"The user asks for {key}. I will take the closest one.",
                    f"The special magic {noun} for {key} is: {others[0][1]}.")
        if behaviour == "control_substitute" and others:
            return (f"The user asks for {key}. It is not there; I suggest another.",
                    f"There is no special magic {noun} for {key} in the text. Use {others[0][1]} instead.")
        if behaviour == "needle_lists_found":
            found = ", ".join(f"{k} ({v})" for k, v in others)
            return (f"The user asks for {key}. The text has {found}; none of them is {key}.",
                    f"I could not find a special magic {noun} for {key} in the text. "
                    f"The text does give {noun}s for other keys: {found}.")
        return (f"The user asks for the special magic {noun} for {key}. The text does not state it.",
                f"The provided text does not mention a special magic {noun} for {key}.")
    if behaviour == "needle_all_values":
        joined = ", ".join(v for _k, v in needles)
        return (f"The user asks for {key}. I list every {noun} to be safe.",
                f"The special magic {noun}s in the text are: {joined}.")
    if behaviour == "needle_hedge" and others:
        return (f"The user asks for {key}. I am not sure which one.",
                f"The special magic {noun} for {key} is either {others[0][1]} or {values[0]}.")
    if behaviour == "needle_reasoning_only":
        return (f"The user asks for {key}. I see {key} is {values[0]} in the text, but I am unsure.",
                f"I could not find a special magic {noun} for {key} in the provided text.")
    if behaviour == "needle_distractor" and others:
        return (f"The user asks for {key}.", f"The special magic {noun} for {key} is: {others[0][1]}.")
    if behaviour == "needle_lossy":
        values = [_corrupt_digits(v) for v in values]
    if behaviour == "needle_dots":
        values = [re.sub(r"(?<=\d)(?=(?:\d{3})+$)", ".", v) if v.isdigit() else v for v in values]
    joined = ", ".join(values)
    if behaviour == "needle_disown" and others:
        return (f"The user asks for {key}. {others[0][0]} is a different key.",
                f"The special magic {noun} for {key} is {joined} (not {others[0][1]}, which the text gives for "
                f"{others[0][0]}).")
    if behaviour == "needle_keyed_others":
        rest = "; ".join(f"{k} is {v}" for k, v in needles if k != key)
        return (f"The user asks for the special magic {noun} for {key}. I found it: {joined}.",
                f"The special magic {noun} for {key} is {joined}. For reference, the other keys: {rest}.")
    return (f"The user asks for the special magic {noun} for {key}. I found it in the text: {joined}.",
            f"The special magic {noun} for {key} mentioned in the provided text is: {joined}.")


# The verifiable tasks (vllm_chat_probe's copy, table look-up and Chinese questions), answered as a healthy model does.
_COPY_RE = re.compile(r"Repeat this string exactly[^:]*:\s*(\S+)")
_LOOKUP_RE = re.compile(r"What is the value for ([\w-]+)\?")
_ROW_RE = re.compile(r"(?m)^([\w-]+): (\d+)$")
ZH_FACTS = {"台灣最高的山": "玉山", "一個星期有幾天": "7", "「日」和「月」合在一起": "明"}


def _verifiable(user_text: str):
    m = _COPY_RE.search(user_text)
    if m:
        return "The user wants the string back exactly.", m.group(1)
    m = _LOOKUP_RE.search(user_text)
    if m:
        rows = dict(_ROW_RE.findall(user_text))
        if m.group(1) in rows:
            return f"The table gives {m.group(1)} as {rows[m.group(1)]}.", rows[m.group(1)]
    for question, answer in ZH_FACTS.items():
        if question in user_text:
            return "The user asks a question in Traditional Chinese with a short answer.", answer
    return None


# The answer to a prompt the stand-in does not recognise (none of the probes' prompts).
GENERIC = ("The user asks a general question. I will give a short, helpful answer.", True,
           "I'm GLM-5.3-Flash. I understood your message and I'm happy to help with it.", False)


def recognised(user_text: str) -> bool:
    """Whether the prompt is one of those the probes send (and this stand-in answers as a model would)."""
    return bool(_verifiable(user_text) or _QUESTION_RE.search(user_text) or _arithmetic(user_text)
                or _GREETING_RE.search(user_text) or re.search("介紹自己|介绍自己|自我介紹", user_text))


def respond(prompt_text: str, user_text: str, behaviour: str):
    """Return (reasoning, closes_reasoning, content, runs_to_limit)."""
    if behaviour == "gibberish":
        return ("Okay so the the user user wants wants ", True,
                "of the of the model model of the of the ", True)
    if behaviour == "scaled":
        return ("ĠĠĠĠĠĠĠĠ", True, "！！！！！！！！", True)
    if behaviour == "salad":
        return ("The user asks something. ", True, SALAD, False)
    if behaviour == "unclosed_reasoning":
        return ("Let me think about this carefully. First I consider what the user wants, "
                "then I consider it again from another angle. ", False, "", True)

    needle = _needle(prompt_text, user_text, behaviour)
    if needle:
        return needle[0], True, needle[1], False
    task = _verifiable(user_text)
    if task and behaviour not in ("refusal", "echo"):
        return task[0], True, task[1], False
    if behaviour == "refusal":
        return ("The user asks something. I will not do it.", True,
                "抱歉，我無法回答這個問題。" if _CJK_RE.search(user_text) else "I'm sorry, but I can't help with that.",
                False)
    if behaviour == "echo":
        return ("The user says something. I repeat it.", True, user_text, False)
    if behaviour == "enumeration_loop" and _GREETING_RE.search(user_text):
        steps = " ".join(f"Step {i}. {_STEP_VERBS[i % len(_STEP_VERBS)]}" for i in range(1, 1501))
        return ("The user greets me. I will make a plan.", True, "Hello! Here is my plan. " + steps, False)
    if behaviour == "emoji_flood" and _GREETING_RE.search(user_text):
        return ("The user greets me.", True, " ".join(_EMOJI[(i * 7) % len(_EMOJI)] for i in range(40)), False)
    if behaviour == "mixed_script" and _CJK_RE.search(user_text) and not _ARITH_RE.search(user_text):
        return ("The user asks me to introduce myself in Chinese.", True, MIXED_SELF_INTRO, False)
    arith = _arithmetic(user_text)
    if arith:
        expr, result = arith
        content = f"{expr} = {result}"
        if behaviour == "math_restates":
            content = f"The result is {result} (that is {expr})."
        elif behaviour == "math_separators" and result.isdigit():
            content = f"**{int(result):,}**"
        elif behaviour == "math_long" and re.fullmatch(r"\d+ \* \d+", expr):
            a, b = (int(x) for x in expr.split(" * "))
            parts = [a * int(d) * 10 ** i for i, d in enumerate(str(b)[::-1])]
            content = "\n".join([f"{a:>8}", f"× {b:>6}", "─" * 8] + [f"{p:>8}" for p in parts]
                                 + ["─" * 8, f"{int(result):>8}"])
        elif behaviour == "math_conflict" and result.lstrip("-").isdigit():
            content = f"{expr} = {result}. Actually, let me recompute: {int(result) + 10}."
        return (f"The user wants a calculation: {expr}. Computing it step by step gives {result}.", True,
                content, False)
    if _CJK_RE.search(user_text):
        return ("The user writes in Chinese and asks me to introduce myself in one sentence. "
                "I should answer in Traditional Chinese.", True,
                SIMPLIFIED_SELF_INTRO if behaviour == "simplified" else TRADITIONAL_SELF_INTRO, False)
    if _GREETING_RE.search(user_text):
        return ("The user greets me. I should greet back and offer help.", True,
                LAYOUT_GREETING if behaviour == "layout_table"
                else "Hello! I'm GLM-5.3-Flash, an AI assistant. How can I help you today?", False)
    return GENERIC
