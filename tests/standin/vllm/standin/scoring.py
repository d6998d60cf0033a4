# Test double: the stand-in engine's prompt logprobs (vLLM's `prompt_logprobs` request parameter).
"""Per-token log-likelihoods of a prompt, from a small deterministic scoring rule that behaves like a model where
the probes look:

- a token the stand-in would itself write after the last user message, when that is one of the probes' prompts (its
  own answer to that prompt, in its behaviour), is likely (about -0.4 nats), so an answer scored after its own prompt
  is far likelier than after an unrelated one;
- a token already seen earlier in the prompt is fairly likely (-1.6), as a model copies from its context;
- any other token costs what its kind costs ordinary text (punctuation and spaces -1.1, digits -2.3, CJK
  characters -2.7, Latin pieces -3.0), so fixed prose scores about 2-3 nats a token;
- special tokens of the template are near certain.

A small jitter from the token's text keeps figures from being flat. The numerics faults (VLLM_STANDIN_NUMERICS, or
the release's default) change the scores and nothing else, so the engine still writes fluent text:
  good      as above
  poisoned  every token near a uniform guess over a 151,000-token vocabulary (11.9 nats): a broken kernel or a
            wrong checkpoint
  drifted   every log-likelihood 15 % further from zero: a small numerical regression
  shift:N   every token N nats less likely (shift:0.1): a subtle kernel or quantisation bug, a fixed drift per token
The garbage fault (VLLM_STANDIN_GARBAGE_AFTER) poisons the scores too.
"""
from __future__ import annotations

import zlib

from vllm.standin import behaviour as behaviours
from vllm.standin.tokenizer import SPECIAL_TOKENS

NUMERICS = ("good", "poisoned", "drifted", "shift:N")
UNIFORM = 11.927  # ln(151,552)
DRIFT = 1.15
_KIND_COST = {"space": 1.1, "digit": 2.3, "cjk": 2.7, "latin": 3.0}


def _kind(piece: str) -> str:
    core = piece.strip()
    if not core or not any(c.isalnum() for c in core):
        return "space"
    if core.isdigit():
        return "digit"
    if any("\u2e80" <= c <= "\uffef" for c in core):
        return "cjk"
    return "latin"


def _jitter(piece: str) -> float:
    return (zlib.crc32(piece.encode("utf-8")) % 100) / 250.0


def token_logprobs(tok, prompt_text: str, user_text: str, behaviour: str, numerics: str):
    """(token ids, [None, logprob, ...]) for every token of ``prompt_text``."""
    pieces = tok.pieces(prompt_text)
    ids = tok.encode(prompt_text)  # one id a piece, in order
    # What the engine itself writes after the last user message is likely; only after a prompt it recognises (one of
    # the probes'), so text it does not know how to answer (the reference passages) scores the same whatever the
    # behaviour: the passages' figures are the numerics' (VLLM_STANDIN_NUMERICS), not the text's.
    own = set()
    if behaviours.recognised(user_text):
        reasoning, _closes, content, _loop = behaviours.respond(prompt_text, user_text, behaviour)
        own = {p.strip().lower() for p in tok.pieces((reasoning or "") + " " + (content or "")) if p.strip()}
    answer_from = prompt_text.rfind("<|assistant|>")
    seen = set()
    out = [None]
    offset = len(pieces[0]) if pieces else 0
    seen.add(pieces[0].strip().lower() if pieces else "")
    for piece in pieces[1:]:
        key = piece.strip().lower()
        if piece in SPECIAL_TOKENS:
            cost = 0.05
        elif answer_from >= 0 and offset > answer_from and key in own:
            cost = 0.4
        elif key in seen:
            cost = 1.6
        else:
            cost = _KIND_COST[_kind(piece)]
        cost += _jitter(piece)
        if numerics == "poisoned":
            cost = UNIFORM + _jitter(piece) / 4
        elif numerics == "drifted":
            cost *= DRIFT
        elif numerics.startswith("shift:"):
            cost += float(numerics.split(":", 1)[1])
        out.append(-round(cost, 5))
        seen.add(key)
        offset += len(piece)
    return ids, out


def entries(tok, ids, logprobs, top_n: int):
    """vLLM's prompt_logprobs list: None, then per token a dict id -> {logprob, rank, decoded_token}, holding the
    prompt's own token and, with top_n > 0, the top_n likeliest tokens (here the template's special tokens)."""
    out = [None]
    for tid, lp in zip(ids[1:], logprobs[1:]):
        entry = {}
        rank = 1
        for k in range(max(0, top_n)):
            other = k if k != tid else top_n
            other_lp = -0.01 * (k + 1)
            if other_lp > lp:
                rank += 1
            entry[str(other)] = {"logprob": other_lp, "rank": k + 1, "decoded_token": tok.decode([other])}
        entry[str(tid)] = {"logprob": lp, "rank": rank, "decoded_token": tok.decode([tid])}
        out.append(entry)
    return out
