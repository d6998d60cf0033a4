# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Relevance by the text alone: whether the answer answers its prompt.

Standard library only. Each check is what a careful reader sees first: the answer ran to the token limit, refuses,
gives the prompt back, says one sentence again and again, counts on, floods symbols, does not greet when greeted,
never speaks of itself when asked to, shows the prompt never reached the model, asks the user for what it was asked,
or names another model as itself.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter

from ansible_collections.glm53.serving.plugins.module_utils._response_contract import CODE_RE
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.registry import finding, limit
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.text import (
    CJK_RE,
    KANA_RE,
    LETTER_RE,
    SENTENCE_END_RE,
    normal_words,
)

# A refusal in the languages the probes use: a refusal verb, then what is refused (help, answer, comply...).
# "I can't wait to help" and "I cannot browse the web, but ..." are not refusals.
_REFUSAL_RE = re.compile(
    r"\b(?:i|we)(?: am|'m|\u2019m)?\s+(?:really\s+)?(?:can ?not|can['\u2019]?t|won['\u2019]?t|will not|"
    r"(?:am |'m |\u2019m )?(?:unable|not able) to|refuse to|must decline to|have to decline to)\s+"
    r"(?:help|assist|comply|fulfil+|answer|respond|provide|do (?:that|this)|engage|complete|support|continue)\b"
    r"|\b(?:i|we)\s+(?:must|have to)\s+decline\b"
    r"|\b(?:i|we)\s+(?:can['\u2019]?t|cannot|won['\u2019]?t)\s*[.!]"
    r"|\bi(?:'m|\u2019m| am) (?:sorry|afraid),? but i (?:can ?not|can['\u2019]?t|won['\u2019]?t|am unable|'m unable|\u2019m unable)"
    r"|(?:無法|无法|不能|不便|拒絕|拒绝)(?:協助|协助|幫助|帮助|回答|提供|完成|處理|处理|滿足|满足|回應|回应|配合)"
    r"|(?:抱歉|對不起|对不起)[，,、\s]*(?:我)?(?:無法|无法|不能)", re.I)
_GREETING_WORDS_RE = re.compile(
    r"\b(?:hello|hi|hiya|hey|heya|howdy|greetings|salutations|good (?:morning|afternoon|evening|day)|welcome|g['\u2019]day|"
    r"yo|aloha|namaste|cheers|"
    r"(?:nice|pleased|glad|great|lovely|good|a pleasure|a joy|delighted|happy) to (?:meet|see|hear from|have|chat with) you|"
    r"(?:it['\u2019]?s |what )?a (?:pleasure|joy|delight)(?: to (?:meet|chat with|hear from) you)?|"
    r"how are you|how(?:'s|\u2019s| is) it going|how do you do|"
    r"bonjour|salut|hola|hallo|ciao|servus|ol[aá]|privet)\b|你好|您好|嗨|哈囉|哈啰|早安|午安|晚安|早上好|こんにちは|안녕|привет|здравствуй",
    re.I)
# A greeting word greets when it addresses the reader: followed by punctuation, the end, a form of address or "you"
# ("Hello!", "Hi there,", "G'day, mate"), not when it starts a sentence about something else ("Welcome to the jungle
# is a song", "Hello World is a program").
_ADDRESS_AFTER_RE = re.compile(r"^(?:\s*[!,.~;:?\u3002\uff01\uff0c\uff1f]|\s*\u2014|\s+[\u2013-]\s|\s*$|\s+(?:there|again|friend|"
                               r"friends|everyone|all|folks|mate|y['\u2019]all|to you|back|and|et|y|und|e)\b|\s*[\U0001F300-\U0001FAFF\u2600-\u27bf])",
                               re.I)


