# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: release_sources
short_description: The commit each source's version names, from git ls-remote output
version_added: "0.3.0"
description:
  - "Takes the release's sources (C({name, repo, ref})) and the registered results of C(git ls-remote REPO REF
    REF^{}) run for those whose C(ref) is not already a commit, and returns C({name: {repo, ref, commit}})."
  - A ref is resolved as git resolves a name, an annotated tag's peeled commit (C(refs/tags/REF^{})), a tag, a
    branch (C(refs/heads/REF)), then a full ref name. A ref of 7 to 40 hex digits is a commit and is kept as it is
    (lower-cased).
  - Fails, naming the ref and the repository, when a ref is in none of the output.
positional: _input, results
options:
  _input:
    description: The sources, each C({name, repo, ref}).
    type: list
    elements: dict
    required: true
  results:
    description: The registered loop results of the ls-remote task (each with C(item) and C(stdout)).
    type: list
    elements: dict
    required: true
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Publish the release's sources
  ansible.builtin.set_fact:
    venv_release_sources: "{{ __sources | glm53.serving.release_sources(__ls_remote.results) }}"
"""

RETURN = r"""
_value:
  description: Each source's repo, ref and 40-hex (or given hex) commit, by name.
  type: dict
"""

import re

from ansible.errors import AnsibleFilterError

_HEX = re.compile(r"[0-9a-fA-F]{7,40}\Z")
_LINE = re.compile(r"([0-9a-f]{40})\t(\S+)\Z")


def commit_of(output, ref, repo):
    refs = {}
    for line in str(output).splitlines():
        m = _LINE.match(line.strip())
        if m:
            refs[m.group(2)] = m.group(1)
    for name in ("refs/tags/%s^{}" % ref, "refs/tags/%s" % ref, "refs/heads/%s" % ref, "%s^{}" % ref, ref):
        if name in refs:
            return refs[name]
    raise AnsibleFilterError("%s is not a branch or tag of %s (git ls-remote lists no such ref): correct the version "
                             "setting, or pin a commit" % (ref, repo))


def release_sources(sources, results):
    if not isinstance(sources, list) or not isinstance(results, list):
        raise AnsibleFilterError("release_sources expects a list of {name, repo, ref} and the ls-remote results")
    out = {}
    for source in sources:
        name, repo, ref = source["name"], source["repo"], str(source["ref"])
        if _HEX.match(ref):
            commit = ref.lower()
        else:
            hits = [r for r in results if isinstance(r, dict) and (r.get("item") or {}).get("name") == name
                    and not r.get("skipped")]
            if not hits:
                raise AnsibleFilterError("release_sources: no git ls-remote result for %s (%s)" % (name, ref))
            commit = commit_of(hits[0].get("stdout", ""), ref, repo)
        out[name] = {"repo": repo, "ref": ref, "commit": commit}
    return out


class FilterModule(object):
    def filters(self):
        return {"release_sources": release_sources}
