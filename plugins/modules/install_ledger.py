#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: install_ledger
short_description: Record what the collection is about to create on a host, so an uninstall removes only that
version_added: "0.2.0"
description:
  - Before site.yml writes anything, records in a JSON ledger on the host the folders it will create (for each
    path, the topmost of its ancestors that does not exist yet) and the users and groups it will create (those
    that do not exist yet). What existed before is never recorded, so it is never removed.
  - An entry, once recorded, stays until C(state=absent) removes the ledger; a later run adds only what is new. A
    missing folder inside a recorded one is not recorded again (it is the collection's already).
  - C(state=query) reads the ledger and changes nothing; C(playbooks/uninstall.yml) uses it.
author:
  - glm53.serving contributors (@glm53)
options:
  path:
    description: The ledger file.
    type: path
    default: /var/lib/glm53/ledger.json
  paths:
    description: Absolute folders the collection creates, or files whose folders it creates. They need not exist.
    type: list
    elements: path
    default: []
  users:
    description: System users the collection creates.
    type: list
    elements: str
    default: []
  groups:
    description: Groups the collection creates.
    type: list
    elements: str
    default: []
  state:
    description:
      - C(present) records what does not exist yet (the ledger's own folder included); C(query) only reads;
        C(absent) removes the ledger file (its folder is one of its entries and goes with the others).
    type: str
    choices: [present, query, absent]
    default: present
attributes:
  check_mode:
    description: Reports what it would record, and writes nothing.
    support: full
  diff_mode:
    description: Does not return a diff.
    support: none
  idempotent:
    description: A second call with the same paths, users and groups records nothing and changes nothing.
    support: full
notes:
  - Only the Python standard library on the host.
"""

EXAMPLES = r"""
- name: Record the folders and the user a bring-up will create
  glm53.serving.install_ledger:
    paths: [/opt/glm53/releases, /var/lib/glm53/evidence]
    users: [glm53]
    groups: [glm53]

- name: Read what the collection created here
  glm53.serving.install_ledger:
    state: query
  register: ledger
"""

RETURN = r"""
ledger:
  description: The ledger after this call (empty lists when there is none).
  returned: always
  type: dict
  sample:
    paths: [/opt/glm53, /var/lib/glm53]
    users: [glm53]
    groups: [glm53]
added:
  description: What this call recorded.
  returned: always
  type: dict
  sample:
    paths: [/opt/glm53]
    users: []
    groups: []
"""

import fcntl
import grp
import json
import os
import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._atomic_file import write_text

KINDS = ("paths", "users", "groups")


def topmost_missing(path):
    """The first folder on the way from / to path that does not exist (None when path exists)."""
    parts = [p for p in os.path.normpath(path).split("/") if p]
    current = "/"
    for part in parts:
        current = os.path.join(current, part)
        if not os.path.lexists(current):
            return current
    return None


def _exists(kind, name):
    try:
        (pwd.getpwnam if kind == "users" else grp.getgrnam)(name)
        return True
    except KeyError:
        return False


def read(path):
    if not os.path.exists(path):
        return dict((k, []) for k in KINDS)
    with open(path) as fh:
        data = json.load(fh)
    if not isinstance(data, dict):
        raise ValueError("%s is not a ledger (a JSON object)" % path)
    return dict((k, [str(v) for v in data.get(k) or []]) for k in KINDS)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/var/lib/glm53/ledger.json"),
            paths=dict(type="list", elements="path", default=[]),
            users=dict(type="list", elements="str", default=[]),
            groups=dict(type="list", elements="str", default=[]),
            state=dict(type="str", choices=["present", "query", "absent"], default="present"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    for name in [p["path"]] + p["paths"]:
        if not os.path.isabs(name) or "\n" in name or name.rstrip("/") in ("", "/"):
            module.fail_json(msg="install_ledger: %r is not an absolute path below /" % name)
    try:
        ledger = read(p["path"])
    except (OSError, ValueError) as exc:
        module.fail_json(msg="install_ledger: cannot read %s: %s" % (p["path"], exc))
    added = dict((k, []) for k in KINDS)
    if p["state"] == "query":
        module.exit_json(changed=False, ledger=ledger, added=added)
    if p["state"] == "absent":
        changed = os.path.exists(p["path"])
        if changed and not module.check_mode:
            os.unlink(p["path"])
        module.exit_json(changed=changed, ledger=ledger, added=added)

    folder = os.path.dirname(p["path"])
    folder_top = topmost_missing(folder)  # before the lock makes the folder
    lock = None
    if not module.check_mode:
        # Hosts that share one machine (several inventory hosts, or a local connection) write one ledger: the
        # read, the additions and the write happen under an exclusive lock on its folder (no lock file left).
        try:
            if not os.path.isdir(folder):
                os.makedirs(folder, 0o755, exist_ok=True)
            lock = os.open(folder, os.O_RDONLY)
            fcntl.flock(lock, fcntl.LOCK_EX)
            ledger = read(p["path"])
        except (OSError, ValueError) as exc:
            module.fail_json(msg="install_ledger: cannot lock and read %s: %s" % (p["path"], exc))
    for name in [folder] + p["paths"]:
        top = folder_top if name == folder else topmost_missing(name)
        # a folder inside one already recorded is the collection's already (a later run makes it, or never does)
        if top and not any(top == k or top.startswith(k.rstrip("/") + "/") for k in ledger["paths"] + added["paths"]):
            added["paths"].append(top)
    for kind in ("users", "groups"):
        for name in p[kind]:
            if not _exists(kind, name) and name not in ledger[kind] and name not in added[kind]:
                added[kind].append(name)
    changed = any(added[k] for k in KINDS)
    new = dict((k, ledger[k] + added[k]) for k in KINDS)
    if changed and not module.check_mode:
        write_text(p["path"], json.dumps(new, indent=1, sort_keys=True) + "\n")
    if lock is not None:
        os.close(lock)  # releases the lock
    module.exit_json(changed=changed, ledger=new, added=added)


if __name__ == "__main__":
    main()
