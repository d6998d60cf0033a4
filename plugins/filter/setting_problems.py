# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: setting_problems
short_description: Check role settings against shape and range rules, and say what is wrong
version_added: "0.1.0"
description:
  - Takes a list of checks, each naming a variable, its value and a rule, and returns one plain message per
    setting that breaks its rule, naming the variable, the value and the fix. An empty list means every
    setting is fine.
  - The roles' C(validate.yml) entry points use it before anything changes on a host.
  - "Rules: C(port) (1-65535), C(positive) (a number above 0), C(fraction) (above 0, at most 1),
    C(int_min) (an integer of at least C(min)), C(int_range) (C(min) to C(max)), C(abs_path) (an absolute
    path with no C(..) or newline), C(abs_path_no_space) (the same, with no whitespace anywhere in it),
    C(hex_commit) (a git object name of 7 to 40 hex digits, never a ref),
    C(nonblank) (a string with something other than spaces, and no line break), C(url) (http or https with a
    host), C(serial) (a batch size of at least 1, or a whole-number percentage above 0 and below 100),
    C(count_or_pct) (a count of hosts of 0 or more, or a whole-number percentage from 0 to 100),
    C(duration) (a Prometheus duration such as C(30s) or C(1h30m), with C(min) and C(max) in seconds), C(own_dir) (an
    C(abs_path) that is not a system folder such as C(/), C(/etc), C(/usr), C(/var), C(/opt) or a home: a folder
    the collection writes into or removes things from), C(env_name) (an environment variable name: a letter or
    C(_), then letters, digits or C(_)), C(unix_name) (a user or group name as useradd takes it),
    C(single_line) (a string with no line break or control character)."
  - Every rule matches the whole value (a trailing line break is not forgiven), and numbers are ASCII digits
    (full-width digits are refused, though Python's C(int) would read them).
positional: _input
options:
  _input:
    description:
      - The checks, each C({name, value, rule}) with optional C(min), C(max) and C(hint).
      - With C(values) (a list) instead of C(value), every element is checked and named C(name[i]); with a
        mapping, every value is checked and named C(name["key"]).
      - With C(values) a mapping and C(keys=true), its keys are checked instead, each named C(a key of name).
      - With C(secret=true), the value is never put in a message.
    type: list
    elements: dict
    required: true
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Refuse bad settings
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
  vars:
    __problems: >-
      {{ [{'name': 'serve_port', 'value': serve_port, 'rule': 'port'}] | glm53.serving.setting_problems }}
"""

RETURN = r"""
_value:
  description: One message per setting that breaks its rule.
  type: list
  elements: str
"""

import json
import math
import re
import unicodedata

from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.module_utils._kinds import (
    distinct_problem, kind_problem, root_path_problem, special_chars, unnormal, url_problem)

_HEX = re.compile(r"[0-9a-fA-F]{7,40}")
_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")
_DURATION = re.compile(r"([0-9]+(ms|s|m|h|d|w|y))+")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def _span(seconds):
    """A bound in seconds as the largest Prometheus unit that writes it whole (86400 -> 1d)."""
    if seconds is None:
        return "any"
    if seconds == 0:
        return "0s"
    for unit in ("y", "w", "d", "h", "m", "s"):
        if seconds >= _UNIT_S[unit] and seconds % _UNIT_S[unit] == 0:
            return "%d%s" % (seconds // _UNIT_S[unit], unit)
    return "%sms" % int(seconds * 1000)


_UNIX_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Control characters (C0, DEL, C1), line and paragraph separators, and the invisible format characters: zero-width
# spaces and joiners, bidi embeddings, overrides and isolates (a right-to-left override reorders what a unit line
# shows), the soft hyphen and the byte-order mark (no HTTP client sends a header holding one). A value that reaches a
# header, a unit line, an env file or a file name holds none of them.
# The invisible format characters (setting_types refuses them in every setting's strings; the rules here, with
# every control character, in the values they check).
# Characters no setting may hold, by Unicode category rather than by a list: controls (Cc), format characters (Cf:
# zero-width spaces and joiners, bidi embeddings, overrides and isolates, the byte-order mark, the soft hyphen...),
# line and paragraph separators (Zl, Zp), private-use and surrogate code points (Co, Cs), and code points Unicode
# has not assigned (Cn). A new invisible character is caught by its category.
UNSEEN_CATEGORIES = frozenset(["Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"])


def unseen_at(text, allowed=""):
    """The index of the first character of text that is invisible or a control (not in allowed), or None."""
    for i, char in enumerate(text):
        if char not in allowed and unicodedata.category(char) in UNSEEN_CATEGORIES:
            return i
    return None


# Folders a setting must never name as its own: the collection creates files in it, or removes what is there.
_SYSTEM_DIRS = frozenset(["/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/media", "/mnt",
                          "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/usr/bin",
                          "/usr/lib", "/usr/local", "/usr/local/bin", "/usr/sbin", "/usr/share", "/var", "/var/lib",
                          "/var/log", "/var/tmp", "/etc/systemd", "/etc/systemd/system", "/dev/shm"])


def _number(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    text = str(value).strip(" ")
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return None


def _integer(value):
    # A whole number given as text is digits (-e key=1e3 is text: Ansible's int() of it, for serial, fails)
    if isinstance(value, str) and not re.fullmatch(r"[+-]?[0-9]+", value.strip(" ")):
        return None
    n = _number(value)
    return n if isinstance(n, int) or (isinstance(n, float) and n.is_integer()) else None


def _too_long(path):
    data = path.encode("utf-8", "surrogatepass")
    return len(data) > 4095 or any(len(part) > 255 for part in data.split(b"/"))


_ALIASES = {"path": "abs_path", "text": "single_line", "secret": "nonblank"}
_PATH_RULES = ("abs_path", "own_dir", "abs_path_no_space", "root_path")


def _problem(check):
    """The message for one check, or None when the value keeps its rule."""
    if check["rule"] in _ALIASES:
        check = dict(check, rule=_ALIASES[check["rule"]], secret=check.get("secret") or check["rule"] == "secret")
    problem = _shape_problem(check)
    if problem is None and check["rule"] in _PATH_RULES and isinstance(check.get("value"), str) \
            and special_chars(check["value"]):
        problem = ("%s=%s holds %s, which a shell, cron or systemd reads as its own (a command separator, an expansion, "
                   "a specifier or a quote): give a path of letters, digits and . _ - + @ = , : / only."
                   % (check["name"], json.dumps(check["value"]), " ".join(special_chars(check["value"]))))
    if problem is None and check["rule"] in _PATH_RULES and isinstance(check.get("value"), str):
        bad = unnormal(check["value"])
        problem = ("%s=%s %s." % (check["name"], json.dumps(check["value"]), bad)) if bad else None
        problem = problem or distinct_problem(check)
        if problem is None and (check["rule"] == "root_path" or check.get("root")):
            problem = root_path_problem(check)
    return problem


def _shape_problem(check):
    name, value, rule = check["name"], check.get("value"), check["rule"]
    shown = "(hidden)" if check.get("secret") else json.dumps(value, default=str)
    if rule == "port":
        n = None if isinstance(value, str) and value.strip() != value else _integer(value)
        if n is None or not 1 <= n <= 65535:
            return "%s=%s is not a TCP port: use a whole number from 1 to 65535." % (name, shown)
    elif rule == "positive":
        n = _number(value)
        if n is None or n <= 0:
            return "%s=%s must be a number above 0 (a timeout, a delay or a size)." % (name, shown)
    elif rule == "fraction":
        n = _number(value)
        if n is None or not 0 < n <= 1:
            return "%s=%s must be a fraction above 0 and at most 1 (0.94 is the card's)." % (name, shown)
    elif rule == "number_range":
        n = _number(value)
        low, high = check.get("min"), check.get("max")
        if n is None or math.isnan(n) or (low is not None and n < low) or (high is not None and n > high):
            return "%s=%s must be a number from %s to %s." % (name, shown, low, high)
    elif rule in ("int_min", "int_range"):
        n = _integer(value)
        low, high = check.get("min"), check.get("max")
        if n is None or (low is not None and n < low) or (high is not None and n > high):
            if rule == "int_range":
                return "%s=%s must be a whole number from %s to %s." % (name, shown, low, high)
            return "%s=%s must be a whole number of at least %s." % (name, shown, low)
    elif rule in _PATH_RULES and isinstance(value, str) and _too_long(value):
        return ("%s=%s is longer than a file system takes: at most 255 bytes a name and 4095 in all." % (name, shown))
    elif rule in ("abs_path", "own_dir", "root_path"):
        if not isinstance(value, str) or not value.startswith("/") or unseen_at(value) is not None \
                or ".." in value.split("/") or value.strip() != value:
            return ("%s=%s must be an absolute path (starting with /, no '..', no line break or control character, "
                    "no spaces around it)." % (name, shown))
        if rule == "own_dir" and re.search(r"\s", value):
            return ("%s=%s has a space in it: the unit's ReadWritePaths= and the serve command split a folder there. "
                    "Give a folder without spaces." % (name, shown))
        if rule == "own_dir" and (re.sub(r"/+", "/", value).rstrip("/") or "/") in _SYSTEM_DIRS:
            return ("%s=%s is a system folder: the collection writes into this folder or removes what it put there, "
                    "so give it a folder of its own (the default's shape, such as /opt/glm53/...)." % (name, shown))
    elif rule == "abs_path_no_space":
        if not isinstance(value, str) or not value.startswith("/") or re.search(r"\s", value) or unseen_at(value) is not None \
                or ".." in value.split("/"):
            return "%s=%s must be an absolute path (starting with /, no '..') with no spaces in it." % (name, shown)
    elif rule == "hex_commit":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return ("%s=%s was read as a number: YAML reads an all-digit commit prefix (or one like 1e5) as one, and "
                    "drops its leading zeros. Quote it: %s: \"<the prefix as git prints it>\"." % (name, shown, name))
        if not isinstance(value, str) or not _HEX.fullmatch(value):
            return ("%s=%s is not a commit: pin a git object name of 7 to 40 hex digits (git rev-parse --short=10 "
                    "<ref>), never a branch, tag or HEAD, which move." % (name, shown))
    elif rule == "nonblank":
        if not isinstance(value, str) or not value.strip() or unseen_at(value) is not None or value.strip() != value:
            return ("%s=%s must be a non-blank string with no spaces around it, and no line break, control or invisible "
                    "character (zero-width, bidi, byte-order mark) in it." % (name, shown))
    elif rule == "single_line":
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or unseen_at(str(value)) is not None:
            return ("%s=%s must be one line of text: a line break or control character in it would start a new line "
                    "in the file it is written to, and an invisible one (zero-width, bidi, byte-order mark) would hide "
                    "what it says." % (name, shown))
    elif rule == "unix_name":
        if not isinstance(value, str) or not _UNIX_NAME.fullmatch(value):
            return ("%s=%s is not a user or group name useradd accepts: a lower-case letter or _, then up to 31 "
                    "lower-case letters, digits, _ or - (glm53)." % (name, shown))
    elif rule == "env_name":
        if not isinstance(value, str) or not _ENV_NAME.fullmatch(value):
            return ("%s=%s is not an environment variable name: use a letter or _, then letters, digits or _ "
                    "(CUDA_VISIBLE_DEVICES)." % (name, shown))
    elif rule == "url":
        return url_problem(check)
    elif rule == "duration":
        if not isinstance(value, str) or not _DURATION.fullmatch(value):
            return ("%s=%s must be a Prometheus duration: a whole number and a unit (ms, s, m, h, d, w, y), such as "
                    "30s, 2m or 1h30m." % (name, shown))
        seconds = sum(int(n) * _UNIT_S[unit] for n, unit in re.findall(r"([0-9]+)(ms|s|m|h|d|w|y)", value))
        low, high = check.get("min"), check.get("max")
        if (low is not None and seconds < low) or (high is not None and seconds > high):
            return "%s=%s must be a Prometheus duration from %s to %s." % (name, shown, _span(low), _span(high))
    elif rule == "serial" and isinstance(value, list) and value:
        # Ansible's serial list, batch by batch ([1, "25%", "100%"]): each item a batch size or a percentage
        for i, item in enumerate(value):
            if i > 0 and str(item).strip(" ") == "100%":
                continue  # the rest in one batch, after the first batches proved the release
            problem = _problem(dict(check, name="%s[%d]" % (name, i), value=item))
            if problem:
                return problem
    elif rule == "count_or_pct":
        text = str(value).strip(" ")
        n = _integer(text[:-1] if text.endswith("%") else text) if _INT.fullmatch(text.rstrip("%").strip(" ")) else None
        if isinstance(value, bool) or n is None or n < 0 or (text.endswith("%") and n > 100):
            return ("%s=%s must be a count of hosts (0 or more) or a whole percentage of them from 0%% to 100%% "
                    "(50%%)." % (name, shown))
    elif rule == "serial":
        text = str(value).strip(" ")
        if text.endswith("%"):
            # Ansible reads a percentage with int(): 12.5% stops the play with "invalid literal for int()"
            n = _integer(text[:-1]) if _INT.fullmatch(text[:-1].strip(" ")) else None
            ok = n is not None and 0 < n < 100
        else:
            n = _integer(text)
            ok = n is not None and n >= 1
        if not ok:
            return ("%s=%s must be a batch size of at least 1 or a percentage below 100%% such as 25%%: 0, a "
                    "negative value or 100%% puts the whole fleet in one batch and stops every engine at once; a "
                    "percentage is a whole number, and a size is digits (Ansible reads both with int())." % (name, shown))
    else:
        problem = kind_problem(check)
        if problem is NotImplemented:
            raise AnsibleFilterError("setting_problems: unknown rule %r for %s" % (rule, name))
        return problem
    return None


def setting_problems(checks):
    if not isinstance(checks, list):
        raise AnsibleFilterError("setting_problems expects a list of {name, value, rule}")
    out = []
    for check in checks:
        if "values" in check and isinstance(check["values"], dict) and check.get("keys"):
            singles = [dict(check, name="a key of %s" % check["name"], value=k) for k in check["values"]]
        elif "values" in check and isinstance(check["values"], dict):
            singles = [dict(check, name="%s[%s]" % (check["name"], json.dumps(k, default=str)), value=v)
                       for k, v in check["values"].items()]
        elif "values" in check:
            values = check["values"] if isinstance(check["values"], list) else [check["values"]]
            singles = [dict(check, name="%s[%d]" % (check["name"], i), value=v) for i, v in enumerate(values)]
        else:
            singles = [check]
        for single in singles:
            msg = _problem(single)
            if msg:
                out.append(msg + (" " + check["hint"] if check.get("hint") else ""))
    return out


class FilterModule(object):
    def filters(self):
        return {"setting_problems": setting_problems}
