"""Print the verdict table for the labelled probe answers in tests/corpus/verdicts.yml.

    python hack/verdict_corpus.py [-v]

Each case runs through the probe modules' own judging functions; the table shows the expected and the
judged verdict, and the last line counts false passes, false failures, wrong signals and crashes (the judging
code raising instead of giving a verdict). Exit status 1 on any miss.
Run from make test's venv (it has PyYAML and ansible-core).
"""
from __future__ import annotations

import os
import sys
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "corpus"))
import corpus  # noqa: E402


def main():
    verbose = "-v" in sys.argv[1:]
    data = corpus.load()
    rows, tally, by_probe = [], Counter(), Counter()
    for case in data["cases"]:
        result, signals, detail = corpus.outcome(case, data)
        tally[result] += 1
        by_probe[(case["probe"], case["expect"])] += 1
        rows.append((case["id"], case["probe"], case["expect"], case.get("signal", ""), ",".join(signals) or "pass",
                     result, detail))
    w = max(len(r[0]) for r in rows)
    print("%-*s  %-8s  %-6s  %-28s  %-28s  %s" % (w, "case", "probe", "expect", "expected signal", "judged", "result"))
    for r in rows:
        print("%-*s  %-8s  %-6s  %-28s  %-28s  %s" % (w, r[0], r[1], r[2], r[3], r[4][:28], r[5]))
        if verbose and r[6]:
            print("%*s  %s" % (w, "", r[6][:150]))
    print()
    print("cases by probe: " + ", ".join("%s %s: %d" % (p, e, n) for (p, e), n in sorted(by_probe.items())))
    print("%d cases: %d false passes, %d false failures, %d wrong signals, %d crashes"
          % (len(rows), tally["false pass"], tally["false failure"], tally["wrong signal"], tally["crash"]))
    return 0 if tally["ok"] == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