def greets(text):
    """Whether one of the first sentences greets the reader: a greeting that addresses them (see _ADDRESS_AFTER_RE),
    or a phrase that names "you" (nice to meet you, how are you)."""
    parts = [p for p in SENTENCE_END_RE.split(CODE_RE.sub(" ", text or "")) if p and p.strip()]
    head = " ".join(parts[:limit("no_greeting.first_sentences")]) if parts else ""
    for m in _GREETING_WORDS_RE.finditer(head):
        if re.search(r"\byou\b", m.group(0), re.I) or CJK_RE.search(m.group(0)) or KANA_RE.search(m.group(0)):
            return True
        if _ADDRESS_AFTER_RE.match(head[m.end():]) or not re.match(r"\s*[\w'\u2019-]", head[m.end():]):
            return True
    return False


_ENUM_NUMBER_RE = re.compile(r"(?<![\d.,])\d{1,4}(?![\d])")
ENUMERATION_LOOP = limit("enumeration_loop.run")
_LAYOUT_CHUNKS = frozenset("|-—–:*#>+=~_•·")


def prompt_echo(content, prompt):
    """A detail when the answer is the prompt given back (whole, or all but a few words), else None."""
    if not prompt:
        return None
    said, asked = normal_words(content), normal_words(prompt)
    if len(asked) < 2 or not said:
        return None
    rest = list(said)
    found = 0
    while rest:  # take out each copy of (most of) the prompt, word for word
        m = difflib.SequenceMatcher(None, rest, asked, autojunk=False).find_longest_match(0, len(rest), 0, len(asked))
        if m.size < max(2, limit("prompt_echo.share") * len(asked)):
            break
        del rest[m.a:m.a + m.size]
        found += 1
    if found and len(rest) < max(limit("prompt_echo.rest_words"), limit("prompt_echo.rest_share") * len(said)):
        return "the answer repeats the prompt%s and adds %d word%s" % (
            " %d times" % found if found > 1 else "", len(rest), "" if len(rest) == 1 else "s")
    common = sum((Counter(said) & Counter(asked)).values())
    if common >= limit("prompt_echo.same_words") * max(len(said), len(asked)):
        return "the answer is the prompt's words again (%d of %d)" % (common, len(said))
    return None


def repeated_sentence(text):
    """(sentence, times) when one sentence is said again and again: 3 times, or twice when it is long."""
    parts = [p.strip() for p in SENTENCE_END_RE.split(CODE_RE.sub(" ", text or "")) if p and p.strip()]
    seen = Counter()
    first = {}
    for p in parts:
        words = normal_words(p)
        if not any(LETTER_RE.search(w) for w in words):
            continue  # a number, a table rule or a bullet alone is no sentence
        key = " ".join(words)
        seen[key] += 1
        first.setdefault(key, p)
    if not seen:
        return None
    key, times = seen.most_common(1)[0]
    if times >= limit("repeated_sentence.times") or (times >= 2 and len(key.split()) >= limit("repeated_sentence.long_words")):
        return first[key], times
    return None


def enumeration_run(text):
    """(first, last) of the longest run of consecutive integers the text counts through, in order."""
    best, ends = (0, 0, 0), {}
    for m in _ENUM_NUMBER_RE.finditer(text or ""):
        n = int(m.group(0))
        length = ends.get(n - 1, 0) + 1
        ends[n] = max(ends.get(n, 0), length)
        if length > best[0]:
            best = (length, n - length + 1, n)
    return best


def symbol_flood(text):
    """A detail when most whitespace-separated chunks are symbols or emoji (no letter, no digit)."""
    chunks = [c for c in CODE_RE.sub(" ", text or "").split() if c not in _LAYOUT_CHUNKS and set(c) - _LAYOUT_CHUNKS]
    if len(chunks) < limit("symbol_flood.chunks"):
        return None
    symbols = [c for c in chunks if not any(ch.isalnum() for ch in c)]
    if len(symbols) >= limit("symbol_flood.chunks") and len(symbols) >= limit("symbol_flood.share") * len(chunks):
        return "%d of %d chunks are symbols or emoji with no word (%s)" % (
            len(symbols), len(chunks), " ".join(symbols[:6]))
    return None


