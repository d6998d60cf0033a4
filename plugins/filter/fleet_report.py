# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: fleet_report
short_description: "Sum up a fleet's probe evidence: counts per group, failures grouped by cause, changes since the last run"
version_added: "0.3.0"
description:
  - Takes every host's probe evidence (the probes role's C(probes_result), or the JSON file of it kept in
    C(probes_report_dir)) and returns the summary that the report shows first and that C(summary.json) holds.
  - "Each failing host gets one cause per kind of failure, named by its class and not by its figures, so hosts that
    fail the same way count as one cause, such as C(engine not ready: connection refused: <url>),
    C(chat: repeated_ngram) or C(needle: missed). Each failing host also gets a one-line reason, its first failure."
  - The changes are counted against the last run before this one. That is the previous summary, or the base that
    summary was itself compared with when it came from this same run, as an earlier batch of a rollout does.
positional: _input
options:
  _input:
    description: The evidence, one mapping per host, each with its C(host) name.
    type: list
    elements: dict
    required: true
  order:
    description: The hosts in inventory order. The hosts of each verdict follow it; hosts not in it come last, by name.
    type: list
    elements: str
  groups:
    description: "The inventory's groups as C({group: [hosts]}). C(all) and C(ungrouped) are left out."
    type: dict
  probed:
    description: The hosts probed in this run. The other hosts' evidence was kept from earlier runs.
    type: list
    elements: str
  previous:
    description: The previous summary (the C(summary.json) this filter made last), or nothing on a first run.
    type: dict
  run:
    description: This run, as C({id, time}), with C(id) the same in every batch of one run.
    type: dict
  kept_dir:
    description:
      - The report folder, where each host's evidence is kept as C(<host>.json) and the last summary as
        C(summary.json). The evidence of the hosts in O(order) that were not probed in this run is read from it,
        and so is the last summary when O(previous) is not given. A file that cannot be read or parsed is left out.
    type: path
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Sum up the fleet
  ansible.builtin.set_fact:
    probes_fleet: >-
      {{ evidence | glm53.serving.fleet_report(order=groups['all'], groups=groups, probed=ansible_play_hosts_all,
                                               previous=last_summary, run={'id': run_id, 'time': run_time}) }}
"""

RETURN = r"""
_value:
  description: The summary.
  type: dict
  contains:
    total:
      description: Hosts with evidence.
      type: int
    passed:
      description: Hosts that passed.
      type: int
    failed:
      description: Hosts that failed.
      type: int
    groups:
      description: "Per inventory group with a host in the report: C({group, hosts, passed, failed})."
      type: list
      elements: dict
    causes:
      description: "Failures grouped by cause, the most hosts first: C({cause, count, hosts})."
      type: list
      elements: dict
    hosts:
      description: >-
        One entry per host, failing hosts first, each verdict in inventory order: C({host, passed, reason,
        causes, engine_version, engine_commit, time, probed}).
      type: list
      elements: dict
    changes:
      description: >-
        Changes since the last run. C(since) is that run's id, or null on a first run. The lists are
        C(started_passing), C(stopped_passing), C(new_hosts) and C(engine_moved) (C({host, from, to})).
      type: dict
    baseline:
      description: The base that the changes were counted against, kept so that later batches of this run count against it too.
      type: dict
    run:
      description: "This run: C(id), C(time), C(probed) and C(kept) (the hosts whose evidence came from earlier runs)."
      type: dict
"""

import os
import re

from ansible.errors import AnsibleFilterError
from ansible_collections.glm53.serving.plugins.module_utils._fleet_evidence import merge_evidence, read_json

_URL = re.compile(r"https?://\S+")
_QUOTED = re.compile(r"«[^»]*»|\"[^\"]*\"|'[^']*'")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
REASON_MAX = 200


def _class_of(text):
    """A message's class: the message with its URLs, quoted text and figures taken out, so that the same failure on
    two hosts reads the same."""
    text = _QUOTED.sub("…", _URL.sub("<url>", str(text or "")))
    text = _NUMBER.sub("N", text)
    text = re.split(r"[:;(]", text, maxsplit=1)[0] if len(text) > 80 else text
    return " ".join(text.split())[:80] or "no message"


def host_causes(evidence):
    """The causes of one host's failure, each once, in the order they were found (empty for a passing host)."""
    if evidence.get("passed"):
        return []
    causes = []

    def add(cause):
        if cause not in causes:
            causes.append(cause)

    health = evidence.get("health") or {}
    if not health.get("ready"):
        add("engine not ready: %s" % _class_of(health.get("msg") or "no answer"))
    chat = evidence.get("chat") or None
    if chat and not chat.get("passed"):
        signals = [f.get("signal") for p in chat.get("probes") or [] for f in p.get("findings") or [] if f.get("signal")]
        for signal in signals:
            add("chat: %s" % signal)
        if not signals:
            add("chat: %s" % _class_of(chat.get("msg")))
    needle = evidence.get("needle") or None
    if needle and not needle.get("passed"):
        found = False
        for result in needle.get("results") or []:
            if result.get("verdict") == "cannot_test":
                add("needle: cannot test (context too small)")
                found = True
            for depth in result.get("depths") or []:
                if depth.get("verdict") not in (None, "retrieved"):
                    add("needle: %s" % depth["verdict"])
                    found = True
            control = result.get("control") or {}
            if control.get("verdict") not in (None, "passed"):
                add("needle: control %s" % control["verdict"])
                found = True
        if not found:
            add("needle: %s" % _class_of(needle.get("msg")))
    for line in evidence.get("failures") or []:
        if str(line).startswith("reference "):  # the numerics: no_scores, numerics_band or numerics_drift
            add("reference: %s" % str(line).split()[1].rstrip(":"))
    bench = evidence.get("bench") or None
    if bench and not bench.get("passed"):
        add("bench: failed requests" if (bench.get("figures") or {}).get("failed") else "bench: did not run")
    if not causes:
        failures = evidence.get("failures") or []
        add(_class_of(failures[0]) if failures else "failed, no reason recorded")
    return causes


