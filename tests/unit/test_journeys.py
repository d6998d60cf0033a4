"""Journeys: the files a reader opens to follow one thing through the collection's code, counted from the tree (the
code that names it: the roles' defaults, variables, tasks, templates and rules, the plugins and the playbooks; not
the docs, argument specs, examples or the table of removed names). The figures are printed (pytest -s)."""
from __future__ import annotations

import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the table of removed names (each old name and the one it became), not a reader of the value
NOT_CODE = {"plugins/filter/unknown_settings.py"}


def _code_files():
    for top in ("roles", "plugins", "playbooks"):
        for base, dirs, files in os.walk(os.path.join(REPO, top)):
            dirs[:] = [d for d in dirs if d not in ("examples", "__pycache__", "files")]
            for name in files:
                rel = os.path.relpath(os.path.join(base, name), REPO)
                if name.endswith((".yml", ".j2", ".py")) and name != "argument_specs.yml" and rel not in NOT_CODE:
                    yield rel


def naming(name):
    """The code files that name it (as a whole word, outside comments)."""
    pattern = re.compile(r"(?<![\w.])%s(?!\w)" % re.escape(name))
    found = set()
    for rel in _code_files():
        with open(os.path.join(REPO, rel), encoding="utf-8") as fh:
            for line in fh:
                code = line.split("#", 1)[0] if rel.endswith((".yml", ".py")) else line
                if pattern.search(code):
                    found.add(rel)
                    break
    return found


def test_the_context_from_the_inventory_to_the_script_and_the_probes():
    """serve_max_model_len: set once (roles/_defaults), checked by its kind (the serve role's rules), rendered into
    the script (the serve role's argv and checks), and read by the probes (their health check, their bounds, the
    benchmark's long request): six files. Beside that journey, two checks read it: the service role's readiness
    (the engine serves the new context after a restart) and the pool's agreement (playbooks/validate.yml)."""
    files = naming("serve_max_model_len")
    journey = sorted(f for f in files if f.split("/")[1] in ("_defaults", "serve", "probes"))
    print("\nserve_max_model_len, inventory to script and probes: %d files: %s" % (len(journey), ", ".join(journey)))
    assert journey == ["roles/_defaults/defaults/main.yml", "roles/probes/defaults/main.yml",
                       "roles/probes/meta/rules.yml", "roles/probes/tasks/probe.yml", "roles/serve/meta/rules.yml",
                       "roles/serve/vars/main.yml"]
    assert sorted(files - set(journey)) == ["plugins/filter/fleet_problems.py", "roles/service/tasks/ready.yml"]


def test_heals_decision():
    """Heal's decision in two files: the state machine (plugins/filter/heal_step.py, its tables) and the one task file
    that gives it each event with what was observed (roles/heal/tasks/decide.yml); the others observe and act."""
    files = sorted(f for f in naming("glm53.serving.heal_step") if f.startswith(("roles/", "playbooks/")))
    files = sorted(set(files) | {"plugins/filter/heal_step.py"})
    print("\nheal's decision: %d files: %s" % (len(files), ", ".join(files)))
    assert files == ["plugins/filter/heal_step.py", "roles/heal/tasks/decide.yml"]


def test_naming_finds_what_it_counts():
    """The count can fail: a name in code is found, a name only in a comment is not."""
    assert "roles/serve/vars/main.yml" in naming("serve_max_model_len")
    assert naming("a_name_nowhere_at_all") == set()
