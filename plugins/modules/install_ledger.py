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
  - With O(claims), every path the collection will write (a file) or own (a folder it creates, fills and re-owns) is
    checked first. A path that does not exist yet is recorded (its topmost missing ancestor). A path that exists
    must be the collection's, equal to or inside a recorded entry; anything else (another service's folder, an
    operator's file, the ledger itself) is refused with one message per path, naming the variable, and nothing is
    recorded or written.
  - Each recorded folder that exists gets its identity (device and inode) recorded, by the first call that finds it
    made (a file is replaced whole on every write, so it is the collection's by its record). An entry whose path
    now holds something else (removed and made again by another tool) is no longer the
    collection's. A ledger written before identities were kept (no C(version)) marks a host the collection
    installed, so the files it claims there are taken as its own, once.
  - An entry, once recorded, stays until C(state=absent) removes the ledger; a later run adds only what is new. A
    missing folder inside a recorded one is not recorded again (it is the collection's already).
  - C(state=query) reads the ledger and changes nothing, and returns RV(owned), the recorded entries that are
    still the collection's; C(playbooks/uninstall.yml) removes nothing else.
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
  claims:
    description: Paths the collection writes or owns, each checked and recorded (see the description).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The variable the path comes from, named in a refusal.
        type: str
        required: true
      path:
        description: The absolute path.
        type: path
        required: true
      kind:
        description: C(file) (written whole) or C(dir) (made, filled and owned).
        type: str
        choices: [file, dir]
        default: dir
  forget:
    description:
      - Recorded paths the collection removed itself, dropped from the ledger (with C(state=present)), each only
        when nothing is there any more. A file made there later by someone else is then not the collection's.
    type: list
    elements: path
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
owned:
  description: The recorded paths that exist and are still the collection's (their identity matches, or is not
    recorded yet). Everything inside one of them is the collection's too.
  returned: always
  type: list
  elements: str
  sample: [/opt/glm53, /var/lib/glm53]
owned_dirs:
  description: The folders among RV(owned) (with C(state=query)).
  returned: success
  type: list
  elements: str
  sample: [/opt/glm53]
foreign:
  description: One message per claimed path that exists and is not the collection's (when the call is refused).
  returned: failure
  type: list
  elements: str
  sample: ["service_state_dir=/var/lib/other exists and glm53.serving did not make it (...)"]
replaced:
  description: Recorded paths that now hold something else (another identity); never the collection's again.
  returned: always
  type: list
  elements: str
  sample: []
forgotten:
  description: The paths of O(forget) dropped from the ledger by this call.
  returned: with C(state=present)
  type: list
  elements: str
  sample: [/etc/cron.d/glm53-heal]
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
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._atomic_file import write_text

KINDS = ("paths", "users", "groups")
# 2: identities (device, inode) of the recorded entries, and claims checked against them
LEDGER_VERSION = 2


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
        return dict((k, []) for k in KINDS), {}, None
    with open(path) as fh:
        data = json.load(fh)
    if not isinstance(data, dict):
        raise ValueError("%s is not a ledger (a JSON object)" % path)
    ids = dict((str(k), list(v)) for k, v in (data.get("ids") or {}).items() if isinstance(v, list) and len(v) == 2)
    return dict((k, [str(v) for v in data.get(k) or []]) for k in KINDS), ids, data.get("version", 1)


def identity(path):
    """A folder's device and inode (None for what is not a folder). A file the collection writes is replaced whole on
    every change (written beside it, then renamed over it), so its inode moves with each write: a file is the
    collection's by its record alone."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino] if stat.S_ISDIR(st.st_mode) else None


def _inside(path, entry):
    return path == entry or path.startswith(entry.rstrip("/") + "/")


def owner_entry(path, entries, ids):
    """The recorded entry that path is (or lies in) and that is still the collection's; None when there is none."""
    for entry in sorted(entries, key=len, reverse=True):
        if _inside(path, entry):
            now = identity(entry)
            if now is not None and entry in ids and ids[entry] != now:
                return None  # replaced by something else since it was recorded
            return entry
    return None


def owned(entries, ids):
    """(owned, replaced): the recorded entries that exist and are still the collection's, and those replaced."""
    mine, replaced = [], []
    for entry in entries:
        if not os.path.lexists(entry):
            continue
        now = identity(entry)
        (replaced if now is not None and entry in ids and ids[entry] != now else mine).append(entry)
    return mine, replaced


def foreign_claims(claims, ledger_path, ledger, ids, version, added):
    """What the collection will write must be its own: a claimed path that exists and is not (or no longer) in the
    ledger is another's, one message each. A ledger of an earlier version (no identities, folders only) marks a host
    the collection installed: a claimed file there is taken as its own (added to added["paths"])."""
    foreign = []
    for claim in claims:
        path = os.path.normpath(claim["path"])
        if path == os.path.normpath(ledger_path):
            foreign.append("%s=%s is the host's ledger of what glm53.serving made: the collection never writes over "
                           "it. Point %s at a path of its own." % (claim["name"], path, claim["name"]))
        elif os.path.lexists(path) and owner_entry(path, ledger["paths"] + added["paths"], ids) is None:
            if version is not None and version < LEDGER_VERSION and claim["kind"] == "file":
                if path not in added["paths"]:
                    added["paths"].append(path)
                continue
            foreign.append("%s=%s exists and glm53.serving did not make it (it is not in the host's ledger, %s): the "
                           "collection writes and removes only what it made. Point %s at a path that does not exist "
                           "yet, or move %s away first." % (claim["name"], path, ledger_path, claim["name"], path))
    return foreign


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/var/lib/glm53/ledger.json"),
            paths=dict(type="list", elements="path", default=[]),
            users=dict(type="list", elements="str", default=[]),
            groups=dict(type="list", elements="str", default=[]),
            claims=dict(type="list", elements="dict", default=[], options=dict(
                name=dict(type="str", required=True), path=dict(type="path", required=True),
                kind=dict(type="str", choices=["file", "dir"], default="dir"))),
            forget=dict(type="list", elements="path", default=[]),
            state=dict(type="str", choices=["present", "query", "absent"], default="present"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    for name in [p["path"]] + p["paths"] + [c["path"] for c in p["claims"]]:
        if not os.path.isabs(name) or "\n" in name or name.rstrip("/") in ("", "/"):
            module.fail_json(msg="install_ledger: %r is not an absolute path below /" % name)
    try:
        ledger, ids, version = read(p["path"])
    except (OSError, ValueError) as exc:
        module.fail_json(msg="install_ledger: cannot read %s: %s" % (p["path"], exc))
    added = dict((k, []) for k in KINDS)
    if p["state"] == "query":
        mine, replaced = owned(ledger["paths"], ids)
        module.exit_json(changed=False, ledger=ledger, added=added, owned=mine, replaced=replaced,
                         owned_dirs=[e for e in mine if os.path.isdir(e) and not os.path.islink(e)])
    if p["state"] == "absent":
        changed = os.path.exists(p["path"])
        if changed and not module.check_mode:
            os.unlink(p["path"])
        module.exit_json(changed=changed, ledger=ledger, added=added, owned=[], replaced=[])

    # refused before anything is made (the ledger's folder included), and again under the lock below
    early = foreign_claims(p["claims"], p["path"], ledger, ids, version, dict((k, []) for k in KINDS))
    if early:
        module.fail_json(msg=" ".join(early), foreign=early, ledger=ledger, added=added)
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
            ledger, ids, version = read(p["path"])
        except (OSError, ValueError) as exc:
            module.fail_json(msg="install_ledger: cannot lock and read %s: %s" % (p["path"], exc))
    # the ledger's own folder, made just now for the lock, is the collection's (recorded below with the rest)
    if folder_top and not any(_inside(folder_top, k) for k in ledger["paths"]):
        added["paths"].append(folder_top)
    foreign = foreign_claims(p["claims"], p["path"], ledger, ids, version, added)
    if foreign:
        if lock is not None:
            os.close(lock)
        module.fail_json(msg=" ".join(foreign), foreign=foreign, ledger=ledger, added=dict((k, []) for k in KINDS))
    for name in p["paths"] + [c["path"] for c in p["claims"]]:
        top = topmost_missing(name)
        # a folder inside one already recorded is the collection's already (a later run makes it, or never does)
        if top and not any(_inside(top, k) for k in ledger["paths"] + added["paths"]):
            added["paths"].append(top)
    for kind in ("users", "groups"):
        for name in p[kind]:
            if not _exists(kind, name) and name not in ledger[kind] and name not in added[kind]:
                added[kind].append(name)
    new = dict((k, ledger[k] + added[k]) for k in KINDS)
    # entries the collection removed itself: a path made later by someone else is not the collection's
    forgotten = [e for e in new["paths"] if e in p["forget"] and not os.path.lexists(e)]
    new["paths"] = [e for e in new["paths"] if e not in forgotten]
    # the identity of each recorded entry the collection has made by now (and not yet identified)
    new_ids = dict((k, v) for k, v in ids.items() if k not in forgotten)
    for entry in new["paths"]:
        if entry not in new_ids and identity(entry) is not None:
            new_ids[entry] = identity(entry)
    changed = any(added[k] for k in KINDS) or bool(forgotten)
    if (changed or new_ids != ids or version != LEDGER_VERSION) and not module.check_mode and (new["paths"] or os.path.exists(p["path"])):
        write_text(p["path"], json.dumps(dict(new, ids=new_ids, version=LEDGER_VERSION), indent=1, sort_keys=True) + "\n")
    if lock is not None:
        os.close(lock)  # releases the lock
    mine, replaced = owned(new["paths"], new_ids)
    module.exit_json(changed=changed, ledger=new, added=added, owned=mine, replaced=replaced, forgotten=forgotten)


if __name__ == "__main__":
    main()