def host_reason(evidence):
    """One line: the host's first failure, with how many more there are (empty for a passing host)."""
    if evidence.get("passed"):
        return ""
    failures = [str(f) for f in evidence.get("failures") or []] or ["failed, no reason recorded"]
    first = " ".join(failures[0].split())
    if len(first) > REASON_MAX:
        first = first[:REASON_MAX - 1] + "…"
    return first + (" (and %d more)" % (len(failures) - 1) if len(failures) > 1 else "")


def _states(summary):
    return dict((h["host"], {"passed": h.get("passed"), "engine_version": h.get("engine_version")})
                for h in (summary or {}).get("hosts") or [] if isinstance(h, dict) and h.get("host"))


def _baseline(previous, run_id):
    """What this run's changes are counted against: the previous summary, or its own base when it came from this
    run (an earlier batch)."""
    if not previous:
        return None
    if run_id is not None and (previous.get("run") or {}).get("id") == run_id:
        return previous.get("baseline")
    return {"run": (previous.get("run") or {}).get("id"), "hosts": _states(previous)}


def fleet_report(evidence, order=None, groups=None, probed=None, previous=None, run=None, kept_dir=None):
    if not isinstance(evidence, list) or not all(isinstance(e, dict) and e.get("host") for e in evidence):
        raise AnsibleFilterError("fleet_report expects a list of evidence mappings, each with its host")
    if previous is not None and not isinstance(previous, dict):
        raise AnsibleFilterError("fleet_report: previous must be the last summary (a mapping) or nothing")
    run = dict(run or {})
    merged = merge_evidence(evidence, order, kept_dir)  # in inventory order; reads only hosts evidence lacks
    if kept_dir and previous is None:
        last = read_json(os.path.join(kept_dir, "summary.json"))
        previous = last if isinstance(last, dict) and isinstance(last.get("hosts"), list) else None
    names = [e["host"] for e in merged]
    this_run = set(probed or [])
    probed = [h for h in names if h in this_run]
    hosts = []
    for e in merged:
        hosts.append({"host": e["host"], "passed": bool(e.get("passed")), "reason": host_reason(e),
                      "causes": host_causes(e), "engine_version": e.get("engine_version"),
                      "engine_commit": e.get("engine_commit"), "time": e.get("time"), "probed": e["host"] in this_run,
                      "slice": e.get("slice") or {}})
    hosts = [h for h in hosts if not h["passed"]] + [h for h in hosts if h["passed"]]
    causes = {}
    for h in hosts:
        for cause in h["causes"]:
            causes.setdefault(cause, []).append(h["host"])
    cause_list = sorted(({"cause": c, "count": len(hs), "hosts": hs} for c, hs in causes.items()),
                        key=lambda c: (-c["count"], c["cause"]))
    group_list = []
    for group, members in sorted((groups or {}).items()):
        if group in ("all", "ungrouped") or not isinstance(members, (list, tuple)):
            continue
        members = set(members)
        present = [h for h in hosts if h["host"] in members]
        if present:
            group_list.append({"group": group, "hosts": len(present), "passed": sum(1 for h in present if h["passed"]),
                               "failed": sum(1 for h in present if not h["passed"])})
    base = _baseline(previous, run.get("id"))
    changes = {"since": None, "started_passing": [], "stopped_passing": [], "new_hosts": [], "engine_moved": []}
    if base is not None:
        changes["since"] = base.get("run")
        before = base.get("hosts") or {}
        for h in hosts:
            old = before.get(h["host"])
            if old is None:
                changes["new_hosts"].append(h["host"])
                continue
            if h["passed"] and not old.get("passed"):
                changes["started_passing"].append(h["host"])
            if old.get("passed") and not h["passed"]:
                changes["stopped_passing"].append(h["host"])
            if old.get("engine_version") and h["engine_version"] and old["engine_version"] != h["engine_version"]:
                changes["engine_moved"].append({"host": h["host"], "from": old["engine_version"], "to": h["engine_version"]})
    return {"run": dict(run, probed=probed, kept=[h for h in names if h not in probed]),
            "total": len(hosts), "passed": sum(1 for h in hosts if h["passed"]),
            "failed": sum(1 for h in hosts if not h["passed"]), "groups": group_list, "causes": cause_list,
            "hosts": hosts, "changes": changes, "baseline": base}


class FilterModule(object):
    def filters(self):
        return {"fleet_report": fleet_report}
