"""How systemd reads a unit line back into words (a test helper: a reference reader, written from systemd's rules).

systemd.service(5) "Command lines" and systemd.syntax(7) "Quoting": the line is split at whitespace; a word may be
quoted with "..." or '...'; a backslash starts a C-style escape (\\\\, \\", \\', \\n, \\t, \\r, \\xNN, \\s) inside
and outside quotes; a bare ";" word separates commands; then each word's specifiers are resolved (%% is a %); on a
command line, the first word is the executable, taken literally, and in the others $$ is a "$" and $VAR/${VAR} are
variables.
"""
from __future__ import annotations

import re

_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t", "r": "\r", "s": " ", "a": "\a", "b": "\b",
            "f": "\f", "v": "\v", "0": "\0"}


class SystemdSyntaxError(ValueError):
    pass


def resolve_specifiers(line):
    """%% is %; any other specifier is refused here (the tests' units use none)."""
    out, i = [], 0
    while i < len(line):
        if line[i] == "%":
            if line[i + 1:i + 2] != "%":
                raise SystemdSyntaxError(f"specifier %{line[i + 1:i + 2]} in {line!r}")
            out.append("%")
            i += 2
            continue
        out.append(line[i])
        i += 1
    return "".join(out)


def _escape(line, i):
    """The character of the escape at line[i] (after the backslash), and the index after it."""
    if i >= len(line):
        raise SystemdSyntaxError("a backslash at the end of the line")
    char = line[i]
    if char == "x":
        digits = line[i + 1:i + 3]
        if not re.fullmatch(r"[0-9a-fA-F]{2}", digits):
            raise SystemdSyntaxError(f"bad \\x escape in {line!r}")
        return chr(int(digits, 16)), i + 3
    if char not in _ESCAPES:
        raise SystemdSyntaxError(f"unknown escape \\{char} in {line!r}")
    return _ESCAPES[char], i + 1


def split_words(value):
    """The words of a value, as systemd's extract_first_word(EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE) makes them."""
    words, i, n = [], 0, len(value)
    while True:
        while i < n and value[i] in " \t\n":
            i += 1
        if i >= n:
            return words
        if value[i] == ";" and (i + 1 == n or value[i + 1] in " \t\n"):
            raise SystemdSyntaxError(f"a bare ; splits the command line in {value!r}")
        word, quote = [], None
        while i < n:
            char = value[i]
            if quote:
                if char == "\\":
                    char, i = _escape(value, i + 1)
                    word.append(char)
                    continue
                if char == quote:
                    quote = None
                else:
                    word.append(char)
            else:
                if char in " \t\n":
                    break
                if char in "\"'":
                    quote = char
                elif char == "\\":
                    char, i = _escape(value, i + 1)
                    word.append(char)
                    continue
                else:
                    word.append(char)
            i += 1
        if quote:
            raise SystemdSyntaxError(f"unbalanced quoting in {value!r}")
        words.append("".join(word))


def command_argv(value):
    """An Exec*= value's executable and arguments: words, specifiers, then in the arguments $$ to $ (a bare $VAR is
    refused). The executable is taken literally ($ and all); one with a quote, a backslash or a control character is
    refused, as systemd refuses it."""
    words = [resolve_specifiers(word) for word in split_words(value)]
    if not words:
        raise SystemdSyntaxError("an empty command line")
    if re.search(r"[\\\"'\x00-\x1f\x7f]", words[0]):
        raise SystemdSyntaxError(f"executable name contains special characters: {words[0]!r}")
    argv = [words[0]]
    for word in words[1:]:
        if re.search(r"(?<!\$)(\$\$)*\$(?!\$)", word):
            raise SystemdSyntaxError(f"a variable reference in {word!r}")
        argv.append(word.replace("$$", "$"))
    return argv


def assignment(value):
    """An Environment= value's one assignment (specifiers, then one word; $ is literal there)."""
    words = split_words(value)
    if len(words) != 1:
        raise SystemdSyntaxError(f"{len(words)} words in {value!r}")
    return resolve_specifiers(words[0])


def dump_words(line):
    """The argv of a `Command Line:` that systemd-analyze's debug dump prints (it quotes like a shell: "..." with \\
    before \\ " $ and `), with the $$ of the arguments read as $ (as at exec time)."""
    words, i = [], 0
    while i < len(line):
        if line[i] == " ":
            i += 1
            continue
        word, quoted = [], line[i] == '"'
        i += quoted
        while i < len(line) and (line[i] != '"' if quoted else line[i] != " "):
            if line[i] == "\\":
                i += 1
            word.append(line[i])
            i += 1
        i += quoted
        words.append("".join(word))
    return words[:1] + [w.replace("$$", "$") for w in words[1:]]
