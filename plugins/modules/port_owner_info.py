#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: port_owner_info
short_description: Which processes listen on a TCP port, and which systemd unit and user they belong to
version_added: "0.1.0"
description:
  - Reads C(/proc/net/tcp) and C(/proc/net/tcp6) for sockets in LISTEN state on the port, then finds the
    processes holding those sockets through C(/proc/<pid>/fd), with their user, command line and the
    systemd unit of their cgroup.
  - A socket that is bound but not listening (vLLM's own, while it loads) is not in C(/proc/net/tcp) and
    is not seen.
  - Standard library only; needs root to see other users' processes.
author:
  - glm53.serving contributors (@glm53)
options:
  port:
    description: TCP port.
    type: int
    required: true
  engine_user:
    description:
      - The engine's user. Its processes are not foreign (the one rule for who may hold the serve port, used by
        the preflight and serve roles).
    type: str
  engine_unit:
    description: The engine's systemd unit (C(NAME.service)); its processes are not foreign either.
    type: str
extends_documentation_fragment:
  - glm53.serving.info_module
notes:
  - Changes nothing on the host.
"""

EXAMPLES = r"""
- name: Who holds the serve port?
  glm53.serving.port_owner_info:
    port: 8000
    engine_user: glm53
    engine_unit: vllm-glm53.service
  register: serve_port_owner

- name: Refuse a port another service holds
  ansible.builtin.assert:
    that: serve_port_owner.foreign | length == 0
"""

RETURN = r"""
listening:
  description: Whether any socket listens on the port.
  returned: success
  type: bool
  sample: true
processes:
  description:
    - Processes holding a socket on the port (listening or bound).
    - When a process cannot be read (another user's C(/proc/<pid>/fd) needs CAP_SYS_PTRACE), the entry has
      a null C(pid) and the socket owner's C(user) from C(/proc/net/tcp).
  returned: success
  type: list
  elements: dict
  sample:
    - pid: 303
      user: glm53
      name: vllm
      cmdline: /opt/glm53/venv/bin/python3 /opt/glm53/venv/bin/vllm serve ...
      unit: vllm-glm53.service
      state: listen
foreign:
  description:
    - The entries of RV(processes) that belong neither to O(engine_user) nor to O(engine_unit).
    - An entry whose process could not be read counts as foreign unless its socket's owner is O(engine_user).
  returned: success
  type: list
  elements: dict
  sample: []
"""

import os
import pwd
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._procfs import listening_sockets


def _unit(pid):
    try:
        with open("/proc/%d/cgroup" % pid) as f:
            text = f.read()
    except OSError:
        return None
    units = re.findall(r"/([^/\n]+\.(?:service|scope))", text)
    return units[-1] if units else None


def _user(pid):
    try:
        return _user_name(os.stat("/proc/%d" % pid).st_uid)
    except OSError:
        return None


def _user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def owners(port):
    sockets = listening_sockets(port)
    wanted = set("socket:[%s]" % inode for inode in sockets)
    seen = set()
    procs = []
    if wanted:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            fd_dir = "/proc/%d/fd" % pid
            try:
                fds = os.listdir(fd_dir)
            except OSError:
                continue
            holds = False
            for fd in fds:
                try:
                    target = os.readlink(os.path.join(fd_dir, fd))
                except OSError:
                    continue
                if target in wanted:
                    holds = True
                    seen.add(target)
            if holds:
                procs.append({
                    "pid": pid,
                    "user": _user(pid),
                    "name": (_read("/proc/%d/comm" % pid) or "").strip() or None,
                    "cmdline": (_read("/proc/%d/cmdline" % pid) or "").replace("\0", " ").strip() or None,
                    "unit": _unit(pid),
                    "state": "listen",
                })
    # Sockets whose process could not be read (another user's /proc/<pid>/fd needs CAP_SYS_PTRACE, which
    # a container's root may lack) are still reported with the socket owner's user from /proc/net/tcp.
    for inode, uid in sorted(sockets.items()):
        if "socket:[%s]" % inode not in seen:
            procs.append({"pid": None, "user": _user_name(uid), "name": None, "cmdline": None, "unit": None,
                          "state": "listen"})
    return {
        "listening": bool(sockets),
        "processes": sorted(procs, key=lambda p: (p["pid"] is None, p["pid"] or 0)),
    }


def foreign(processes, engine_user=None, engine_unit=None):
    """The holders that are not the engine: neither its user nor its unit."""
    return [p for p in processes
            if not (engine_user and p["user"] == engine_user) and not (engine_unit and p["unit"] == engine_unit)]


def main():
    module = AnsibleModule(argument_spec=dict(port=dict(type="int", required=True), engine_user=dict(type="str"),
                                              engine_unit=dict(type="str")), supports_check_mode=True)
    p = module.params
    if not 0 < p["port"] < 65536:
        module.fail_json(msg="port must be between 1 and 65535, got %d" % p["port"])
    result = owners(p["port"])
    result["foreign"] = foreign(result["processes"], p["engine_user"], p["engine_unit"])
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
