#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
module: verdict_metrics
short_description: Write the probes' verdicts as Prometheus metrics for node_exporter's textfile collector
version_added: 0.2.0
description:
  - Writes one file in the Prometheus text format from the probes role's result (its evidence), with a verdict per
    probe, the needle depths retrieved out of those asked and the tokens sent per target, the time of this run and
    of each probe's last success, and the serving release as a label.
  - The file is written to a temporary file in the same folder, then renamed over the old one, so the collector
    never reads half a file.
  - A probe that fails now keeps the last success time the previous file recorded, so "how long has this host been
    failing" stays answerable after a failed run.
  - Only the Python standard library is needed on the host.
options:
  path:
    description:
      - The file to write; its folder must exist (node_exporter's C(--collector.textfile.directory), on Debian
        C(/var/lib/prometheus/node-exporter)). Its name must end in C(.prom), or the collector ignores it.
    type: path
    required: true
  result:
    description:
      - The probes role's result for this host (C(probes_result)), with C(passed), C(health), C(chat) and C(needle).
    type: dict
    required: true
  release_link:
    description:
      - The symlink that names the serving release (C(<venv_releases_dir>/current)); its target's folder name is
        the C(release) label. Missing or not a link gives an empty label.
    type: path
  require_folder:
    description:
      - Fail when the file's folder does not exist. When false, a missing folder (no node_exporter on this host)
        writes nothing and says so in C(msg), with C(written=false).
    type: bool
    default: true
  mode:
    description: The file's mode.
    type: str
    default: "0644"
author:
  - glm53.serving contributors (@glm53)
attributes:
  check_mode:
    description: Says what it would write and writes nothing.
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
- name: Publish the verdicts to node_exporter's textfile collector
  glm53.serving.verdict_metrics:
    path: /var/lib/prometheus/node-exporter/glm53_probes.prom
    result: "{{ probes_result }}"
    release_link: /opt/glm53/releases/current
"""

RETURN = r"""
path:
  description: The file written.
  returned: always
  type: str
written:
  description: Whether the file was written (false in check mode and when a missing folder was allowed).
  returned: always
  type: bool
release:
  description: The release label (empty when the link is missing).
  returned: always
  type: str
  sample: fork-f2935ce322-fi-1a2b3c4d5e
verdicts:
  description: Each probe that ran, with 1 for passed and 0 for failed (C(all) is the host's verdict).
  returned: always
  type: dict
  sample: {all: 1, health: 1, chat: 1, needle: 1}
changed:
  description: True when a verdict, the release or a needle figure differs from the previous file's (the times
    alone do not count, since they move on every run).
  returned: always
  type: bool
"""

import os
import re
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._atomic_file import write_text

_SUCCESS_RE = re.compile(r'^glm53_probe_last_success_timestamp_seconds\{probe="([a-z]+)"\} ([0-9.eE+]+)$')
_TIME_RE = re.compile(r"^glm53_probe_(last_run|last_success)_timestamp_seconds")


def _label(value):
    """A label value in the text format: backslash, double quote and line feed escaped."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def verdicts(result):
    """{probe: 1 or 0} for the probes that ran, and 'all' for the host."""
    out = {"all": 1 if result.get("passed") else 0}
    health = result.get("health") or {}
    out["health"] = 1 if health.get("ready") else 0
    for probe in ("chat", "needle"):
        if result.get(probe) is not None:
            out[probe] = 1 if (result.get(probe) or {}).get("passed") else 0
    return out


