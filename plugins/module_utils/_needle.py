# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""RULER-style needle-in-a-haystack: a varied haystack made locally, needles, sizing, exact scoring.

Standard library only. The haystack is generated from word banks and sentence templates with a seeded
RNG (no downloads, no single repeated sentence, no digits, so the only 7-digit numbers in the prompt are
the needles'). Needles follow RULER: "One of the special magic numbers for {key} is: {value}."
"""

from __future__ import annotations

import random
import re

from ansible_collections.glm53.serving.plugins.module_utils._response_contract import chat_response, nfkc_digits
from ansible_collections.glm53.serving.plugins.module_utils._text_checks import (
    foreign_fragment,
    garbage_findings,
    no_prompt_statement,
    visible_length,
)

# The garbage signals that disqualify an answer whatever number it gives: a loop to the end of the answer,
# a run of one token or of invisible characters, chat-template or reasoning markup in the content. Weaker
# signals (repeated n-grams, low diversity) are left to the chat probe: a table of needles repeats itself.
_DEGENERATE = ("scaled_token", "repetition_to_end", "markup_leak")

_SUBJECTS = ("the engineer", "a farmer", "the old captain", "my neighbour", "the committee", "a young painter",
             "the museum guide", "our teacher", "the river pilot", "a travelling merchant", "the librarian",
             "the orchestra", "a quiet student", "the harbour master", "the weather station", "a baker")
_VERBS = ("described", "remembered", "questioned", "painted", "measured", "carried", "repaired", "planted",
          "borrowed", "praised", "followed", "studied", "forgot", "rebuilt", "visited", "explained")
_OBJECTS = ("the wooden bridge", "an unfinished letter", "the northern road", "a basket of pears",
            "the copper kettle", "the evening train", "a forgotten song", "the garden wall", "a map of the coast",
            "the winter market", "a broken lantern", "the stone tower", "a field of barley", "the narrow canal")
_PLACES = ("near the lake", "behind the station", "in the valley", "on the hill", "beside the mill",
           "under the old oak", "across the square", "along the harbour", "inside the archive", "at the crossroads")
_TIMES = ("at dawn", "before the storm", "in early spring", "after the festival", "late one evening",
          "during the long summer", "on a foggy morning", "when the bells rang", "that autumn", "at midnight")
_ADVERBS = ("slowly", "carefully", "without a word", "with great patience", "twice", "once again", "quietly",
            "for many hours", "in a hurry", "with some doubt")
_TEMPLATES = (
    "{S} {V} {O} {P} {T}.",
    "{T}, {S} {V} {O} {A}.",
    "Nobody expected that {s} would have {V} {O} {P}.",
    "It was {T} when {s} {V} {O}, {A}.",
    "{S} said that {o} {P} had been {V} {A}.",
    "Some say {s} {V} {O} {T}, but the records {P} disagree.",
    "{S} {V} {O} {A}, and then walked {P}.",
    "Long after {t}, people {P} still spoke of how {s} {V} {O}.",
)
_ADJECTIVES = ("brave", "calm", "eager", "gentle", "silent", "swift", "clever", "bright", "hidden", "amber",
               "crimson", "frosty", "golden", "humble", "lucky", "misty", "noble", "rapid", "sturdy", "velvet")
_NOUNS = ("otter", "heron", "falcon", "maple", "harbor", "lantern", "comet", "willow", "badger", "meadow",
          "canyon", "pebble", "walrus", "thistle", "glacier", "sparrow", "cobalt", "orchid", "tundra", "beacon")

INTRO = ("Some special magic numbers are hidden within the following text. Make sure to memorize it. "
         "I will quiz you about the numbers afterwards.\n")
NEEDLE = "One of the special magic numbers for {key} is: {value}."
QUESTION = "\nWhat is the special magic number for {key} mentioned in the provided text? Answer with the number."


def make_sentences(rng, n):
    out = []
    for _i in range(n):
        tpl = rng.choice(_TEMPLATES)
        s, o, t = rng.choice(_SUBJECTS), rng.choice(_OBJECTS), rng.choice(_TIMES)
        out.append(tpl.format(S=s[0].upper() + s[1:], s=s, V=rng.choice(_VERBS), O=o, o=o, P=rng.choice(_PLACES),
                              T=t[0].upper() + t[1:], t=t, A=rng.choice(_ADVERBS)))
    return out


def make_keys(rng, n):
    keys = set()
    while len(keys) < n:
        keys.add("%s-%s" % (rng.choice(_ADJECTIVES), rng.choice(_NOUNS)))
    return sorted(keys)


def make_value(rng, avoid=()):
    while True:
        v = str(rng.randint(1000000, 9999999))
        if v not in avoid:
            return v


class Haystack:
    """Sentences, a needle for the asked key, distractor needles with other keys."""

    def __init__(self, seed, distractors=4):
        self.rng = random.Random(seed)
        keys = make_keys(self.rng, distractors + 2)
        self.key, self.control_key = keys[0], keys[1]
        values = []
        for _i in keys:
            values.append(make_value(self.rng, values))
        self.value = values[0]
        self.distractors = list(zip(keys[2:], values[2:]))
        self._sentences = []
        self._distractor_pos = [self.rng.random() for _d in self.distractors]

    def sentences(self, n):
        if len(self._sentences) < n:
            self._sentences += make_sentences(self.rng, n - len(self._sentences))
        return self._sentences[:n]

    def prompt(self, n, depth, with_needle=True, asked_key=None):
        """The user message with n haystack sentences and the needle at depth percent."""
        body = list(self.sentences(n))
        inserts = [(pos, NEEDLE.format(key=k, value=v)) for (k, v), pos in zip(self.distractors, self._distractor_pos)]
        if with_needle:
            inserts.append((depth / 100.0, NEEDLE.format(key=self.key, value=self.value)))
        for pos, text in sorted(inserts, key=lambda x: -x[0]):
            body.insert(int(round(pos * len(body))), text)
        return INTRO + " ".join(body) + QUESTION.format(key=asked_key or self.key)


def size_haystack(count_tokens, haystack, target, limit, tolerance=0.01, max_calls=4, depth=50):
    """Find n sentences whose prompt is within tolerance of target tokens and never above limit.

    count_tokens(text) -> int is the server's /tokenize (chat form). Returns (n, tokens, calls).
    """
    # Aim inside the window: at the target, or just under the limit when the target does not fit.
    goal = min(target, int(limit * (1 - tolerance / 2)))
    points = []

    def measure(n):
        c = count_tokens(haystack.prompt(n, depth))
        points.append((n, c))
        return c

    n = max(1, int(goal / 17.0))  # first guess: ~17 tokens per sentence, corrected below
    c = measure(n)
    while len(points) < max_calls:
        if abs(c - goal) <= tolerance * goal and c <= limit:
            break
        if len(points) == 1:
            n_next = max(1, int(round(n * goal / float(max(c, 1)))))
        else:
            (n1, c1), (n2, c2) = sorted(points, key=lambda p: abs(p[1] - goal))[:2]
            slope = (c2 - c1) / float(n2 - n1) if n2 != n1 else c2 / float(max(n2, 1))
            n_next = max(1, int(round(n2 + (goal - c2) / max(slope, 1e-9))))
        if n_next == n:
            break
        n = n_next
        c = measure(n)
    fits = [p for p in points if p[1] <= limit]
    if not fits:
        raise ValueError("even %d sentences make %d tokens, above the limit %d" % (points[-1][0], points[-1][1], limit))
    n, c = min(fits, key=lambda p: abs(p[1] - goal))
    return n, c, len(points)


# A needle value as a model may write it: 4729103, 4,729,103, 4 729 103, 4'729'103, 4_729_103, 4.729.103 (one
# separator throughout; a dot only with two groups, 4.729 is a decimal), thin and no-break spaces; also
# 5-9 digits, for near misses.
_CANDIDATE_RE = re.compile(
    r"(?<![\d,.'\u2019_])(\d{1,3}(?:(?P<sep>[,\u00a0\u202f\u2009 '\u2019_])\d{3}(?:(?P=sep)\d{3})?|\.\d{3}\.\d{3})"
    r"|\d{5,9})(?![\d]|[,.'\u2019_]\d)")
# Words that disown the number right after them: "4729103, not 4729130", "not to be confused with 8812345".
_DISOWN_RE = re.compile(r"(?:\bnot(?: to be confused with| the same as)?|\brather than|\binstead of|\bunlike|"
                        r"\bas opposed to|\bisn['\u2019]t|\bdifferent from|\bwrong(?:ly)?|\bnor)\W{0,12}$", re.I)
# A key as the haystack writes one: two or more lower-case words joined by hyphens (brave-otter).
_KEY_RE = re.compile(r"(?<![\w-])[a-z]+(?:[-_][a-z]+)+(?![\w-])", re.I)
# After a denial, a number offered in the asked key's place: "use 8812345 instead", "try 8812345".
_SUBSTITUTE_RE = re.compile(r"\b(?:instead|use|try|substitute|in its place|go with|you (?:can|could|might) (?:use|take)|"
                            r"closest|nearest|similar|alternative)\b", re.I)
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?;])\s+|\n+")
# "It is not in the text", "I could not find", "there is no number for X", "the text does not mention X".
_ABSENT_RE = re.compile(
    r"\b(?:not|never|nowhere|no(?! other))\b[^.?!\n]{0,60}?\b(?:mention\w*|found|find|stat\w*|appear\w*|present|"
    r"contain\w*|includ\w*|given|provid\w*|exist\w*|listed|specified|there|in the (?:provided )?(?:text|context|document))\b"
    r"|\b(?:could ?n['\u2019]?t|can ?n?['\u2019]?t|cannot|unable to|fail(?:ed)? to)\b[^.?!\n]{0,30}?\b(?:find|locate|identify|see|determine)\b"
    r"|\bnone of\b|\bthere (?:is|are|was|were) no\b|\bno (?:such|special|magic|mention|record|number|value|information|needle|entry)\b"
    r"|\b(?:does|do|did|is|are|was|were|has|have)n['\u2019]t\b", re.I)
_GUESS_RE = re.compile(r"\b(?:guess|might be|could be|may be|probably|likely|perhaps|maybe|closest|best match)\b", re.I)


def candidates(text):
    """The numbers of 5 to 9 digits a text gives, separators removed, in order, without repeats."""
    out = []
    for num, _start in _occurrences(text):
        if num not in out:
            out.append(num)
    return out


def _occurrences(text):
    """[(number, start)] of every 5 to 9 digit number in the text, separators removed."""
    out = []
    for m in _CANDIDATE_RE.finditer(nfkc_digits(text or "")):
        num = re.sub(r"\D", "", m.group(1))
        if 5 <= len(num) <= 9:
            out.append((num, m.start()))
    return out


def attributed_elsewhere(text, key, value, other_keys):
    """The numbers other than ``value`` that the text does not offer for ``key``: each one that follows the
    mention of another key more closely than the asked key's (in its sentence), or that comes right after
    words that disown it ("not", "rather than", "not to be confused with")."""
    out = set()
    for sent in sentences(text):
        keys = [(m.start(), re.sub(r"[\s_]+", "-", m.group(0).lower())) for m in _KEY_RE.finditer(sent)]
        for num, start in _occurrences(sent):
            if num == value:
                continue
            before = [k for pos, k in keys if pos < start]
            if _DISOWN_RE.search(sent[max(0, start - 40):start]):
                out.add(num)
            elif before and before[-1] != key.lower() and (before[-1] in other_keys or not _names(sent, key)):
                out.add(num)
    return out


def sentences(text):
    return [s for s in _SENTENCE_SPLIT_RE.split(text or "") if s.strip()]


def _names(sentence, key):
    """Whether a sentence names the key as a whole ('brave-otter', 'Brave Otter', '**brave_otter**')."""
    low = re.sub(r"[\s_*`'\"-]+", "-", sentence.lower())
    return re.search(r"(?<![a-z])%s(?![a-z])" % re.escape(key.lower()), low) is not None


def declares_absent(text):
    """The sentences of a text that say the asked thing is not there."""
    return [s for s in sentences(text) if _ABSENT_RE.search(s)]


def degenerate(text):
    """(verdict, detail) when the answer is degenerate output rather than an answer, else None."""
    bad = [f for f in garbage_findings(text or "", "content") if f["signal"] in _DEGENERATE]
    if bad:
        return "garbage", "degenerate answer: %s: %s (%s)" % (bad[0]["signal"], bad[0]["detail"], bad[0]["excerpt"])
    return None


def score(content, reasoning, key, value, distractors):
    """Verdict for one answer, from the content only (the reasoning is kept as a diagnostic).

    retrieved  the value is given, and no other candidate number, and no "it is not there"
    ambiguous  the value is given beside another needle's value or another number, or hedged with
               "not found" (a list of every value, "either X or Y"): a failure
    distractor another needle's value is given instead
    partial    the key is named with a wrong number (the sm89 indexer bug loses digits, keeps words)
    missed     no number, a number without the key, or "not found"
    garbage    degenerate output (a loop to the end, a run of one token, template markup), whatever it says
    """
    text = content or ""
    nums = candidates(text)
    other = dict((v, k) for k, v in distractors)
    word_part = _names(text, key)
    base = {"word_part": word_part, "digit_part": value in nums,
            "reasoning_has_value": value in candidates(reasoning)}
    junk = degenerate(text)
    if junk:
        return dict(base, verdict=junk[0], answered=value if value in nums else None, detail=junk[1])
    other_keys = set(k.lower() for k, _v in distractors)
    elsewhere = attributed_elsewhere(text, key, value, other_keys) if value in nums else set()
    # a denial about another key ("calm-heron is not what you asked"), or about a number disowned or attributed
    # to another key ("not to be confused with 4729130, which does not appear"), is no hedge
    absent = [a for a in declares_absent(text)
              if not (value in nums and (any(n in candidates(a) for n in elsewhere)
                                         or any(_names(a, k) for k in other_keys) and not _names(a, key)))]
    rest = [n for n in nums if n != value and n not in elsewhere]
    if value in nums:
        if not rest and not absent:
            return dict(base, verdict="retrieved", answered=value)
        why = []
        if rest:
            why.append("also gives %s" % ", ".join("%s (%s)" % (n, "the value of %s" % other[n] if n in other else
                                                                   "not a needle") for n in rest))
        if absent:
            why.append("also says %r" % absent[0].strip()[:80])
        detail = ("gives %s and %s: several candidates are not a retrieval" if rest else
                  "gives %s but %s: a hedged answer is not a retrieval") % (value, "; ".join(why))
        return dict(base, verdict="ambiguous", answered=value, detail=detail)
    hint = " (the value is in the reasoning only)" if base["reasoning_has_value"] else ""
    given = [n for n in nums if n in other]
    if given:
        return dict(base, verdict="distractor", answered=given[0],
                    detail="answered the number of %s instead%s" % (", ".join(other[n] for n in given), hint))
    if nums and not absent:
        best = max(nums, key=lambda num: sum(x == y for x, y in zip(num, value)))
        same = sum(x == y for x, y in zip(best, value)) if len(best) == len(value) else 0
        return dict(base, verdict="partial" if word_part else "missed", answered=best,
                    detail="digits wrong: %s, expected %s (%d of %d digits in place)%s"
                    % (best, value, same, len(value), hint))
    if absent:
        return dict(base, verdict="missed", answered=None,
                    detail="the answer says it is not there: %r%s" % (absent[0].strip()[:80], hint))
    return dict(base, verdict="missed", answered=None, detail="no 7-digit number in the answer%s" % hint)


def score_control(content, reasoning, asked_key, needles):
    """Verdict for the control question (a key that is not in the text), from the content only.

    Passed only when the content says the key is not there (an answer that ignores the question is ``ignored``).
    Failed when the content gives a number as the answer for the absent key: a needle's value or a made-up
    one, in a sentence that does not attribute it to another key and is not a denial. A clear
    "not there" passes, also when it goes on to list what the text does hold. An answer that says no text was given
    ("you have not provided any text": ``prompt_not_received``) fails: the haystack never reached the model, and its
    "not there" says nothing of the key. No visible content
    (``no_answer``) and degenerate output (``garbage``) fail: neither shows the model declining to make up
    a value.
    """
    text = content or ""
    keys_of = dict((v, k) for k, v in needles)
    diag = {"asked": asked_key, "says_absent": False,
            "reasoning_values": [n for n in candidates(reasoning) if n in keys_of]}
    if not visible_length(text):
        return dict(diag, verdict="no_answer", answered=None,
                    detail="no visible content for %s: the control shows nothing (did the reasoning use up "
                           "max_tokens?)" % asked_key)
    junk = degenerate(text)
    if junk:
        return dict(diag, verdict=junk[0], answered=None, detail=junk[1])
    lost = no_prompt_statement(text)
    if lost:  # "you have not provided any text" says nothing of the key: the haystack never reached the model
        return dict(diag, verdict="prompt_not_received", answered=None,
                    detail="the answer says no text reached the model (%r): that is no \"not found\" for %s"
                    % (lost.group(0), asked_key))
    says_absent = bool(declares_absent(text))
    answers = []
    for sent in sentences(text):
        nums = candidates(sent)
        offered = _GUESS_RE.search(sent) or _SUBSTITUTE_RE.search(sent)
        if not nums or (_ABSENT_RE.search(sent) and not offered):
            continue  # a denial; a guess or a substitute in the same sentence still counts as an answer
        other_key = any(_names(sent, k) for k, _v in needles)
        if other_key and not _names(sent, asked_key):
            continue  # "calm-heron: 8812345" lists what is there, attributed to its own key
        if says_absent and not _names(sent, asked_key) and not offered:
            continue  # after "not there", a bare list of what was found
        answers += nums
    diag["says_absent"] = says_absent
    if not answers and not says_absent:
        return dict(diag, verdict="ignored", answered=None,
                    detail="the answer neither gives a number for %s nor says it is not in the text: it does not "
                           "answer the question (%s)" % (asked_key, text.strip()[:80]))
    if answers:
        named = ", ".join("%s (%s)" % (n, "the value of %s" % keys_of[n] if n in keys_of else "made up")
                          for n in answers)
        return dict(diag, verdict="failed", answered=answers[0],
                    detail="answered %s for %s, a key that is not in the text" % (named, asked_key))
    return dict(diag, verdict="passed", answered=None, detail="")


def _contract_verdict(body, served_model_name):
    """(fields, None) when the body keeps the response contract and the answer is finished, else (fields, verdict):
    the needle and the control are judged only on a finished answer (finish_reason stop) from the served model."""
    fields, findings = chat_response(body, served_model_name)
    frag = foreign_fragment(fields["content"], "LATIN")  # the needle's prompt is English
    if frag and not findings:
        findings = [{"signal": "foreign_fragment", "detail": frag[1]}]
    cut = fields["finish_reason"] == "length" and not visible_length(fields["content"] or "")
    if not findings and fields["finish_reason"] != "stop" and not cut:  # no content at all: scored as missed/no_answer
        detail = ("finish_reason=%s: the answer was cut before the engine ended it (a number after the cut is not "
                  "known)" % fields["finish_reason"])
        findings = [{"signal": "unfinished", "detail": detail}]
    if not findings:
        return fields, None
    first = findings[0]
    verdict = "garbage" if first["signal"] == "markup_leak" else first["signal"]
    return fields, dict(verdict=verdict, answered=None, word_part=False, digit_part=False,
                        detail="%s: %s" % (first["signal"], first["detail"]))


def judge_needle(body, served_model_name, key, value, distractors):
    """The needle verdict for one chat completion body: the response contract first, then ``score``."""
    fields, broken = _contract_verdict(body, served_model_name)
    return fields, broken or score(fields["content"], fields["reasoning"], key, value, distractors)


def judge_control(body, served_model_name, asked_key, needles):
    """The control verdict for one chat completion body: the response contract first, then ``score_control``."""
    fields, broken = _contract_verdict(body, served_model_name)
    return fields, broken or score_control(fields["content"], fields["reasoning"], asked_key, needles)
