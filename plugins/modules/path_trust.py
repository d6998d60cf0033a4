#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: path_trust
short_description: Refuse a path root will run, source, load or write when someone else could replace it
version_added: "0.3.0"
description:
  - "Checks each path as OpenSSH's StrictModes checks a user's files, for what root runs, sources, loads or trusts
    (a script, an environment file, a unit, a folder it writes into): the path and every folder on the way to it,
    from /, that exist must be owned by root (or by the user the module runs as), must not be writable by their
    group or by others, and the path itself must not be a link. A link on the way must be root's, and what it points
    at is checked in its place. A world-writable folder with the sticky bit (C(/tmp)) is accepted on the way when
    the next component is root's."
  - Nothing is followed (C(lstat)) and nothing is changed. A path that does not exist yet is checked as far as it
    exists (what root makes there is root's).
  - Fails, one message per path (naming the path, the owner and mode found, and the fix), unless
    O(fail_on_problem=false), which only returns RV(problems).
author:
  - glm53.serving contributors (@glm53)
options:
  paths:
    description: Absolute paths to check. They need not exist.
    type: list
    elements: path
    required: true
  fail_on_problem:
    description: Fail when any path may not be trusted (V(false) only reports).
    type: bool
    default: true
attributes:
  check_mode:
    description: Reads only; the same in check mode.
    support: full
  diff_mode:
    description: Does not return a diff.
    support: none
  idempotent:
    description: Changes nothing.
    support: full
notes:
  - Only the Python standard library on the host.
"""

EXAMPLES = r"""
- name: Refuse to run the serve script when the engine's user could have changed it
  glm53.serving.path_trust:
    paths: [/opt/glm53/bin/serve-glm53.sh, /etc/glm53/vllm-glm53.env, /opt/glm53/libexec]

- name: Only report
  glm53.serving.path_trust:
    paths: [/var/lib/glm53-ledger/ledger.json]
    fail_on_problem: false
  register: trust
"""

RETURN = r"""
problems:
  description: For each path that may not be trusted, why and what to do.
  returned: always
  type: dict
  sample:
    /opt/glm53/bin/serve-glm53.sh: "/opt/glm53/bin (folder, owner glm53 (uid 999), mode 0755) is not root's: ..."
trusted:
  description: The paths that may be trusted.
  returned: always
  type: list
  elements: str
  sample: [/etc/glm53/vllm-glm53.env]
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._trust import trust_problems


def main():
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(type="list", elements="path", required=True),
            fail_on_problem=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    paths = module.params["paths"]
    relative = [p for p in paths if not os.path.isabs(p)]
    if relative:
        module.fail_json(msg="path_trust: not absolute: %s" % ", ".join(relative), problems={}, trusted=[])
    problems = trust_problems(paths)
    trusted = [p for p in paths if p not in problems]
    if problems and module.params["fail_on_problem"]:
        module.fail_json(msg="path_trust: root would trust what someone else can change: %s" % " ".join(
            "%s: %s." % (p, why) for p, why in problems.items()), problems=problems, trusted=trusted)
    module.exit_json(changed=False, problems=problems, trusted=trusted)


if __name__ == "__main__":
    main()
