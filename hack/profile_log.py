#!/usr/bin/env python3
"""The time profile of `make test`: where each stage, molecule scenario, molecule action and play spends its time.

    python3 hack/profile_log.py tee ROWS.tsv SCENARIO   # pass molecule's output through, record its timings
    python3 hack/profile_log.py table DIR               # the table, from DIR/stages.tsv, DIR/*.tsv, DIR/*.xml

stages.tsv has one row per stage: name, seconds, exit status, lane, start (seconds after `make test` began).

`tee` stamps the lines molecule and ansible-playbook print as they arrive: an action runs from molecule's
"[s > action] Executing" to the next one, a play from its "PLAY [...]" banner to the next banner or the
action's end. It also counts what the scenario proved: testinfra tests passed and failed in verify, and the
assert tasks whose "All assertions passed" ansible printed (stories and side effects). Standard library only.
"""
from __future__ import annotations

import glob
import os
import re
import sys
import time
import xml.etree.ElementTree as ET

ACTION_RE = re.compile(r"^INFO\s+\[(?P<s>[\w-]+) > (?P<a>[\w-]+)\] (?P<what>Executing|Executed)")
PLAY_RE = re.compile(r"^PLAY \[(?P<p>.*)\] \*+$")
PASSED_RE = re.compile(r"::\S+ PASSED\b|\bPASSED\s*$")
FAILED_RE = re.compile(r"::\S+ FAILED\b")
ASSERT_RE = re.compile(r"All assertions passed")
FATAL_RE = re.compile(r"^(fatal|failed): \[|^CRITICAL |^ERROR: |^E\s{3}")  # with FAILED_RE: a failure line
FATAL_KEPT = 6  # the last failure lines of a failed scenario, in the summary


def tee(out_path, scenario):
    rows, action, a_t0, play, p_t0 = [], None, None, None, None
    counts = {"testinfra_passed": 0, "testinfra_failed": 0, "asserts_passed": 0}
    fatals = []  # (action, play, line): what failed, for the summary (CI keeps only the log's tail)

    def close_play(now):
        if play is not None:
            rows.append(("play", scenario, action or "-", play, now - p_t0))

    for line in sys.stdin:
        sys.stdout.write(line)
        sys.stdout.flush()
        now = time.time()
        m = ACTION_RE.match(line)
        if m:
            close_play(now)
            play = None
            if m.group("what") == "Executing":
                action, a_t0 = m.group("a"), now
            elif action is not None:
                rows.append(("action", scenario, action, "", now - a_t0))
                action = None
            continue
        m = PLAY_RE.match(line)
        if m:
            close_play(now)
            play, p_t0 = m.group("p"), now
            continue
        if action == "verify" and PASSED_RE.search(line):
            counts["testinfra_passed"] += 1
        elif action == "verify" and FAILED_RE.search(line):
            counts["testinfra_failed"] += 1
        if ASSERT_RE.search(line):
            counts["asserts_passed"] += 1
        if line.startswith("...ignoring") and fatals:
            fatals.pop()  # an expected failure (ignore_errors), not a cause
        elif FATAL_RE.search(line) or FAILED_RE.search(line):
            fatals.append((action or "-", play or "-", line.strip()[:600]))
    now = time.time()
    close_play(now)
    if action is not None:
        rows.append(("action", scenario, action, "(cut short)", now - a_t0))
    with open(out_path, "w") as f:
        for kind, s, a, p, secs in rows:
            f.write("%s\t%s\t%s\t%s\t%.1f\n" % (kind, s, a, p.replace("\t", " "), secs))
        for k, v in counts.items():
            f.write("count\t%s\t%s\t\t%d\n" % (scenario, k, v))
        for a, p, text in fatals[-FATAL_KEPT:]:
            f.write("fatal\t%s\t%s\t%s\t%s\n" % (scenario, a, p.replace("\t", " "), text.replace("\t", " ")))


def _read(path):
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def _junit_counts(path):
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    tests = sum(int(s.get("tests", 0)) for s in suites)
    bad = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    return tests, bad, skipped


def _junit_failures(path):
    """(test id, first line of the cause) of each failed or errored test: CI keeps only the log's tail, so the
    summary names them there, one line per cause, not only the stage."""
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        for child in case:
            if child.tag in ("failure", "error"):
                cause = (child.get("message") or child.text or child.tag).strip().splitlines() or [child.tag]
                out.append(("%s::%s" % (case.get("classname", ""), case.get("name", "")), cause[0][:200]))
    return out


