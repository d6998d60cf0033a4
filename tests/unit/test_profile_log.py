"""hack/profile_log.py's summary names each failed test, grouped by cause: CI keeps only the log's tail."""
from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "hack", "profile_log.py")

JUNIT = """<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="6" failures="1" errors="4" skipped="0">
<testcase classname="t.a" name="ok"/>
%s
<testcase classname="t.b" name="bad"><failure message="AssertionError: 3 != 4">trace</failure></testcase>
</testsuite></testsuites>
""" % "\n".join('<testcase classname="t.a" name="case%d"><error message="TimeoutExpired: 900 s"/></testcase>' % i
                for i in range(4))


def test_failed_tests_are_listed_by_cause_after_the_table(tmp_path):
    (tmp_path / "pytest.xml").write_text(JUNIT)
    out = subprocess.run([sys.executable, SCRIPT, "table", str(tmp_path)], capture_output=True, text=True,
                         check=True).stdout
    tail = out.split("failed tests, by cause")[1].splitlines()
    assert tail[1] == "   4 x TimeoutExpired: 900 s"
    assert tail[2:5] == ["         t.a::case0", "         t.a::case1", "         t.a::case2"]
    assert tail[5] == "         ... and 1 more"
    assert tail[6:] == ["   1 x AssertionError: 3 != 4", "         t.b::bad"]
    assert "pytest: 6 tests, 5 failed or errored" in out


def test_no_failures_no_list(tmp_path):
    (tmp_path / "pytest.xml").write_text('<testsuite tests="1"><testcase classname="t" name="ok"/></testsuite>')
    out = subprocess.run([sys.executable, SCRIPT, "table", str(tmp_path)], capture_output=True, text=True,
                         check=True).stdout
    assert "failed tests" not in out and "pytest: 1 tests, 0 failed or errored" in out


MOLECULE_LOG = """INFO     [s > converge] Executing
PLAY [Bring it up] *************************************************************
TASK [expected to fail] ***
fatal: [h1]: FAILED! => {"msg": "an expected failure"}
...ignoring
TASK [the real one] ***
fatal: [h1]: FAILED! => {"msg": "readiness wait: the engine did not answer in 900 s"}
INFO     [s > converge] Executed: Failed
"""


def test_a_failed_scenario_names_its_failure_lines_in_the_summary(tmp_path):
    subprocess.run([sys.executable, SCRIPT, "tee", str(tmp_path / "molecule-s.tsv"), "s"], input=MOLECULE_LOG,
                   capture_output=True, text=True, check=True)
    (tmp_path / "stages.tsv").write_text("molecule:s\t10\t2\tmolecule1\t0\nmolecule:ok\t5\t0\tmolecule2\t0\n")
    out = subprocess.run([sys.executable, SCRIPT, "table", str(tmp_path)], capture_output=True, text=True,
                         check=True).stdout
    tail = out.split("molecule s failed; its last failure lines")[1]
    assert "[converge] Bring it up" in tail and "did not answer in 900 s" in tail
    assert "an expected failure" not in tail and "molecule ok failed" not in out
