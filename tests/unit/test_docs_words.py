"""The shipped docs speak to users about the project: what it does, how to run it, what it guarantees, and current
figures. Never how it was developed: no numbered work sessions ("stop 44"), issue numbers, "landed" parts, or a
status page of them."""
from __future__ import annotations

import glob
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = sorted(["README.md", "CHANGELOG.rst"] + [os.path.relpath(p, REPO) for p in
                                                 glob.glob(os.path.join(REPO, "docs", "*.md"))
                                                 + glob.glob(os.path.join(REPO, "roles", "*", "README.md"))])
# Words that tell the project's development history, not the project.
HISTORY = re.compile(r"\bstops? \d+\b|\bstop \d+'s\b|\bstop's\b|\blanded\b|\blanding\b|\bissues? #?\d+\b|"
                     r"\bwork rounds?\b|\bround \d+\b|\bsession \d+\b", re.I)


@pytest.mark.parametrize("path", DOCS)
def test_no_development_history_in_shipped_docs(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as fh:
        text = fh.read()
    found = ["%s:%d: %s" % (path, text.count("\n", 0, m.start()) + 1, m.group(0)) for m in HISTORY.finditer(text)]
    assert not found, "development history in a shipped doc (say what the project does, with current figures):\n" + \
        "\n".join(found)


def test_the_docs_checked_are_the_shipped_ones():
    assert "README.md" in DOCS and "docs/verdicts.md" in DOCS and "roles/probes/README.md" in DOCS
    assert not os.path.exists(os.path.join(REPO, "docs", "status.md")), "docs/status.md listed what had landed"