# Prompts that ask the model about itself, and the first person an answer to them must use.
_SELF_PROMPT_RE = re.compile(r"介紹自己|介绍自己|自我介紹|自我介绍|你是誰|你是谁|introduce yourself|who are you", re.I)
_SELF_REF_RE = re.compile(r"[我吾咱俺]|本人|本(?:模型|助理|助手|系統|系统)|\b(?:I|I'm|I\u2019m|me|my)\b")


# ------------------------------------------------------------------ the prompt never reached the model

# The model says no message reached it: the prompt was lost between the client and the model (an empty user turn, a
# template that dropped it). Also the needle's control: "you have not provided any text" is no "not found".
_NO_PROMPT_RE = re.compile(
    r"\b(?:did ?n['\u2019]?t|did not|have ?n['\u2019]?t|have not|has ?n['\u2019]?t|has not)\s+(?:receive|get|got)d?\s+"
    r"(?:any|a|your)\s+(?:\w+\s+)?(?:message|question|text|prompt|input|content|query|request)"
    r"|\b(?:your|the) (?:message|question|prompt|input|query)(?: (?:seems|appears|looks))?(?: to (?:be|have been))?(?: is| was)?"
    r" (?:empty|blank|missing|cut off)"
    r"|\bno (?:message|question|text|prompt|input|content|document|passage)s? (?:was |were |has been |have been |is |are )?"
    r"(?:provided|given|included|received|attached|shared|supplied)"
    r"|\byou (?:have ?n['\u2019]?t|have not|did ?n['\u2019]?t|did not) (?:provided?|include|share|attach|sen[dt]|ask(?:ed)?|write|"
    r"written|type|typed|supplied|supply|give|given) (?:any|a|the|me any|me a|me the)?\s*(?:\w+ )?(?:text|message|question|"
    r"document|passage|content|prompt|anything)"
    r"|\b(?:message|text) (?:did ?n['\u2019]?t|did not|does ?n['\u2019]?t|does not) (?:come through|arrive)"
    r"|(?:沒有|没有|未)(?:收到|提供|輸入|输入)(?:你的|您的|任何)?(?:訊息|信息|消息|內容|内容|問題|问题|文字|文本)"
    r"|(?:訊息|信息|消息)(?:似乎)?是空(?:白)?的", re.I)
# An offer of help, the whole of a clause: what a model says before it has been asked anything.
_OFFER_RE = re.compile(
    r"^(?:so,? )?(?:how (?:can|may|could|might) i (?:help|assist)(?: you)?(?: today| now)?|"
    r"how can i be of (?:help|assistance|service)(?: to you)?(?: today)?|"
    r"what can i (?:do for you|help you with)(?: today)?|(?:is there )?anything (?:i can|else i can) (?:help|assist)"
    r"(?: you)?(?: with)?(?: today)?|what would you like (?:to (?:talk about|know|ask|discuss|do))?(?: today)?|"
    r"what(?:'s|\u2019s| is) on your mind(?: today)?|let me know (?:how|what) i can (?:help|do)(?: for you)?(?: today)?|"
    r"i(?:'m|\u2019m| am) (?:here|happy|glad|ready) to help(?: you)?(?: with anything)?(?: today)?|"
    r"feel free to ask(?: me)?(?: anything)?|ask me anything|"
    r"(?:請問|请问)?(?:有什[麼么]|有甚麼)(?:我)?(?:可以|能)(?:幫|帮|協助|协助)(?:你|您|到你|到您)?(?:的)?(?:嗎|吗)?|"
    r"(?:請問|请问)?(?:你|您)?(?:需要|想要)(?:什[麼么]|甚麼)(?:幫助|帮助|協助|协助)?(?:嗎|吗)?|"
    r"我(?:能|可以)(?:為|为|幫|帮)(?:你|您)做(?:些)?什[麼么](?:嗎|吗)?|很(?:高興|高兴|樂意|乐意)(?:為|为)(?:你|您)(?:服務|服务))$",
    re.I)