def print_failures(folder):
    """Failed tests of every junit file, grouped by cause: 'N x cause' and up to three of the tests."""
    groups = {}
    for xml in sorted(glob.glob(os.path.join(folder, "*.xml"))):
        for test, cause in _junit_failures(xml):
            groups.setdefault(cause, []).append(test)
    if groups:
        print("\nfailed tests, by cause")
    for cause, tests in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print("%4d x %s" % (len(tests), cause))
        for test in tests[:3]:
            print("         %s" % test)
        if len(tests) > 3:
            print("         ... and %d more" % (len(tests) - 3))


def fmt(secs):
    secs = float(secs)
    return "%6.0f s" % secs if secs < 120 else "%6.1f min" % (secs / 60)


def table(folder):
    path = os.path.join(folder, "stages.tsv")
    stages = [(r + ["0", "host", "0"])[:5] for r in _read(path)] if os.path.exists(path) else []
    total = sum(float(r[1]) for r in stages) or 1.0
    print("Time profile (%s)" % folder)
    print("%-22s %-10s %8s %10s %6s  %s" % ("stage", "lane", "start", "time", "share", "result"))
    for name, secs, rc, lane, start in sorted(stages, key=lambda r: (r[3], float(r[4]))):
        print("%-22s %-10s %6.0f s %10s %5.0f%%  %s" % (name, lane, float(start), fmt(secs), 100 * float(secs) / total,
                                                     "passed" if rc == "0" else "FAILED (%s)" % rc))
    print("%-22s %-10s %8s %10s" % ("all stages (work)", "", "", fmt(total)))
    lanes = {}
    for _name, secs, _rc, lane, start in stages:
        first, end = lanes.get(lane, (float("inf"), 0.0))
        lanes[lane] = (min(first, float(start)), max(end, float(start) + float(secs)))
    for lane, (first, end) in sorted(lanes.items()):
        print("lane %-17s from %6.0f s to %6.0f s: %s" % (lane, first, end, fmt(end - first).strip()))
    if lanes:
        print("%-22s %s (from the first stage's start to the last one's end)" % (
            "wall", fmt(max(e for _f, e in lanes.values()) - min(f for f, _e in lanes.values())).strip()))
    for xml in sorted(glob.glob(os.path.join(folder, "*.xml"))):
        tests, bad, skipped = _junit_counts(xml)
        print("%s: %d tests, %d failed or errored, %d skipped" % (os.path.basename(xml)[:-4], tests, bad, skipped))
    rows = []
    for path in sorted(glob.glob(os.path.join(folder, "molecule-*.tsv"))):
        rows += _read(path)
    if not rows:
        return
    scenarios = sorted({r[1] for r in rows}, key=lambda s: -sum(float(r[4]) for r in rows if r[1] == s and r[0] == "action"))
    actions = ["destroy", "create", "prepare", "converge", "idempotence", "side_effect", "verify", "cleanup"]
    print("\nmolecule, per scenario and action (seconds; destroy counts both)")
    print("%-11s" % "scenario" + "".join("%12s" % a for a in actions) + "%10s %9s %9s" % ("total", "testinfra", "asserts"))
    for s in scenarios:
        per = {a: sum(float(r[4]) for r in rows if r[0] == "action" and r[1] == s and r[2] == a) for a in actions}
        cnt = {r[2]: int(r[4]) for r in rows if r[0] == "count" and r[1] == s}
        print("%-11s" % s + "".join("%12.0f" % per[a] for a in actions) + "%10.0f %9d %9d" % (
            sum(per.values()), cnt.get("testinfra_passed", 0), cnt.get("asserts_passed", 0)))
    plays = sorted((r for r in rows if r[0] == "play"), key=lambda r: -float(r[4]))[:15]
    print("\nslowest plays")
    for _k, s, a, p, secs in plays:
        print("%8.0f s  %-8s %-12s %s" % (float(secs), s, a, p[:80]))
    failed = {r[0].split(":", 1)[1] for r in stages if r[0].startswith("molecule:") and r[2] != "0"}
    for s in sorted(failed):
        lines = [r for r in rows if r[0] == "fatal" and r[1] == s]
        print("\nmolecule %s failed; its last failure lines (expected ones, ignore_errors, left out):" % s)
        for _k, _s, a, p, text in lines:
            print("  [%s] %s\n    %s" % (a, p[:100], text))
        if not lines:
            print("  (none recorded: a time-out or molecule itself; see its log)")


def main(argv):
    if len(argv) == 4 and argv[1] == "tee":
        tee(argv[2], argv[3])
    elif len(argv) == 3 and argv[1] == "table":
        table(argv[2])
        print_failures(argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
