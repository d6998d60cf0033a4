# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The response contract: what a chat completion must be before any of its text is judged.

Standard library only. Every probe (the chat probes, the verifiable tasks, the needle and its control question)
reads the engine's answer through ``chat_response``, which never raises: a body that is not the expected JSON,
another model's answer, a finish other than ``stop``, an unasked tool call or template markup in the text each
give a finding (a signal, the field, an excerpt and a detail), the same shape the text checks give.

The markup rules are general, not lists of known leaks: any tag-like ``<name ...>`` or ``</name>`` in the prose
(code spans left out), the same tag HTML-escaped, a special token ``<|...|>``, a byte-fallback piece ``<0xE8>``, a
JSON tool call, and a line that opens another chat turn (``User:``) are scaffolding; U+FFFD, UTF-8 read as
Latin-1 or cp1252 (mojibake) and prose whose spaces were dropped are encoding corruption.
"""

from __future__ import annotations

import re
import unicodedata

# Code spans and fenced blocks: their text is code, not prose (the text checks leave them out too).
CODE_RE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.S)
# A tag: <name>, </name>, <name attr="x">, <name/>; an SGML declaration (<!DOCTYPE html>).
_TAG_RE = re.compile(r"</?[A-Za-z][\w:.-]{0,40}(?:\s+[^<>\n]{0,200})?/?>|<![A-Za-z]{2,}[^<>]{0,200}>")
_ESCAPED_TAG_RE = re.compile(r"&lt;/?[A-Za-z][\w:.-]{0,40}(?:\s[^&]{0,200})?/?&gt;|\\u003c/?[A-Za-z][\w:.-]{0,40}", re.I)
_SPECIAL_RE = re.compile(r"<\|[^|<>\n]{1,40}\|>|\[(?:gMASK|sMASK|MASK)\]|<(?:sop|eop|s|/s|pad|unk)>")
_BYTE_PIECE_RE = re.compile(r"<0x[0-9A-Fa-f]{2}>")
# A tool call written as JSON: {"name": "...", "arguments": ...} (Hermes, OpenAI, GLM's JSON form).
_JSON_CALL_RE = re.compile(r"\{\s*\"(?:name|function|tool|tool_name)\"\s*:\s*\"[^\"]{1,80}\"\s*,\s*"
                           r"\"(?:arguments|parameters|args|input)\"\s*:", re.I)
# A line that opens a chat turn: a role name (in the languages the probes use, or a template's) and a colon.
_TURN_RE = re.compile(r"(?im)^[ \t>*_#]*(?:user|human|assistant|system|observation|tool|ai|bot|model|"
                      r"使用者|用戶|用户|助手|助理|系統|系统|人類|人类)[ \t*_]*[:：]")
# Characters of the Latin-1 and cp1252 upper halves: what UTF-8 bytes look like when read as one of those.
_MOJIBAKE_RUN_RE = re.compile("[\u0080-\u00ff\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc"
                              "\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122]{2,}")
_LATIN_WORD_RE = re.compile(r"[A-Za-z\u00c0-\u024f]+")
_URL_RE = re.compile(r"\b(?:https?|ftp)://\S+|\b[\w.+-]+@[\w-]+\.[\w.]+")
FINISHED = "stop"


def _finding(signal, field, excerpt, detail):
    return {"signal": signal, "field": field, "excerpt": excerpt, "detail": detail}


def excerpt(text, start=0, width=60):
    """A one-line piece of ``width`` characters of the text from ``start``, with … where it was cut."""
    text = text or ""
    start = max(0, min(start, len(text) - width))
    piece = text[start:start + width].replace("\n", " ")
    return ("…" if start > 0 else "") + piece + ("…" if start + width < len(text) else "")


def text_of(value):
    """(text, problem): a content or reasoning field as text. A string is itself; a list of OpenAI content parts is
    its text parts joined; null is None. Anything else gives a problem and no text."""
    if value is None or isinstance(value, str):
        return value, None
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") in ("text", "output_text", None) \
                    and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                return None, "a list with a part that is not text (%s)" % type(part).__name__
        return "".join(parts), None
    return None, "a %s, not a string or a list of text parts" % type(value).__name__


def _mojibake(text):
    """(start, run, decoded) of the first run of Latin-1/cp1252 characters that is really UTF-8, else None."""
    for m in _MOJIBAKE_RUN_RE.finditer(text):
        run = m.group(0)
        raw = bytearray()
        for ch in run:
            try:
                raw += ch.encode("cp1252")
            except UnicodeEncodeError:
                try:
                    raw += ch.encode("latin-1")
                except UnicodeEncodeError:
                    raw = None
                    break
        if not raw:
            continue
        try:
            decoded = bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            continue
        if decoded != run and any(ord(c) > 0x7f for c in decoded):
            return m.start(), run, decoded
    return None


def _spaces_dropped(prose):
    """A detail when Latin-script prose has lost its spaces (mean letters per space-separated chunk above 12, over
    at least 40 letters; English averages under 6, German compounds under 8), else None."""
    chunks = [c for c in _URL_RE.sub(" ", prose).split() if _LATIN_WORD_RE.search(c)]
    letters = sum(len(w) for c in chunks for w in _LATIN_WORD_RE.findall(c))
    if letters < 40 or not chunks:
        return None
    mean = letters / float(len(chunks))
    if mean > 12:
        longest = max(chunks, key=len)
        return "%d Latin letters in %d space-separated chunks (%.1f a chunk, e.g. %r): spaces were dropped" % (
            letters, len(chunks), mean, longest[:40])
    return None


def markup_findings(text, field="content"):
    """Scaffolding and corruption in a text, by the general rules in this module's docstring."""
    if not text:
        return []
    found = []
    prose = CODE_RE.sub(lambda m: " " * len(m.group(0)), text)
    for rx, what in ((_SPECIAL_RE, "a special token"), (_TAG_RE, "a tag"),
                     (_ESCAPED_TAG_RE, "an HTML-escaped tag"), (_JSON_CALL_RE, "a tool call written as JSON")):
        m = rx.search(prose)
        if m:
            found.append(_finding("markup_leak", field, excerpt(text, m.start()),
                                  "%s %r in the %s: template or tool-call scaffolding, not an answer (does the "
                                  "reasoning and tool parser match the model's chat template?)"
                                  % (what, m.group(0)[:40], field)))
            break
    m = _TURN_RE.search(prose)
    if m:
        found.append(_finding("turn_runover", field, excerpt(text, m.start()),
                              "the %s goes on into another chat turn (%r): the engine did not stop at the end of "
                              "its turn" % (field, m.group(0).strip()[:20])))
    bad = []
    i = text.find("\ufffd")
    if i >= 0:
        bad.append((i, "U+FFFD (a replacement character: bytes that were not valid UTF-8)"))
    m = _BYTE_PIECE_RE.search(prose)
    if m:
        bad.append((m.start(), "the byte-fallback piece %r (the detokenizer did not merge the bytes)" % m.group(0)))
    moj = _mojibake(text)
    if moj:
        bad.append((moj[0], "%r is UTF-8 read as Latin-1 or cp1252 (it reads %r)" % (moj[1][:12], moj[2][:6])))
    spaced = _spaces_dropped(prose)
    if spaced:
        bad.append((0, spaced))
    if bad:
        start, detail = bad[0]
        found.append(_finding("encoding_corruption", field, excerpt(text, start), detail))
    return found


