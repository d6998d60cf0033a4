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
  - A recorded folder that is not there any more (removed, by an uninstall or by hand) loses its identity; the
    folder made there next, by the collection after a claim, is recorded anew, so a re-install after an uninstall is
    the collection's again.
  - C(state=query) reads the ledger and changes nothing, and returns RV(owned), the recorded entries that are
    still the collection's; C(playbooks/uninstall.yml) removes nothing else.
  - "The ledger decides what root writes over and removes, so it is read and written only where no one but root can
    change it (OpenSSH's StrictModes): the file and every folder on the way to it owned by root, not writable by
    group or others, no link (a world-writable sticky folder such as /tmp is accepted on the way when what follows
    is root's). Otherwise the call is refused, naming the path, its owner and mode, and the fix, and nothing is
    read or written."
  - "Releases before 0.3.0 kept the ledger in the service user's home (O(previous_path)), which that user could
    rewrite. When there is no ledger at O(path) and there is one at O(previous_path), it is used (moved to O(path))
    only when it passes the same check; else the call is refused with what to do (check it and move it as root, or
    remove it)."
author:
  - glm53.serving contributors (@glm53)
options:
  path:
    description: The ledger file, in a folder only root can write (see the description).
    type: path
    default: /var/lib/glm53-ledger/ledger.json
  previous_path:
    description:
      - Where releases before 0.3.0 kept the ledger (the service user's home). Read, and moved to O(path), only
        when O(path) does not exist and it passes the trust check; refused otherwise. An empty string turns this off.
    type: path
    default: /var/lib/glm53/ledger.json
    version_added: "0.3.0"
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
      trusted:
        description:
          - Root runs, sources or loads this path (the relaunch gate, the env file, the serve script, a unit). It,
            where it exists, and every folder on the way to it must be root's and writable by no one else (the
            check of M(glm53.serving.path_trust)); a claim that fails is refused with nothing written.
        type: bool
        default: false
        version_added: "0.3.0"
  forget:
    description:
      - Recorded paths the collection removed itself, dropped from the ledger (with C(state=present)), each only
        when nothing is there any more. A file made there later by someone else is then not the collection's.
    type: list
    elements: path
    default: []
  host:
    description:
      - The inventory host whose converged record O(converged_read) reads or O(converged_record) writes (hosts that
        share one machine share one ledger, and keep a record each).
    type: str
    default: ""
    version_added: "0.4.0"
  converged_read:
    description:
      - Read O(host)'s converged record (C(converged.json) beside the ledger) and observe the host again for each
        role in it, in the same module run as the claim, returning RV(converged). A record that is not root's or
        that anyone else could change is not read (the run then does every role's work).
    type: bool
    default: false
    version_added: "0.4.0"
  converged_record:
    description:
      - Record, for O(host), what each bring-up role left on the host, observed now, with the run's inputs (a
        digest of the settings, the resolved sources and the collection's code) and the facts the role published.
        The next run's O(converged_read) finds the role converged while every observation still holds.
      - Not written in check mode. Nothing is written when it equals the record there.
    type: dict
    suboptions:
      inputs:
        description: The run's inputs digest.
        type: str
        required: true
      roles:
        description: Each role in the bring-up's order, with what to observe (C(observe), a mapping of files,
          dirs, links, trees, units, users, groups and git, each a list), the names of the facts it published
          (C(facts)), restored when it is skipped, and optionally its own inputs digest (C(inputs)) when it is
          decided before the run's inputs are known.
        type: list
        elements: dict
        required: true
      facts:
        description: The values of the roles' facts.
        type: dict
        default: {}
    version_added: "0.4.0"
  state:
    description:
      - C(present) records what does not exist yet (the ledger's own folder included); C(query) only reads.
      - C(absent) ends an uninstall, after the roles removed the files they made. Each recorded folder that is
        still the collection's is emptied of folders only, from the bottom up (C(rmdir), nothing is followed, and a
        folder that holds anything else stays, with every folder on its way); a file or link left inside is kept and
        listed in RV(kept). The converged records go first (an uninstalled host has nothing converged). What is
        gone is forgotten. The ledger goes (and its folder, an entry) when none of its
        paths is left and none of its users and groups exists; else it keeps what is left, for a later run.
    type: str
    choices: [present, query, absent]
    default: present
attributes:
  check_mode:
    description: Reports what it would record or remove, and writes and removes nothing.
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

- name: Remove the folders the collection made that hold nothing else now, and the ledger when all are gone
  glm53.serving.install_ledger:
    state: absent
  register: pruned
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
claimed:
  description:
    - The paths of O(claims) this call found the collection's to write (recorded, or recorded now); a later task of
      the same run that would claim only these may skip its own claim.
  returned: with C(state=present)
  type: list
  elements: str
  sample: [/var/lib/glm53/evidence, /var/lib/prometheus/node-exporter/glm53_probes.prom]
converged:
  description:
    - With O(converged_read), each role of O(host)'s record, in the bring-up's order, with the inputs recorded, the
      facts it published then, and what differs on the host now (empty when every observation still holds).
  returned: success
  type: list
  elements: dict
  sample: [{name: venv, inputs: 5f0c..., facts: {venv_python_version: "3.10"}, differs: []}]
forgotten:
  description: The paths dropped from the ledger by this call (of O(forget), or, with C(state=absent), every
    recorded path that is gone).
  returned: with C(state=present) or C(state=absent)
  type: list
  elements: str
  sample: [/etc/cron.d/glm53-heal]
removed:
  description: The folders C(state=absent) removed (each held nothing but folders it removed too).
  returned: with C(state=absent)
  type: list
  elements: str
  sample: [/opt/glm53/libexec, /opt/glm53]
kept:
  description: With C(state=absent), what is left inside the collection's folders (a file or link it did not
    remove, another's or evidence kept on request) and the recorded files still there; their folders stay too.
  returned: with C(state=absent)
  type: list
  elements: str
  sample: [/opt/glm53/libexec/site-hook.sh, /var/lib/glm53/evidence/probes.json]
ledger_removed:
  description: Whether C(state=absent) removed the ledger (nothing it lists is left).
  returned: with C(state=absent)
  type: bool
  sample: true
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
import re
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._atomic_file import write_text
from ansible_collections.glm53.serving.plugins.module_utils import _converged
from ansible_collections.glm53.serving.plugins.module_utils._trust import trust_problem

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
    collection's by its record alone. A folder removed and made again at once may be given its freed inode number
    back (ext4, overlayfs): that one replacement is not told apart from the collection's own folder."""
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


# Where packages and the system keep their units: a unit of the same name in /etc/systemd/system replaces theirs.
VENDOR_UNIT_DIRS = ("/usr/lib/systemd/system", "/lib/systemd/system", "/usr/local/lib/systemd/system",
                    "/run/systemd/system", "/run/systemd/generator", "/usr/lib/systemd/user")


def shadowed_unit(path):
    """The system's own unit that a unit file written at path (in /etc/systemd/system) would replace, or None."""
    folder, name = os.path.split(os.path.normpath(path))
    if folder != "/etc/systemd/system" or not re.search(r"[.](service|timer|socket|path|mount|target)$", name):
        return None
    for vendor in VENDOR_UNIT_DIRS:
        if os.path.lexists(os.path.join(vendor, name)):
            return os.path.join(vendor, name)
    return None


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
        elif shadowed_unit(path) and owner_entry(path, ledger["paths"] + added["paths"], ids) is None:
            foreign.append("%s=%s would replace the system's own unit %s (a unit in /etc/systemd/system takes the "
                           "place of a package's of the same name). Give %s a name of its own." % (
                               claim["name"], path, shadowed_unit(path), claim["name"]))
        elif os.path.lexists(path) and owner_entry(path, ledger["paths"] + added["paths"], ids) is None:
            if version is not None and version < LEDGER_VERSION and claim["kind"] == "file":
                if path not in added["paths"]:
                    added["paths"].append(path)
                continue
            foreign.append("%s=%s exists and glm53.serving did not make it (it is not in the host's ledger, %s): the "
                           "collection writes and removes only what it made. Point %s at a path that does not exist "
                           "yet, or move %s away first." % (claim["name"], path, ledger_path, claim["name"], path))
    return foreign


def untrusted_claims(claims):
    """The claims of paths root runs, sources or loads that someone other than root could change or replace."""
    out = []
    for claim in claims:
        problem = trust_problem(claim["path"]) if claim.get("trusted") else None
        if problem:
            out.append("%s=%s cannot be trusted: %s. root runs, sources or loads it, so whoever can change it or a "
                       "folder on its way can become root: give %s a path in folders only root can write."
                       % (claim["name"], claim["path"], problem, claim["name"]))
    return out


def untrusted(module, path, what="the host's ledger"):
    """Refuse (nothing read or written) when someone other than root could have written or could replace path."""
    problem = trust_problem(path)
    if problem:
        module.fail_json(msg="install_ledger: %s, %s, cannot be trusted: %s. The ledger decides what root writes over "
                             "and removes, so only root may be able to change it; nothing was read or written."
                             % (what, path, problem), untrusted=path)


def adopt_previous(module, path, previous):
    """Before 0.3.0 the ledger was in the service user's home: use it only when it passes the check, else refuse."""
    if not previous or os.path.normpath(previous) == os.path.normpath(path) or os.path.lexists(path) \
            or not os.path.lexists(previous):
        return None
    problem = trust_problem(previous)
    if problem:
        module.fail_json(msg=(
            "install_ledger: there is no ledger at %s, and an earlier release's ledger is at %s, where it is not "
            "root's alone: %s. It cannot be trusted (the engine's user could have written it). Read it: if it lists "
            "only what glm53.serving made on this host, move it as root (install -d -o root -g root -m 0755 %s && "
            "install -o root -g root -m 0644 %s %s && rm %s), or remove it (rm %s: the collection then owns nothing "
            "it made before, and refuses those paths until they are moved away); then run again."
            % (path, previous, problem, os.path.dirname(path), previous, path, previous, previous)),
            untrusted=previous)
    return previous


def prune(entries, ids, ledger_path, check_mode):
    """(removed, kept, gone): each recorded folder still the collection's loses its folders that hold nothing else,
    bottom-up, the ledger file counted as absent (it goes last); kept: what is left (not folders) inside them, and the
    recorded files still there; gone: the entries no longer there (or never the collection's again)."""
    removed, kept, gone = [], [], []
    ledger_path = os.path.normpath(ledger_path)
    for entry in sorted(entries, key=len, reverse=True):
        if not os.path.lexists(entry):
            gone.append(entry)
            continue
        now = identity(entry)
        if now is not None and entry in ids and ids[entry] != now:
            gone.append(entry)  # replaced by something else: not the collection's, never touched
            continue
        if now is None:  # a recorded file (or link) the roles did not remove
            kept.append(entry)
            continue
        left = set()  # folders that keep something
        for top, dirs, files in os.walk(entry, topdown=False, followlinks=False):
            for name in files + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
                path = os.path.join(top, name)
                if path != ledger_path:
                    kept.append(path)
                    left.add(top)
            for name in dirs:
                path = os.path.join(top, name)
                if path in left or os.path.islink(path):
                    left.add(top)
            if top in left:
                continue
            if _inside(ledger_path, top) and os.path.lexists(ledger_path):
                left.add(top)  # the ledger's own folders: they go with it, when nothing else is left anywhere
                continue
            if check_mode:
                removed.append(top)
                continue
            try:
                os.rmdir(top)  # only an empty folder: what appeared meanwhile keeps it
                removed.append(top)
            except OSError:
                if os.path.lexists(top):
                    kept.extend(os.path.join(top, n) for n in sorted(os.listdir(top))
                                if os.path.join(top, n) not in removed and os.path.join(top, n) != ledger_path)
                    left.add(top)
        if entry in removed:
            gone.append(entry)
    return removed, sorted(set(kept)), gone


def converged_file(ledger_path):
    """The converged records, beside the ledger (in the same folder of root's)."""
    return os.path.join(os.path.dirname(ledger_path), "converged.json")


def read_converged(module, ledger_path):
    """Every host's converged record; none (the run does every role's work) when the file is not root's alone."""
    path = converged_file(ledger_path)
    if not os.path.lexists(path):
        return {}
    problem = trust_problem(path)
    if problem:
        module.warn("install_ledger: %s is not read (%s): every role does its work in this run" % (path, problem))
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        module.warn("install_ledger: %s is not read (%s): every role does its work in this run" % (path, exc))
        return {}
    if not isinstance(data, dict) or data.get("version") != _converged.RECORD_VERSION:
        return {}
    return data.get("hosts") or {}


def converged_now(module, record):
    """Each recorded role, with what differs on the host now."""
    out = []
    for role in (record or {}).get("roles") or []:
        out.append(dict(name=role.get("name"), inputs=role.get("inputs") or record.get("inputs"), facts=role.get("facts") or {},
                        differs=_converged.differences(role.get("observed") or {}, module.run_command)))
    return out


def record_converged(module, ledger_path, host, spec):
    """Observe each role now and keep it as host's record (written only when it differs from the one there)."""
    hosts = read_converged(module, ledger_path)
    roles = []
    for role in spec["roles"]:
        if not isinstance(role, dict) or not role.get("name"):
            module.fail_json(msg="install_ledger: converged_record.roles: each role needs a name, got %r" % (role,))
        names = role.get("facts") or []
        entry = dict(name=role["name"], observed=_converged.observe(role.get("observe") or {}, module.run_command),
                     facts=dict((n, spec["facts"][n]) for n in names if spec["facts"].get(n) is not None))
        if role.get("inputs"):
            entry["inputs"] = role["inputs"]  # this role's own inputs, when they are not the run's
        roles.append(entry)
    record = dict(inputs=spec["inputs"], roles=roles)
    if hosts.get(host) == record:
        return False
    hosts[host] = record
    write_text(converged_file(ledger_path), json.dumps(dict(version=_converged.RECORD_VERSION, hosts=hosts),
                                                       indent=1, sort_keys=True) + "\n", mode=0o600)
    return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/var/lib/glm53-ledger/ledger.json"),
            previous_path=dict(type="path", default="/var/lib/glm53/ledger.json"),
            paths=dict(type="list", elements="path", default=[]),
            users=dict(type="list", elements="str", default=[]),
            groups=dict(type="list", elements="str", default=[]),
            claims=dict(type="list", elements="dict", default=[], options=dict(
                name=dict(type="str", required=True), path=dict(type="path", required=True),
                kind=dict(type="str", choices=["file", "dir"], default="dir"),
                trusted=dict(type="bool", default=False))),
            forget=dict(type="list", elements="path", default=[]),
            state=dict(type="str", choices=["present", "query", "absent"], default="present"),
            host=dict(type="str", default=""),
            converged_read=dict(type="bool", default=False),
            converged_record=dict(type="dict", options=dict(
                inputs=dict(type="str", required=True), roles=dict(type="list", elements="dict", required=True),
                facts=dict(type="dict", default={}))),
        ),
        supports_check_mode=True,
    )
    p = module.params
    for name in [p["path"]] + p["paths"] + [c["path"] for c in p["claims"]]:
        if not os.path.isabs(name) or "\n" in name or name.rstrip("/") in ("", "/"):
            module.fail_json(msg="install_ledger: %r is not an absolute path below /" % name)
    if (p["converged_read"] or p["converged_record"]) and not p["host"]:
        module.fail_json(msg="install_ledger: host (the inventory host the converged record is kept for) is required "
                             "with converged_read and converged_record")
    untrusted(module, p["path"])
    source = adopt_previous(module, p["path"], p["previous_path"]) or p["path"]
    try:
        ledger, ids, version = read(source)
    except (OSError, ValueError) as exc:
        module.fail_json(msg="install_ledger: cannot read %s: %s" % (source, exc))
    added = dict((k, []) for k in KINDS)
    converged = converged_now(module, read_converged(module, p["path"]).get(p["host"])) if p["converged_read"] else []
    if p["state"] == "query":
        mine, replaced = owned(ledger["paths"], ids)
        module.exit_json(changed=False, ledger=ledger, added=added, owned=mine, replaced=replaced,
                         owned_dirs=[e for e in mine if os.path.isdir(e) and not os.path.islink(e)])

    if p["state"] == "present":
        # refused before anything is made (the ledger's own folder included), and again under the lock below
        early = foreign_claims(p["claims"], p["path"], ledger, ids, version, dict((k, []) for k in KINDS))
        early += untrusted_claims(p["claims"])
        if early:
            module.fail_json(msg=" ".join(early), foreign=early, ledger=ledger, added=added)
    folder = os.path.dirname(p["path"])
    folder_top = topmost_missing(folder)  # before the lock makes the folder
    lock = None
    if not module.check_mode and (p["state"] == "present" or os.path.isdir(folder) or source != p["path"]):
        # Hosts that share one machine (several inventory hosts, or a local connection) write one ledger: the
        # read, the additions and the write happen under an exclusive lock on its folder (no lock file left).
        try:
            if not os.path.isdir(folder):
                os.makedirs(folder, 0o755, exist_ok=True)
            lock = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
            fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError as exc:
            module.fail_json(msg="install_ledger: cannot lock %s: %s" % (folder, exc))
        untrusted(module, p["path"])  # again, now that the folder is there and held
        source = adopt_previous(module, p["path"], p["previous_path"]) or p["path"]
        try:
            ledger, ids, version = read(source)
        except (OSError, ValueError) as exc:
            module.fail_json(msg="install_ledger: cannot read %s: %s" % (source, exc))

    def write(new, new_ids):
        write_text(p["path"], json.dumps(dict(new, ids=new_ids, version=LEDGER_VERSION), indent=1, sort_keys=True)
                   + "\n")
        if source != p["path"]:
            os.unlink(source)  # moved: the earlier release's copy, in the service user's home, goes

    if p["state"] == "absent":
        if not module.check_mode and os.path.lexists(converged_file(p["path"])):
            os.unlink(converged_file(p["path"]))  # an uninstalled host has nothing converged
        if folder_top and not module.check_mode and not any(_inside(folder_top, k) for k in ledger["paths"]):
            ledger["paths"].append(folder_top)  # made just now, to move an earlier release's ledger here
        removed, kept, gone = prune(ledger["paths"], ids, p["path"], module.check_mode)
        rest = [e for e in ledger["paths"] if e not in gone]
        # an entry that holds the ledger and nothing kept waits only for the ledger: it goes with it
        waiting = [e for e in rest if _inside(p["path"], e) and not any(_inside(k, e) for k in kept)]
        new = dict(paths=rest, users=[n for n in ledger["users"] if _exists("users", n)],
                   groups=[n for n in ledger["groups"] if _exists("groups", n)])
        ledger_removed = not [e for e in rest if e not in waiting] and not new["users"] and not new["groups"]
        if ledger_removed:
            for entry in sorted(waiting, key=len, reverse=True):
                top = folder
                while _inside(top, entry) and top not in removed:
                    removed.append(top)
                    top = os.path.dirname(top)
            gone += waiting
            new = dict((k, []) for k in KINDS)
        new_ids = dict((k, v) for k, v in ids.items() if k in new["paths"])
        changed = bool(removed) or (os.path.exists(source) and (ledger_removed or new != ledger or source != p["path"]))
        if not module.check_mode:
            if ledger_removed:
                for path in set([p["path"], source]):
                    if os.path.lexists(path):
                        os.unlink(path)
                for top in [t for t in removed if _inside(folder, t) or _inside(t, folder)]:
                    if os.path.isdir(top) and not os.path.islink(top):
                        os.rmdir(top)  # the ledger's own folders, empty now (removed lists them deepest first)
            elif new != ledger or new_ids != ids or source != p["path"]:
                write(new, new_ids)
        if lock is not None:
            os.close(lock)
        module.exit_json(changed=changed, ledger=new, added=added, owned=rest if not ledger_removed else [],
                         replaced=[], removed=removed, kept=kept, forgotten=gone, ledger_removed=ledger_removed)

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
    # A recorded folder that is gone loses its identity (an uninstall removed it, or a person did): the folder the
    # collection makes there next, after this claim, is recorded anew below or by the next call, so a re-install is
    # the collection's again. Each entry the collection has made by now (and not yet identified) gets its identity.
    new_ids = dict((k, v) for k, v in ids.items() if k in new["paths"] and os.path.lexists(k))
    for entry in new["paths"]:
        if entry not in new_ids and identity(entry) is not None:
            new_ids[entry] = identity(entry)
    changed = any(added[k] for k in KINDS) or bool(forgotten)
    if (changed or new_ids != ids or version != LEDGER_VERSION or source != p["path"]) and not module.check_mode \
            and (new["paths"] or os.path.exists(source)):
        write(new, new_ids)
    if p["converged_record"] and not module.check_mode:
        record_converged(module, p["path"], p["host"], p["converged_record"])
    if lock is not None:
        os.close(lock)  # releases the lock
    mine, replaced = owned(new["paths"], new_ids)
    module.exit_json(changed=changed, ledger=new, added=added, owned=mine, replaced=replaced, forgotten=forgotten,
                     converged=converged, claimed=[c["path"] for c in p["claims"]])


if __name__ == "__main__":
    main()
