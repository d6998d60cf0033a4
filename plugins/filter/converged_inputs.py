# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: converged_inputs
short_description: A run's inputs for the converged record, as one digest
version_added: "0.4.0"
description:
  - A SHA-256 of the given values (the roles' settings fingerprints, the resolved sources, the values that follow the
    venv role's facts) and of the collection's own roles, plugins and playbooks, so that changed settings, a moved
    branch or an upgraded collection make every bring-up role do its work once.
positional: _input
options:
  _input:
    description: The values, any JSON-serialisable data.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: This run's inputs
  ansible.builtin.set_fact:
    inputs: "{{ {'settings': fingerprints, 'sources': venv_release_sources} | glm53.serving.converged_inputs }}"
"""

RETURN = r"""
_value:
  description: The digest, 64 hexadecimal digits.
  type: str
"""

import hashlib
import json
import os

from ansible.errors import AnsibleFilterError

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CODE = {}


def code_digest(root=_ROOT):
    """A digest of the collection's roles, plugins and playbooks (an upgraded collection does every role's work
    once). Read once per process."""
    if root not in _CODE:
        digest = hashlib.sha256()
        for top in ("roles", "plugins", "playbooks"):
            for folder, dirs, files in sorted(os.walk(os.path.join(root, top))):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for name in sorted(files):
                    if name.endswith((".pyc", ".pyo")):
                        continue
                    path = os.path.join(folder, name)
                    digest.update(os.path.relpath(path, root).encode("utf-8", "surrogateescape") + b"\0")
                    try:
                        with open(path, "rb") as fh:
                            digest.update(hashlib.sha256(fh.read()).digest())
                    except OSError:
                        digest.update(b"unreadable")
        _CODE[root] = digest.hexdigest()
    return _CODE[root]


def converged_inputs(values):
    """This run's inputs: a digest of the given values (settings' fingerprints, resolved sources, the facts the
    settings follow) and of the collection's code."""
    try:
        text = json.dumps(values, sort_keys=True, default=str)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("converged_inputs: the values cannot be serialised: %s" % exc)
    return hashlib.sha256((text + "\0" + code_digest()).encode("utf-8")).hexdigest()


class FilterModule(object):
    def filters(self):
        return {"converged_inputs": converged_inputs}
