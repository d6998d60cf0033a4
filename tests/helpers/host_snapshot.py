#!/usr/bin/env python3
"""What is on a host, to tell whether playbooks/uninstall.yml left it as it was before site.yml (a test helper).

    host_snapshot.py save FILE   every path (type, owner, mode, link target), the users and groups, the packages
    host_snapshot.py diff FILE [GLOB...]   what differs now, less what packages installed since own and the paths
                                 matching a GLOB (the test's own files); exit 1 if anything else does

Left out, as neither site.yml's nor uninstall's: kernel and runtime trees, temporary folders, Ansible's own remote
temp and async folders, the package manager's state and the journal. /run/glm53 (the collection's) is kept in.
"""
from __future__ import annotations

import fnmatch
import grp
import json
import os
import pwd
import stat
import subprocess
import sys

SKIP = ("/proc", "/sys", "/dev", "/tmp", "/var/tmp", "/root/.ansible", "/root/.ansible_async", "/var/lib/apt",
        "/var/lib/dpkg", "/var/cache/apt", "/var/cache/debconf", "/var/cache/ldconfig", "/var/log/journal",
        "/var/log/apt", "/var/lib/systemd", "/etc/ld.so.cache", "/var/log/dpkg.log", "/var/log/alternatives.log",
        "/var/backups")  # the last: the distribution's daily dpkg-db-backup timer, which may run meanwhile
KEEP_UNDER_RUN = ("/run/glm53",)


def skipped(path):
    if path.startswith("/run/") or path == "/run":
        return not any(path == k or path.startswith(k + "/") for k in KEEP_UNDER_RUN)
    return any(path == s or path.startswith(s + "/") for s in SKIP) or "/__pycache__" in path


def walk():
    out = {}
    stack = ["/"]
    while stack:
        top = stack.pop()
        try:
            names = os.listdir(top)
        except OSError:
            continue
        for name in names:
            path = os.path.join(top, name)
            if skipped(path):
                if path == "/run":
                    stack.append(path)  # only for /run/glm53
                continue
            try:
                st = os.lstat(path)
            except OSError:
                continue
            kind = "d" if stat.S_ISDIR(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else "f"
            entry = "%s %d:%d %o" % (kind, st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode))
            if kind == "l":
                entry += " -> " + os.readlink(path)
            out[path] = entry
            if kind == "d" and not os.path.ismount(path):
                stack.append(path)
    return out


def packages():
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\n"], capture_output=True, text=True, check=True)
    return sorted(out.stdout.split())


def snapshot():
    return {"paths": walk(), "users": sorted(p.pw_name for p in pwd.getpwall()),
            "groups": sorted(g.gr_name for g in grp.getgrall()), "packages": packages()}


def main(cmd, path, *ignore):
    if cmd == "save":
        with open(path, "w") as fh:
            json.dump(snapshot(), fh)
        return 0
    with open(path) as fh:
        before = json.load(fh)
    now = snapshot()
    new_packages = sorted(set(now["packages"]) - set(before["packages"]))
    owned = set()
    for pkg in new_packages:  # package list aside: what the packages installed since own is theirs, not ours
        listing = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True).stdout.split("\n")
        owned.update(p for p in listing if p.startswith("/"))
    problems = []
    for p in sorted(set(now["paths"]) | set(before["paths"])):
        a, b = before["paths"].get(p), now["paths"].get(p)
        if a == b or p in owned or any(fnmatch.fnmatch(p, g) for g in ignore):
            continue
        problems.append("%s: %s -> %s" % (p, a or "absent", b or "absent"))
    for kind in ("users", "groups"):
        for name in sorted(set(now[kind]) ^ set(before[kind])):
            problems.append("%s %s: %s" % (kind[:-1], name, "added" if name in now[kind] else "removed"))
    print(json.dumps({"differences": problems, "packages_installed_since": new_packages, "ignored": list(ignore),
                      "paths_compared": len(now["paths"])}, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
