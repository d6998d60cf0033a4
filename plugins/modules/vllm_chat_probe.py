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
  - Before any text is judged, each answer must keep the response contract - a JSON chat completion from the served
    model (C(model) equal to O(served_model_name)), content a string or a list of text parts, C(finish_reason=stop),
    no C(tool_calls) (none are offered), and no template or tool-call markup, no line that opens another chat turn, no
    encoding corruption (U+FFFD, byte-fallback pieces, mojibake, dropped spaces). A body that is not that gives a
    signal, never an error.
  - With O(verifiable=true), greedy tasks whose answers are checked exactly are sent with the card's prompts, all as
    one concurrent batch (an answer that belongs to another request shows as a wrong answer) - copy a random string
    back, look a value up in a short table given in the prompt, and a Traditional Chinese question with a short known
    answer.
  - With O(relevance=true), the greeting and the Chinese answer are scored through the engine (vLLM's
    C(prompt_logprobs)) after their own prompt and after an unrelated one; an answer that is not at least
    O(relevance_margin) nats per token more likely after its own prompt does not answer it (C(off_prompt)). The
    margin has been calibrated only on a stand-in engine, and a broken kernel can clear it. Unless
    O(relevance_fails=true), an C(off_prompt) is an advisory (in the probe's C(advisories) and RV(advisories)), never
    the reason a probe fails; the engine's numerics (glm53.serving.vllm_reference_score) are what proves them.
  - With O(golden), a release's golden record (its answers to a fixed probe set, kept by the probes role), the
    record's own prompts are asked. An answer equal to the recorded one passes on that alone, held to the response
    contract and to no text rule. Every recorded answer is scored on this host again; one that became less likely
    than when it was recorded, by more than O(golden_tolerance), fails (C(golden_drift)). A differing answer is scored
    with the likeliest token of each place, and one with a token below the likeliest by more than O(golden_margin) fails
    (C(not_own_answer)), since greedy decoding writes the likeliest token. Any other differing answer parted from the
    record at a near tie (greedy decoding is not batch-invariant); it is shown beside the recorded one and the text
    checks judge it. Each probe's C(layer) says which decided.
  - Without O(golden), when every probe passed and O(record=true), each answer is scored for a golden record and
    returned in RV(answers).
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
  verifiable:
    description: Also send the tasks whose answers are checked exactly (copy, table look-up, a Chinese question).
    type: bool
    default: true
  relevance:
    description: Score the greeting and Chinese answers after their own prompt and after an unrelated one.
    type: bool
    default: true
  relevance_margin:
    description:
      - The least mean log-likelihood gain per token, in nats, of an answer after its own prompt over after an
        unrelated one. 0 accepts an answer exactly as likely after either prompt; see the collection's
        C(docs/verdicts.md) for how the default was chosen.
    type: float
    default: 0.1
  relevance_fails:
    description:
      - Whether an answer under O(relevance_margin) fails its probe (C(off_prompt)). Off, it is reported as an
        advisory. Turn it on only once the margin is calibrated on the engines you run.
    type: bool
    default: false
  seed:
    description: Seed for the random operands, strings and tables (random when unset; O(probe_set) otherwise).
    type: int
  probe_set:
    description:
      - A name that fixes the operands, strings and tables (the probes role gives the release's name and the
        weights', so every host of a release is asked the same and their answers can be compared). Ignored with
        O(seed) or O(golden).
    type: str
  numerics_sound:
    description:
      - Whether the engine's own figures are sound (the reference passages passed). When false the relevance margin
        is not computed, only noted (C(relevance_not_judged)), since a broken kernel can clear any margin.
    type: bool
    default: true
  golden:
    description:
      - The release's golden record, as the probes role keeps it (C(release), and C(probes), a list of the tasks with
        each answer's C(content), C(token_ids), C(tokens) and C(nll)); the answers of RV(answers) of a run whose
        every probe passed.
    type: dict
  golden_tolerance:
    description: The largest rise, in nats per token, of a recorded answer's score on this host.
    type: float
    default: 0.08
  golden_margin:
    description:
      - How far, in nats, a token of a differing answer may fall below the likeliest token at its place under this
        engine's own scores before the answer fails as not greedy decoding's own (C(not_own_answer)).
    type: float
    default: 1.0
  record:
    description: Without O(golden), score each answer of a run whose every probe passed, for a golden record.
    type: bool
    default: true
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
      relevance: {own_nll: 0.41, other_nll: 2.65, margin: 2.24}
      layer: text
      golden: null
      findings: []
answers:
  description:
    - Each probe's C(name) and C(content) (null when none came), for comparing hosts. Without O(golden), after a run
      whose every probe passed (and O(record=true)), each entry is one for a golden record - also C(prompt) and the
      task's other fields, C(token_ids), C(tokens) (the answer's span) and C(nll) (its mean negative log-likelihood
      per token, scored through the engine).
  returned: always
  type: list
  elements: dict
  sample: []
golden_release:
  description: The release whose golden record judged the answers, or null.
  returned: always
  type: str
  sample: null
probe_set:
  description: O(probe_set), as given.
  returned: always
  type: str
  sample: glm53-20261201/GLM-5.3-Flash-AWQ-INT4
advisories:
  description: One line per advisory finding (an C(off_prompt) that does not fail the probe), as in RV(summary).
  returned: always
  type: list
  elements: str
  sample: []
summary:
  description: One line per failed probe, naming the signal and quoting an excerpt.
  returned: always
  type: list
  elements: str
  sample: ["greeting: repeated_ngram in content: the 3-gram 'of the of' makes up 90% of 300 tokens («of the of the…»)"]
"""

import hashlib
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
from ansible_collections.glm53.serving.plugins.module_utils._reference import (
    UNRELATED_PROMPT,
    ScoreError,
    count_tokens,
    all_in_parallel,
    score_span,
    span_departures,
)
from ansible_collections.glm53.serving.plugins.module_utils._exact_answer import exact_findings
from ansible_collections.glm53.serving.plugins.module_utils import _golden
from ansible_collections.glm53.serving.plugins.module_utils._response_contract import chat_response
from ansible_collections.glm53.serving.plugins.module_utils._text_checks import (
    excerpt,
    judge_chat,
)

MIN_MAX_TOKENS = 2048
_COPY_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
_TABLE_WORDS = (("amber", "brisk", "cobalt", "dusky", "ember", "frosty", "golden", "hazel", "ivory", "jade"),
                ("anchor", "beacon", "canyon", "delta", "falcon", "harbor", "lantern", "meadow", "orchid", "pebble"))
# Traditional Chinese questions with one short answer each (accepted forms).
ZH_FACTS = (("台灣最高的山是哪一座？請只回答山名。", ["玉山"]),
            ("一個星期有幾天？請只用阿拉伯數字回答。", ["7"]),
            ("「日」和「月」合在一起是哪一個字？請只回答那個字。", ["明"]))


def verifiable_tasks(rng):
    """The tasks checked exactly: each a task dict (name, prompt, the accepted answers, and the table's other values
    that must not be given)."""
    copy = "-".join("".join(rng.choice(_COPY_ALPHABET) for _i in range(4)) for _j in range(3))
    keys = set()
    while len(keys) < 6:
        keys.add("%s-%s" % (rng.choice(_TABLE_WORDS[0]), rng.choice(_TABLE_WORDS[1])))
    keys = sorted(keys)
    values = rng.sample(range(1000, 10000), len(keys))
    asked = rng.randrange(len(keys))
    table = "\n".join("%s: %d" % (k, v) for k, v in zip(keys, values))
    question, answers = ZH_FACTS[rng.randrange(len(ZH_FACTS))]
    return [{"name": "copy", "prompt": "Repeat this string exactly, and nothing else: %s" % copy, "accepted": [copy]},
            {"name": "lookup", "prompt": "Here is a table:\n%s\nWhat is the value for %s? Answer with the number only."
             % (table, keys[asked]), "accepted": [str(values[asked])], "others": [str(v) for v in values]},
            {"name": "zh_fact", "prompt": question, "accepted": answers}]


def ask(client, p, prompt):
    """(body, None, latency), or (None, a finding, None) when no answer came."""
    try:
        _status, resp, elapsed = client.chat(p["served_model_name"], [{"role": "user", "content": prompt}],
                                             p["max_tokens"], timeout=p["request_timeout"], temperature=0,
                                             return_token_ids=True)
        return resp, None, elapsed
    except ProbeHTTPError as exc:
        return None, {"signal": "http_error", "field": "response", "excerpt": error_message(exc.body),
                      "detail": "HTTP %s" % exc.status}, None
    except (ProbeConnectionRefused, ProbeTimeout) as exc:
        return None, {"signal": "no_answer", "field": "response", "excerpt": "", "detail": str(exc)}, None


def _token_ids(resp):
    """The answer's token ids (vLLM's ``choices[0].token_ids`` with ``return_token_ids``), or None."""
    try:
        ids = resp["choices"][0].get("token_ids")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return ids if isinstance(ids, list) and all(isinstance(i, int) for i in ids) else None


def judge(p, task, answer, others, golden=None):
    """(verdict, content text) of one probe from its answer. An answer equal to the release's recorded one (``golden``)
    is held to the response contract only: the record decides it (see _golden), not the text checks."""
    name, prompt = task["name"], task["prompt"]
    resp, error, elapsed = answer
    verdict = {"name": name, "prompt": prompt, "passed": False, "findings": []}
    if error:
        verdict["findings"] = [error]
        return verdict, None
    fields, findings = chat_response(resp, p["served_model_name"])
    if not (golden and not findings and _golden.same_answer(fields["content"], golden.get("content"))):
        fields, findings = judge_chat(name, resp, p["served_model_name"], prompt, task.get("operands"),
                                      p["require_reasoning"])
        if not findings and task.get("accepted"):
            findings = exact_findings(fields["content"], task["accepted"],
                                      [o for o in others if o not in task["accepted"]])
    content, reasoning = fields["content"], fields["reasoning"]
    verdict["token_ids"] = _token_ids(resp)
    verdict.update(
        passed=not findings, findings=findings, finish_reason=fields["finish_reason"], latency_s=round(elapsed, 3),
        content_excerpt=excerpt(content or ""), reasoning_present=bool(reasoning and str(reasoning).strip()),
        completion_tokens=fields["usage"].get("completion_tokens"), prompt_tokens=fields["usage"].get("prompt_tokens"))
    return verdict, content


def relevance(client, p, verdict, content):
    """Score the answer after its own prompt and after an unrelated one (at once); a finding when the gain is too
    small."""
    timeout = p["request_timeout"]
    try:
        span = count_tokens(client, p["served_model_name"], content, timeout)
        own, other = all_in_parallel([
            lambda: score_span(client, p["served_model_name"], verdict["prompt"], content, span, timeout),
            lambda: score_span(client, p["served_model_name"], UNRELATED_PROMPT, content, span, timeout)])
    except (ScoreError, ProbeHTTPError, ProbeConnectionRefused, ProbeTimeout) as exc:
        return {"error": str(exc)}, {"signal": "no_scores", "field": "response", "excerpt": "",
                                     "detail": "the answer could not be scored through the engine: %s" % exc}
    margin = round(other["nll"] - own["nll"], 4)
    result = {"own_nll": own["nll"], "other_nll": other["nll"], "margin": margin, "tokens": own["tokens"]}
    if margin < p["relevance_margin"]:
        return result, {"signal": "off_prompt", "field": "content", "excerpt": excerpt(content),
                        "detail": "the answer is %.3f nats/token likelier after its own prompt than after an unrelated "
                                  "one (%.3f against %.3f), under the %.2f margin: it does not answer this prompt"
                                  % (margin, own["nll"], other["nll"], p["relevance_margin"])}
    return result, None


def run_batch(client, p, tasks, golden):
    """[(verdict, content)]: every task sent at once (threads), then each answer judged against the others'
    expected answers."""
    answers = all_in_parallel([(lambda t=task: ask(client, p, t["prompt"])) for task in tasks])
    judged = []
    for i, task in enumerate(tasks):
        others = [a for j, t in enumerate(tasks) if j != i for a in t.get("accepted") or []] + task.get("others", [])
        judged.append(judge(p, task, answers[i], others, golden.get(task["name"])))
    return judged


def score(client, p, prompt, text, span=None):
    """The text's score as the answer to ``prompt`` (span from /tokenize unless given)."""
    timeout = p["request_timeout"]
    span = span or count_tokens(client, p["served_model_name"], text, timeout)
    return score_span(client, p["served_model_name"], prompt, text, span, timeout)