def chat_response(body, served_model_name=None, tools_asked=False):
    """(fields, findings) for one chat completion body, as the client parsed it (a dict, or text when it was not
    JSON). ``fields`` has content, reasoning, finish_reason, usage and model; ``findings`` the contract's breaches.
    Never raises. Reasoning is read from ``reasoning`` (vLLM 0.28) or ``reasoning_content`` (the first that holds
    text)."""
    fields = {"content": None, "reasoning": None, "finish_reason": None, "usage": {}, "model": None}
    if not isinstance(body, dict):
        shown = body if isinstance(body, str) else repr(body)
        return fields, [_finding("not_json", "response", excerpt(shown or ""),
                                 "the body is %s, not a JSON object (a gateway's error page, or not the engine)"
                                 % ("empty" if not body else "a %s" % type(body).__name__))]
    choices = body.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    msg = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(msg, dict):
        return fields, [_finding("bad_shape", "response", excerpt(str(body)),
                                 "no choices[0].message object in the body (keys: %s)"
                                 % ", ".join(sorted(str(k) for k in body)[:8]))]
    findings = []
    usage = body.get("usage")
    fields["usage"] = usage if isinstance(usage, dict) else {}
    fields["model"] = body.get("model")
    if served_model_name and body.get("model") != served_model_name:
        findings.append(_finding("model_mismatch", "model", str(body.get("model"))[:60],
                                 "the answer is from model %r, not the served %r (a gateway's fallback, or another "
                                 "engine on this port)" % (body.get("model"), served_model_name)))
    content, problem = text_of(msg.get("content"))
    if problem:
        findings.append(_finding("bad_shape", "content", "", "content is %s" % problem))
    reasoning = None
    for name in ("reasoning", "reasoning_content"):
        value, _problem = text_of(msg.get(name))
        if isinstance(value, str) and value.strip():
            reasoning = value
            break
        if reasoning is None and value is not None:
            reasoning = value
    finish = choice.get("finish_reason")
    fields.update(content=content, reasoning=reasoning, finish_reason=finish)
    if finish not in (FINISHED, "length"):  # length has its own signals (the budget, a loop)
        findings.append(_finding("unfinished", "finish_reason", str(finish),
                                 "finish_reason=%s: the engine did not end the answer itself (only %r is a finished "
                                 "answer)" % (finish, FINISHED)))
    calls = msg.get("tool_calls")
    if calls and not tools_asked:
        findings.append(_finding("unasked_tool_call", "tool_calls", excerpt(str(calls)),
                                 "%d tool call(s) in an answer to a request that offered no tools"
                                 % (len(calls) if isinstance(calls, list) else 1)))
    findings += markup_findings(content, "content")
    return fields, findings


def nfkc_digits(text):
    """The text with every decimal digit written as ASCII (full-width ０-９, Arabic-Indic and other scripts' digits)
    and the minus signs (U+2212, U+FE63, U+FF0D) before a digit as '-'; full-width forms folded (NFKC). Each
    character stays one character, so positions in the text stay valid."""
    if not text:
        return text or ""
    out = []
    for ch in text:
        if ch.isdigit() and not ch.isascii():
            try:
                out.append(str(unicodedata.decimal(ch)))
                continue
            except (TypeError, ValueError):
                pass
        folded = unicodedata.normalize("NFKC", ch) if "\uff00" <= ch <= "\uffef" else ch
        out.append(folded if len(folded) == 1 else ch)  # one character for one: positions stay valid
    return re.sub("[\u2212\ufe63\uff0d](?=\\s?\\d)", "-", "".join(out))
