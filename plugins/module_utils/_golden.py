# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A release's own answers as the judge of its later answers: the golden record's decision for one probe.

Standard library only. The probes decode greedily, so a release proved on one host answers a fixed probe set the
same way on every host whose engine is sound. The golden record keeps, for each probe, the prompt, the answer and
that answer's score through the engine (mean negative log-likelihood per token, from prompt logprobs, over the
answer's span). A later run asks the same prompts and scores the recorded answer again:

- the answer equals the recorded one: it passes on that alone, and no text rule is consulted;
- the recorded answer became less likely on this host than when it was recorded, beyond the tolerance: the engine no
  longer predicts what the release answered (numerics, template or weights moved) - ``golden_drift``;
- the answer differs, and at one of its tokens this host's own scores (prompt logprobs of the answer, with the
  likeliest token at each place) put another token first by more than the margin: greedy decoding takes the
  likeliest token, so the decoder did not write what the model predicts (a token lost or doubled, another request's
  answer) - ``not_own_answer``;
- otherwise the answer differs at a near tie (greedy decoding is not batch-invariant: a busy host may take another
  token where two are almost equally likely): it is shown beside the recorded one and the text checks judge it.
"""

from __future__ import annotations

# The largest rise, in nats per token, of the recorded answer's score on a host before the host fails: the same
# figure as the reference passages' tolerance (module_utils/_reference.py), since it measures the same thing, the
# likelihood of fixed text under given weights.
TOLERANCE_NATS = 0.08
# How far, in nats, a written token may fall below the likeliest one at its place before the answer is not greedy
# decoding's. Two greedy answers of the same weights part where two tokens are almost equally likely (a near tie,
# hundredths of a nat apart, as batches differ); a lost first letter or a doubled token is several nats below the
# likeliest token, and another request's answer more. Prefill and decode kernels agree far closer than one nat.
MARGIN_NATS = 1.0
# The fields of a probe's task that a record keeps, so a later run asks exactly the same.
TASK_FIELDS = ("name", "prompt", "accepted", "others", "operands")


def _excerpt(text, width=80):
    text = " ".join(str(text or "").split())
    return text if len(text) <= width else text[:width - 1] + "…"


def same_answer(content, golden_content):
    """Whether an answer is the recorded one (white space at its ends aside, as the template may strip it)."""
    return content is not None and golden_content is not None and content.strip() == golden_content.strip()


def record_entry(task, content, token_ids, score):
    """One probe of a golden record: its task as asked, the answer, its token ids and its score."""
    entry = dict((k, task[k]) for k in TASK_FIELDS if task.get(k) is not None)
    if "operands" in entry:
        entry["operands"] = list(entry["operands"])
    entry.update(content=content, token_ids=token_ids, tokens=score["tokens"], nll=score["nll"])
    return entry


def task_of(entry):
    """The task a golden record's probe asks (the fields a task has, nothing of the answer)."""
    task = dict((k, entry[k]) for k in TASK_FIELDS if entry.get(k) is not None)
    if "operands" in task:
        task["operands"] = tuple(task["operands"])
    return task


def judge(content, golden, golden_now, departure=None, tolerance=TOLERANCE_NATS):
    """(findings, info) for one probe against its golden entry.

    ``golden_now`` is the recorded answer scored on this host now; ``departure`` is, for a differing answer, the first
    of its tokens that this host's own scores put below the likeliest one by more than the margin ({index, token,
    logprob, likeliest, likeliest_logprob}), or None. ``info`` goes into the probe's verdict: which layer decided
    (``golden`` when the record decided, ``text`` when the text checks must judge a differing answer at a near tie),
    and the figures."""
    differs = not same_answer(content, golden.get("content"))
    info = {"differs": differs, "recorded_nll": golden.get("nll"), "recorded_nll_now": golden_now.get("nll"),
            "layer": "text" if differs else "golden"}
    if differs:
        info["recorded_excerpt"] = _excerpt(golden.get("content"))
    findings = []
    rise = golden_now["nll"] - float(golden["nll"])
    instead = " It answered «%s» instead." % _excerpt(content) if differs else ""
    if rise > tolerance:
        findings.append({
            "signal": "golden_drift", "field": "content", "excerpt": _excerpt(golden.get("content")),
            "detail": "the release's recorded answer is %.4f nats/token on this host against %.4f when it was recorded "
                      "(%+.4f; tolerance %.3f nats): the engine no longer predicts what this release answered (its "
                      "numerics, its chat template or its weights changed).%s"
                      % (golden_now["nll"], float(golden["nll"]), rise, tolerance, instead)})
    if differs and departure:
        info["departure"] = departure
        findings.append({
            "signal": "not_own_answer", "field": "content", "excerpt": _excerpt(content),
            "detail": "at its token %d the answer has «%s» (%.2f) where this engine's own scores put «%s» first (%.2f), "
                      "%.2f nats apart: greedy decoding wrote what the model does not predict (a token lost or doubled, "
                      "another request's answer); the release's recorded answer is «%s»"
                      % (departure["index"] + 1, departure["token"], departure["logprob"], departure["likeliest"],
                         departure["likeliest_logprob"], departure["likeliest_logprob"] - departure["logprob"],
                         _excerpt(golden.get("content")))})
    if findings:
        info["layer"] = "golden"
    return findings, info


def first_departure(tops, margin=MARGIN_NATS):
    """The first token of ``tops`` (_reference.span_departures) below the likeliest one by more than ``margin``."""
    for i, (lp, best_lp, text, best_text) in enumerate(tops):
        if best_lp - lp > margin:
            return {"index": i, "token": text.strip(), "logprob": round(lp, 3), "likeliest": best_text.strip(),
                    "likeliest_logprob": round(best_lp, 3)}
    return None
