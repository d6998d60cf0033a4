#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: shm_clean
short_description: Remove the stale shared-memory blocks a dead vLLM engine left in /dev/shm
version_added: "0.1.0"
description:
  - Lists regular files in O(path) owned by O(user) whose names match O(patterns) (vLLM's C(psm_*),
    multiprocessing's C(sem.mp-*), PyTorch's C(torch_*), NCCL's C(nccl-*), C(vllm_*)) and that no live process
    has open (C(/proc/*/fd)) or mapped (C(/proc/*/maps)), and removes them. Anything else is kept, with the
    reason. Never removes another user's files and never empties the folder.
  - In check mode, lists what it would remove.
author:
  - glm53.serving contributors (@glm53)
options:
  path:
    description: The shared-memory folder.
    type: path
    default: /dev/shm
  user:
    description: The engine's service user; only its files are candidates.
    type: str
    required: true
  patterns:
    description: Shell patterns of the block names.
    type: list
    elements: str
    default: [psm_*, sem.mp-*, torch_*, nccl-*, vllm_*]
attributes:
  check_mode:
    description: Reports the blocks it would remove, and removes none.
    support: full
  diff_mode:
    description: Does not return a diff.
    support: none
  idempotent:
    description: A second run finds no stale block left, and changes nothing.
    support: full
notes:
  - Run it while the engine is stopped; blocks a live engine holds are kept anyway.
  - It removes files, so it is not an info module.
"""

EXAMPLES = r"""
- name: Clear the residue of a dead engine
  glm53.serving.shm_clean:
    user: glm53
"""

RETURN = r"""
removed:
  description: Blocks removed (in check mode, the blocks that would be).
  returned: always
  type: list
  elements: dict
  sample: [{path: /dev/shm/psm_1d77ccf7, size: 1048576}]
kept:
  description: Matching files kept, with the reason.
  returned: always
  type: list
  elements: dict
  sample: [{path: /dev/shm/psm_a8a448f0, size: 1048576, reason: open or mapped by a live process}]
"""

import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._procfs import find_stale, remove


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/dev/shm"),
            user=dict(type="str", required=True),
            patterns=dict(type="list", elements="str", default=["psm_*", "sem.mp-*", "torch_*", "nccl-*", "vllm_*"]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        pwd.getpwnam(p["user"])
    except KeyError:
        module.fail_json(msg="user %s does not exist (the venv role creates the service user)" % p["user"])
    try:
        stale, kept = find_stale(p["path"], p["user"], p["patterns"])
    except OSError as exc:
        module.fail_json(msg="cannot read %s: %s" % (p["path"], exc))
    removed = stale if module.check_mode else remove(stale)
    module.exit_json(changed=bool(removed), removed=removed, kept=kept)


if __name__ == "__main__":
    main()
