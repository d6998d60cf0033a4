#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: vllm_needle
short_description: RULER-style needle-in-a-haystack retrieval test at 400-500K tokens
version_added: "0.1.0"
description:
  - Generates a varied haystack locally (no downloads), a fresh random key and 7-digit value per run, and
    distractor needles with other keys; inserts the needle at several depths and asks for it through
    C(/v1/chat/completions) at temperature 0.
  - Sizes the haystack with the server's own C(/tokenize) in chat form to within O(tolerance) of each
    target, with at most 4 C(/tokenize) calls, never above C(max_model_len - max_tokens - margin_tokens).
  - Scores the answer's content only (the reasoning is kept as a diagnostic). C(retrieved) means the value
    is given and no other candidate number is; a value beside another needle's value, a hedge ("either X
    or Y") or a value next to "not found" is C(ambiguous), a failure; another needle's value is
    C(distractor); the right key with wrong digits is C(partial) (the sm89 indexer bug loses digits but
    keeps words); no value, or "not found", is C(missed). Degenerate output (a loop to the end, a run of one
    token or of invisible characters, chat-template or reasoning markup in the content) is C(garbage),
    whatever number it gives.
  - A target that the server's context cannot hold within O(tolerance) is a failure (C(cannot_test)), never
    shrunk silently. Every row records the tokens actually sent (C(usage.prompt_tokens)), checked against
    the sized count, and the latency of each depth.
  - Optionally a control question about a key that is not in the text. It fails only when the content gives a
    number as the answer for that key (C(failed)), when it has no visible content (C(no_answer)), when it
    says no text was given (C(prompt_not_received); the haystack never reached the model) or when it is
    degenerate output (C(garbage)); a clear "not there" passes, also when it lists what the text holds.
author:
  - glm53.serving contributors (@glm53)
