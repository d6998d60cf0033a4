# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What /proc says about the host: listening TCP sockets, and stale shared-memory blocks of a dead engine.

Standard library only. Shared by the port_owner_info and shm_clean modules and the relaunch gate (a copy of this
file sits next to the gate script). A shared-memory block is stale when it is a regular file in the shm directory, owned by the service user, named like
the ones vLLM, multiprocessing, PyTorch and NCCL create, and open or mapped by no live process.
"""

from __future__ import annotations

import fnmatch
import os
import pwd
import stat

DEFAULT_PATTERNS = ("psm_*", "sem.mp-*", "torch_*", "nccl-*", "vllm_*")
_TCP_LISTEN = "0A"  # the state column of /proc/net/tcp


def listening_sockets(port):
    """{socket inode: owner uid} of the TCP sockets listening on port (IPv4 and IPv6).

    A socket that is bound but not listening (vLLM's own, while it loads) is not in /proc/net/tcp.
    """
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f, None)
                for line in f:
                    parts = line.split()
                    if len(parts) < 10:
                        continue
                    local_port = int(parts[1].rsplit(":", 1)[1], 16)
                    if local_port == port and parts[9] != "0" and parts[3] == _TCP_LISTEN:
                        found[parts[9]] = int(parts[7])
        except OSError:
            continue
    return found


def _open_by_live_processes(directory):
    """(paths under directory some process holds open or mapped, {pid: uid} of processes that cannot be read).

    Reading another user's /proc/<pid>/fd needs CAP_SYS_PTRACE, which root has on a host but may lack in a
    container: such processes are reported so that nothing they might hold is removed.
    """
    held, unreadable = set(), {}
    prefix = os.path.realpath(directory).rstrip("/") + "/"
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        base = "/proc/" + name
        try:
            fds = os.listdir(base + "/fd")
        except PermissionError:
            try:
                unreadable[int(name)] = os.stat(base).st_uid
            except OSError:
                pass
            continue
        except OSError:
            continue
        try:
            for fd in fds:
                try:
                    target = os.readlink(base + "/fd/" + fd)
                except OSError:
                    continue
                if target.startswith(prefix):
                    held.add(target.replace(" (deleted)", ""))
        except OSError:
            pass
        try:
            with open(base + "/maps") as f:
                for line in f:
                    parts = line.split(None, 5)
                    if len(parts) == 6 and parts[5].startswith(prefix):
                        held.add(parts[5].strip().replace(" (deleted)", ""))
        except OSError:
            pass
    return held, unreadable


def find_stale(directory, user, patterns=DEFAULT_PATTERNS):
    """Return (stale, kept) lists of {path, size, reason}."""
    uid = pwd.getpwnam(user).pw_uid
    held, unreadable = _open_by_live_processes(directory)
    blind = sorted(pid for pid, owner in unreadable.items() if owner == uid)
    stale, kept = [], []
    for name in sorted(os.listdir(directory)):
        if not any(fnmatch.fnmatchcase(name, p) for p in patterns):
            continue
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        entry = {"path": path, "size": st.st_size}
        if not stat.S_ISREG(st.st_mode):
            kept.append(dict(entry, reason="not a regular file"))
        elif st.st_uid != uid:
            kept.append(dict(entry, reason="owned by uid %d, not %s" % (st.st_uid, user)))
        elif os.path.realpath(path) in held:
            kept.append(dict(entry, reason="open or mapped by a live process"))
        elif blind:
            kept.append(dict(entry, reason="not proven unused: cannot read the open files of %s's pid(s) %s "
                                           "(needs CAP_SYS_PTRACE)" % (user, " ".join(map(str, blind[:5])))))
        else:
            stale.append(entry)
    return stale, kept


def remove(entries):
    removed = []
    for entry in entries:
        try:
            os.unlink(entry["path"])
            removed.append(entry)
        except FileNotFoundError:
            pass
    return removed
