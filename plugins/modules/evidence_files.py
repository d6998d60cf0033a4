#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
module: evidence_files
short_description: Keep many hosts' probe evidence, and a run's report folder, in one call
version_added: 0.3.0
description:
  - Writes each host's evidence (the probes role's C(probes_result)) to C(<path>/<host>.json) as indented JSON. The
    probes role runs it once per report on the controller for all of a run's hosts, where one copy task per host
    cost a module run per host.
  - Each file is written to a temporary file in the same folder, then renamed over the old one, so a reader never
    sees half a file. A file whose content would not change is left alone.
  - With O(run), the same call also writes the run's report folder C(<path>/runs/<id>/) (the fleet's evidence, one
    file per host, and the report's files), points C(<path>/latest) at it and C(report.html), C(summary.md) and
    C(summary.json) through C(latest), and removes the oldest run folders beyond O(run.keep_runs), real directories
    with a run's name only, never a link or a file of that name. The probes role made this eleven module runs on
    the controller in every report, a rollout's every turn included.
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
  run:
    description: The run's report folder, written in the same call.
    type: dict
    suboptions:
      id:
        description: The run's name, C(YYYYMMDDTHHMMSSZ); the folder is C(<path>/runs/<id>).
        type: str
        required: true
      evidence:
        description: The evidence of every host the report shows, written as C(<host>.json) in the run's folder.
        type: list
        elements: dict
        default: []
      files:
        description: The report's files, name to content (C(report.html), C(summary.md), C(summary.json)).
        type: dict
        default: {}
      keep_runs:
        description: How many run folders to keep, the newest; C(0) keeps all. The run being written is never removed.
        type: int
        default: 0
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
removed_runs:
  description: The run folders removed beyond O(run.keep_runs) (or that would be, in check mode).
  returned: when O(run) is given
  type: list
  elements: str
"""

import json
import os
import re
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._atomic_file import write_text

RESERVED = (".", "..", "summary")
RUN_ID = re.compile(r"^\d{8}T\d{6}Z$")
REPORT_FILES = ("report.html", "summary.md", "summary.json")


def content_of(evidence):
    return json.dumps(evidence, indent=4, sort_keys=True, ensure_ascii=False) + "\n"


def name_problem(host):
    if not isinstance(host, str) or not host or "/" in host or "\0" in host or host in RESERVED:
        return "%r cannot name an evidence file (no '/', not '.', '..' or 'summary')" % (host,)
    return None


def write_evidence(folder, evidence, mode, check_mode):
    """Each host's evidence as <folder>/<host>.json; returns (written, unchanged)."""
    written, unchanged = [], []
    for item in evidence:
        target = os.path.join(folder, item["host"] + ".json")
        text = content_of(item)
        try:
            with open(target, encoding="utf-8") as fh:
                same = fh.read() == text
        except (OSError, ValueError):
            same = False
        (unchanged if same else written).append(item["host"])
        if not (same or check_mode):
            os.makedirs(folder, exist_ok=True)
            write_text(target, text, mode)
    return written, unchanged


def link(target, path):
    """Point path at target by rename, so a reader finds the old link or the new one, never none."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, path)


def write_run(path, run, mode, check_mode):
    """The run's folder, the links through latest, the oldest runs removed; returns the removed folders."""
    runs = os.path.join(path, "runs")
    folder = os.path.join(runs, run["id"])
    # A run folder is a real directory with a run's name, as the role makes them; a link or a file of that name is
    # someone else's and is left alone.
    try:
        names = sorted(n for n in os.listdir(runs) if RUN_ID.match(n) and n != run["id"]
                       and os.path.isdir(os.path.join(runs, n)) and not os.path.islink(os.path.join(runs, n)))
    except OSError:
        names = []
    keep = run["keep_runs"]
    removed = [os.path.join(runs, n) for n in names[:max(len(names) + 1 - keep, 0)]] if keep > 0 else []
    if check_mode:
        return removed
    os.makedirs(folder, exist_ok=True)
    write_evidence(folder, run["evidence"], mode, False)
    for name, text in run["files"].items():
        write_text(os.path.join(folder, name), text, mode)
    link("runs/" + run["id"], os.path.join(path, "latest"))
    for name in REPORT_FILES:
        link("latest/" + name, os.path.join(path, name))
    for old in removed:
        shutil.rmtree(old)
    return removed


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            evidence=dict(type="list", elements="dict", required=True),
            mode=dict(type="str", default="0644"),
            run=dict(type="dict", options=dict(
                id=dict(type="str", required=True),
                evidence=dict(type="list", elements="dict", default=[]),
                files=dict(type="dict", default={}),
                keep_runs=dict(type="int", default=0),
            )),
        ),
        supports_check_mode=True,
    )
    p = module.params
    run = p["run"]
    try:
        mode = int(p["mode"], 8)
    except ValueError:
        module.fail_json(msg="mode=%r is not an octal file mode such as 0644" % p["mode"])
    every = p["evidence"] + (run["evidence"] if run else [])
    problems = [problem for problem in (name_problem(e.get("host")) for e in every) if problem]
    if run and not RUN_ID.match(run["id"]):
        problems.append("run.id=%r is not a run's name (YYYYMMDDTHHMMSSZ)" % run["id"])
    if run and set(run["files"]) - set(REPORT_FILES):
        problems.append("run.files may name %s only, not %s" % (
            ", ".join(REPORT_FILES), ", ".join(sorted(set(run["files"]) - set(REPORT_FILES)))))
    if run and run["keep_runs"] < 0:
        problems.append("run.keep_runs=%d must be 0 (keep all) or more" % run["keep_runs"])
    if problems:
        module.fail_json(msg="evidence_files: " + "; ".join(problems))
    result = dict(written=[], unchanged=[])
    try:
        result["written"], result["unchanged"] = write_evidence(p["path"], p["evidence"], mode, module.check_mode)
        if run:
            result["removed_runs"] = write_run(p["path"], run, mode, module.check_mode)
    except OSError as exc:
        module.fail_json(msg="cannot write under %s: %s" % (p["path"], exc), **result)
    module.exit_json(changed=bool(result["written"]), **result)


if __name__ == "__main__":
    main()