options:
  served_model_name:
    description:
      - The served model name (the engine's C(--served-model-name)), the same option as the other endpoint modules'.
      - C(model) is its alias (the name this option had before 0.2.0).
    type: str
    required: true
    aliases: [model]
  targets:
    description: Prompt sizes to test, in tokens (at least 1000 each).
    type: list
    elements: int
    default: [450000]
  depths:
    description: Needle depths, in percent of the haystack.
    type: list
    elements: int
    default: [10, 30, 50, 70, 90]
  distractors:
    description: Distractor needles with other keys.
    type: int
    default: 4
  max_tokens:
    description: Completion budget (reasoning included).
    type: int
    default: 4096
  margin_tokens:
    description: Tokens kept free below C(max_model_len - max_tokens).
    type: int
    default: 256
  tolerance:
    description: Allowed sizing error, as a fraction of the target, in (0, 0.2].
    type: float
    default: 0.01
  control:
    description: Also ask about a key that is not in the text; the answer must not give a number for it.
    type: bool
    default: true
  seed:
    description: Seed for the haystack, key and value (default a fresh random one, reported).
    type: int
  request_timeout:
    description: Seconds per chat request (a 500K prefill takes minutes).
    type: int
    default: 3600
extends_documentation_fragment:
  - glm53.serving.openai_endpoint
  - glm53.serving.info_module
"""

EXAMPLES = r"""
- name: Needle at 450K tokens, five depths
  glm53.serving.vllm_needle:
    served_model_name: glm53-flash-awq
    targets: [450000]
"""

RETURN = r"""
passed:
  description: Whether every depth was retrieved and the control passed.
  returned: always
  type: bool
  sample: true
key:
  description: The key asked for in this run.
  returned: always
  type: str
  sample: brave-otter
value:
  description: The value of the needle in this run.
  returned: always
  type: str
  sample: "4729103"
seed:
  description: The seed of this run (pass it back to reproduce the haystack).
  returned: always
  type: int
  sample: 1234567
max_model_len:
  description: The served context.
  returned: always
  type: int
  sample: 524288
results:
  description: One entry per target, with the sizing and each depth's verdict.
  returned: always
  type: list
  elements: dict
  sample:
    - target: 450000
      limit: 519936
      sentences: 26470
      tokens: 449871
      sizing_error_pct: -0.03
      tokenize_calls: 3
      verdict: passed
      depths:
        - depth: 10
          verdict: retrieved
          word_part: true
          digit_part: true
          reasoning_has_value: true
          answered: "4729103"
          prompt_tokens: 449871
          tokens_sized: 449871
          latency_s: 291.4
          answer_excerpt: The special magic number for brave-otter is 4729103.
      control: {verdict: passed, asked: calm-heron, says_absent: true}
summary:
  description: One line per failed depth or control.
  returned: always
  type: list
  elements: str
  sample: ["450000 tokens (449871 sent), depth 70: partial: digits wrong: 4739103, expected 4729103 (6 of 7 digits in place)"]
"""

import random
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._needle import Haystack, judge_control, judge_needle, size_haystack
from ansible_collections.glm53.serving.plugins.module_utils._openai_client import (
    ProbeConnectionRefused,
    ProbeHTTPError,
    ProbeTimeout,
    client_from_params,
    endpoint_argument_spec,
    error_message,
)
from ansible_collections.glm53.serving.plugins.module_utils._text_checks import excerpt


def needle_input_problems(p):
    """What is wrong with the options, before any request is sent."""
    problems = []
    if not p["targets"] or any(t < 1000 for t in p["targets"]):
        problems.append("targets must be a non-empty list of prompt sizes of at least 1000 tokens, got %s" % p["targets"])
    if not p["depths"] or any(not 0 <= d <= 100 for d in p["depths"]):
        problems.append("depths must be a non-empty list of percentages between 0 and 100, got %s" % p["depths"])
    if not 0 <= p["distractors"] <= 50:
        problems.append("distractors must be between 0 and 50, got %d" % p["distractors"])
    if p["max_tokens"] < 1 or p["margin_tokens"] < 0:
        problems.append("max_tokens must be at least 1 and margin_tokens at least 0, got %d and %d"
                        % (p["max_tokens"], p["margin_tokens"]))
    if not 0 < p["tolerance"] <= 0.2:
        problems.append("tolerance is a fraction of the target in (0, 0.2], got %s" % p["tolerance"])
    if p["request_timeout"] < 1:
        problems.append("request_timeout must be at least 1 second, got %d" % p["request_timeout"])
    return problems


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **endpoint_argument_spec(),
            served_model_name=dict(type="str", required=True, aliases=["model"]),
            targets=dict(type="list", elements="int", default=[450000]),
            depths=dict(type="list", elements="int", default=[10, 30, 50, 70, 90]),
            distractors=dict(type="int", default=4),
            max_tokens=dict(type="int", default=4096, no_log=False),
            margin_tokens=dict(type="int", default=256, no_log=False),
            tolerance=dict(type="float", default=0.01),
            control=dict(type="bool", default=True),
            seed=dict(type="int"),
            request_timeout=dict(type="int", default=3600),
        ),
        supports_check_mode=True,
    )
    p = module.params
    problems = needle_input_problems(p)
    if problems:
        module.fail_json(msg="; ".join(problems))
    seed = p["seed"] if p["seed"] is not None else random.SystemRandom().randint(0, 2**31)
    client = client_from_params(p, p["request_timeout"])
    hay = Haystack(seed, p["distractors"])

    def messages(text):
        return [{"role": "user", "content": text}]

    try:
        _s, models, _e = client.get("/v1/models", timeout=60)
        card = next((m for m in models.get("data", []) if m.get("id") == p["served_model_name"]), None)
        if card is None:
            module.fail_json(msg="%s is not served here (served: %s)" % (p["served_model_name"], [m.get("id") for m in models["data"]]))
        mml = card["max_model_len"]
    except (ProbeHTTPError, ProbeTimeout, ProbeConnectionRefused) as exc:
        module.fail_json(msg="cannot read /v1/models: %s" % exc)
    limit = mml - p["max_tokens"] - p["margin_tokens"]

    def count_tokens(text):
        _s, body, _e = client.post("/tokenize", {"model": p["served_model_name"], "messages": messages(text),
                                                 "add_generation_prompt": True}, timeout=600)
        return int(body["count"])

    def ask(text):
        t0 = time.monotonic()
        try:
            _s, resp, _e = client.chat(p["served_model_name"], messages(text), p["max_tokens"], temperature=0)
        except ProbeHTTPError as exc:
            return None, {"verdict": "error", "detail": "HTTP %s %s" % (exc.status, error_message(exc.body))}, t0
        except (ProbeTimeout, ProbeConnectionRefused) as exc:
            return None, {"verdict": "error", "detail": str(exc)}, t0
        return resp, None, t0

    results, summary = [], []
    for target in p["targets"]:
        entry = {"target": target, "limit": limit, "depths": []}
        if target * (1 - p["tolerance"]) > limit:
            entry.update(verdict="cannot_test", tokens=None,
                         detail="cannot test %d tokens: max_model_len %d allows at most %d (max_model_len - "
                                "max_tokens %d - margin %d)" % (target, mml, limit, p["max_tokens"], p["margin_tokens"]))
            summary.append(entry["detail"])
            results.append(entry)
            continue
        try:
            n, tokens, calls = size_haystack(count_tokens, hay, target, limit, p["tolerance"])
        except (ProbeHTTPError, ProbeTimeout, ProbeConnectionRefused, ValueError, KeyError, TypeError) as exc:
            module.fail_json(msg="sizing the haystack with /tokenize failed: %s" % exc, seed=seed)
        entry.update(sentences=n, tokens=tokens, tokenize_calls=calls,
                     sizing_error_pct=round(100.0 * (tokens - target) / target, 3))
        if abs(tokens - target) > p["tolerance"] * target:
            entry.update(verdict="cannot_test",
                         detail="cannot test %d tokens: the haystack came to %d tokens after %d /tokenize calls, "
                                "outside the %.1f%% tolerance" % (target, tokens, calls, 100 * p["tolerance"]))
            if tokens < target and target > limit - p["tolerance"] * target:
                # the haystack was held under the context limit: say so, as the pre-check above does
                entry["detail"] += ("; the cause is max_model_len %d, which allows at most %d (max_model_len - "
                                    "max_tokens %d - margin %d): lower the target or raise max_model_len"
                                    % (mml, limit, p["max_tokens"], p["margin_tokens"]))
            summary.append(entry["detail"])
            results.append(entry)
            continue
        for depth in p["depths"]:
            resp, error, t0 = ask(hay.prompt(n, depth))
            row = {"depth": depth, "latency_s": round(time.monotonic() - t0, 3), "tokens_sized": tokens}
            if error:
                row.update(error, word_part=False, digit_part=False, prompt_tokens=None)
            else:
                fields, verdict = judge_needle(resp, p["served_model_name"], hay.key, hay.value, hay.distractors)
                content, reasoning, finish, usage = (fields["content"], fields["reasoning"], fields["finish_reason"],
                                                     fields["usage"])
                row.update(verdict)
                row.update(prompt_tokens=usage.get("prompt_tokens"), finish_reason=finish,
                           answer_excerpt=excerpt(content or "", 0, 120),
                           reasoning_excerpt=excerpt(reasoning or "", 0, 120))
                if content is None or not str(content).strip():
                    row.setdefault("detail", "")
                    row["detail"] = "no content (finish_reason=%s)%s" % (finish, "; " + row["detail"] if row["detail"] else "")
                if usage.get("prompt_tokens") is not None and abs(usage["prompt_tokens"] - tokens) > 0.01 * tokens:
                    row["verdict"] = "size_mismatch"
                    row["detail"] = "usage.prompt_tokens %s differs from the /tokenize count %d" % (
                        usage["prompt_tokens"], tokens)
            entry["depths"].append(row)
            if row["verdict"] != "retrieved":
                summary.append("%d tokens (%s sent), depth %d: %s: %s" % (
                    target, row.get("prompt_tokens") or tokens, depth, row["verdict"], row.get("detail", "")))
        if p["control"]:
            resp, error, t0 = ask(hay.prompt(n, 50, asked_key=hay.control_key))
            if error:
                entry["control"] = dict(error)
            else:
                needles = [(hay.key, hay.value)] + list(hay.distractors)
                fields, entry["control"] = judge_control(resp, p["served_model_name"], hay.control_key, needles)
                content, usage = fields["content"], fields["usage"]
                entry["control"].update(answer_excerpt=excerpt(content or "", 0, 120),
                                        prompt_tokens=usage.get("prompt_tokens"))
            if entry["control"]["verdict"] != "passed":
                summary.append("%d tokens, control: %s" % (target, entry["control"].get("detail")))
        retrieved = sum(1 for d in entry["depths"] if d["verdict"] == "retrieved")
        entry["verdict"] = "passed" if retrieved == len(entry["depths"]) and \
            entry.get("control", {}).get("verdict", "passed") == "passed" else "failed"
        results.append(entry)

    passed = not summary
    out = dict(changed=False, passed=passed, key=hay.key, value=hay.value, seed=seed, max_model_len=mml,
               results=results, summary=summary)
    if not passed:
        module.fail_json(msg="Needle test failed: " + "; ".join(summary), **out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
