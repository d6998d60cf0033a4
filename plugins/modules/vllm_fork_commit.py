#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: vllm_fork_commit
short_description: Prove a vLLM fork checkout (and the vLLM installed from it) carries the required fixes
version_added: "0.1.0"
description:
  - Reports the checkout's HEAD and branch, whether HEAD equals or descends from O(minimum_commit)
    (C(git merge-base --is-ancestor)), which O(required_commits) are missing from HEAD's history, and whether
    the tree is dirty.
  - Given O(venv), also reads the version of the vLLM installed there (C(vllm/_version.py), written by
    setuptools-scm at build time as C(X.Y.Z.devN+g<sha>)) without importing vLLM, and checks that its commit is
    HEAD, so a stale editable build is caught.
  - Fails with a message saying exactly what is wrong and what to do. Short and long hashes are accepted.
author:
  - glm53.serving contributors (@glm53)
options:
  path:
    description: The fork's checkout.
    type: path
    required: true
  minimum_commit:
    description:
      - HEAD must be this commit or a descendant of it.
      - A git object name of 7 to 40 hex digits; a branch, tag or other ref is refused (it moves).
    type: str
    required: true
  required_commits:
    description:
      - Commits that must be in HEAD's history, each a hash or a dict with C(commit) and C(name).
      - Each a git object name of 7 to 40 hex digits, as for O(minimum_commit).
      - In a shallow clone whose history cannot prove them, the module says so instead of calling them missing.
    type: list
    elements: raw
    default: []
  venv:
    description: A virtualenv whose installed vLLM must be a build of HEAD.
    type: path
  allow_dirty:
    description: Accept local modifications to tracked files, and untracked files in O(package).
    type: bool
    default: false
  package:
    description:
      - The package folder inside the checkout (relative) whose untracked files, unless ignored by the checkout's
        C(.gitignore), make the tree dirty too (a new source file there goes into the build, yet no commit holds it).
    type: str
    default: vllm
  versions_of:
    description:
      - Other distributions whose versions in O(venv) to report in the same run (RV(installed_versions)), such as
        C(torch), which is part of what identifies a build.
    type: list
    elements: str
    default: []
  stamp_file:
    description:
      - A file to read in the same run (RV(stamp)), such as the build stamp the vllm_fork role writes after a proved
        build. A missing file is not an error.
    type: path
extends_documentation_fragment:
  - glm53.serving.info_module
notes:
  - Changes nothing. Needs git on the host.
"""

EXAMPLES = r"""
- name: Prove the fork and the installed engine
  glm53.serving.vllm_fork_commit:
    path: /opt/glm53/src/vllm-glm53
    minimum_commit: f2935ce322
    required_commits:
      - {commit: 1358bbd8c, name: mHC fused-norm fix}
      - {commit: 005c57e0d, name: long-context graph fix}
    venv: /opt/glm53/venv
"""

RETURN = r"""
head:
  description: The full hash of HEAD.
  returned: always
  type: str
  sample: f2935ce3221b0e5a8f0c4d7e1b2a3c4d5e6f7a8b
head_short:
  description: HEAD abbreviated to 10 characters.
  returned: always
  type: str
  sample: f2935ce322
branch:
  description: The checked-out branch, or null when HEAD is detached.
  returned: always
  type: str
  sample: sm89-longctx-fix-v2
minimum_commit:
  description: The full hash of the minimum commit (null when it is not in the checkout).
  returned: always
  type: str
  sample: f2935ce3221b0e5a8f0c4d7e1b2a3c4d5e6f7a8b
equals_minimum:
  description: Whether HEAD is the minimum commit.
  returned: always
  type: bool
  sample: false
descends_from_minimum:
  description: Whether HEAD is the minimum commit or a descendant of it.
  returned: always
  type: bool
  sample: true
missing_commits:
  description: Required commits not in HEAD's history (as given, with their names).
  returned: always
  type: list
  elements: str
  sample: ["1358bbd8c (mHC fused-norm fix)"]
shallow:
  description: Whether the checkout is a shallow clone (its history may not prove ancestry).
  returned: always
  type: bool
  sample: false
dirty:
  description: Whether tracked files are modified.
  returned: always
  type: bool
  sample: false
