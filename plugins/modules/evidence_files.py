#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
module: evidence_files
short_description: Keep many hosts' probe evidence in one folder, one JSON file per host, in one call
version_added: 0.3.0
description:
  - Writes each host's evidence (the probes role's C(probes_result)) to C(<path>/<host>.json) as indented JSON. The
    probes role runs it once per report on the controller for all of a run's hosts, where one copy task per host
    cost a module run per host.
  - Each file is written to a temporary file in the same folder, then renamed over the old one, so a reader never
    sees half a file. A file whose content would not change is left alone.
  - Only the Python standard library is needed.
options:
  path:
    description: The folder, created with its parents when missing.
    type: path
    required: true
  evidence:
    description:
      - One mapping per host, each with its C(host) name. The name must be usable as a file name, with no C(/),
        and it must not be C(.), C(..) or C(summary), which names the report's own C(summary.json).
    type: list
    elements: dict
    required: true
  mode:
    description: The files' mode.
    type: str
    default: "0644"
author:
  - glm53.serving contributors (@glm53)
attributes:
  check_mode:
    description: Says which files it would write and writes nothing.
    support: full
  diff_mode:
    description: Does not return a diff.
    support: none
  platform:
    description: Any POSIX host with Python; only the standard library is used.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Keep every host's evidence on the controller
  glm53.serving.evidence_files:
    path: "{{ probes_report_dir }}"
    evidence: "{{ ansible_play_hosts_all | map('extract', hostvars) | selectattr('probes_result', 'defined') | map(attribute='probes_result') | list }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
written:
  description: The hosts whose file was written (or would be, in check mode).
  returned: always
  type: list
  elements: str
unchanged:
  description: The hosts whose file already held this evidence.
  returned: always
  type: list
  elements: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._atomic_file import write_text

RESERVED = (".", "..", "summary")


def content_of(evidence):
    return json.dumps(evidence, indent=4, sort_keys=True, ensure_ascii=False) + "\n"


def name_problem(host):
    if not isinstance(host, str) or not host or "/" in host or "\0" in host or host in RESERVED:
        return "%r cannot name an evidence file (no '/', not '.', '..' or 'summary')" % (host,)
    return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            evidence=dict(type="list", elements="dict", required=True),
            mode=dict(type="str", default="0644"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        mode = int(p["mode"], 8)
    except ValueError:
        module.fail_json(msg="mode=%r is not an octal file mode such as 0644" % p["mode"])
    problems = [problem for problem in (name_problem(e.get("host")) for e in p["evidence"]) if problem]
    if problems:
        module.fail_json(msg="evidence_files: " + "; ".join(problems))
    written, unchanged = [], []
    for evidence in p["evidence"]:
        target = os.path.join(p["path"], evidence["host"] + ".json")
        text = content_of(evidence)
        try:
            with open(target, encoding="utf-8") as fh:
                same = fh.read() == text
        except (OSError, ValueError):
            same = False
        (unchanged if same else written).append(evidence["host"])
        if same or module.check_mode:
            continue
        try:
            os.makedirs(p["path"], exist_ok=True)
            write_text(target, text, mode)
        except OSError as exc:
            module.fail_json(msg="cannot write %s: %s" % (target, exc), written=written, unchanged=unchanged)
    module.exit_json(changed=bool(written), written=written, unchanged=unchanged)


if __name__ == "__main__":
    main()
