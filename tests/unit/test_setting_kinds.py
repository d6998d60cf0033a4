"""Every setting of every role has a kind, and the kind brings its checks.

A kind is the `rule` of a setting's entry in its role's meta/rules.yml: a shape (abs_path, int_range, url...), or one
of the kinds that know about trust, references and names (root_path, env_map, command, hosts_ref, unit_name...), or a
plain kind whose checks the argument spec makes (flag, choice; mapping, list, text and internal say `why` they are
free). A new option in an argument spec without an entry fails here, so no setting lands unguarded.
"""
from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.glm53.serving.plugins.filter.setting_problems import setting_problems
from ansible_collections.glm53.serving.plugins.filter.setting_rules import role_rules, setting_rules
from ansible_collections.glm53.serving.plugins.module_utils._kinds import FREE_KINDS, KINDS
from testlib import REPO

ROLES = sorted(d for d in os.listdir(os.path.join(REPO, "roles"))
               if os.path.exists(os.path.join(REPO, "roles", d, "meta", "argument_specs.yml")))


def _options(role):
    with open(os.path.join(REPO, "roles", role, "meta", "argument_specs.yml")) as f:
        specs = yaml.safe_load(f)["argument_specs"]
    out = {}
    for entry in specs.values():
        out.update(entry.get("options") or {})
    return out


@pytest.mark.parametrize("role", ROLES)
def test_every_setting_has_a_kind(role):
    kinds = {}
    for name, entry in role_rules(role):
        kinds.setdefault(name, []).append(entry)
    options = _options(role)
    missing = sorted(set(options) - set(kinds))
    assert not missing, "%s: settings without a kind in meta/rules.yml: %s" % (role, ", ".join(missing))
    for name, entries in kinds.items():
        for entry in entries:
            assert entry["rule"] in KINDS, "%s: %s: unknown kind %r" % (role, name, entry["rule"])
            if entry["rule"] in FREE_KINDS:
                assert entry.get("why", "").strip(), "%s: %s is %s: say why it is free (why:)" % (role, name, entry["rule"])
            if entry["rule"] == "choice":
                assert "choices" in options.get(name, {}), "%s: %s is a choice without choices in its spec" % (role, name)
            if entry["rule"] == "flag":
                assert options.get(name, {}).get("type") == "bool", "%s: %s is a flag but not a bool" % (role, name)


def _one(rule, value, **extra):
    return setting_problems([dict({"name": "x", "rule": rule, "value": value}, **extra)])


@pytest.mark.parametrize("value, words", [
    ("https://user:pw@mirror.example/py/", "carries a credential"),
    ("http://fe80::1:9093", "IPv6 host without brackets"),
    ("http://am.example:99999/", "port outside 1-65535"),
    ("http://am.example:0/", "port outside 1-65535"),
    ("ftp://mirror.example/", "http:// or https://"),
    ("http://exa mple/", "no spaces"),
])
def test_a_url_is_parsed_not_matched(value, words):
    problems = _one("url", value)
    assert len(problems) == 1 and words in problems[0], problems
    assert "pw" not in problems[0]


@pytest.mark.parametrize("value", ["http://[fe80::1]:9093", "https://am.example/api", "http://127.0.0.1:8000"])
def test_good_urls_pass(value):
    assert _one("url", value) == []


def test_a_token_crosses_the_network_only_over_https_or_loopback():
    assert "in clear" in _one("url", "http://am.example:9093", token="rollout_alertmanager_token")[0]
    assert _one("url", "http://[::1]:9093", token="rollout_alertmanager_token") == []
    assert _one("url", "https://am.example:9093", token="rollout_alertmanager_token") == []
    problems = setting_rules(["rollout"], {"rollout_alertmanager_url": "http://am.example:9093",
                                           "rollout_alertmanager_token": "s3cr3t"})
    assert any("rollout_alertmanager_url" in p and "in clear" in p for p in problems), problems
    assert not any("s3cr3t" in p for p in problems)


@pytest.mark.parametrize("value", ["/opt/glm53/", "/opt/./glm53", "/opt//glm53"])
def test_a_path_has_one_spelling(value):
    assert "one spelling" in _one("abs_path", value)[0]


