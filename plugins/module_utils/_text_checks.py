# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Judge generated text: the garbage detector and the Traditional Chinese check. Standard library only.

The model card's failure signature on broken builds is "repetitive/scaled-token" output. Each finding
names its signal and quotes a short excerpt, so a verdict can be read without the raw response.
"""

from __future__ import annotations

import re
from collections import Counter

_TOKEN_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[^\W\d_]+|\d+|[^\w\s]", re.UNICODE)
_CJK_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LETTER_RE = re.compile(r"[^\W\d_]", re.UNICODE)
# Byte-level BPE artefacts (Ġ = space, Ċ = newline, ĉ = tab) leaking into text: a scaled-token signature.
_BPE_RE = re.compile(r"[ĠĊĉ]{4,}|(?:Ġ\w+){6,}")
_SAME_CHAR_RE = re.compile(r"(\S)\1{15,}")
_SYMBOL_RUN_RE = re.compile(r"[^\w\s]{30,}", re.UNICODE)

# Characters that exist only in Simplified Chinese (their Traditional forms differ). Characters shared
# by both scripts, or used as variants in Traditional text (后 里 面 干 台 于 几 体 无 机 ...), are left out
# so that a good Traditional answer is never failed.
SIMPLIFIED_ONLY = frozenset(
    "们这说语为国来时会对发开关动学实现经问题员长门车东与书见话让认识计训练设务协码样写进还过处应种类标网络产业专传热"
    "电气际级组织给统结构数据库简单帮兴欢迎谢请万亿华丽爱总号间听读错钱银师饭馆鸡鱼鸟龙马乐历归买卖义习亚从价众优伟伤"
    "儿军农决况净击创别剧办劳势压厅县参双变吗启围图圆场坏块坚个节营术带广庆张强录忆态恶惊惯战户扩扫扬护报担拥择换搜摄"
    "敌断旧显晓暂杀权条杨极枪查树档桥检楼欧毕汉汤沟没泽洁测济浓涨润渐温湾满灭灯灵灾炉点炼烟爷牵犹状独狮猎献环珍画畅"
    "疗监盖盘确礼离积称稳穷窗竞笔筑签粮纪约纯纳纸纽线细终绝继绩续维综绿罗罚职联聪肃胜脑脚脸腾艺荣药获虽补装观规视览"
    "觉触订讨议记讲许论访证评诉词译试诗诚询该详误课谁调谈谋谓谨谱贝负贡财责贤败货质贪购贯贵贷贸费贺资赋赏赔赖赛赞赢"
    "赵趋跃践轨转轮软轻载较辅辆辈辑输辞边达迁运远违连迟适选递逻遗邮邻郑释针钟钢铁铃链销锁锅锦键镇闪闭闯闲闹闻阅队阳"
    "阴阵阶陆陈险随隐难雾静顶项顺须顾顿预领频颜额风飞饮饰饱驱驶驾验骑骗"
)


def tokens(text):
    return _TOKEN_RE.findall(text or "")


def excerpt(text, start=0, width=60):
    text = text or ""
    start = max(0, min(start, len(text) - width))
    piece = text[start:start + width].replace("\n", " ")
    return ("…" if start > 0 else "") + piece + ("…" if start + width < len(text) else "")


def periodic_tail(text, max_unit=64, min_times=5, min_span=40):
    """(unit, times, start) when the text ends in one unit repeated (the last copy may be cut short)."""
    t = text.rstrip()
    for length in range(1, max_unit + 1):
        if len(t) < max(min_span, length * min_times):
            break
        i = len(t) - length - 1
        while i >= 0 and t[i] == t[i + length]:
            i -= 1
        span = len(t) - (i + 1)
        if span >= max(min_span, length * min_times):
            start = i + 1
            return t[start:start + length], span // length, start
    return None


def garbage_findings(text, field):
    """Return a list of {signal, field, excerpt, detail} for one text (content or reasoning)."""
    if not text or not text.strip():
        return []
    found = []

    def add(signal, start, detail):
        found.append({"signal": signal, "field": field, "excerpt": excerpt(text, start), "detail": detail})

    m = _BPE_RE.search(text) or _SAME_CHAR_RE.search(text) or _SYMBOL_RUN_RE.search(text)
    if m:
        add("scaled_token", m.start(), "a run of %d characters of one token or symbol class" % len(m.group(0)))
    tail = periodic_tail(text)
    if tail:
        unit, times, start = tail
        add("repetition_to_end", start, "%r repeated %d times up to the end" % (unit, times))
    toks = [t.lower() for t in tokens(text)]
    if len(toks) >= 20:
        for n in (3, 4, 5):
            grams = Counter(tuple(toks[i:i + n]) for i in range(len(toks) - n + 1))
            gram, count = grams.most_common(1)[0]
            if count >= 4 and count * n >= 0.3 * len(toks):
                phrase = " ".join(gram)
                add("repeated_ngram", max(0, text.lower().find(gram[0])),
                    "the %d-gram %r makes up %d%% of %d tokens" % (n, phrase, 100 * count * n // len(toks), len(toks)))
                break
    if len(toks) >= 40:
        ratio = len(set(toks)) / float(len(toks))
        if ratio < 0.25:
            add("low_distinct_ratio", 0, "%d distinct of %d tokens (%.2f)" % (len(set(toks)), len(toks), ratio))
    return found


def judge_answer(content, reasoning, finish_reason, require_reasoning=True):
    """Findings for one chat completion; empty when it looks like a coherent answer."""
    findings = []
    if content is None or not str(content).strip():
        if finish_reason == "length":
            findings.append({"signal": "reasoning_ran_out_of_budget", "field": "content",
                             "excerpt": excerpt(reasoning or "", max(0, len(reasoning or "") - 60)),
                             "detail": "finish_reason=length with no content: the reasoning used the whole "
                                       "max_tokens budget (raise max_tokens, or the model is looping)"})
        else:
            findings.append({"signal": "empty_content", "field": "content", "excerpt": "",
                             "detail": "no content (finish_reason=%s)" % finish_reason})
    findings += garbage_findings(content, "content")
    findings += garbage_findings(reasoning, "reasoning")
    if require_reasoning and not (reasoning and str(reasoning).strip()):
        findings.append({"signal": "no_reasoning", "field": "reasoning", "excerpt": excerpt(content or ""),
                         "detail": "neither `reasoning` nor `reasoning_content` is present (is the reasoning "
                                   "parser glm47 set?)"})
    return findings


def traditional_chinese_findings(content):
    """The answer must be Chinese, and Traditional: no Simplified-only character."""
    text = content or ""
    cjk = _CJK_RE.findall(text)
    letters = _LETTER_RE.findall(text)
    if len(cjk) < 4 or len(cjk) < 0.3 * max(1, len(letters)):
        return [{"signal": "not_chinese", "field": "content", "excerpt": excerpt(text),
                 "detail": "%d CJK characters of %d letters" % (len(cjk), len(letters))}]
    simplified = sorted(set(c for c in cjk if c in SIMPLIFIED_ONLY))
    if simplified:
        return [{"signal": "simplified_chinese", "field": "content", "excerpt": excerpt(text, text.find(simplified[0])),
                 "detail": "Simplified-only characters: %s" % " ".join(simplified)}]
    return []


def last_number(text):
    nums = re.findall(r"-?\d[\d,]*(?:\.\d+)?", text or "")
    if not nums:
        return None
    try:
        return float(nums[-1].replace(",", ""))
    except ValueError:
        return None