def render(result, release, now, previous_success):
    """The file's text. previous_success: {probe: seconds} from the file this one replaces."""
    rel = _label(release)
    found = verdicts(result)
    lines = [
        "# HELP glm53_probe_verdict 1 if the probe passed on its last run, 0 if it failed (probe=all: the host).",
        "# TYPE glm53_probe_verdict gauge",
    ]
    lines += ['glm53_probe_verdict{probe="%s",release="%s"} %d' % (p, rel, v) for p, v in sorted(found.items())]
    lines += ["# HELP glm53_probe_last_run_timestamp_seconds When the probes last ran (Unix time).",
              "# TYPE glm53_probe_last_run_timestamp_seconds gauge",
              'glm53_probe_last_run_timestamp_seconds{release="%s"} %d' % (rel, now),
              "# HELP glm53_probe_last_success_timestamp_seconds When each probe last passed (Unix time).",
              "# TYPE glm53_probe_last_success_timestamp_seconds gauge"]
    # a probe that failed or did not run this time (chat and needle wait for health) keeps its last success
    for probe in sorted(set(found) | set(previous_success)):
        when = now if found.get(probe) else previous_success.get(probe)
        if when is not None:
            lines.append('glm53_probe_last_success_timestamp_seconds{probe="%s"} %d' % (probe, when))
    rows = [r for r in ((result.get("needle") or {}).get("results") or []) if isinstance(r, dict)]
    if rows:
        lines += ["# HELP glm53_needle_depths_retrieved Needle depths retrieved at each prompt size (target tokens).",
                  "# TYPE glm53_needle_depths_retrieved gauge"]
        lines += ['glm53_needle_depths_retrieved{target="%s"} %d' % (
            r.get("target"), sum(1 for d in r.get("depths") or [] if d.get("verdict") == "retrieved")) for r in rows]
        lines += ["# HELP glm53_needle_depths_total Needle depths asked at each prompt size.",
                  "# TYPE glm53_needle_depths_total gauge"]
        lines += ['glm53_needle_depths_total{target="%s"} %d' % (r.get("target"), len(r.get("depths") or []))
                  for r in rows]
        lines += ["# HELP glm53_needle_tokens_sent Prompt tokens of the haystack sent at each prompt size.",
                  "# TYPE glm53_needle_tokens_sent gauge"]
        lines += ['glm53_needle_tokens_sent{target="%s"} %d' % (r.get("target"), r.get("tokens") or 0) for r in rows]
    lines += ["# HELP glm53_release_info The serving release and the engine the probes saw (always 1).",
              "# TYPE glm53_release_info gauge",
              'glm53_release_info{release="%s",engine_version="%s",engine_commit="%s"} 1' % (
                  rel, _label(result.get("engine_version") or ""), _label(result.get("engine_commit") or ""))]
    return "\n".join(lines) + "\n"


def _without_times(text):
    return [line for line in text.splitlines() if not _TIME_RE.match(line)]


def read_release(link):
    if not link or not os.path.islink(link):
        return ""
    return os.path.basename(os.path.normpath(os.readlink(link)))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            result=dict(type="dict", required=True),
            release_link=dict(type="path"),
            require_folder=dict(type="bool", default=True),
            mode=dict(type="str", default="0644"),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    if not path.endswith(".prom"):
        module.fail_json(msg="path=%s: node_exporter's textfile collector reads only files ending in .prom" % path)
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder) and not module.params["require_folder"]:
        module.exit_json(changed=False, written=False, path=path, release="", verdicts=verdicts(module.params["result"]),
                         msg="%s does not exist (no node_exporter textfile collector here): no metrics written" % folder)
    if not os.path.isdir(folder):
        module.fail_json(msg="the folder %s does not exist: install node_exporter (Debian: prometheus-node-exporter, "
                             "which reads /var/lib/prometheus/node-exporter) or set probes_textfile_dir to its "
                             "--collector.textfile.directory" % folder)
    try:
        mode = int(module.params["mode"], 8)
    except ValueError:
        module.fail_json(msg="mode=%s is not an octal file mode such as 0644" % module.params["mode"])
    old = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            old = f.read()
    previous = {}
    for line in old.splitlines():
        match = _SUCCESS_RE.match(line)
        if match:
            previous[match.group(1)] = float(match.group(2))
    release = read_release(module.params["release_link"])
    text = render(module.params["result"], release, int(time.time()), previous)
    changed = _without_times(text) != _without_times(old)
    out = dict(path=path, release=release, verdicts=verdicts(module.params["result"]), changed=changed)
    if module.check_mode:
        module.exit_json(written=False, **out)
    try:
        write_text(path, text, mode)
    except OSError as exc:
        module.fail_json(msg="writing %s failed: %s" % (path, exc))
    module.exit_json(written=True, **out)


if __name__ == "__main__":
    main()