def departure(client, p, prompt, text):
    """The first token of ``text`` as the answer to ``prompt`` that the engine's own scores put below the likeliest
    token at its place by more than golden_margin (one request with the likeliest token of each place), or None."""
    timeout, name = p["request_timeout"], p["served_model_name"]
    span = count_tokens(client, name, text, timeout)
    messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": text}]
    _s, body, _e = client.chat(name, messages, 1, timeout=timeout, temperature=0, prompt_logprobs=1,
                               continue_final_message=True, add_generation_prompt=False, return_token_ids=True)
    return _golden.first_departure(span_departures(body, span), p["golden_margin"])


def _score_error(exc):
    return {"signal": "no_scores", "field": "response", "excerpt": "",
            "detail": "the answers could not be scored through the engine: %s" % exc}


def against_golden(client, p, judged, golden):
    """Hold each answer to the release's recorded one: the recorded answer scored on this host (its drift), and a
    differing answer's first token below the likeliest one by more than the margin (departure). All requests at
    once; a probe that got no answer has nothing to hold."""
    rows = [(v, content, golden[v["name"]]) for v, content in judged if v["name"] in golden
            and not any(f["signal"] in ("http_error", "no_answer") for f in v["findings"])]
    calls = []
    for v, content, g in rows:
        calls.append(lambda v=v, g=g: score(client, p, v["prompt"], g["content"], int(g["tokens"])))
        differs = bool(content and content.strip()) and not _golden.same_answer(content, g["content"])
        calls.append((lambda v=v, c=content: departure(client, p, v["prompt"], c)) if differs else (lambda: None))
    try:
        scores = all_in_parallel(calls)
    except (ScoreError, ProbeHTTPError, ProbeConnectionRefused, ProbeTimeout) as exc:
        for v, _content, _g in rows:
            v["findings"].append(_score_error(exc))
            v["passed"] = False
        return
    for i, (v, content, g) in enumerate(rows):
        findings, info = _golden.judge(content, g, scores[2 * i], scores[2 * i + 1], p["golden_tolerance"])
        v["golden"] = info  # an answer equal to the recorded one was held to the response contract alone (judge)
        v["findings"].extend(findings)
        v["passed"] = not v["findings"]


