"""The fleet checked as a whole, once, before anything changes (playbooks/validate.yml's first play, on the
controller): a host pattern that matches nothing fails instead of passing having done nothing, hosts of one pool
that disagree on the served name or a builder outside the run are refused, and a group_vars file named after no
group is reported."""
from __future__ import annotations

import json
import os
import subprocess

from testlib import COLLECTIONS_ROOT, REPO
from test_bad_settings import base


def validate(tmp_path, hosts, extra=None, group_vars=None, host_vars=None):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "host_vars").mkdir()
    for name, values in (group_vars or {}).items():
        (inventory / "group_vars" / name).write_text(json.dumps(values))
    for name, values in (host_vars or {}).items():
        (inventory / "host_vars" / name).write_text(json.dumps(values))
    (inventory / "hosts.yml").write_text(json.dumps({"all": {"vars": base(scratch), "children": {
        "glm53_serving": {"hosts": hosts}}}}))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(["ansible-playbook", "-i", str(inventory), os.path.join(REPO, "playbooks", "validate.yml"),
                           "-e", json.dumps(dict({"glm53_validate_stop_all": True}, **(extra or {})))],
                          capture_output=True, text=True, env=env, timeout=600, check=False), scratch


def test_a_pattern_that_matches_nothing_fails_naming_the_group(tmp_path):
    proc, scratch = validate(tmp_path, {"a": {}}, {"rollout_hosts": "glm53_servng"})
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "'glm53_servng' (rollout_hosts, default glm53_serving), match no host" in proc.stdout
    assert "Did you mean glm53_serving?" in proc.stdout and list(scratch.iterdir()) == []


def test_one_pool_serving_two_names_is_refused_before_any_host_play(tmp_path):
    proc, _scratch = validate(tmp_path, {"a": {}, "b": {}, "c": {"serve_served_model_name": "other"}})
    assert proc.returncode != 0
    assert "disagree on serve_served_model_name: (the role's default) on a, b; other on c" in proc.stdout
    assert "PLAY [Refuse bad settings before anything changes]" not in proc.stdout


def test_a_builder_outside_the_run_and_an_unused_group_vars_file(tmp_path):
    wheel = {"vllm_fork_build_mode": "wheel", "vllm_fork_builder_host": "builder9"}
    proc, _scratch = validate(tmp_path, {"a": dict(wheel), "b": dict(wheel)},
                              group_vars={"glm53_servng.yml": {"serve_port": 8001}})
    assert proc.returncode != 0
    assert "vllm_fork_builder_host=builder9 is not one of the hosts of this run (a, b)" in proc.stdout
    assert "group_vars/glm53_servng.yml name no group of the inventory" in proc.stdout, proc.stdout[-3000:]


def test_a_host_vars_file_named_after_no_host_is_refused(tmp_path):
    """host_vars/NAME is read only for a host NAME: a misspelt one would leave its host on the group's values."""
    proc, scratch = validate(tmp_path, {"a": {}, "b": {}}, host_vars={"c.yml": {"serve_port": 8001}})
    assert proc.returncode != 0
    assert "host_vars/c.yml names no host of the inventory, so Ansible reads none of its settings." in proc.stdout, \
        proc.stdout[-3000:]
    assert list(scratch.iterdir()) == []


def test_a_run_that_shows_every_host_lists_the_disagreement_and_goes_on(tmp_path):
    proc, _scratch = validate(tmp_path, {"a": {}, "b": {"serve_served_model_name": "other"}},
                              {"glm53_validate_stop_all": False})
    assert "disagree on serve_served_model_name" in proc.stdout
    assert "PLAY [Refuse bad settings before anything changes]" in proc.stdout


def test_each_host_keeps_its_own_record_and_facts_after_the_checks(tmp_path):
    """validate.yml records each host's checked settings (a fact per role) and then a play gathers facts: every host
    keeps its own. ansible-core 2.21 shares one fact record among all hosts when a run_once task comes before their
    first facts (ansible/ansible#87148), which made every host hold the last host's record and gathered facts."""
    for host in ("a", "b", "c"):
        (tmp_path / ("facts-" + host)).mkdir()
        (tmp_path / ("facts-" + host) / "who.fact").write_text(json.dumps({"name": host}))
    after = tmp_path / "after.yml"
    after.write_text(json.dumps([
        {"import_playbook": os.path.join(REPO, "playbooks", "validate.yml")},
        {"hosts": "glm53_serving", "gather_facts": False, "tasks": [
            {"ansible.builtin.setup": {"gather_subset": ["!all", "!min", "local"],
                                       "fact_path": str(tmp_path) + "/facts-{{ inventory_hostname }}"}},
            {"ansible.builtin.debug": {"msg": "OWN {{ inventory_hostname }} {{ ansible_local.who.name }} "
                                              "{{ __glm53_validated_rollout }}"}}]}]))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"vars": base(scratch), "children": {
        "glm53_serving": {"hosts": {"a": {}, "b": {}, "c": {}}}}}}))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), str(after), "-e", "glm53_validate_rollout=true"],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    own = sorted(line.split('"OWN ', 1)[1].rstrip('"').split() for line in proc.stdout.splitlines() if '"OWN ' in line)
    assert [row[:2] for row in own] == [["a", "a"], ["b", "b"], ["c", "c"]], own
    # the rollout's settings hold the host's name (its Alertmanager silence), so each record is the host's own
    assert len({row[2] for row in own}) == 3, own


def test_a_role_defaults_own_expression_copied_into_the_inventory_passes(tmp_path):
    """A value written as the role's default is (it uses variables the roles define, which resolve only in a role's
    context) passes: the first check leaves it to the role's own check, which evaluates it. A misspelt variable in
    the same expression is refused naming the setting and the variable."""
    good = {"serve_url": "{{ __glm53_local_origin }}:{{ serve_port }}", "glm53_validate_rollout": True,
            "serve_served_model_name": "{{ 'glm-5.3-flash' if serve_max_model_len | int > 0 else 'other' }}"}
    proc, _scratch = validate(tmp_path, {"a": {}, "b": {}}, good)
    assert proc.returncode == 0, proc.stdout[-3000:]
    bad = dict(good, serve_url="{{ __glm53_lcal_origin }}:{{ serve_port }}")
    (tmp_path / "bad").mkdir()
    proc, _scratch = validate(tmp_path / "bad", {"a": {}}, bad)
    assert proc.returncode != 0
    assert "serve_url uses __glm53_lcal_origin, which is not defined" in proc.stdout, proc.stdout[-3000:]


def test_the_example_inventory_passes_as_shipped_and_its_placeholder_key_is_what_lets_it(tmp_path):
    """inventory.example, copied as the README says, passes validate.yml with nothing edited (its placeholder key
    fails the probes of a host that serves with it: test_probe_verdict); without a key its remote-facing engine is
    refused, so the placeholder is what lets the example through."""
    hosts = tmp_path / "hosts"
    hosts.write_text(open(os.path.join(REPO, "inventory.example")).read())
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}

    def run(*extra):
        return subprocess.run(["ansible-playbook", "-i", str(hosts), os.path.join(REPO, "playbooks", "validate.yml"),
                               *extra], capture_output=True, text=True, env=env, timeout=600, check=False)

    proc = run()
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "gpu-a01" in proc.stdout and "prom-01" in proc.stdout  # the serving hosts and the monitoring host
    proc = run("-e", json.dumps({"serve_api_key": ""}))
    assert proc.returncode != 0 and "exposes the endpoint beyond this host with no serve_api_key" in proc.stdout
