# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: managed_flag_conflicts
short_description: Find extra command-line words that would set a flag a role manages
version_added: "0.1.0"
description:
  - Reads extra argv words the way vLLM's argument parser does, C(--flag=value), C(--flag_name) for
    C(--flag-name), a unique prefix such as C(--max-model) for C(--max-model-len), dotted keys such as
    C(--compilation-config.cudagraph_mode=NONE), short forms such as C(-tp 4) and C(-O3), and returns one message
    per word that would set one of the managed flags, naming the variable to use instead.
  - A spelling check that runs before anything changes; the serve role also compares the namespaces the
    installed vLLM's parser produces with and without the extra words (M(glm53.serving.vllm_serve_args)).
positional: _input
options:
  _input:
    description: The extra argv words.
    type: list
    elements: str
    required: true
  managed:
    description: The managed flags, each C({flags, dest, variable}).
    type: list
    elements: dict
    required: true
  source:
    description: The variable the words come from, for the messages.
    type: str
    default: serve_extra_args
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Refuse extra arguments that set a managed flag
  ansible.builtin.assert:
    that: __conflicts | length == 0
    fail_msg: "{{ __conflicts | join(' ') }}"
  vars:
    __conflicts: "{{ serve_extra_args | glm53.serving.managed_flag_conflicts(__serve_managed_flags) }}"
"""

RETURN = r"""
_value:
  description: One message per extra word that sets a managed flag.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError


def _matches(word, flag):
    """Whether argparse would read the extra word as this flag (exact, prefix, --x=v, --x.key, -O3)."""
    if flag.startswith("--"):
        if not word.startswith("--"):
            return False
        name = word.split("=", 1)[0].split(".", 1)[0].replace("_", "-")
        return len(name) > 2 and flag.startswith(name)
    if word.startswith("--"):
        return False
    name = word.split("=", 1)[0].split(".", 1)[0]
    # a one-letter short flag takes its value attached: -O3, -O.cudagraph_mode=NONE
    return name == flag or (len(flag) == 2 and name.startswith(flag))


def managed_flag_conflicts(extra, managed, source="serve_extra_args"):
    if not isinstance(extra, list) or not isinstance(managed, list):
        raise AnsibleFilterError("managed_flag_conflicts expects a list of words and a list of {flags, dest, variable}")
    out = []
    for word in extra:
        word = str(word)
        if not word.startswith("-") or word in ("-", "--"):
            continue
        hits = [m for m in managed if any(_matches(word, f) for f in m["flags"])]
        shown = word.split("=", 1)[0] + ("=..." if "=" in word else "")  # a value may be a secret
        for m in hits:
            out.append("%s has %r, which sets %s: the role manages that flag (an extra copy would override it and "
                       "every guard on it). Set %s instead." % (source, shown, m["flags"][0], m["variable"]))
    return out


class FilterModule(object):
    def filters(self):
        return {"managed_flag_conflicts": managed_flag_conflicts}