@pytest.mark.parametrize("value", ["/tmp/gate", "/var/tmp/x/y", "/dev/shm/env", "/home/ops/heal.yml"])
def test_what_root_runs_is_in_no_folder_another_user_writes(value):
    assert "other users can write" in _one("root_path", value)[0]
    assert "other users can write" in _one("own_dir", value, root=True)[0]


def test_what_root_runs_is_not_in_the_engine_users_home():
    problems = setting_rules(["service"], {"service_gate_dir": "/var/lib/glm53/libexec",
                                           "venv_service_home": "/var/lib/glm53"})
    assert any("service_gate_dir" in p and "engine's user owns" in p for p in problems), problems
    # the default home, when the service role is checked without the venv role's values loaded
    problems = setting_rules(["serve"], {"serve_env_file": "/var/lib/glm53/vllm.env"})
    assert any("serve_env_file" in p and "venv_service_home" in p for p in problems), problems


@pytest.mark.parametrize("env", [{"LD_PRELOAD": "/tmp/x.so"}, {"PYTHONPATH": "/opt/ok:/dev/shm/p"},
                                 {"PATH": "bin:/usr/bin"}, {"PYTHONPATH": "/var/lib/glm53/site"}])
def test_a_build_environment_loads_nothing_another_user_writes(env):
    problems = setting_rules(["vllm_fork"], {"vllm_fork_extra_build_env": env, "venv_service_home": "/var/lib/glm53"})
    assert any("vllm_fork_extra_build_env" in p for p in problems), problems


def test_a_build_environment_of_plain_values_passes():
    assert setting_rules(["vllm_fork"], {"vllm_fork_extra_build_env": {"MAX_JOBS": 8, "CC": "gcc-12",
                                                                       "PYTHONPATH": "/opt/glm53/extra"}}) == []


def test_names_and_files_that_collide_are_refused():
    problems = setting_rules(["heal"], {"heal_schedule_name": "vllm-glm53"})  # the service role's default unit
    assert any("heal_schedule_name" in p and "service_name" in p for p in problems), problems
    problems = setting_rules(["serve"], {"serve_env_file": "/opt/glm53/bin//serve-glm53.sh"})
    assert any("serve_env_file" in p for p in problems), problems
    problems = setting_rules(["serve"], {"serve_env_file": "/opt/glm53/bin/serve-glm53.sh"})
    assert any("serve_env_file" in p and "serve_script_path" in p for p in problems), problems
    assert "unit suffix" in _one("unit_name", "glm53-heal.service")[0]


INVENTORY = {"all": ["gpu-01", "gpu-02", "prom-01"], "ungrouped": [], "glm53_serving": ["gpu-01", "gpu-02"],
             "monitoring": ["prom-01"]}


@pytest.mark.parametrize("rule, value, words", [
    ("hosts_ref", "all", "every host"), ("hosts_ref", "gpu-01:gpu-09", "gpu-09"), ("hosts_ref", "*", "every host"),
    ("hosts_ref", "*-0*", "every host"), ("hosts_ref", "cpu-*", "matches no host"),
    ("host_ref", "lb-01", "no host"), ("group_ref", "glm53_alertmanagr", "not an inventory group"),
    ("group_ref", "all", "not an inventory group"),
])
def test_a_reference_names_what_the_inventory_has(rule, value, words):
    problems = _one(rule, value, inventory=INVENTORY)
    assert len(problems) == 1 and words in problems[0], problems


@pytest.mark.parametrize("rule, value", [("hosts_ref", "glm53_serving:!gpu-02"), ("hosts_ref", "gpu-01,gpu-02"),
                                         ("hosts_ref", "gpu-*"),
                                         ("host_ref", "localhost"), ("group_ref", "monitoring")])
def test_good_references_pass(rule, value):
    assert _one(rule, value, inventory=INVENTORY) == []


@pytest.mark.parametrize("matchers, words", [
    ([], "non-empty"), ([{"name": "host", "value": ".*", "isRegex": True}], "matches any host"),
    ([{"name": "host", "value": "gpu-01", "isEqual": False}], "negated"), ([{"name": "host", "value": ""}], "non-empty value"),
])
def test_a_silence_holds_one_host(matchers, words):
    problems = _one("silence_matchers", matchers)
    assert len(problems) == 1 and words in problems[0], problems


