# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Whether root may trust a path: OpenSSH's StrictModes for what root reads, writes, runs or loads. Standard library
only (modules run on any host).

A path is trusted when no one but root (or the user the check runs as, who could change it anyway) can replace it or
any folder on the way to it: every existing component, from /, is owned by root and is not writable by its group or
by others; the path itself is not a link, and a link on the way must be root's (what it points at is checked in its
place). A world-writable folder with the sticky bit (/tmp) is accepted on the way when the next
component is root's: others cannot rename or remove what they do not own there. Nothing is followed (os.lstat)."""

from __future__ import annotations

import os
import pwd
import stat


def _owner(uid):
    try:
        return "%s (uid %d)" % (pwd.getpwuid(uid).pw_name, uid)
    except KeyError:
        return "uid %d" % uid


def describe(st):
    """owner, mode and kind of an lstat result, as a refusal names them."""
    kind = "link" if stat.S_ISLNK(st.st_mode) else "folder" if stat.S_ISDIR(st.st_mode) else "file"
    return "%s, owner %s, mode %04o" % (kind, _owner(st.st_uid), stat.S_IMODE(st.st_mode))


def trust_problem(path, trusted_uids=None, _depth=0):
    """None when path may be trusted; else one sentence: the component, what was found, and the fix.

    The components that exist are checked, from / down to path itself; a missing one ends the walk (what root makes
    there is root's). path must be absolute."""
    if not os.path.isabs(path):
        return "%s is not an absolute path" % path
    uids = set(trusted_uids) if trusted_uids is not None else {0, os.geteuid()}
    parts = [p for p in os.path.normpath(path).split("/") if p]
    chain = ["/"] + ["/" + "/".join(parts[:i + 1]) for i in range(len(parts))]
    sticky_parent = None  # the world-writable sticky folder just above, whose next component must be trusted's
    for current in chain:
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return "%s cannot be read (%s)" % (current, exc.strerror or exc)
        found = describe(st)
        is_last = current == chain[-1]
        if stat.S_ISLNK(st.st_mode):
            if is_last or st.st_uid not in uids or _depth >= 40:
                return ("%s is a link (%s): %s; name the real path instead" % (
                    current, found, "the path itself must not be one" if is_last
                    else "its owner can point it elsewhere" if st.st_uid not in uids else "too many links"))
            # a link of root's on the way (/var/run, /lib): what it points at is checked in its place
            rest = parts[len([p for p in current.split("/") if p]):]
            target = os.path.normpath(os.path.join(os.path.dirname(current), os.readlink(current), *rest))
            return trust_problem(target, uids, _depth + 1)
        if st.st_uid not in uids:
            if sticky_parent is not None:
                return ("%s (%s) is in %s, which everyone may write: only a path of root's is safe there; use a "
                        "folder of root's (chown root:root, chmod go-w) or another path"
                        % (current, found, sticky_parent))
            return ("%s (%s) is not root's: its owner can replace %s; give it to root (chown root:root %s) or use "
                    "another path" % (current, found, path, current))
        mode = stat.S_IMODE(st.st_mode)
        sticky_parent = None
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            if stat.S_ISDIR(st.st_mode) and mode & stat.S_ISVTX and not is_last:
                sticky_parent = current  # like /tmp: acceptable when the next component is root's
                continue
            return ("%s (%s) may be written by %s: they can replace %s; remove that (chmod go-w %s) or use another "
                    "path" % (current, found, "its group" if not mode & stat.S_IWOTH else "everyone", path, current))
    return None


def trust_problems(paths, trusted_uids=None):
    """{path: problem} for each of paths that may not be trusted."""
    out = {}
    for path in paths:
        problem = trust_problem(path, trusted_uids)
        if problem:
            out[path] = problem
    return out
