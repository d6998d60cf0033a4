"""Every setting an example of the documentation sets is a setting of some role, with a rule: a renamed or misspelt
setting in a guide fails here. tests/integration/test_bad_settings_kinds.py runs each example through validate.yml
(tests/helpers/documented_settings.py finds them)."""
from __future__ import annotations

import glob
import os

import yaml

from documented_settings import REFUSED, _commands, _extra_vars, documented_examples
from testlib import REPO


def _settings():
    """Every role's options, and the settings its meta/rules.yml checks (a playbook's, as rollout_serial)."""
    names = set()
    for path in glob.glob(os.path.join(REPO, "roles", "*", "meta", "argument_specs.yml")):
        with open(path) as fh:
            for entry in (yaml.safe_load(fh)["argument_specs"] or {}).values():
                names.update(entry.get("options") or {})
    for path in glob.glob(os.path.join(REPO, "roles", "*", "meta", "rules.yml")):
        with open(path) as fh:
            names.update(k for k in yaml.safe_load(fh) or {} if not k.startswith("__"))
    return names


def test_every_documented_example_sets_known_settings():
    examples = documented_examples()
    assert len(examples) >= 20, sorted(examples)
    known = _settings()
    unknown = sorted("%s sets %s" % (e["source"], k) for e in examples.values() for k in e["settings"] if k not in known)
    assert not unknown, "documented settings that are no role's: " + "; ".join(unknown)


def test_every_refusal_the_guides_show_is_found():
    found = [e for e in documented_examples().values() if e["refused"]]
    assert len(found) == len(REFUSED), found


def test_commands_are_read_as_a_user_types_them():
    md = "Run `ansible-playbook x.yml -e a_b=1 -e c_d=two` or\n\n```bash\nansible-playbook y.yml \\\n  -e e_f=$PWD/z\n```\n"
    commands = [c for _line, c in _commands("doc.md", md)]
    assert [_extra_vars(c) for c in commands if "-e" in c] == [
        [("a_b=1", {"a_b": "1"}), ("c_d=two", {"c_d": "two"})], [("e_f=$PWD/z", {"e_f": REPO + "/z"})]]
    playbook = "#   ansible-playbook p.yml [-e g_h=/x]\n- hosts: all\n"
    assert [_extra_vars(c) for _line, c in _commands("p.yml", playbook) if "-e" in c] == [[("g_h=/x", {"g_h": "/x"})]]