def test_meaning_a_band_past_a_near_uniform_guess_and_a_watchdog_that_acts_within_an_hour():
    assert any("probes_reference_band" in p for p in setting_rules(["probes"], {"probes_reference_band": [0.02, 12]}))
    assert setting_rules(["probes"], {"probes_reference_band": [0.02, 5.0]}) == []
    # interval x failures at most an hour (the bound is the service role's derived __service_watchdog_max_failures)
    problems = setting_rules(["service"], {"service_watchdog_failures": 100, "__service_watchdog_max_failures": 60})
    assert any("service_watchdog_failures=100" in p and "within an hour" in p for p in problems), problems
    assert setting_rules(["service"], {"service_watchdog_failures": 3, "__service_watchdog_max_failures": 60}) == []


def test_the_default_alertmanager_group_may_be_absent_a_misspelt_one_may_not():
    inventory = dict(INVENTORY)
    assert setting_rules(["monitoring"], {"monitoring_alertmanagers_group": "glm53_alertmanager", "groups": inventory}) == []
    problems = setting_rules(["monitoring"], {"monitoring_alertmanagers_group": "glm53_alertmanagr", "groups": inventory})
    assert any("monitoring_alertmanagers_group" in p for p in problems), problems


def test_every_setting_a_playbook_reads_has_a_kind():
    """The names the playbooks read themselves (rollout_hosts, lb_host...) have their kinds in roles/_defaults."""
    import glob
    import re
    options = set()
    for role in ROLES:
        options |= set(_options(role))
    kinds = {name for name, entry in role_rules("_defaults")}
    read = set()
    for path in glob.glob(os.path.join(REPO, "playbooks", "*.yml")) + glob.glob(os.path.join(REPO, "playbooks", "examples", "*.yml")):
        with open(path) as f:
            text = "".join(line for line in f if not line.lstrip().startswith("#"))
        read |= set(re.findall(r"\b((?:rollout|lb|heal|report|glm53|probes|serve|service|venv|monitoring|model)_[a-z0-9_]+)"
                               r"\b(?=\s*\|\s*default|\s*[|}])", text))
    rules_elsewhere = {name for role in ROLES for name, entry in role_rules(role)}
    missing = sorted(read - options - rules_elsewhere - kinds)
    assert not missing, "settings read by playbooks without a kind in roles/_defaults/meta/rules.yml: %s" % missing
    assert "rollout_hosts" in kinds and "lb_haproxy_drain_wait_s" in kinds


@pytest.mark.parametrize("values, words", [
    ({"rollout_hosts": "all"}, "rollout_hosts"), ({"lb_haproxy_drain_wait_s": "10m"}, "600, not 10m"),
    ({"lb_host": "lb-09"}, "lb_host"), ({"lb_kind": "traefik"}, "lb_kind"), ({"glm53_validate_stop_all": "maybe"}, "true or false"),
])
def test_the_playbooks_own_settings_are_checked_by_kind(values, words):
    problems = setting_rules(["_defaults"], dict(values, groups=INVENTORY))
    assert len(problems) == 1 and words in problems[0], problems


def _fleet(per_host):
    from ansible_collections.glm53.serving.plugins.filter.fleet_problems import fleet_problems
    hosts = sorted(per_host)
    return fleet_problems(hosts, "glm53_serving", {"all": hosts, "glm53_serving": hosts}, per_host)


@pytest.mark.parametrize("name, odd", [("serve_api_key", "another-key"), ("serve_max_model_len", 262144),
                                       ("serve_ssl_certfile_src", "/srv/pki/gpu-03.crt"), ("venv_torch_spec", "torch==2.12.0"),
                                       ("serve_served_model_name", "glm")])
def test_the_pool_agrees_on_what_clients_see(name, odd):
    base = {"serve_api_key": "k1", "serve_max_model_len": 524288, "serve_ssl_certfile_src": "", "venv_torch_spec": "torch==2.13.0",
            "serve_served_model_name": "glm53-flash-awq"}
    problems = _fleet({"gpu-01": dict(base), "gpu-02": dict(base), "gpu-03": dict(base, **{name: odd})})
    assert len(problems) == 1 and name in problems[0] and "gpu-03" in problems[0], problems
    assert "k1" not in problems[0] and "another-key" not in problems[0]