dirty_files:
  description: The modified tracked files.
  returned: always
  type: list
  elements: str
  sample: []
installed_version:
  description: The version of vLLM installed in O(venv).
  returned: when venv is given
  type: str
  sample: 0.28.1rc1.dev12+gf2935ce32
installed_commit:
  description: The commit abbreviation in the installed version.
  returned: when venv is given
  type: str
  sample: f2935ce32
installed_location:
  description: Where the installed vllm package lives.
  returned: when venv is given
  type: str
  sample: /opt/glm53/src/vllm-glm53/vllm
installed_matches_head:
  description: Whether the installed vLLM is a build of HEAD (from a clean tree).
  returned: when venv is given
  type: bool
  sample: true
installed_versions:
  description: The version of each distribution of O(versions_of) in O(venv); null when it is not installed.
  returned: when venv is given
  type: dict
  sample: {torch: 2.9.0}
stamp:
  description: The content of O(stamp_file), stripped; null when there is no such file.
  returned: when stamp_file is given
  type: str
  sample: f2935ce3221a...-cp310-torch2.9.0-editable
checkout_problems:
  description:
    - The problems of the checkout alone (the minimum commit, the fix commits, a shallow or dirty tree), without those
      of the installed engine. A role that checks both in one run fails on these only when the engine is to be built
      next anyway.
  returned: when the checkout could be read
  type: list
  elements: str
  sample: []
problems:
  description: Everything found wrong, one line each.
  returned: always
  type: list
  elements: str
  sample: []
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._installed import installed_build

HEX_PIN = re.compile(r"^[0-9a-fA-F]{7,40}$")


