# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: systemd_quote
short_description: Values written into a systemd unit as words systemd reads back unchanged
version_added: "0.3.0"
description:
  - Quotes a value, or each value of a list (then joined by single spaces), for a systemd unit file line, the way
    systemd splits and unescapes it (C(ExecStart=), C(Environment=), C(ReadWritePaths=)).
  - Every C(%) becomes C(%%) (systemd expands specifiers such as C(%h) in these lines); with O(dollar), every C($)
    becomes C($$) (command lines expand C($VAR) and C(${VAR})).
  - A word of only letters, digits and C(@+=:,./_-) (and C(%), C($), escaped) is written as it is, so a plain value
    renders unchanged, and the empty word as C(''). Any other word is written in double quotes with C(\) and C(")
    backslash-escaped and control characters as C-style escapes (C(\n), C(\xNN)), so that a space, C(;), a quote or
    a backtick stays inside its one word.
  - A list with O(dollar) is a command line, and its first word the executable, which systemd takes literally (no
    C($VAR) there), so its C($) is left as it is; a path with a quote, a backslash or a control character, which
    systemd refuses to run, is refused here.
  - This is systemd's quoting, not the shell's. C(ExecStart=) runs no shell, so C(;), C($(...)) and backticks are
    plain characters inside a word; for C(/bin/sh) lines (cron) use Ansible's C(quote) filter.
positional: _input, dollar, always
options:
  _input:
    description: One word, or a list of words (each quoted, then joined by single spaces).
    type: raw
    required: true
  dollar:
    description:
      - Escape C($) as C($$). True for C(Exec*=) lines (they expand variables); false for every other line
        (C(Environment=), paths), where C($$) would stay two dollars.
    type: bool
    default: true
  always:
    description: Double-quote every word, even a plain one (an C(Environment=) assignment, written as before).
    type: bool
    default: false
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: The unit's command line, each word one argument whatever it holds
  ansible.builtin.copy:
    dest: /etc/systemd/system/example.service
    content: |
      [Service]
      ExecStart={{ ['/usr/bin/python3', '/opt/run.py', '--log', '/var/log/a b%.log'] | glm53.serving.systemd_quote }}
      Environment={{ ('GREETING=' ~ greeting) | glm53.serving.systemd_quote(dollar=false, always=true) }}
    mode: "0644"
# ExecStart=/usr/bin/python3 /opt/run.py --log "/var/log/a b%%.log"
"""

RETURN = r"""
_value:
  description: The word, or the words joined by single spaces, as systemd would read them back.
  type: str
  sample: /usr/bin/python3 /opt/run.py --log "/var/log/a b%%.log"
"""

import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean

# Characters systemd takes literally outside quotes, in every line it splits into words.
_PLAIN = re.compile(r"[A-Za-z0-9@+=:,./_%$-]+")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _word(value, dollar, always):
    if value is None:
        value = ""
    if isinstance(value, (dict, list, tuple)):
        raise AnsibleFilterError("systemd_quote: each word must be a string, not %s" % type(value).__name__)
    text = to_text(value, errors="surrogate_or_strict")
    if "\x00" in text:
        raise AnsibleFilterError("systemd_quote: a word with a NUL character cannot be written into a unit")
    escaped = text.replace("%", "%%")
    if dollar:
        escaped = escaped.replace("$", "$$")
    if not always and _PLAIN.fullmatch(text):
        return escaped
    if not always and not text:
        return "''"  # the empty word, as the shell's quote wrote it in these units before
    out = []
    for char in escaped:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append("\\x%02x" % ord(char))
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def systemd_quote(value, dollar=True, always=False):
    dollar = boolean(dollar, strict=True)
    always = boolean(always, strict=True)
    if not isinstance(value, (list, tuple)):
        return _word(value, dollar, always)
    words = list(value)
    if dollar and words:
        # a command line: systemd runs the first word as a path, literally, and refuses one with these characters
        executable = to_text(words[0] if words[0] is not None else "", errors="surrogate_or_strict")
        if re.search(r"[\\\"'\x00-\x1f\x7f]", executable):
            raise AnsibleFilterError("systemd_quote: systemd runs no executable whose path has a quote, a backslash "
                                     "or a control character: %r" % executable)
        return " ".join([_word(executable, False, always)] + [_word(word, True, always) for word in words[1:]])
    return " ".join(_word(word, dollar, always) for word in words)


class FilterModule(object):
    def filters(self):
        return {"systemd_quote": systemd_quote}
