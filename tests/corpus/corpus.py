"""Run the labelled probe answers in verdicts.yml through the probe modules' own judging functions."""
from __future__ import annotations

import os

import yaml

# testlib makes this checkout importable as ansible_collections.glm53.serving
import testlib  # noqa: F401  pylint: disable=unused-import
from ansible_collections.glm53.serving.plugins.module_utils._needle import score, score_control
from ansible_collections.glm53.serving.plugins.module_utils._openai_client import message_fields
from ansible_collections.glm53.serving.plugins.module_utils._text_checks import chat_findings

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verdicts.yml")
DEFAULT_REASONING = "The user asks a question. I will answer it briefly and clearly."
# The prompts vllm_chat_probe sends by default (the math operands are the corpus's fixed facts).
DEFAULT_PROMPTS = {"greeting": "Hello! Please greet me back in one short sentence.", "chinese": "用一句話介紹自己",
                   "math": "What is %(a)d * %(b)d? Reply with the result."}


def load():
    with open(CORPUS, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def judge(case, facts):
    """(passed, signals, detail) for one case, as the module would judge it."""
    content = case.get("content")
    reasoning = case.get("reasoning", DEFAULT_REASONING)
    finish = case.get("finish_reason", "stop")
    if "message" in case:  # the raw message as a server or proxy sends it: read as the modules read it
        content, reasoning, finish, _usage = message_fields(
            {"choices": [{"message": case["message"], "finish_reason": finish}]})
    probe = case["probe"]
    if probe in ("greeting", "chinese", "math"):
        operands = (facts["math"]["a"], facts["math"]["b"])
        prompt = case.get("prompt", DEFAULT_PROMPTS[probe] % facts["math"])
        findings = chat_findings(probe, content, reasoning, finish, True, operands, prompt=prompt)
        return not findings, [f["signal"] for f in findings], "; ".join(f["detail"] for f in findings)
    n = facts["needle"]
    distractors = [tuple(d) for d in n["distractors"]]
    if probe == "needle":
        v = score(content, reasoning, n["key"], n["value"], distractors)
        return v["verdict"] == "retrieved", [v["verdict"]], v.get("detail", "")
    if probe == "control":
        v = score_control(content, reasoning, n["control_key"], [(n["key"], n["value"])] + distractors)
        return v["verdict"] == "passed", [v["verdict"]], v.get("detail", "")
    raise ValueError("unknown probe %r in case %s" % (probe, case["id"]))


def outcome(case, facts):
    """'ok', 'false pass', 'false failure' or 'wrong signal', with what was judged."""
    passed, signals, detail = judge(case, facts)
    want_pass = case["expect"] == "pass"
    if passed and not want_pass:
        return "false pass", signals, detail
    if not passed and want_pass:
        return "false failure", signals, detail
    if not passed and case.get("signal") and case["signal"] not in signals:
        return "wrong signal", signals, detail
    return "ok", signals, detail