_FILLER_RE = re.compile(r"\b(?:there|again|friend|friends|everyone|all|folks|mate|today|sir|madam|user)\b", re.I)
_CLAUSE_RE = re.compile(r"[.!?;,\n\u3002\uff01\uff1f\uff1b\uff0c\u3001~]+")


def no_prompt_statement(text):
    """The match of a statement that no message, question or text reached the model, else None."""
    return _NO_PROMPT_RE.search(CODE_RE.sub(" ", text or ""))


def generic_opener(text):
    """Whether the whole answer is a greeting and an offer of help, and nothing else ("How can I help you today?",
    "你好！有什麼我可以幫你的嗎？"): what a model says to an empty prompt."""
    prose = CODE_RE.sub(" ", text or "")
    if len(normal_words(prose)) > limit("prompt_not_received.opener_words"):
        return False
    offers = 0
    for clause in _CLAUSE_RE.split(prose):
        clause = re.sub(r"[^\w\s'\u2019]", "", clause).strip()
        if not clause:
            continue
        if _OFFER_RE.match(clause):
            offers += 1
            continue
        if _FILLER_RE.sub("", _GREETING_WORDS_RE.sub("", clause)).strip():
            return False  # a clause that says something
    return offers > 0


def prompt_not_received_findings(ctx):
    """The prompt never reached the model: it says no message came, or (to a prompt that asks for something other
    than a greeting) answers with a greeting and an offer of help alone."""
    text = str(ctx["content"] or "")
    m = no_prompt_statement(text)
    if m:
        return [finding("prompt_not_received", "content", text, m.start(), "the answer says no message reached the "
                        "model (%r): the prompt was lost before the model read it" % m.group(0))]
    if ctx["probe"] != "greeting" and generic_opener(text):
        return [finding("prompt_not_received", "content", text, 0, "the %s prompt is answered with a greeting and an "
                        "offer of help alone: the model answers as if it had been asked nothing" % ctx["probe"])]
    return []


# ------------------------------------------------------------------ roles swapped: the model asks the user

# The model asks the user for help ("Could you help me with ...", "請幫我算一下"). "How can I help you?" and "help me
# understand what you need" are an assistant's words.
_HELP_ME_RE = re.compile(
    r"\b(?:could|can|would|will) you (?:please |kindly )?(?:help|assist) me\b(?! (?:better )?understand| help you)"
    r"|\bplease (?:help|assist) me\b(?! (?:better )?understand| help you)|\bi need (?:your|some) help\b"
    r"|\bhelp me (?:with|solve|calculate|compute|figure out|find out)\b"
    r"|(?:你|您)(?:能|可以|能不能|可不可以)(?:幫|帮)(?:我|一下我)|(?:請|请)(?:你|您)?(?:幫|帮)(?:我|忙)"
    r"|(?:幫|帮)我(?:算|計算|计算|介紹|介绍|寫|写|解決|解决)", re.I)
# The model asks the user to introduce themselves: what the self-introduction prompt asked of the model.
_ASK_USER_SELF_RE = re.compile(
    r"\b(?:introduce yourself|tell me (?:a (?:bit|little) |more |something )?about yourself)\b"
    r"|(?:介紹|介绍)(?:一下)?(?:你|您)自己|(?:你|您)(?:先)?(?:介紹|介绍)(?:一下)?自己", re.I)
_QUESTION_RE = re.compile(r"[^.!?\n\u3002\uff01\uff1f]*[?\uff1f]")
_YOU_RE = re.compile(r"\byou\b|你|您", re.I)


