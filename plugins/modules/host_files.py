#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_files
short_description: Make folders and write whole files with their owner and mode, in one module run
version_added: 0.3.0
description:
  - Makes each folder in O(directories) (with missing parents), then writes each file in O(files) whose content
    differs, through a temporary file in the same folder, an optional O(files[].validate) command and an atomic
    rename. Owner, group and mode are set on every folder and file that differs.
  - The role's counterpart of one C(ansible.builtin.file) task per folder and one C(ansible.builtin.template) or
    C(ansible.builtin.copy) task per file. Each of those costs two module runs on every run, changed or not. This
    costs one for all of them. The controller renders the content (the V(template) lookup).
  - In check mode, reports what it would change and writes nothing; with C(--diff), shows each file's change.
author:
  - glm53.serving contributors (@glm53)
options:
  directories:
    description: Folders to make, in order (before any file).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The folder (absolute).
        type: path
        required: true
      mode:
        description: Its mode, an octal string such as C("0755").
        type: str
        required: true
      owner:
        description: Its owner.
        type: str
        default: root
      group:
        description: Its group.
        type: str
        default: root
  files:
    description: Files to write, in order. Their folders must exist (or be in O(directories)).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file (absolute). A link there is replaced by the file.
        type: path
        required: true
      content:
        description:
          - The whole content. Set C(no_log) on the task when it holds a secret.
        type: str
        required: true
      mode:
        description: Its mode, an octal string such as C("0644").
        type: str
        required: true
      owner:
        description: Its owner.
        type: str
        default: root
      group:
        description: Its group.
        type: str
        default: root
      validate:
        description:
          - A command run on the new content before it replaces the file; C(%s) is the temporary file's path.
          - The file is not written when the command fails; the module fails with its output.
        type: str
attributes:
  check_mode:
    description: Reports what would change and writes nothing.
    support: full
  diff_mode:
    description: Returns one diff for each file whose content would change.
    support: full
  idempotent:
    description: A second run with the same content changes nothing.
    support: full
notes:
  - A file or folder whose owner or group does not exist fails the module before anything is written.
  - The module does not log its arguments (the files' content) to the host's journal.
"""

EXAMPLES = r"""
- name: Write the serve script and its folder
  glm53.serving.host_files:
    directories:
      - {path: /opt/glm53/bin, mode: "0755"}
    files:
      - path: /opt/glm53/bin/serve-glm53.sh
        content: "{{ lookup('ansible.builtin.template', 'serve.sh.j2') }}"
        mode: "0755"
        validate: bash -n %s
  register: written
"""

RETURN = r"""
changed_paths:
  description: The folders and files made, written or re-owned or re-moded (in check mode, those that would be).
  returned: always
  type: list
  elements: str
  sample: [/opt/glm53/bin/serve-glm53.sh]
"""

import grp
import os
import pwd
import shlex
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native


def _attrs(module, path, spec, changed):
    changed = module.set_owner_if_different(path, spec["owner"], changed)
    changed = module.set_group_if_different(path, spec["group"], changed)
    return module.set_mode_if_different(path, spec["mode"], changed)


def _check_specs(module, dirs, files):
    """Every refusal before anything is written: unknown owners or groups, relative paths, a validate command without
    %s, and (outside check mode) a file whose folder neither exists nor is one of O(directories)."""
    for spec in dirs + files:
        try:
            pwd.getpwnam(spec["owner"])
        except KeyError:
            module.fail_json(msg="%s: owner %s does not exist on this host" % (spec["path"], spec["owner"]))
        try:
            grp.getgrnam(spec["group"])
        except KeyError:
            module.fail_json(msg="%s: group %s does not exist on this host" % (spec["path"], spec["group"]))
        if not os.path.isabs(spec["path"]):
            module.fail_json(msg="%s is not an absolute path" % spec["path"])
    made = set(spec["path"].rstrip("/") for spec in dirs)
    for spec in files:
        if spec.get("validate") and "%s" not in spec["validate"]:
            module.fail_json(msg="%s: validate must hold %%s (the new file's path)" % spec["path"])
        folder = os.path.dirname(spec["path"])
        # in check mode an earlier task's folder is not made yet: the file is reported as to be written
        if not module.check_mode and not os.path.isdir(folder) and folder not in made:
            module.fail_json(msg="%s: the folder %s does not exist (name it in directories)" % (spec["path"], folder))


def _read(path):
    if os.path.islink(path) or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        return f.read()


def _write(module, spec, data):
    folder = os.path.dirname(spec["path"])
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(spec["path"]), dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        _attrs(module, tmp, spec, False)
        if spec.get("validate"):
            rc, out, err = module.run_command(spec["validate"].replace("%s", shlex.quote(tmp)))
            if rc != 0:
                module.fail_json(msg="%s: the new content failed validation (%s): %s" % (
                    spec["path"], spec["validate"], (err or out).strip()), rc=rc, stdout=out, stderr=err)
        module.atomic_move(tmp, spec["path"], unsafe_writes=False)
        _attrs(module, spec["path"], spec, False)  # a new file gets the umask's mode from the move
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def main():
    owned = dict(owner=dict(type="str", default="root"), group=dict(type="str", default="root"),
                 mode=dict(type="str", required=True), path=dict(type="path", required=True))
    module = AnsibleModule(
        argument_spec=dict(
            directories=dict(type="list", elements="dict", default=[], options=dict(owned)),
            files=dict(type="list", elements="dict", default=[],
                       options=dict(owned, content=dict(type="str", required=True), validate=dict(type="str"))),
        ),
        supports_check_mode=True,
        # The files' whole content is not written to the host's journal on every run (ansible.builtin.copy keeps
        # its content out of it too); the results, diffs included, are the task's to show or hide (no_log).
        no_log=True,
    )
    dirs, files = module.params["directories"], module.params["files"]
    _check_specs(module, dirs, files)
    changed_paths, diffs = [], []
    for spec in dirs:
        path = spec["path"]
        if os.path.lexists(path) and not os.path.isdir(path):
            module.fail_json(msg="%s exists and is not a folder" % path)
        if not os.path.isdir(path):
            changed_paths.append(path)
            if module.check_mode:
                continue
            os.makedirs(path)
        if _attrs(module, path, spec, False) and path not in changed_paths:
            changed_paths.append(path)
    for spec in files:
        path = spec["path"]
        if os.path.isdir(path) and not os.path.islink(path):
            module.fail_json(msg="%s is a folder, not a file" % path)
        data = to_bytes(spec["content"], errors="surrogate_or_strict")
        before = _read(path)
        if before != data:
            changed_paths.append(path)
            if module._diff:
                diffs.append({"before_header": path, "after_header": path,
                              "before": to_native(before or b"", errors="surrogate_or_replace"),
                              "after": spec["content"]})
            if not module.check_mode:
                _write(module, spec, data)
        elif _attrs(module, path, spec, False):
            changed_paths.append(path)
    result = {"changed": bool(changed_paths), "changed_paths": changed_paths}
    if diffs:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