def test_a_hosts_own_address_set_once_for_the_group_is_refused():
    url = {"serve_url": "http://10.0.1.11:8000"}
    problems = _fleet({"gpu-01": dict(url), "gpu-02": dict(url)})
    assert len(problems) == 1 and "serve_url" in problems[0] and "same engine" in problems[0], problems
    loopback = {"serve_url": "http://127.0.0.1:8000"}
    assert _fleet({"gpu-01": dict(loopback), "gpu-02": dict(loopback)}) == []
    assert _fleet({"gpu-01": {"serve_url": "http://10.0.1.11:8000"},
                   "gpu-02": {"serve_url": "http://10.0.1.12:8000"}}) == []


@pytest.mark.parametrize("value", ["/opt/glm53;touch /x", "/opt/$(id)/venv", "/opt/`id`", "/var/lib/glm53%h", "/opt/a|b"])
def test_a_path_holds_no_character_a_shell_or_systemd_reads_as_its_own(value):
    problems = _one("abs_path", value)
    assert len(problems) == 1 and "reads as its own" in problems[0], problems


@pytest.mark.parametrize("value", ["https://hub.example/api?token=abc", "https://am.example/?api_key=abc&x=1",
                                   "https://mirror.example/py?X-Amz-Signature=abc"])
def test_a_url_carries_no_credential_in_its_query(value):
    problems = _one("url", value)
    assert len(problems) == 1 and "in its query" in problems[0] and "abc" not in problems[0], problems


def test_a_silence_holds_this_host_alone():
    values = {"groups": INVENTORY, "inventory_hostname": "gpu-01"}
    assert setting_rules(["rollout"], dict(values, rollout_silence_matchers=[{"name": "host", "value": "gpu-01"}])) == []
    problems = setting_rules(["rollout"], dict(values, rollout_silence_matchers=[{"name": "job", "value": "glm53"}]))
    assert any("rollout_silence_matchers" in p and "this host's alone" in p for p in problems), problems
    problems = setting_rules(["rollout"], dict(values, rollout_silence_matchers=[
        {"name": "host", "value": "gpu-0[12]", "isRegex": True}]))
    assert any("this host's alone" in p for p in problems), problems


def test_the_heal_schedule_is_not_named_as_the_engines_watchdog():
    problems = setting_rules(["heal"], {"heal_schedule_name": "vllm-glm53-watchdog"})
    assert any("heal_schedule_name" in p and "service_name + -watchdog" in p for p in problems), problems
    assert setting_rules(["heal"], {"heal_schedule_name": "glm53-heal"}) == []


@pytest.mark.parametrize("env", [{"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}, {"LD_AUDIT": "/opt/a.so"},
                                 {"PYTHONPATH": "/var/lib/glm53/site"}])
def test_the_engines_environment_makes_no_root_step_load_code(env):
    """The unit gives the engine's environment to the steps root runs beside it (the gate, the watchdog)."""
    problems = setting_rules(["service"], {"service_environment": env, "venv_service_home": "/var/lib/glm53"})
    assert any("service_environment" in p for p in problems), problems
    assert setting_rules(["service"], {"service_environment": {"NCCL_DEBUG": "WARN", "HF_HOME": "/var/lib/glm53/hf",
                                                               "CUDA_VISIBLE_DEVICES": "0,1"}}) == []


@pytest.mark.parametrize("value", ["http://user:pw-s3cr3t@fe80::1:9093/", "https://u:pw-s3cr3t@h:99999/x",
                                   "http://fe80::1:9093/?token=pw-s3cr3t"])
def test_a_credential_is_named_before_anything_that_would_show_the_url(value):
    problems = _one("url", value)
    assert len(problems) == 1 and "carries a credential" in problems[0] and "s3cr3t" not in problems[0], problems


@pytest.mark.parametrize("rule, value", [("command", "/usr/bin/nvidia-smi;id"), ("command", "/opt/$(id)/python3"),
                                         ("location", "file:///srv/py/$(id).tar.gz"), ("location", "/srv/py/a;b.tar.gz")])
def test_commands_and_locations_hold_no_shell_character(rule, value):
    assert len(_one(rule, value)) == 1
