# Test double: a deterministic stand-in tokenizer and GLM-style chat template for the fake vLLM.
"""A small, fast, deterministic tokenizer.

It is not GLM's tokenizer, but it behaves like one where the probes care:
Latin words cost one token per six letters, every digit is a token, every CJK character is a
token, punctuation is a token, leading white space rides on the next token, and the chat
template's special markers are single tokens. ``"".join(token_strs) == text`` always holds.
"""
from __future__ import annotations

import re
import threading

SPECIAL_TOKENS = (
    "[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>",
    "<think>", "</think>", "<|endoftext|>", "<tool_call>", "</tool_call>",
)
_SPECIAL_RE = re.compile("(" + "|".join(re.escape(t) for t in SPECIAL_TOKENS) + ")")
_CJK = "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_PIECE_RE = re.compile(r"\s*(?:[" + _CJK + r"]|[A-Za-z\u00c0-\u024f]{1,6}|\d|\S)|\s+")


class Tokenizer:
    """Assigns ids on first sight; special tokens have fixed ids."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids: dict[str, int] = {}
        self._strs: list[str] = []
        for tok in SPECIAL_TOKENS:
            self._id(tok)

    def _id(self, piece: str) -> int:
        tid = self._ids.get(piece)
        if tid is None:
            with self._lock:
                tid = self._ids.get(piece)
                if tid is None:
                    tid = len(self._strs)
                    self._strs.append(piece)
                    self._ids[piece] = tid
        return tid

    @staticmethod
    def pieces(text: str) -> list[str]:
        out: list[str] = []
        for part in _SPECIAL_RE.split(text):
            if not part:
                continue
            if part in SPECIAL_TOKENS:
                out.append(part)
            else:
                out.extend(_PIECE_RE.findall(part))
        return out

    def encode(self, text: str) -> list[int]:
        return [self._id(p) for p in self.pieces(text)]

    def count(self, text: str) -> int:
        return len(self.pieces(text))

    def decode(self, ids: list[int]) -> str:
        strs = self._strs
        return "".join(strs[i] if 0 <= i < len(strs) else "" for i in ids)


def _content_text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    raise ValueError("message content must be a string or a list of content parts")


def render_chat(messages, add_generation_prompt: bool = True, continue_final_message: bool = False,
                template: str | None = None) -> str:
    """GLM-5.3-like template: ``[gMASK]<sop><|role|>\\ncontent…<|assistant|>\\n<think>``.

    GLM-5.3's generation prompt always opens ``<think>`` (its chat template, as vLLM 0.28 renders it).
    ``template="no_newline"`` is a changed chat template (VLLM_STANDIN_CHAT_TEMPLATE): no newline after each role's
    tag, a format the model was not trained on (scoring.OFF_FORMAT_NATS).
    """
    sep = "" if template == "no_newline" else "\n"
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list")
    out = ["[gMASK]<sop>"]
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or "role" not in msg:
            raise ValueError(f"messages[{i}] must be an object with a role")
        role = msg["role"]
        if role not in ("system", "user", "assistant", "tool", "developer"):
            raise ValueError(f"messages[{i}].role {role!r} is not supported")
        text = _content_text(msg.get("content"))
        if role == "assistant":
            reasoning = msg.get("reasoning") or msg.get("reasoning_content")
            if reasoning:
                text = f"<think>{reasoning}</think>{text}"
        if role == "tool":
            role = "observation"
        if role == "developer":
            role = "system"
        out.append(f"<|{role}|>{sep}{text}")
    if continue_final_message:
        return "".join(out)
    if add_generation_prompt:
        out.append(f"<|assistant|>{sep}<think>")
    return "".join(out)


def last_user_text(messages) -> str:
    for msg in reversed(messages):
        if isinstance(msg, dict) and msg.get("role") == "user":
            return _content_text(msg.get("content"))
    return ""
