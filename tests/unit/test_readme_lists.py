"""docs/contents.md's "Included content" table and its layout list what the tree holds: every playbook, role,
module, filter and doc fragment, and nothing that is gone (a rename updates the doc or this fails); the README's links
to docs point at files that exist."""
from __future__ import annotations

import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = open(os.path.join(REPO, "README.md")).read()
CONTENTS = open(os.path.join(REPO, "docs", "contents.md")).read()


def section(title):
    start = CONTENTS.index(title)
    end = CONTENTS.find("\n## ", start + 1)
    return CONTENTS[start:end if end > 0 else len(CONTENTS)]


def tree(folder, ext):
    path = os.path.join(REPO, folder)
    return {f[:-len(ext)] for f in os.listdir(path) if f.endswith(ext) and not f.startswith("__")} \
        if ext else {f for f in os.listdir(path) if os.path.isdir(os.path.join(path, f))}


def table(kinds):
    """The names in backquotes of the Included content rows of these kinds."""
    names = set()
    for line in section("## Included content").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 3 and cells[0] in kinds:
            names |= set(re.findall(r"`([^`]+)`", cells[1]))
    return names


def layout(prefix):
    """The comma-separated names of a layout entry (its first line and the indented lines under it)."""
    block = section("## Layout")
    m = re.search(r"^%s\s+(.*(?:\n {31}.*)*)" % re.escape(prefix), block, re.M)
    assert m, prefix
    text = re.sub(r"\([^)]*\)", "", m.group(1).replace("internal:", ","))
    return {re.sub(r"\.yml$", "", n.strip(" ;\n")) for n in re.split(r"[,;]", text) if n.strip(" ;\n")}


@pytest.mark.parametrize("kinds, folder, ext", [
    (("playbooks",), "playbooks", ".yml"),
    (("roles", "roles (internal)"), "roles", ""),
    (("modules",), "plugins/modules", ".py"),
    (("filters",), "plugins/filter", ".py"),
])
def test_the_included_content_table_matches_the_tree(kinds, folder, ext):
    assert table(kinds) == tree(folder, ext)


@pytest.mark.parametrize("prefix, folder, ext", [
    ("plugins/modules/", "plugins/modules", ".py"),
    ("plugins/filter/", "plugins/filter", ".py"),
    ("plugins/doc_fragments/", "plugins/doc_fragments", ".py"),
    ("roles/", "roles", ""),
])
def test_the_layout_matches_the_tree(prefix, folder, ext):
    assert layout(prefix) == tree(folder, ext)


def test_the_layout_lists_the_playbooks():
    names = layout("playbooks/")
    assert tree("playbooks", ".yml") <= names
    assert "examples/" in " ".join(names) and all(n in section("## Layout") for n in tree("playbooks/examples", ".yml"))


def test_the_readme_points_at_the_test_docs_that_exist():
    for doc in re.findall(r"\]\((docs/[^)#]+)[^)]*\)", README):
        assert os.path.isfile(os.path.join(REPO, doc)), doc
    assert "docs/testing.md" in README and "docs/contents.md" in README and "docs/benchmarks.md" in README
