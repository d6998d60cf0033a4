"""docs/architecture.md names the tree as it is: every path, playbook, task file, role, module and filter it names
exists, and every playbook and role of the collection is named in it."""
from __future__ import annotations

import glob
import os
import re

from testlib import REPO

DOC = os.path.join(REPO, "docs", "architecture.md")
TEXT = open(DOC, encoding="utf-8").read()
CODE = re.findall(r"`([^`\n]+)`", TEXT)
TREE = "\n".join(re.findall(r"```\n(.*?)```", TEXT, re.S))
ROOTS = ("roles/", "playbooks/", "plugins/", "module_utils/", "docs/", "tests/", "molecule/", "hack/", "meta/")
PLUGINS = {os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(REPO, "plugins", "*", "*.py"))}
ROLES = {os.path.basename(p) for p in glob.glob(os.path.join(REPO, "roles", "*"))}
FILES = {os.path.basename(p) for p in glob.glob(os.path.join(REPO, "**", "*"), recursive=True)}


def _exists(path):
    for base in ("", "plugins/", "roles/*/"):  # a role-relative path (meta/rules.yml) is any role's
        if glob.glob(os.path.join(REPO, base + path)):
            return True
    return False


def test_every_path_it_names_exists():
    paths = {c for c in CODE if c.startswith(ROOTS) and " " not in c}
    paths |= set(re.findall(r"\b((?:roles|playbooks|plugins)/[\w./*-]+\w)", TEXT))
    assert len(paths) >= 5, paths
    missing = sorted(p for p in paths if not _exists(p))
    assert not missing, "docs/architecture.md names paths the tree does not have: %s" % missing


def test_every_file_name_it_names_exists():
    names = {c for c in CODE if re.fullmatch(r"[\w.-]+\.(yml|py|j2|sh|json)", c)}
    names |= set(re.findall(r"\b([\w-]+\.(?:yml|py))\b", TREE))
    runtime = {"release.json", "ledger.json", "converged.json", "state.json", "summary.json", "preflight.json"}  # on hosts
    missing = sorted(n for n in names - runtime if n not in FILES)
    assert not missing, "docs/architecture.md names files the tree does not have: %s" % missing


def test_every_role_module_and_filter_it_names_exists():
    fqcns = set(re.findall(r"glm53\.serving\.(\w+)", TEXT))
    missing = sorted(n for n in fqcns if n not in PLUGINS and n not in ROLES)
    assert not missing, missing
    tree_roles = set(re.findall(r"[├└]─ (\w+)\s{2,}", TREE)) - {"playbooks"}
    assert tree_roles and not tree_roles - ROLES, tree_roles - ROLES
    tree_words = set(re.findall(r"\b([a-z]+_[a-z_]+)\b", TREE))
    named_plugins = {w for w in tree_words if w in PLUGINS}
    assert len(named_plugins) >= 10, named_plugins  # the tree names the modules each role runs


def test_every_playbook_and_role_of_the_collection_is_named():
    playbooks = {os.path.basename(p) for p in glob.glob(os.path.join(REPO, "playbooks", "*.yml"))}
    unnamed = sorted(p for p in playbooks if p not in TEXT)
    assert not unnamed, "docs/architecture.md does not name these playbooks: %s" % unnamed
    unnamed = sorted(r for r in ROLES if not re.search(r"(?<![\w.])%s(?![\w])" % re.escape(r), TEXT))
    assert not unnamed, "docs/architecture.md does not name these roles: %s" % unnamed


def test_the_playbook_table_is_the_trees():
    """The table of what each playbook runs and the facts its roles publish is written from the tree
    (hack/gen_architecture.py): a playbook, a role call or a published fact that changes without it fails here."""
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, os.path.join(REPO, "hack", "gen_architecture.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "| playbooks/site.yml |" in TEXT and "`probes_result`" in TEXT and "`venv:switch`" in TEXT


def test_every_fact_a_role_publishes_is_in_its_readme():
    """A public name a role sets is part of its interface: its README says what it holds."""
    import sys
    sys.path.insert(0, os.path.join(REPO, "hack"))
    import gen_architecture
    for role in sorted(ROLES):
        if role.startswith("_"):
            continue
        with open(os.path.join(REPO, "roles", role, "README.md"), encoding="utf-8") as fh:
            readme = fh.read()
        missing = [fact for fact in gen_architecture.published(role) if "`%s`" % fact not in readme]
        assert not missing, "roles/%s/README.md does not describe %s" % (role, missing)
