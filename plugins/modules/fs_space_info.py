#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fs_space_info
short_description: Size and free space of the file systems that hold (or will hold) some paths
version_added: "0.1.0"
description:
  - For each path, finds the nearest existing ancestor (a path that does not exist yet will be created on
    that file system), its mount point and file system type, and the total and free bytes there
    (free as an unprivileged user sees it, C(f_bavail)).
  - Also returns the host's memory total (RV(memtotal_mb)), which C(/dev/shm), a tmpfs, draws on, so the
    preflight reads every capacity it checks in one run.
  - Used by the C(glm53.serving.preflight) role for C(/dev/shm), the build directory and the model directory.
author:
  - glm53.serving contributors (@glm53)
options:
  paths:
    description: Paths to look at. They need not exist.
    type: list
    elements: path
    required: true
extends_documentation_fragment:
  - glm53.serving.info_module
notes:
  - Changes nothing on the host.
"""

EXAMPLES = r"""
- name: Look at /dev/shm and the model directory
  glm53.serving.fs_space_info:
    paths:
      - /dev/shm
      - /srv/models/GLM-5.3-Flash-AWQ-INT4
  register: space
"""

RETURN = r"""
paths:
  description: One entry per requested path, keyed by the path as given.
  returned: success
  type: dict
  sample:
    /dev/shm:
      path: /dev/shm
      exists: true
      existing_ancestor: /dev/shm
      mount_point: /dev/shm
      fs_type: tmpfs
      size_bytes: 270582939648
      free_bytes: 270582939648
      size_mib: 258048
      free_mib: 258048
memtotal_mb:
  description:
    - The host's memory in MiB (C(MemTotal) of C(/proc/meminfo), as the setup module's C(ansible_memtotal_mb));
      null where it cannot be read.
  returned: success
  type: int
  sample: 515469
"""

import os

from ansible.module_utils.basic import AnsibleModule


def _mounts():
    mounts = {}
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3:
                    mounts[parts[1].replace("\\040", " ")] = parts[2]
    except OSError:
        pass
    return mounts


def _mount_point(path):
    path = os.path.realpath(path)
    while not os.path.ismount(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def describe(path, mounts):
    ancestor = os.path.abspath(path)
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    st = os.statvfs(ancestor)
    mount = _mount_point(ancestor)
    size, free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    return {
        "path": path,
        "exists": os.path.exists(path),
        "existing_ancestor": ancestor,
        "mount_point": mount,
        "fs_type": mounts.get(mount),
        "size_bytes": size,
        "free_bytes": free,
        "size_mib": size // (1024 * 1024),
        "free_mib": free // (1024 * 1024),
    }


def _memtotal_mb():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def main():
    module = AnsibleModule(argument_spec=dict(paths=dict(type="list", elements="path", required=True)),
                           supports_check_mode=True)
    mounts = _mounts()
    result = {}
    for path in module.params["paths"]:
        try:
            result[path] = describe(path, mounts)
        except OSError as exc:
            module.fail_json(msg="cannot read the file system of %s: %s" % (path, exc))
    module.exit_json(changed=False, paths=result, memtotal_mb=_memtotal_mb())


if __name__ == "__main__":
    main()
