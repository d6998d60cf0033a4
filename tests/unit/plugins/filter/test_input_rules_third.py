"""The third round of input rules, at the filter level: types from the argument specs (setting_types), the table
of what the pinned vLLM accepts (vllm_cli_problems; tests/contract compares it with the real parser), hosts
sharing one machine (shared_machine_problems), Prometheus durations and serial lists (setting_problems)."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.filter.setting_problems import setting_problems
from ansible_collections.glm53.serving.plugins.filter.setting_types import setting_types
from ansible_collections.glm53.serving.plugins.filter.shared_machine_problems import shared_machine_problems
from ansible_collections.glm53.serving.plugins.filter.vllm_cli_problems import vllm_cli_problems
from ansible_collections.glm53.serving.plugins.module_utils._vllm_cli_data import VERSION


def test_names_are_every_public_option():
    names = setting_types(["serve", "service"])
    assert {"serve_port", "serve_compilation_config", "serve_extra_args", "service_environment"} <= set(names)
    assert not [n for n in names if n.startswith("_")]


@pytest.mark.parametrize("name,value,words", [
    ("serve_port", None, ["serve_port is null", "`serve_port:` with nothing after it"]),
    ("serve_api_key", None, ["serve_api_key is null", "('' for none)"]),
    ("serve_port", "80x", ['serve_port="80x" is not a whole number']),
    ("serve_port", "\uff18\uff10", ["is not a whole number (ASCII digits only"]),
    ("serve_port", True, ["serve_port=true is a boolean, not a whole number"]),
    ("serve_port", [8000], ["serve_port=[8000] is a list, not a whole number"]),
    ("serve_port", 8000.5, ["is not a whole number"]),
    ("serve_gpu_memory_utilization", "high", ['serve_gpu_memory_utilization="high" is not a number']),
    ("serve_enforce_eager", "maybe", ['serve_enforce_eager="maybe" is not a boolean']),
    ("serve_reasoning_parser", False, ["serve_reasoning_parser=false was read as a boolean", "quote it"]),
    ("serve_reasoning_parser", {"a": 1}, ["is a mapping, not a string"]),
    ("serve_extra_args", "--enforce-eager", ["serve_extra_args is a string (15 characters), not a list"]),
    ("serve_extra_args", {"a": 1}, ["serve_extra_args=", "is a mapping, not a list"]),
    ("serve_extra_args", ["--x", {"k": 1}], ["serve_extra_args[1]=", "is a mapping, not a string"]),
    ("serve_extra_args", ["--x", None], ["serve_extra_args[1]=null is null"]),
    ("serve_compilation_config", [1], ["serve_compilation_config=[1] is a list, not a mapping"]),
    ("serve_kv_cache_dtype", "fp9", ['serve_kv_cache_dtype="fp9" is not one of: auto']),
    ("serve_api_key", ["s3cr3t"], ["serve_api_key=(hidden) is a list"]),
])
def test_wrong_types_are_named_with_the_fix(name, value, words):
    out = setting_types(["serve"], {name: value})
    assert len(out) == 1, out
    for word in words:
        assert word in out[0], (word, out[0])
    assert "s3cr3t" not in out[0]


@pytest.mark.parametrize("name,value", [
    ("serve_port", "8001"), ("serve_port", 8001), ("serve_port", 8001.0), ("serve_port", " 8001"),
    ("serve_gpu_memory_utilization", "0.90"), ("serve_gpu_memory_utilization", 1), ("serve_enforce_eager", "no"),
    ("serve_enforce_eager", 0), ("serve_enforce_eager", "True"), ("serve_reasoning_parser", ""),
    ("serve_served_model_name", 123), ("serve_extra_args", []), ("serve_extra_args", ["--seed", 0]),
    ("serve_hf_overrides", {}), ("serve_kv_cache_dtype", "auto"), ("serve_fork_on_pythonpath", None),
])
def test_good_values_pass(name, value):
    assert setting_types(["serve"], {name: value}) == []


def test_only_secrets_are_hidden():
    (msg,) = setting_types(["probes"], {"probes_chat_max_tokens": "4k"})
    assert msg.startswith('probes_chat_max_tokens="4k" is not a whole number'), msg
    (msg,) = setting_types(["model"], {"model_hf_token": ["hf_abc"]})
    assert "hf_abc" not in msg and "(hidden)" in msg


@pytest.mark.parametrize("role, name, value, where, code", [
    ("serve", "serve_api_key", "k3y\u200b", "serve_api_key", "U+200B ZERO WIDTH SPACE at character 4"),
    ("model", "model_hf_token", "\ufeffhf_abc", "model_hf_token", "U+FEFF ZERO WIDTH NO-BREAK SPACE at character 1"),
    ("serve", "serve_served_model_name", "glm\u202e53", "serve_served_model_name", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("service", "service_environment", {"NCCL_DEBUG": "WARN\x1b[0m"}, 'service_environment["NCCL_DEBUG"]', "U+001B"),
    ("service", "service_environment", {"A\u2066": "1"}, "service_environment (a key)", "U+2066"),
    ("venv", "venv_packages", ["packaging", "pyyaml\u00ad"], "venv_packages[1]", "U+00AD SOFT HYPHEN"),
    # by category, not by a list: a private-use point, an unassigned one, a line separator, an interlinear annotation
    ("serve", "serve_api_key", "key\ue000", "serve_api_key", "U+E000"),
    ("serve", "serve_served_model_name", "glm\u037853", "serve_served_model_name", "U+0378"),
    ("service", "service_name", "vllm\u2028glm53", "service_name", "U+2028 LINE SEPARATOR"),
    ("serve", "serve_url", "http://127.0.0.1:8000\ufff9", "serve_url", "U+FFF9"),
    ("serve", "serve_host", "0.0.0.0\U000e0001", "serve_host", "U+E0001 LANGUAGE TAG"),
])
def test_invisible_and_control_characters_are_refused_in_any_string(role, name, value, where, code):
    (msg,) = setting_types([role], {name: value})
    assert msg.startswith(where + " holds ") and code in msg, msg
    assert "k3y" not in msg and "hf_abc" not in msg  # the value is never repeated


def test_letters_of_any_script_and_line_breaks_are_left_to_the_rules():
    assert setting_types(["serve"], {"serve_served_model_name": "智谱-GLM-5.3-Flash"}) == []
    assert setting_types(["probes"], {"probes_notes": ["ünïcödé ✓ 🚀 ελληνικά"]}) == []
    assert setting_types(["service"], {"service_environment": {"NOTE": "a\tb"}}) == []


def test_bad_role_names_are_refused():
    for roles in ("serve", ["../etc"], ["no_such_role"]):
        with pytest.raises(AnsibleFilterError):
            setting_types(roles)


@pytest.mark.parametrize("settings,words", [
    ([{"name": "serve_reasoning_parser", "value": "glm-47", "flag": "--reasoning-parser"}],
     ['serve_reasoning_parser="glm-47" is not a reasoning parser of vLLM %s' % VERSION, "did you mean glm47"]),
    ([{"name": "serve_tool_call_parser", "value": "glm4.7", "flag": "--tool-call-parser"}],
     ['serve_tool_call_parser="glm4.7" is not a tool-call parser']),
    ([{"name": "serve_compilation_config", "value": {"cudagraph_mode": "FULL_DECODE"}, "flag": "--compilation-config"}],
     ["serve_compilation_config", '"FULL_DECODE" is not a CompilationConfig.cudagraph_mode', "FULL_DECODE_ONLY"]),
    ([{"name": "serve_compilation_config", "value": {"cuda_graph_mode": "FULL"}, "flag": "--compilation-config"}],
     ["CompilationConfig has no field 'cuda_graph_mode' (did you mean cudagraph_mode"]),
    ([{"name": "serve_kv_cache_dtype", "value": "fp9", "flag": "--kv-cache-dtype"}], ['serve_kv_cache_dtype="fp9"']),
])
def test_settings_are_checked_as_the_flags_they_set(settings, words):
    out = vllm_cli_problems([], settings=settings)
    assert len(out) == 1 and all(w in out[0] for w in words), out


def test_the_card_settings_and_empty_parsers_pass():
    assert vllm_cli_problems(["--enable-chunked-prefill", "--max-num-seqs", "8"], settings=[
        {"name": "a", "value": "glm47", "flag": "--reasoning-parser"}, {"name": "b", "value": "", "flag": "--tool-call-parser"},
        {"name": "c", "value": {"cudagraph_mode": "FULL_DECODE_ONLY"}, "flag": "--compilation-config"}]) == []


def test_an_unknown_flag_names_the_word_and_the_closest_flag():
    out = vllm_cli_problems(["--seed", "1", "--enabel-chunked-prefill"])
    assert len(out) == 1 and out[0].startswith(
        'serve_extra_args[2]="--enabel-chunked-prefill": --enabel-chunked-prefill is not a flag of vllm serve '
        "in vLLM %s (the fork's base) (did you mean --enable-chunked-prefill" % VERSION), out


def test_a_setting_naming_no_flag_is_a_programming_error():
    with pytest.raises(AnsibleFilterError):
        vllm_cli_problems([], settings=[{"name": "x", "value": 1, "flag": "--no-such-flag"}])


class Hosts(dict):
    pass


def test_hosts_on_one_machine_may_not_share_a_port_or_gpus():
    hv = Hosts({
        "a": {"ansible_host": "10.0.0.5"}, "b": {"ansible_host": "10.0.0.5"},  # same port, every GPU
        "c": {"ansible_host": "10.0.0.6", "serve_port": 8001, "service_environment": {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}},
        "d": {"ansible_host": "10.0.0.6", "serve_port": "8002", "venv_extra_env": {"CUDA_VISIBLE_DEVICES": "3,4"}},
        "e": {"ansible_host": "10.0.0.7", "serve_port": 8001, "service_environment": {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}},
        "f": {"ansible_host": "10.0.0.7", "serve_port": 8002, "service_environment": {"CUDA_VISIBLE_DEVICES": "4,5,6,7"}},
        "g": {}, "h": {},  # no ansible_host: each its own machine
    })
    out = shared_machine_problems(sorted(hv), hv)
    assert sorted(out) == ["a", "b", "c", "d"]
    assert "a and b are one machine (ansible_host 10.0.0.5) and both serve on serve_port=8000" in out["a"]
    assert "every GPU" in out["a"] and "CUDA_VISIBLE_DEVICES" in out["a"]
    assert "would both use GPUs 3" in out["c"] and "serve_port" not in out["c"]


@pytest.mark.parametrize("value,ok", [
    ("30s", True), ("1h30m", True), ("500ms", True), ("2m\n", False), ("30", False), ("1.5h", False), ("30 s", False),
])
def test_durations(value, ok):
    assert (setting_problems([{"name": "d", "value": value, "rule": "duration"}]) == []) == ok


@pytest.mark.parametrize("value,ok", [
    ([1, "25%", "100%"], True), ("12.5%", False), ([1, "0%"], False), ("25%", True), ("50 %", True), ([1, "x"], False),
    # every engine stopped at once, or a size Ansible's int() cannot read
    ("100%", False), (["100%"], False), ("1e3", False), ("1000", True), (1000, True),
])
def test_serial_lists_and_whole_percentages(value, ok):
    out = setting_problems([{"name": "rollout_serial", "value": value, "rule": "serial"}])
    assert (out == []) == ok, out


LS_REMOTE = ("1111111111111111111111111111111111111111\trefs/heads/sm89-longctx-fix-v2\n"
             "2222222222222222222222222222222222222222\trefs/tags/v0.6.18\n"
             "3333333333333333333333333333333333333333\trefs/tags/v0.6.18^{}\n"
             "4444444444444444444444444444444444444444\trefs/remotes/origin/sm89-longctx-fix-v2\n")


def test_release_sources_resolve_branches_and_peeled_tags_and_keep_commits():
    from ansible_collections.glm53.serving.plugins.filter.release_sources import release_sources
    sources = [{"name": "vllm_fork", "repo": "/srv/fork.git", "ref": "sm89-longctx-fix-v2"},
               {"name": "flashinfer", "repo": "/srv/fi.git", "ref": "v0.6.18"},
               {"name": "pinned", "repo": "/srv/p.git", "ref": "ABCDEF1234"}]
    results = [{"item": sources[0], "stdout": LS_REMOTE}, {"item": sources[1], "stdout": LS_REMOTE}]
    out = release_sources(sources, results)
    assert out["vllm_fork"] == {"repo": "/srv/fork.git", "ref": "sm89-longctx-fix-v2", "commit": "1" * 40}
    assert out["flashinfer"]["commit"] == "3" * 40  # an annotated tag's commit, not the tag object
    assert out["pinned"]["commit"] == "abcdef1234"
    with pytest.raises(AnsibleFilterError, match="no-such-branch is not a branch or tag of /srv/fork.git"):
        release_sources([dict(sources[0], ref="no-such-branch")], [{"item": dict(sources[0], ref="no-such-branch"),
                                                                    "stdout": LS_REMOTE}])