def role_swap(text, prompt, operands=None):
    """(start, detail) when the answer turns the request around: it asks the user for help, asks the user to introduce
    themselves before it says anything of itself (to a prompt that asks the model about itself), or asks the user the
    product it was asked (math). Else None."""
    prose = CODE_RE.sub(" ", text or "")
    m = _HELP_ME_RE.search(prose)
    if m:
        return m.start(), "the answer asks the user for help (%r): the roles are swapped" % m.group(0)
    m = _ASK_USER_SELF_RE.search(prose)
    if m and _SELF_PROMPT_RE.search(prompt or "") and not _SELF_REF_RE.search(prose[:m.start()]):
        return m.start(), ("the answer asks the user to introduce themselves (%r) instead of introducing itself: the "
                           "roles are swapped" % m.group(0))
    if operands:
        for q in _QUESTION_RE.finditer(prose):
            nums = re.findall(r"\d[\d,]*", q.group(0))
            values = set(n.replace(",", "") for n in nums)
            if _YOU_RE.search(q.group(0)) and {str(o) for o in operands} <= values and str(operands[0] * operands[1]) not in values:
                return q.start(), "the answer asks the user the question it was asked (%r)" % q.group(0).strip()[:60]
    return None


def role_swap_findings(ctx):
    """The model asks the user for what it was asked."""
    swap = role_swap(str(ctx["content"] or ""), ctx["prompt"], ctx["operands"] if ctx["probe"] == "math" else None)
    return [finding("role_swap", "content", ctx["content"], swap[0], swap[1])] if swap else []


# ------------------------------------------------------------------ identity: the model names another model as itself

# Other models and their makers. GLM, ChatGLM, Zhipu (智譜, 智谱) and Z.ai are this model's own names.
_OTHER_MODEL_RE = re.compile(
    r"(?<![A-Za-z0-9-])(?:Chat ?GPT|GPT-?[345](?:\.\d)?o?(?:-\w+)?|GPT|OpenAI|Claude|Anthropic|Llama|LLaMA|Meta AI|Meta|"
    r"Qwen|Alibaba|Gemini|Bard|Google|DeepMind|DeepSeek|Mistral|Baichuan|ERNIE|Baidu|Kimi|Moonshot(?: AI)?|Doubao|"
    r"ByteDance|Grok|xAI|Copilot|Microsoft|MiniMax)(?![A-Za-z])"
    r"|通義千問|通义千问|千問|千问|阿里巴巴|阿里雲|阿里云|深度求索|百川|文心一言|百度|月之暗面|豆包|字節跳動|字节跳动|谷歌|微軟|微软")
# A first-person claim of identity; the name that follows it closely is the model's own.
_CLAIM_RE = re.compile(
    r"\b(?:I am|I'm|I\u2019m|my name is|I was|I've been|I have been|call me|as an? (?:AI|language model|large language "
    r"model|assistant|chatbot|model))\b|我是|我叫|我由|我的名字|本模型|我來自|我来自|作為|作为", re.I)
# Words that make a name in the claim's reach something the answer speaks about, not what it is: unlike ChatGPT,
# not GPT-4, similar to Claude, GLM by Zhipu.
_NOT_A_CLAIM_RE = re.compile(
    r"\b(?:not|no|never|unlike|like|than|compared|different|similar|vs|versus|instead|rather|other|such as|including|"
    r"and|or|nor|neither|but|also|alongside|about|rival|competitor|GLM|ChatGLM|Zhipu|Z\.ai)\b"
    r"|不是|並非|并非|不同|不像|像|類似|类似|比|和|與|与|跟|或|以及|而非|例如|包括|等|智譜|智谱|GLM", re.I)
_CLAUSE_END_RE = re.compile(r"[.!?;\n\u3002\uff01\uff1f\uff1b]")


