# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The converged record: what each bring-up role left on a host, observed once it was done, and read again at the
start of the next run, in the same module run as the ledger's claim. A role whose observations all still hold, with
the run's inputs unchanged, has nothing to do (site.yml skips it). Standard library only (modules run on any host).

An observation spec is a mapping of kinds to lists:
  files  a file's SHA-256, mode, owner and group (a missing file is observed as missing)
  dirs   a folder's mode, owner and group
  links  where a link points
  trees  a folder's entries, one level: each name with its type, size, mode and modification time (a package added,
         removed or reinstalled in site-packages, a shard replaced, a marker file made); Python's __pycache__ left
         out (an interpreter run from the folder writes it)
  units  systemd units' ActiveState, UnitFileState, NeedDaemonReload and FragmentPath
  users  a user's uid, gid, home and shell
  groups a group's gid
  git    a checkout's HEAD commit (read from .git, no git command)
"""

from __future__ import annotations

import grp
import hashlib
import json
import os
import pwd
import stat

from ansible_collections.glm53.serving.plugins.module_utils._model_files import sha256_file

KINDS = ("files", "dirs", "links", "trees", "units", "users", "groups", "git")
UNIT_PROPERTIES = ("ActiveState", "UnitFileState", "NeedDaemonReload", "FragmentPath")
RECORD_VERSION = 1


def _file(path):
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return {"type": stat.S_IFMT(st.st_mode)}
    try:
        digest = sha256_file(path)
    except OSError as exc:
        digest = "unreadable: %s" % exc.strerror
    return {"sha256": digest, "mode": "%04o" % stat.S_IMODE(st.st_mode), "uid": st.st_uid, "gid": st.st_gid}


def _dir(path):
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return {"dir": stat.S_ISDIR(st.st_mode), "mode": "%04o" % stat.S_IMODE(st.st_mode), "uid": st.st_uid,
            "gid": st.st_gid}


def _link(path):
    try:
        return os.readlink(path)
    except OSError:
        return None


def _tree(path):
    try:
        names = sorted(n for n in os.listdir(path) if n != "__pycache__")
    except OSError:
        return None
    digest = hashlib.sha256()
    for name in names:
        try:
            st = os.lstat(os.path.join(path, name))
        except OSError:
            continue
        digest.update(("%s\0%o\0%d\0%d\n" % (name, st.st_mode, st.st_size, st.st_mtime_ns)).encode("utf-8", "surrogateescape"))
    return {"entries": len(names), "sha256": digest.hexdigest()}


def _units(names, run):
    """run: the module's run_command (argv -> rc, stdout, stderr)."""
    found = dict((n, None) for n in names)
    if not names or run is None:
        return found
    try:
        rc, out, dummy = run(["systemctl", "show", "--property=Id," + ",".join(UNIT_PROPERTIES), "--"] + list(names))
    except OSError:
        return found
    if rc != 0:
        return found
    # systemctl show prints one block a unit, in the order asked, separated by an empty line
    blocks = [b for b in out.split("\n\n") if b.strip()]
    for name, block in zip(names, blocks):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        found[name] = dict((k, props.get(k, "")) for k in UNIT_PROPERTIES)
    return found


def _user(name):
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        return None
    return [pw.pw_uid, pw.pw_gid, pw.pw_dir, pw.pw_shell]


def _group(name):
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def _git_head(path):
    """HEAD's commit, read from the checkout's .git (a ref followed through loose refs and packed-refs)."""
    gitdir = os.path.join(path, ".git")
    try:
        if os.path.isfile(gitdir):  # a worktree or submodule: "gitdir: <path>"
            with open(gitdir, encoding="utf-8") as fh:
                gitdir = os.path.join(path, fh.read().split(":", 1)[1].strip())
        with open(os.path.join(gitdir, "HEAD"), encoding="utf-8") as fh:
            head = fh.read().strip()
        if not head.startswith("ref: "):
            return head
        ref = head[5:]
        loose = os.path.join(gitdir, ref)
        if os.path.exists(loose):
            with open(loose, encoding="utf-8") as fh:
                return fh.read().strip()
        with open(os.path.join(gitdir, "packed-refs"), encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) == 2 and parts[1] == ref:
                    return parts[0]
    except (OSError, IndexError):
        return None
    return None


def observe(spec, run=None):
    """The host's state for an observation spec (see the module's docstring); run reads the units."""
    spec = spec or {}
    seen = {}
    for kind, read in (("files", _file), ("dirs", _dir), ("links", _link), ("trees", _tree), ("users", _user),
                       ("groups", _group), ("git", _git_head)):
        seen[kind] = dict((name, read(name)) for name in spec.get(kind) or [] if name)
    seen["units"] = _units([n for n in spec.get("units") or [] if n], run)
    return seen


def differences(recorded, run=None):
    """What differs now from a recorded observation: one short line per item (empty when everything holds)."""
    now = observe(dict((kind, list((recorded or {}).get(kind) or {})) for kind in KINDS), run)
    lines = []
    for kind in KINDS:
        for name, then in sorted(((recorded or {}).get(kind) or {}).items()):
            if now[kind].get(name) != then:
                what = kind[:-1] if kind != "git" else "git"
                lines.append("%s %s: %s, was %s" % (what, name, json.dumps(now[kind].get(name), sort_keys=True),
                                                    json.dumps(then, sort_keys=True)))
    return lines
