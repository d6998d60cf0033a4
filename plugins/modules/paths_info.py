#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: paths_info
short_description: Stat several paths in one module run
version_added: 0.3.0
description:
  - Reads each path of O(paths) without following a final link, as C(ansible.builtin.stat) does for one, and returns
    them keyed by path, with the same key names (RV(paths)). A loop of stat tasks costs one module run a path; this
    costs one.
  - A missing path is not an error (its C(exists) is false), nor is a missing parent folder.
author:
  - glm53.serving contributors (@glm53)
options:
  paths:
    description: The paths to read (absolute); each is a key of RV(paths) as given (no C(~) or variable expansion).
    type: list
    elements: str
    required: true
  checksum_algorithm:
    description: The digest of each regular file's content, or V(none) for no digest.
    type: str
    default: sha256
    choices: [sha1, sha256, none]
extends_documentation_fragment:
  - glm53.serving.info_module
"""

EXAMPLES = r"""
- name: Read the serve script, the environment file and a marker in one run
  glm53.serving.paths_info:
    paths: [/opt/glm53/bin/serve-glm53.sh, /etc/glm53/vllm-glm53.env, /run/glm53/restart-pending]
  register: found

- name: Use one of them
  ansible.builtin.debug:
    msg: "{{ found.paths['/opt/glm53/bin/serve-glm53.sh'].checksum }}"
"""

RETURN = r"""
paths:
  description:
    - Each path's facts. Always C(exists); for an existing path also C(isdir), C(isreg), C(islnk), C(mode) (an octal
      string), C(pw_name), C(gr_name) and C(mtime); for a link C(lnk_source) (the resolved path) and C(lnk_target)
      (the link's text); for a regular file C(size) and, unless O(checksum_algorithm=none), C(checksum).
  returned: always
  type: dict
  sample: {/opt/glm53/releases/current: {exists: true, islnk: true, lnk_source: /opt/glm53/releases/a1b2,
           lnk_target: a1b2, isdir: false, isreg: false, mode: "0777", pw_name: root, gr_name: root, mtime: 1.7e9}}
"""

import grp
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule


def _name(lookup, ident):
    try:
        return lookup(ident)[0]
    except KeyError:
        return str(ident)


def describe(module, path, algorithm):
    try:
        st = os.lstat(path)
    except OSError:
        return {"exists": False}
    out = {"exists": True, "isdir": stat.S_ISDIR(st.st_mode), "isreg": stat.S_ISREG(st.st_mode),
           "islnk": stat.S_ISLNK(st.st_mode), "mode": "%04o" % stat.S_IMODE(st.st_mode),
           "pw_name": _name(pwd.getpwuid, st.st_uid), "gr_name": _name(grp.getgrgid, st.st_gid), "mtime": st.st_mtime}
    if out["islnk"]:
        out.update(lnk_source=os.path.realpath(path), lnk_target=os.readlink(path))
    if out["isreg"]:
        out["size"] = st.st_size
        if algorithm != "none":
            out["checksum"] = module.digest_from_file(path, algorithm)
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(type="list", elements="str", required=True),
            checksum_algorithm=dict(type="str", default="sha256", choices=["sha1", "sha256", "none"]),
        ),
        supports_check_mode=True,
    )
    relative = [p for p in module.params["paths"] if not os.path.isabs(p)]
    if relative:
        module.fail_json(msg="not absolute paths: %s" % ", ".join(relative))
    module.exit_json(changed=False, paths=dict(
        (p, describe(module, p, module.params["checksum_algorithm"])) for p in module.params["paths"]))


if __name__ == "__main__":
    main()