def record_answers(client, p, tasks, judged):
    """Each answer scored for a golden record (the run's every probe passed): [record entry], or a finding."""
    try:
        scores = all_in_parallel([(lambda v=v, c=content: score(client, p, v["prompt"], c)) for v, content in judged])
    except (ScoreError, ProbeHTTPError, ProbeConnectionRefused, ProbeTimeout) as exc:
        return [], _score_error(exc)
    return [_golden.record_entry(task, content, v.pop("token_ids", None), sc)
            for task, (v, content), sc in zip(tasks, judged, scores)], None


def tasks_of(p, rng):
    """The probe set: the golden record's own when there is one, else built from ``rng``."""
    if p["golden"]:
        return [_golden.task_of(e) for e in p["golden"]["probes"]]
    tasks = [{"name": "greeting", "prompt": p["greeting_prompt"]}, {"name": "chinese", "prompt": p["chinese_prompt"]}]
    if p["math"]:
        a, b = rng.randint(101, 999), rng.randint(101, 999)
        tasks.append({"name": "math", "prompt": "What is %d * %d? Reply with the result." % (a, b), "operands": (a, b)})
    if p["verifiable"]:
        tasks += verifiable_tasks(rng)
    return tasks


def golden_problem(golden):
    """Why a golden record cannot be used, or None."""
    probes = golden.get("probes")
    if not isinstance(probes, list) or not probes:
        return "it has no probes"
    for e in probes:
        if not isinstance(e, dict) or not all(isinstance(e.get(k), str) and e.get(k) for k in ("name", "prompt", "content")):
            return "a probe lacks its name, prompt or content: %s" % str(e)[:120]
        if isinstance(e.get("tokens"), bool) or not isinstance(e.get("tokens"), int) or e["tokens"] < 1:
            return "probe %s has no token count" % e["name"]
        if isinstance(e.get("nll"), bool) or not isinstance(e.get("nll"), (int, float)):
            return "probe %s has no score" % e["name"]
    return None


