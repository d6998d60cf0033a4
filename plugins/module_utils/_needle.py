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


_SEVEN = re.compile(r"(?<!\d)\d{7}(?!\d)")


def score(answer_text, key, value, distractors):
    """Verdict for one answer: retrieved, partial (right needle, wrong digits), distractor or missed."""
    text = answer_text or ""
    numbers = _SEVEN.findall(text.replace(",", ""))
    key_words = key.split("-")
    word_part = all(w in text.lower() for w in key_words)
    digit_part = value in numbers
    if digit_part:
        return {"verdict": "retrieved", "word_part": word_part, "digit_part": True, "answered": value}
    other = dict((v, k) for k, v in distractors)
    for num in numbers:
        if num in other:
            return {"verdict": "distractor", "word_part": word_part, "digit_part": False, "answered": num,
                    "detail": "answered the number of %s instead" % other[num]}
    if numbers:
        best = max(numbers, key=lambda num: sum(a == b for a, b in zip(num, value)))
        same = sum(a == b for a, b in zip(best, value))
        return {"verdict": "partial" if word_part else "missed", "word_part": word_part, "digit_part": False,
                "answered": best, "detail": "digits wrong: %s, expected %s (%d of 7 digits in place)"
                % (best, value, same)}
    return {"verdict": "missed", "word_part": word_part, "digit_part": False, "answered": None,
            "detail": "no 7-digit number in the answer"}
