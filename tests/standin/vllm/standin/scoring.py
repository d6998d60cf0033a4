# Test double: the stand-in engine's prompt logprobs (vLLM's `prompt_logprobs` request parameter).
"""Per-token log-likelihoods of a prompt, from a small deterministic scoring rule that behaves like a model where
the probes look:

- a token the stand-in would itself write after the last user message, when that is one of the probes' prompts (its
  own answer to that prompt, in its behaviour), is likely (about -0.4 nats) at its own place in that answer, and
  less likely out of it (-2.4: a token lost or doubled shifts the rest), so an answer scored after its own prompt is
  far likelier than after an unrelated one, and the engine's own answer likelier than a garbled copy of it;
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

import re
import zlib

from vllm.standin import behaviour as behaviours
from vllm.standin.tokenizer import SPECIAL_TOKENS

NUMERICS = ("good", "poisoned", "drifted", "shift:N")
UNIFORM = 11.927  # ln(151,552)
DRIFT = 1.15
_KIND_COST = {"space": 1.1, "digit": 2.3, "cjk": 2.7, "latin": 3.0}
# A prompt in a format the model was not trained on (a changed chat template: a role's tag without its newline) makes
# every token of an answer after it this much less likely; the answer the engine writes stays the same.
OFF_FORMAT_NATS = 0.3
_OFF_FORMAT = re.compile(r"<\|(?:system|user|assistant|observation)\|>(?!\n)")


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
    """(token ids, [None, logprob, ...], [None, (id, logprob) of the likeliest token, ...]) for every token of
    ``prompt_text``: inside an answer the likeliest token is the engine's own at that place (what greedy decoding
    writes), elsewhere the prompt's own token."""
    pieces = tok.pieces(prompt_text)
    ids = tok.encode(prompt_text)  # one id a piece, in order
    # What the engine itself writes after the last user message is likely; only after a prompt it recognises (one of
    # the probes'), so text it does not know how to answer (the reference passages) scores the same whatever the
    # behaviour: the passages' figures are the numerics' (VLLM_STANDIN_NUMERICS), not the text's.
    # Its answer is likeliest token by token in its own order (the greedy path); its words out of that order (a
    # token lost or doubled, the answer shifted) are plausible but far less likely.
    own, own_order, own_raw = set(), [], []
    if behaviours.recognised(user_text):
        reasoning, _closes, content, _loop = behaviours.respond(prompt_text, user_text, behaviour)
        own = {p.strip().lower() for p in tok.pieces((reasoning or "") + " " + (content or "")) if p.strip()}
        own_raw = [p for p in tok.pieces(content or "") if p.strip()]
        own_order = [p.strip().lower() for p in own_raw]
    # the answer's text: after the last assistant marker, and after its reasoning when that is rendered too
    answer_from = max(prompt_text.rfind("<|assistant|>"), prompt_text.rfind("</think>"))
    off_format = OFF_FORMAT_NATS if _OFF_FORMAT.search(prompt_text) else 0.0  # what an answer token costs more
    seen = set()
    out, best = [None], [None]
    offset = len(pieces[0]) if pieces else 0
    seen.add(pieces[0].strip().lower() if pieces else "")
    position = 0  # of the answer's next word piece, in the engine's own answer
    for piece in pieces[1:]:
        key = piece.strip().lower()
        in_answer = answer_from >= 0 and offset > answer_from and piece not in SPECIAL_TOKENS and bool(key)
        if piece in SPECIAL_TOKENS:
            cost = 0.05
        elif in_answer and position < len(own_order) and own_order[position] == key:
            cost = 0.4
        elif in_answer and key in own:
            cost = 0.4 if not own_order else 2.4
        elif key in seen:
            cost = 1.6
        else:
            cost = _KIND_COST[_kind(piece)]
        cost += _jitter(piece) + (off_format if in_answer else 0.0)
        cost = _numerics(cost, piece, numerics)
        out.append(-round(cost, 5))
        if in_answer and position < len(own_order) and own_order[position] != key:
            own_piece = own_raw[position]
            own_cost = 0.4 + _jitter(own_piece) + off_format
            best.append((tok.encode(own_piece)[0], -round(_numerics(own_cost, own_piece, numerics), 5)))
        else:
            best.append(None)
        seen.add(key)
        offset += len(piece)
        position += 1 if in_answer else 0
    return ids, out, best


def _numerics(cost, piece, numerics):
    """A token's cost as the numerics fault makes it."""
    if numerics == "poisoned":
        return UNIFORM + _jitter(piece) / 4
    if numerics == "drifted":
        return cost * DRIFT
    if numerics.startswith("shift:"):
        return cost + float(numerics.split(":", 1)[1])
    return cost


def entries(tok, ids, logprobs, top_n: int, best=None):
    """vLLM's prompt_logprobs list: None, then per token a dict id -> {logprob, rank, decoded_token}, holding the
    prompt's own token and, with top_n > 0, the top_n likeliest tokens: the likeliest from ``best`` (the prompt's own
    token where best has none), then the template's special tokens, far less likely."""
    out = [None]
    for i, (tid, lp) in enumerate(zip(ids[1:], logprobs[1:]), start=1):
        top_id, top_lp = (best[i] if best and best[i] else None) or (tid, lp)
        entry = {}
        if top_n > 0:
            entry[str(top_id)] = {"logprob": top_lp, "rank": 1, "decoded_token": tok.decode([top_id])}
        fillers = [k for k in range(top_n + 2) if k not in (tid, top_id)][:max(0, top_n - 1)]
        for rank, other in enumerate(fillers, start=2):
            entry[str(other)] = {"logprob": round(top_lp - 5.0 - rank, 5), "rank": rank,
                                 "decoded_token": tok.decode([other])}
        if str(tid) not in entry:
            entry[str(tid)] = {"logprob": lp, "rank": 1 if tid == top_id else 2 + len(fillers),
                               "decoded_token": tok.decode([tid])}
        out.append(entry)
    return out