def relevance_round(client, p, probes, judged):
    """Score the greeting and the Chinese answer after their own prompt and an unrelated one (see relevance)."""
    scored = [(v, content) for v, content in judged
              if p["relevance"] and v["passed"] and v["name"] in ("greeting", "chinese")]
    if scored and not p["numerics_sound"]:
        for v, _content in scored:
            v["advisories"] = [{"signal": "relevance_not_judged", "field": "content", "excerpt": "",
                                "detail": "the engine's own figures are not sound (the reference passages failed), so "
                                          "a likelihood margin means nothing"}]
        return
    for (v, _content), result in zip(scored, all_in_parallel([
            (lambda v=v, c=content: relevance(client, p, v, c)) for v, content in scored])):
        v["relevance"], finding = result
        if finding and (p["relevance_fails"] or finding["signal"] != "off_prompt"):
            v["findings"].append(finding)
            v["passed"] = False
        elif finding:
            v["advisories"] = [finding]


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
            verifiable=dict(type="bool", default=True),
            relevance=dict(type="bool", default=True),
            relevance_margin=dict(type="float", default=0.1),
            relevance_fails=dict(type="bool", default=False),
            numerics_sound=dict(type="bool", default=True),
            seed=dict(type="int"),
            probe_set=dict(type="str"),
            golden=dict(type="dict"),
            golden_tolerance=dict(type="float", default=_golden.TOLERANCE_NATS),
            golden_margin=dict(type="float", default=_golden.MARGIN_NATS),
            record=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["max_tokens"] < MIN_MAX_TOKENS:
        module.fail_json(msg="max_tokens=%d is below %d: GLM-5.3 reasons before it answers and a smaller budget "
                             "cuts the answer off (the card: max_tokens >= 2048)." % (p["max_tokens"], MIN_MAX_TOKENS))
    if p["request_timeout"] < 1:
        module.fail_json(msg="request_timeout must be at least 1 second, got %d" % p["request_timeout"])
    if not -1.0 <= p["relevance_margin"] <= 5.0:
        module.fail_json(msg="relevance_margin must be between -1 and 5 nats per token, got %s" % p["relevance_margin"])
    for key in ("golden_tolerance", "golden_margin"):
        if not 0.0 < p[key] <= 5.0:
            module.fail_json(msg="%s must be above 0 and at most 5 nats per token, got %s" % (key, p[key]))
    if p["golden"] and golden_problem(p["golden"]):
        module.fail_json(msg="golden is not a golden record this module made: %s" % golden_problem(p["golden"]))
    client = client_from_params(p, p["request_timeout"])
    if p["seed"] is not None:
        rng = random.Random(p["seed"])
    elif p["probe_set"]:  # one probe set per name: every host of a release is asked the same
        rng = random.Random(int(hashlib.sha256(p["probe_set"].encode("utf-8")).hexdigest()[:16], 16))
    else:
        rng = random.SystemRandom()
    tasks = tasks_of(p, rng)
    golden = dict((e["name"], e) for e in (p["golden"] or {}).get("probes") or [])
    judged = run_batch(client, p, tasks, golden)
    probes = [v for v, _content in judged]
    answers = [{"name": v["name"], "content": content} for v, content in judged]
    if golden:  # the record replaces the relevance margin as the test of whether an answer belongs to its prompt
        against_golden(client, p, judged, golden)
    else:
        relevance_round(client, p, probes, judged)
        if p["record"] and all(v["passed"] for v in probes):
            answers, finding = record_answers(client, p, tasks, judged)
            if finding:
                probes[0]["findings"].append(finding)
                probes[0]["passed"] = False
    for v in probes:
        v.pop("token_ids", None)
        v.setdefault("golden", None)
        v["layer"] = (v["golden"] or {}).get("layer") or "text"

    def lines(key):
        return ["%s: %s in %s: %s (%s)" % (v["name"], f["signal"], f["field"], f["detail"],
                                           "«%s»" % f["excerpt"] if f["excerpt"] else "no text")
                for v in probes for f in v.get(key) or []]

    summary, advisories = lines("findings"), lines("advisories")
    passed = all(v["passed"] for v in probes)
    result = dict(changed=False, passed=passed, probes=probes, summary=summary, advisories=advisories, answers=answers,
                  golden_release=(p["golden"] or {}).get("release"), probe_set=p["probe_set"])
    if not passed:
        module.fail_json(msg="Chat probe failed: " + "; ".join(summary), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
