"""Run the labelled probe answers in verdicts.yml through the probe modules' own judging functions."""
from __future__ import annotations

import os

import yaml

# testlib makes this checkout importable as ansible_collections.glm53.serving
import testlib  # noqa: F401  pylint: disable=unused-import
from ansible_collections.glm53.serving.plugins.module_utils._needle import judge_control, judge_needle
from ansible_collections.glm53.serving.plugins.module_utils._text_checks import judge_chat

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verdicts.yml")
DEFAULT_REASONING = "The user asks a question. I will answer it briefly and clearly."
# The prompts vllm_chat_probe sends by default (the math operands are the corpus's fixed facts).
DEFAULT_PROMPTS = {"greeting": "Hello! Please greet me back in one short sentence.", "chinese": "用一句話介紹自己",
                   "math": "What is %(a)d * %(b)d? Reply with the result."}


def load():
    with open(CORPUS, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


SERVED = "glm53-flash-awq"


def body_of(case):
    """The response body the case stands for: its raw ``response`` (a dict, or text when the body was not JSON), or a
    chat completion built from its message (``message``, or ``content`` and ``reasoning``), ``finish_reason``
    (default stop; ``null`` for a missing one), ``model`` (default the served name) and ``tool_calls``."""
    if "response" in case:
        return case["response"]
    if "message" in case:
        message = case["message"]
    else:
        message = {"role": "assistant", "content": case.get("content"),
                   "reasoning": case.get("reasoning", DEFAULT_REASONING)}
        if "tool_calls" in case:
            message["tool_calls"] = case["tool_calls"]
    return {"id": "chatcmpl-corpus", "object": "chat.completion", "model": case.get("model", SERVED),
            "choices": [{"index": 0, "message": message, "finish_reason": case.get("finish_reason", "stop")}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 40, "total_tokens": 60}}


def judge(case, facts):
    """(passed, signals, detail) for one case, as the module would judge it: the body through the response contract,
    then the probe's checks."""
    body = body_of(case)
    probe = case["probe"]
    if probe in ("greeting", "chinese", "math"):
        operands = (facts["math"]["a"], facts["math"]["b"])
        prompt = case.get("prompt", DEFAULT_PROMPTS[probe] % facts["math"])
        _fields, findings = judge_chat(probe, body, SERVED, prompt, operands, True)
        return not findings, [f["signal"] for f in findings], "; ".join(f["detail"] for f in findings)
    n = facts["needle"]
    distractors = [tuple(d) for d in n["distractors"]]
    if probe == "needle":
        _fields, v = judge_needle(body, SERVED, n["key"], n["value"], distractors)
        return v["verdict"] == "retrieved", [v["verdict"]], v.get("detail", "")
    if probe == "control":
        _fields, v = judge_control(body, SERVED, n["control_key"], [(n["key"], n["value"])] + distractors)
        return v["verdict"] == "passed", [v["verdict"]], v.get("detail", "")
    raise ValueError("unknown probe %r in case %s" % (probe, case["id"]))


def outcome(case, facts):
    """'ok', 'false pass', 'false failure', 'wrong signal' or 'crash' (the judging code raised), with what was
    judged."""
    try:
        passed, signals, detail = judge(case, facts)
    except Exception as exc:  # pylint: disable=broad-except  # a crash is a result of its own, never a verdict
        return "crash", [type(exc).__name__], str(exc)[:200]
    want_pass = case["expect"] == "pass"
    if passed and not want_pass:
        return "false pass", signals, detail
    if not passed and want_pass:
        return "false failure", signals, detail
    if not passed and case.get("signal") and case["signal"] not in signals:
        return "wrong signal", signals, detail
    return "ok", signals, detail
