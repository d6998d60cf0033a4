"""The execution environment carries every collection the shipped playbooks, roles and examples use: each FQCN of a
module, action, role or module_defaults group in them names a collection that is ansible-core's own, this one, or one
execution-environment.yml installs from Galaxy with a version range."""
from __future__ import annotations

import glob
import os
import re

import pytest
import yaml

from testlib import REPO

# What ships and runs: the top playbook, the playbooks and their examples, the roles' tasks and handlers.
SHIPPED = ["site.yml", "playbooks/*.yml", "playbooks/examples/*.yml", "roles/*/tasks/*.yml", "roles/*/handlers/*.yml"]
FQCN = re.compile(r"^([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\.[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*$")
CORE = {"ansible.builtin", "ansible.legacy", "glm53.serving"}
TASK_LISTS = ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always")
ROLE_ACTIONS = {"include_role", "import_role"}


def _role_names(roles):
    for role in roles or []:
        yield role if isinstance(role, str) else (role.get("role") or role.get("name"))


def _fqcns(items):
    """The FQCNs a list of plays or tasks uses: task keys, roles by name, module_defaults keys."""
    for item in items or []:
        if not isinstance(item, dict):
            continue
        for key, value in item.items():
            if key in TASK_LISTS:
                yield from _fqcns(value)
            elif key == "roles":
                yield from _role_names(value)
            elif key == "import_playbook":
                yield value
            elif key == "module_defaults" and isinstance(value, dict):
                yield from (name.split("/", 1)[-1] for name in value)
            elif FQCN.match(key):
                yield key
                if key.rsplit(".", 1)[-1] in ROLE_ACTIONS and isinstance(value, dict):
                    yield value.get("name")
            elif key in ROLE_ACTIONS and isinstance(value, dict):
                yield value.get("name")


def used_collections():
    """{collection: sorted files that use it} over the shipped files, ansible-core's own and this one left out."""
    used = {}
    for pattern in SHIPPED:
        for path in sorted(glob.glob(os.path.join(REPO, pattern))):
            with open(path) as fh:
                data = yaml.safe_load(fh)
            for name in _fqcns(data if isinstance(data, list) else []):
                found = FQCN.match(name or "") or re.match(r"^([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)$", name or "")
                if found and "%s.%s" % found.groups()[:2] not in CORE:
                    used.setdefault("%s.%s" % found.groups()[:2], set()).add(os.path.relpath(path, REPO))
    return {name: sorted(files) for name, files in used.items()}


def ee_galaxy_collections():
    with open(os.path.join(REPO, "execution-environment.yml")) as fh:
        ee = yaml.safe_load(fh)
    return {c["name"]: c for c in ee["dependencies"]["galaxy"]["collections"] if c.get("type", "galaxy") == "galaxy"}


def test_the_scan_reads_tasks_roles_and_groups():
    plays = [{"hosts": "all", "module_defaults": {"group/community.aws.aws": {}}, "roles": [{"role": "a.b.c"}, "d.e.f"],
              "tasks": [{"block": [{"name": "x", "community.general.haproxy": {}}],
                         "rescue": [{"ansible.builtin.include_role": {"name": "g.h.i"}}]},
                        {"import_role": {"name": "glm53.serving.serve"}}, {"ansible.builtin.debug": {}}]},
             {"import_playbook": "j.k.site"}]
    assert sorted(n for n in _fqcns(plays) if n) == sorted(["community.aws.aws", "a.b.c", "d.e.f",
                                                            "community.general.haproxy", "ansible.builtin.include_role",
                                                            "g.h.i", "glm53.serving.serve", "ansible.builtin.debug",
                                                            "j.k.site"])


def test_the_shipped_files_are_read():
    used = used_collections()
    assert "playbooks/examples/lb_haproxy.yml" in used.get("community.general", []), used


@pytest.mark.parametrize("collection", sorted(used_collections()))
def test_the_execution_environment_carries_it(collection):
    galaxy = ee_galaxy_collections()
    assert collection in galaxy, "%s (used by %s) is missing from execution-environment.yml's galaxy collections" % (
        collection, ", ".join(used_collections()[collection]))
    version = str(galaxy[collection].get("version", ""))
    assert re.search(r">=\s*[0-9]", version) and re.search(r"<\s*[0-9]", version), \
        "%s needs a version range (>=x,<y), not %r" % (collection, version)


def test_the_execution_environment_carries_nothing_unused():
    assert sorted(ee_galaxy_collections()) == sorted(used_collections())
