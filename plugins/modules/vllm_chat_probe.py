#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: vllm_chat_probe
short_description: Chat smoke test of a GLM-5.3 endpoint with a garbage detector
version_added: "0.1.0"
description:
  - The model card's verification checklist, through C(/v1/chat/completions) only (raw completions
    degenerate on this model). A greeting, a Traditional Chinese prompt and simple arithmetic with random
    operands, checked numerically. The product must be stated and no other result; restated operands and
    correct working are allowed, thousands separators and LaTeX (C(\times), C(56{,}088)) too.
  - Every answer goes through a garbage detector over content and reasoning (repeated n-grams, a token or
    character repeated to the end, a low distinct-token ratio, the "scaled-token" signature, token salad
    across scripts or opaque letter-and-digit codes, digit garbage, empty or invisible-only content, and
    chat-template or reasoning markup such as C(</think>) in the answer). The Chinese answer must be
    Chinese, and Traditional, judged by the share of Simplified-only characters (OpenCC's tables) among
    those that tell the scripts apart.
  - Then whether the answer answers its prompt (the relevance layer) - not a refusal, not the prompt echoed
    back, not a sentence said again and again, not a count that runs on (25 consecutive integers), not an emoji
    or symbol flood, in the prompt's script, and for the greeting a greeting; an answer with
    C(finish_reason=length) fails as C(hit_token_limit) (each probe asks for a short answer).
  - Reasoning must be present as C(reasoning) or C(reasoning_content) (the first that holds text).
    C(finish_reason=length) with null content is reported as "reasoning ran out of budget", never as a pass.
  - Fails when any probe fails; every verdict names its signal and quotes an excerpt.
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
  max_tokens:
    description: Completion budget per probe; at least 2048 (reasoning eats budget).
    type: int
    default: 2048
  greeting_prompt:
    description: The greeting.
    type: str
    default: Hello! Please greet me back in one short sentence.
  chinese_prompt:
    description: The Chinese prompt; the answer must be in Traditional Chinese.
    type: str
    default: 用一句話介紹自己
  math:
    description: Also ask a multiplication of two random 3-digit numbers and check the result.
    type: bool
    default: true
  require_reasoning:
    description: Fail when no reasoning field is present.
    type: bool
    default: true
  request_timeout:
    description: Seconds per request.
    type: int
    default: 600
extends_documentation_fragment:
  - glm53.serving.openai_endpoint
  - glm53.serving.info_module
"""

EXAMPLES = r"""
- name: Smoke-test the chat endpoint
  glm53.serving.vllm_chat_probe:
    served_model_name: glm53-flash-awq
    api_key: "{{ vault_vllm_api_key }}"
"""

RETURN = r"""
passed:
  description: Whether every probe passed.
  returned: always
  type: bool
  sample: true
probes:
  description: One verdict per probe.
  returned: always
  type: list
  elements: dict
  sample:
    - name: chinese
      passed: true
      prompt: 用一句話介紹自己
      content_excerpt: 我是一個由智譜訓練的大型語言模型…
      reasoning_present: true
      finish_reason: stop
      completion_tokens: 70
      latency_s: 2.1
      findings: []
summary:
  description: One line per failed probe, naming the signal and quoting an excerpt.
  returned: always
  type: list
  elements: str
  sample: ["greeting: repeated_ngram in content: the 3-gram 'of the of' makes up 90% of 300 tokens («of the of the…»)"]
"""

import random

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._openai_client import (
    ProbeConnectionRefused,
    ProbeHTTPError,
    ProbeTimeout,
    client_from_params,
    endpoint_argument_spec,
    error_message,
)
from ansible_collections.glm53.serving.plugins.module_utils._text_checks import (
    excerpt,
    judge_chat,
)

MIN_MAX_TOKENS = 2048


def run_probe(client, p, name, prompt, operands=None):
    verdict = {"name": name, "prompt": prompt, "passed": False, "findings": []}
    try:
        _status, resp, elapsed = client.chat(p["served_model_name"], [{"role": "user", "content": prompt}], p["max_tokens"],
                                             timeout=p["request_timeout"], temperature=0)
    except ProbeHTTPError as exc:
        verdict["findings"] = [{"signal": "http_error", "field": "response", "excerpt": error_message(exc.body),
                                "detail": "HTTP %s" % exc.status}]
        return verdict
    except (ProbeConnectionRefused, ProbeTimeout) as exc:
        verdict["findings"] = [{"signal": "no_answer", "field": "response", "excerpt": "", "detail": str(exc)}]
        return verdict
    fields, findings = judge_chat(name, resp, p["served_model_name"], prompt, operands, p["require_reasoning"])
    content, reasoning, finish, usage = fields["content"], fields["reasoning"], fields["finish_reason"], fields["usage"]
    verdict.update(
        passed=not findings, findings=findings, finish_reason=finish, latency_s=round(elapsed, 3),
        content_excerpt=excerpt(content or ""), reasoning_present=bool(reasoning and str(reasoning).strip()),
        completion_tokens=usage.get("completion_tokens"), prompt_tokens=usage.get("prompt_tokens"))
    return verdict


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **endpoint_argument_spec(),
            served_model_name=dict(type="str", required=True, aliases=["model"]),
            max_tokens=dict(type="int", default=MIN_MAX_TOKENS, no_log=False),
            greeting_prompt=dict(type="str", default="Hello! Please greet me back in one short sentence."),
            chinese_prompt=dict(type="str", default="用一句話介紹自己"),
            math=dict(type="bool", default=True),
            require_reasoning=dict(type="bool", default=True),
            request_timeout=dict(type="int", default=600),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["max_tokens"] < MIN_MAX_TOKENS:
        module.fail_json(msg="max_tokens=%d is below %d: GLM-5.3 reasons before it answers and a smaller budget "
                             "cuts the answer off (the card: max_tokens >= 2048)." % (p["max_tokens"], MIN_MAX_TOKENS))
    if p["request_timeout"] < 1:
        module.fail_json(msg="request_timeout must be at least 1 second, got %d" % p["request_timeout"])
    client = client_from_params(p, p["request_timeout"])
    probes = [run_probe(client, p, "greeting", p["greeting_prompt"]),
              run_probe(client, p, "chinese", p["chinese_prompt"])]
    if p["math"]:
        rng = random.SystemRandom()
        a, b = rng.randint(101, 999), rng.randint(101, 999)

        probes.append(run_probe(client, p, "math", "What is %d * %d? Reply with the result." % (a, b), (a, b)))
    summary = []
    for v in probes:
        for f in v["findings"]:
            summary.append("%s: %s in %s: %s (%s)" % (v["name"], f["signal"], f["field"], f["detail"],
                                                      "«%s»" % f["excerpt"] if f["excerpt"] else "no text"))
    passed = all(v["passed"] for v in probes)
    result = dict(changed=False, passed=passed, probes=probes, summary=summary)
    if not passed:
        module.fail_json(msg="Chat probe failed: " + "; ".join(summary), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
