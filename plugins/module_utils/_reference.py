# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Score fixed text through the engine: the mean negative log-likelihood per token of a passage, language-free.

Standard library only. A passage is put as the assistant's answer after a user prompt and sent with
``continue_final_message: true``, ``add_generation_prompt: false``, ``max_tokens: 1`` and ``prompt_logprobs: 0``
(vLLM's extra request parameter; the response's top-level ``prompt_logprobs`` has one entry per prompt token, each a
dict from token id to ``{logprob, rank, decoded_token}``, the first entry null). ``return_token_ids`` adds
``prompt_token_ids``, by which each entry's own token is looked up. The passage's span is its last K tokens, K from
``/tokenize`` of the passage alone. A broken kernel, a wrong checkpoint or a wrong template moves the figure by orders
of magnitude (a uniform guess over GLM's vocabulary of about 151,000 tokens is 11.9 nats), whatever text the model
would write.
"""

from __future__ import annotations

import math
import threading

# Fixed passages, written for this collection: ordinary prose in the card's two languages and ordinary code, a few
# hundred tokens each (prompt logprobs cost a vocabulary-sized row per token).
PASSAGES = {
    "english": {
        "prompt": "Write a short paragraph about how a river town changes with the seasons.",
        "text": (
            "In spring the river rises with melted snow, and the town wakes slowly. Boats that spent the winter on "
            "the bank are painted and pushed back into the water, and the market by the bridge fills with early "
            "vegetables. By summer the water is low and warm; children swim near the old mill while their parents "
            "sit in the shade and talk about the harvest. Autumn brings fog in the mornings and long lines of "
            "carts carrying apples to the station. When winter returns, the river freezes at the edges, the ferry "
            "stops running, and people gather in the library and the bakery, waiting for the ice to break again."),
    },
    "chinese": {
        "prompt": "請用一段話描述一座山城一天中的變化。",
        "text": (
            "清晨的山城被薄霧包圍，石階上還留著夜裡的露水。賣早點的攤子最先亮起燈，蒸籠冒出白煙，學生背著書包沿著"
            "小巷往下走。到了中午，陽光穿過雲層照在紅色的屋頂上，茶館裡坐滿了聊天的老人，遠處傳來火車經過山谷的"
            "聲音。傍晚時分，山風漸漸變涼，家家戶戶開始準備晚餐，飯菜的香氣飄散在街道之間。夜深以後，整座城市安靜"
            "下來，只剩下路燈照著蜿蜒的石階，等待下一個清晨的到來。"),
    },
    "code": {
        "prompt": "Write a small Python function that groups words by their first letter.",
        "text": (
            "from collections import defaultdict\n\n\n"
            "def group_by_initial(words):\n"
            "    \"\"\"Return a dict that maps each first letter to the sorted words starting with it.\"\"\"\n"
            "    groups = defaultdict(list)\n"
            "    for word in words:\n"
            "        if not word:\n"
            "            continue\n"
            "        groups[word[0].lower()].append(word)\n"
            "    return {letter: sorted(items) for letter, items in sorted(groups.items())}\n\n\n"
            "if __name__ == \"__main__\":\n"
            "    sample = [\"apple\", \"banana\", \"avocado\", \"cherry\", \"blueberry\"]\n"
            "    for letter, items in group_by_initial(sample).items():\n"
            "        print(letter, \", \".join(items))\n"),
    },
}
# A request with no relation to the card's prompts: an answer is scored after it and after its own prompt.
UNRELATED_PROMPT = "Name the capital city of Australia."
# vLLM sends -inf as this value.
CLAMPED = -9999.0


class ScoreError(Exception):
    """The engine's answer to a scoring request is not what vLLM sends (no prompt logprobs, a short list...)."""


def _entry_logprob(entry, token_id):
    """The logprob of the prompt's own token in one prompt_logprobs entry (looked up by id, never the max)."""
    if not isinstance(entry, dict) or not entry:
        raise ScoreError("a prompt_logprobs entry is %r, not a dict of token ids" % (entry,))
    item = entry.get(str(token_id)) if token_id is not None else None
    if item is None and token_id is not None:
        item = entry.get(token_id)
    if item is None:
        if token_id is not None or len(entry) != 1:
            raise ScoreError("the prompt token %s is not in its prompt_logprobs entry (%s)"
                             % (token_id, ", ".join(str(k) for k in list(entry)[:4])))
        item = next(iter(entry.values()))
    value = item.get("logprob") if isinstance(item, dict) else item
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value > 1e-6:
        raise ScoreError("a logprob of %r is not a log-probability" % (value,))
    return float(value)


def span_logprobs(body, span):
    """The logprobs of the last ``span`` prompt tokens in a chat completion body that asked for prompt logprobs."""
    if not isinstance(body, dict):
        raise ScoreError("the body is not a JSON object: %s" % str(body)[:120])
    entries = body.get("prompt_logprobs")
    if not isinstance(entries, list) or not entries:
        raise ScoreError("no prompt_logprobs in the answer (keys: %s): does the engine accept vLLM's prompt_logprobs "
                         "request parameter?" % ", ".join(sorted(str(k) for k in body)[:10]))
    ids = body.get("prompt_token_ids")
    if ids is not None and (not isinstance(ids, list) or len(ids) != len(entries)):
        raise ScoreError("prompt_token_ids has %s entries, prompt_logprobs %d" % (
            len(ids) if isinstance(ids, list) else type(ids).__name__, len(entries)))
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    if usage.get("prompt_tokens") not in (None, len(entries)):
        raise ScoreError("prompt_logprobs has %d entries for %s prompt tokens" % (len(entries), usage["prompt_tokens"]))
    if not 0 < span < len(entries):
        raise ScoreError("the passage's %d tokens do not fit in a prompt of %d" % (span, len(entries)))
    start = len(entries) - span
    return [_entry_logprob(entries[i], ids[i] if ids else None) for i in range(start, len(entries))]


def span_departures(body, span):
    """[(logprob of the token, logprob of the likeliest token, the token's text, the likeliest's text)] for the last
    ``span`` prompt tokens of a body that asked for ``prompt_logprobs: 1`` (each entry holds the token and the
    likeliest one, rank 1)."""
    lps = span_logprobs(body, span)
    entries, ids = body["prompt_logprobs"], body.get("prompt_token_ids")
    out = []
    for i, lp in zip(range(len(entries) - span, len(entries)), lps):
        items = [v for v in entries[i].values() if isinstance(v, dict)]
        own = entries[i].get(str(ids[i])) if ids else None
        best = min(items, key=lambda v: v.get("rank") if isinstance(v.get("rank"), int) else 1 << 30) if items else None
        best_lp = best.get("logprob") if best else None
        if isinstance(best_lp, bool) or not isinstance(best_lp, (int, float)):
            best_lp = lp
        out.append((lp, max(float(best_lp), lp), str((own or {}).get("decoded_token") or ""),
                    str((best or {}).get("decoded_token") or "")))
    return out


def count_tokens(client, served_model_name, text, timeout):
    """How many tokens ``text`` is on its own (``/tokenize``, no special tokens): the span a score reads."""
    _s, tok, _e = client.post("/tokenize", {"model": served_model_name, "prompt": text, "add_special_tokens": False},
                              timeout=timeout)
    if not isinstance(tok, dict) or not isinstance(tok.get("count"), int) or tok["count"] < 1:
        raise ScoreError("/tokenize gave %s for the passage" % str(tok)[:120])
    return tok["count"]


def score_span(client, served_model_name, prompt, text, span, timeout):
    """{tokens, nll, ppl, worst} for ``text`` (``span`` tokens) as the assistant's answer to ``prompt``: one request,
    one prefill. Raises ScoreError and the client's Probe* exceptions."""
    messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": text}]
    _s, body, _e = client.chat(served_model_name, messages, 1, timeout=timeout, temperature=0, prompt_logprobs=0,
                               continue_final_message=True, add_generation_prompt=False, return_token_ids=True)
    lps = span_logprobs(body, span)
    nll = -sum(lps) / len(lps)
    return {"tokens": len(lps), "nll": round(nll, 4), "ppl": round(math.exp(min(nll, 50.0)), 2),
            "worst": round(min(lps), 3)}


def score_text(client, served_model_name, prompt, text, timeout):
    """score_span with the span from count_tokens."""
    return score_span(client, served_model_name, prompt, text, count_tokens(client, served_model_name, text, timeout),
                      timeout)


def in_parallel(calls):
    """Run each callable in its own thread; [(result, None) or (None, exception)] in the same order. The engine takes
    the requests as one batch, as it does the probes' answers."""
    out = [None] * len(calls)

    def run(i):
        try:
            out[i] = (calls[i](), None)
        except Exception as exc:  # pylint: disable=broad-except  # handed back to the caller, which names it
            out[i] = (None, exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def all_in_parallel(calls):
    """in_parallel's results, in order, raising the first call's exception if any call raised."""
    done = in_parallel(calls)
    for _result, exc in done:
        if exc is not None:
            raise exc
    return [result for result, _exc in done]


def band_problem(name, nll, band):
    """A detail when a passage's NLL is outside the absolute band [low, high], else None."""
    low, high = band
    if nll > high:
        return ("%s: %.3f nats/token is above this model's band (%.2f-%.2f): the engine's numerics are broken (a wrong "
                "kernel, checkpoint or template; a uniform guess is 11.9)" % (name, nll, low, high))
    if nll < low:
        return ("%s: %.3f nats/token is below this model's band (%.2f-%.2f): the scores are not a model's (all "
                "logprobs near 0)" % (name, nll, low, high))
    return None


# The largest departure, in nats per token, of a passage's figure from the reference of the same weights. The
# likelihood of fixed text under given weights is a property of the weights: correct engines, releases and hosts
# agree on it within the noise of their kernels (repeated scoring, the batch a request lands in), which is far below
# 0.01 nats on a passage of a few hundred tokens; the stand-in's scoring is exact. 0.08 leaves that noise room
# many times over and still refuses a fixed drift of 0.1 nats a token, which the earlier 5 % of each passage's own
# figure (0.1-0.15 nats on these passages) let through.
TOLERANCE_NATS = 0.08


def drift_problem(name, nll, reference, tolerance, what):
    """A detail when ``nll`` departs from ``reference`` by more than ``tolerance`` nats per token."""
    if reference is None or reference <= 0:
        return None
    change = nll - reference
    if abs(change) > tolerance:
        return ("%s: %.4f nats/token against %.4f for %s (%+.4f nats, %+.1f%%; tolerance %.3f nats): the engine's "
                "numerics drifted" % (name, nll, reference, what, change, 100 * change / reference, tolerance))
    return None


def median(values):
    values = sorted(v for v in values if isinstance(v, (int, float)))
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2.0
