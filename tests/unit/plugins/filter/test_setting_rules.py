"""The shape and range rules kept beside each role's argument specs (meta/rules.yml), read by setting_rules: every
rule names a setting of its role with a rule setting_problems knows, each value is named once, and the rule forms
(each, keys, attribute, skip_empty, a bound read from another setting, not set here) behave."""
from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.glm53.serving.plugins.filter import setting_rules as sr
from ansible_collections.glm53.serving.plugins.filter.setting_problems import setting_problems
from ansible_collections.glm53.serving.plugins.module_utils import _role_specs
from ansible_collections.glm53.serving.plugins.module_utils._role_specs import role_names, role_options
from testlib import REPO

ROLES = [r for r in role_names() if not r.startswith("_")]
# set by the user and read outside any one role: the output folder, and the rollout playbooks' play keywords
SHARED_OUTSIDE = {"glm53_output_dir", "rollout_serial", "rollout_max_fail_percentage"}


@pytest.mark.parametrize("role", ROLES)
def test_every_rule_names_a_setting_of_its_role_and_a_known_rule(role):
    rules = sr.role_rules(role)
    assert rules, "%s has no meta/rules.yml" % role
    with open(os.path.join(REPO, "roles", "_defaults", "defaults", "main.yml")) as f:
        shared = set(yaml.safe_load(f))
    for name, entry in rules:
        assert name in role_options(role) or name in shared or name in SHARED_OUTSIDE, (role, name)
        # an unknown rule raises; a value of the wrong kind gives a message, never an exception
        setting_problems([{"name": name, "value": object() if entry["rule"] != "serial" else "x", "rule": entry["rule"],
                           "min": 0, "max": 1}])


def test_the_rule_forms(monkeypatch):
    monkeypatch.setitem(sr._CACHE, "t", [
        ("t_port", {"rule": "port"}),
        ("t_key", {"rule": "nonblank", "secret": True, "skip_empty": True}),
        ("t_env", {"rule": "env_name", "each": True, "keys": True}),
        ("t_disks", {"rule": "abs_path", "each": True, "attribute": "path"}),
        ("t_max", {"rule": "int_range", "min": 1, "max": {"setting": "t_len", "otherwise": 9}}),
        ("t_out", {"rule": "abs_path", "label": "t_out (the label)"}),
    ])
    assert sr.setting_rules(["t"]) == ["t_disks", "t_env", "t_key", "t_len", "t_max", "t_out", "t_port"]
    good = {"t_port": 8000, "t_key": "", "t_env": {"A_B": "1"}, "t_disks": [{"path": "/srv"}], "t_max": "5",
            "t_len": "10", "t_out": "__glm53_unset__"}
    assert sr.setting_rules(["t"], good) == []
    bad = dict(good, t_port=0, t_key=" ", t_env={"A B": "1"}, t_disks=[{"path": "srv"}, {}], t_max=11, t_out="x/y")
    msgs = sr.setting_rules(["t"], bad)
    assert [m.split("=")[0].split(" is")[0] for m in msgs] == [
        "t_port", "t_key", "a key of t_env", "t_disks[0]", "t_disks[1]", "t_max", "t_out (the label)"]
    assert "(hidden)" in msgs[1] and "from 1 to 10" in msgs[5]
    # a bound that is not a number falls back; a list given as text is left to setting_types
    assert "from 1 to 9" in sr.setting_rules(["t"], dict(good, t_max=11, t_len="many"))[0]
    assert sr.setting_rules(["t"], dict(good, t_disks="/srv")) == []


def test_a_bound_less_other_settings(monkeypatch):
    """max: {setting: A, less: B}: A's value less B's (a needle prompt and its answer share the context); either not a
    number falls back on otherwise."""
    monkeypatch.setitem(sr._CACHE, "u", [
        ("u_target", {"rule": "int_range", "min": 1, "max": {"setting": "u_len", "less": "u_answer", "otherwise": 5}}),
        ("u_input", {"rule": "int_range", "min": 1, "max": {"setting": "u_len", "less": ["u_answer", "u_margin"]}}),
    ])
    assert sr.setting_rules(["u"]) == ["u_answer", "u_input", "u_len", "u_margin", "u_target"]
    values = {"u_len": 100, "u_answer": 30, "u_margin": "10", "u_target": 70, "u_input": 60}
    assert sr.setting_rules(["u"], values) == []
    msgs = sr.setting_rules(["u"], dict(values, u_target=71, u_input=61))
    assert "u_target=71 must be a whole number from 1 to 70" in msgs[0] and "u_input=61" in msgs[1], msgs
    assert "from 1 to 60" in msgs[1], msgs
    assert "u_target=6 must be a whole number from 1 to 5" in sr.setting_rules(["u"], dict(values, u_answer="many", u_target=6))[0]


def test_a_bad_rules_file_is_an_error_not_a_pass(monkeypatch, tmp_path):
    role = tmp_path / "roles" / "zz" / "meta"
    role.mkdir(parents=True)
    (role / "rules.yml").write_text("zz_a: {rul: port}\n")
    monkeypatch.setattr(_role_specs, "ROLES_DIR", str(tmp_path / "roles"))
    with pytest.raises(Exception, match="a rule is a name or a mapping"):
        sr.setting_rules(["zz"])