def wrong_identity(text):
    """(start, detail) when the answer claims to be another model or to be made by another maker (I'm ChatGPT, made
    by OpenAI; 我是通義千問). A name the answer speaks about (unlike ChatGPT, not GPT-4, GLM by Zhipu) is no claim."""
    prose = CODE_RE.sub(" ", text or "")
    for name in _OTHER_MODEL_RE.finditer(prose):
        head = prose[:name.start()]
        cut = max([m.end() for m in _CLAUSE_END_RE.finditer(head)] or [0])
        claims = list(_CLAIM_RE.finditer(head, cut))
        if not claims:
            continue
        gap = head[claims[-1].end():]
        if len(gap) <= limit("wrong_identity.claim_gap") and not _NOT_A_CLAIM_RE.search(gap):
            return claims[-1].start(), "the answer claims to be %r (%r): GLM-5.3 by Zhipu AI is the served model" % (
                name.group(0), prose[claims[-1].start():name.end()][:60])
    return None


def wrong_identity_findings(ctx):
    """The model names another model, or another maker, as itself."""
    found = wrong_identity(str(ctx["content"] or ""))
    return [finding("wrong_identity", "content", ctx["content"], found[0], found[1])] if found else []


# ------------------------------------------------------------------ the relevance checks as detectors

def hit_token_limit_findings(ctx):
    """finish_reason=length with content: the probes ask for a short answer."""
    if ctx["finish_reason"] != "length":
        return []
    text = str(ctx["content"] or "")
    return [finding("hit_token_limit", "content", text, len(text) - 60, "finish_reason=length: the %s answer ran to "
                    "the max_tokens budget (a short answer was asked; a model that stops only at the limit is looping)"
                    % ctx["probe"])]


def refusal_findings(ctx):
    """A refusal of the prompt."""
    text = str(ctx["content"] or "")
    m = _REFUSAL_RE.search(text)
    return [finding("refusal", "content", text, m.start(), "the answer refuses the %s prompt: %r"
                    % (ctx["probe"], m.group(0).strip()))] if m else []


def prompt_echo_findings(ctx):
    """The prompt given back."""
    echo = prompt_echo(str(ctx["content"] or ""), ctx["prompt"])
    return [finding("prompt_echo", "content", ctx["content"], 0, echo)] if echo else []


def repeated_sentence_findings(ctx):
    """One sentence said again and again."""
    text = str(ctx["content"] or "")
    rep = repeated_sentence(text)
    return [finding("repeated_sentence", "content", text, text.find(rep[0]), "the sentence %r is said %d times"
                    % (rep[0][:60], rep[1]))] if rep else []


def enumeration_loop_findings(ctx):
    """A count that runs on."""
    text = str(ctx["content"] or "")
    run, lo, hi = enumeration_run(text)
    if run < ENUMERATION_LOOP:
        return []
    return [finding("enumeration_loop", "content", text, text.find(str(lo)),
                    "counts %d to %d (%d steps): a loop, not an answer" % (lo, hi, run))]


def symbol_flood_findings(ctx):
    """Emoji or symbols instead of words."""
    flood = symbol_flood(str(ctx["content"] or ""))
    return [finding("symbol_flood", "content", ctx["content"], 0, flood)] if flood else []


def no_greeting_findings(ctx):
    """The greeting's answer does not greet."""
    if greets(str(ctx["content"] or "")):
        return []
    return [finding("no_greeting", "content", ctx["content"], 0, "the first sentences do not greet the reader (a "
                    "greeting that addresses them, or a phrase to them: hello!, hi there, nice to meet you, 你好)")]


def not_self_introduction_findings(ctx):
    """Asked about itself, the answer never speaks of itself."""
    if not _SELF_PROMPT_RE.search(ctx["prompt"] or "") or _SELF_REF_RE.search(ctx["content"] or ""):
        return []
    return [finding("not_self_introduction", "content", ctx["content"], 0, "the prompt asks the model to introduce "
                    "itself, and the answer never speaks of itself (no first person: 我, 本人, I)")]