class ForkCheck(object):
    def __init__(self, module):
        self.module = module
        self.path = module.params["path"]

    def git(self, *args):
        rc, out, err = self.module.run_command(["git", "-C", self.path] + list(args))
        return rc, out.rstrip("\n"), err.strip()

    def resolve(self, rev):
        rc, out, _err = self.git("rev-parse", "--verify", "--quiet", "%s^{commit}" % rev)
        return out.strip() if rc == 0 and out.strip() else None

    def is_ancestor(self, ancestor, head):
        rc, _out, err = self.git("merge-base", "--is-ancestor", ancestor, head)
        if rc not in (0, 1):
            self.module.fail_json(msg="git merge-base failed in %s: %s" % (self.path, err))
        return rc == 0


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            minimum_commit=dict(type="str", required=True),
            required_commits=dict(type="list", elements="raw", default=[]),
            venv=dict(type="path"),
            allow_dirty=dict(type="bool", default=False),
            package=dict(type="str", default="vllm"),
            versions_of=dict(type="list", elements="str", default=[]),
            stamp_file=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if module.get_bin_path("git") is None:
        module.fail_json(msg="git is not installed on this host")
    if not os.path.isdir(os.path.join(p["path"], ".git")) and not os.path.isfile(os.path.join(p["path"], ".git")):
        module.fail_json(msg="%s is not a git checkout of the vLLM fork (clone it first; the vllm_fork role does)"
                             % p["path"])
    pins = [("minimum_commit", p["minimum_commit"])] + [
        ("required_commits", str(item.get("commit", "")) if isinstance(item, dict) else str(item))
        for item in p["required_commits"]]
    refs = ["%s %r" % (name, value) for name, value in pins if not HEX_PIN.match(value)]
    if refs:
        module.fail_json(msg="not commits: %s. Pin git object names of 7 to 40 hex digits (git rev-parse --short=10 "
                             "<ref>): a branch, a tag, HEAD or origin/... moves, and any checkout would pass"
                             % ", ".join(refs))
    g = ForkCheck(module)
    head = g.resolve("HEAD")
    if head is None:
        module.fail_json(msg="%s has no HEAD commit" % p["path"])
    rc, branch, _e = g.git("symbolic-ref", "--short", "-q", "HEAD")
    branch = branch.strip() if rc == 0 and branch.strip() else None
    problems = []

    minimum = g.resolve(p["minimum_commit"])
    equals = descends = False
    if minimum is None:
        problems.append("the minimum commit %s is not in this checkout: the clone or mirror is stale or the pin is "
                        "mistyped; fetch the fork's branch (git fetch origin) or fix vllm_fork_minimum_commit"
                        % p["minimum_commit"])
    else:
        equals = minimum == head
        descends = equals or g.is_ancestor(minimum, head)
        if not descends:
            problems.append("HEAD %s (%s) is not %s nor a descendant of it: this build lacks the fork's sm89 fixes "
                            "and will produce garbage; check out the fork's branch (sm89-longctx-fix-v2) at %s or newer"
                            % (head[:10], branch or "detached", p["minimum_commit"], p["minimum_commit"]))

    rc, shallow, _e = g.git("rev-parse", "--is-shallow-repository")
    shallow = rc == 0 and shallow.strip() == "true"

    missing = []
    for item in p["required_commits"]:
        if isinstance(item, dict):
            commit, name = str(item.get("commit", "")), item.get("name")
        else:
            commit, name = str(item), None
        label = "%s (%s)" % (commit, name) if name else commit
        full = g.resolve(commit)
        if full is None or not g.is_ancestor(full, head):
            missing.append(label)
    if missing:
        problems.append("required fix commit(s) missing from HEAD's history: %s; use a checkout that contains them "
                        "(the model card: verify both the mHC kernel fix and the long-context graph fix)"
                        % ", ".join(missing))

    if shallow and (minimum is None or not descends or missing):
        problems = ["cannot prove ancestry in a shallow clone: %s has a truncated history, so the minimum commit and "
                    "the fix commits may be in the fork yet not here. Fetch the full history (git -C %s fetch "
                    "--unshallow) and run again" % (p["path"], p["path"])]

    rc, status, _e = g.git("status", "--porcelain", "--untracked-files=all")
    package = p["package"].strip("/") + "/"
    dirty_files = [line[3:] for line in status.splitlines()
                   if line.strip() and (not line.startswith("?? ") or line[3:].startswith(package))]
    if dirty_files and not p["allow_dirty"]:
        problems.append("the checkout has local modifications (%s): a build from it is not the pinned commit; "
                        "commit or discard them (git -C %s stash), or set allow_dirty"
                        % (", ".join(dirty_files[:5]), p["path"]))

    result = dict(changed=False, head=head, head_short=head[:10], branch=branch, minimum_commit=minimum, shallow=shallow,
                  equals_minimum=equals, descends_from_minimum=descends, missing_commits=missing,
                  dirty=bool(dirty_files), dirty_files=dirty_files)

    result["checkout_problems"] = list(problems)
    if p["venv"]:
        info = installed_build(module, p["venv"], "vllm", "vllm", p["versions_of"])
        if not info.get("installed") and info.get("location") is not None:
            info["installed"] = True  # a checkout on sys.path without dist metadata
        version = info.get("file_version") or info.get("version")
        m = re.search(r"\+g([0-9a-f]{7,40})", version or "")
        commit = m.group(1) if m else None
        matches = bool(commit) and head.startswith(commit) and ".d" not in (version or "").split("+", 1)[-1]
        result.update(installed_version=version, installed_commit=commit, installed_location=info.get("location"),
                      installed_matches_head=matches, installed_versions=info.get("versions", {}))
        if info.get("error"):
            problems.append("the installed vLLM cannot be read: %s" % info["error"])
        elif info.get("location") is None:
            problems.append("vLLM is not installed in %s: build the fork (the vllm_fork role)" % p["venv"])
        elif commit is None:
            problems.append("the vLLM in %s (version %s at %s) is not a build of a git checkout: it is not the fork; "
                            "uninstall it and build the fork" % (p["venv"], version, info.get("location")))
        elif not matches:
            why = "from a dirty tree" if head.startswith(commit) else "of commit %s" % commit
            problems.append("the vLLM in %s is a build %s (version %s), but the checkout is at %s: the build is "
                            "stale; rebuild (pip install -e %s --no-build-isolation)" % (
                                p["venv"], why, version, head[:10], p["path"]))
    if p["stamp_file"]:
        try:
            with open(p["stamp_file"]) as f:
                result["stamp"] = f.read().strip()
        except OSError:
            result["stamp"] = None
    result["problems"] = problems
    if problems:
        module.fail_json(msg="vLLM fork check failed: " + "; ".join(problems), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
