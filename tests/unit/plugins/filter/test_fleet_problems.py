"""fleet_problems: the fleet checked as a whole before anything changes: a pattern that matches nothing, hosts of one
pool that disagree on what they serve or build, a builder that is not in the run."""
from __future__ import annotations

from ansible_collections.glm53.serving.plugins.filter.fleet_problems import fleet_problems

GROUPS = {"all": ["a", "b", "c"], "ungrouped": [], "glm53_serving": ["a", "b", "c"], "glm53_monitoring": ["m"]}


def test_a_pattern_that_matches_nothing_names_the_closest_groups():
    (msg,) = fleet_problems([], "glm53_servng", GROUPS, {})
    assert "'glm53_servng'" in msg and "match no host" in msg and "Did you mean glm53_serving?" in msg, msg
    assert "glm53_monitoring, glm53_serving" in msg


def test_one_pool_agrees_on_what_it_serves_and_builds():
    hostvars = {"a": {}, "b": {}, "c": {}}
    assert fleet_problems(["a", "b", "c"], "glm53_serving", GROUPS, hostvars) == []
    hostvars["c"] = {"serve_served_model_name": "other-model", "vllm_fork_version": "f2935ce322"}
    out = fleet_problems(["a", "b", "c"], "glm53_serving", GROUPS, hostvars)
    assert len(out) == 2, out
    assert out[0].startswith("The hosts of one pool disagree on serve_served_model_name: (the role's default) on a, b; "
                             "other-model on c"), out[0]
    assert "vllm_fork_version" in out[1]
    # the same value everywhere, set or left to the default, is one pool
    same = {h: {"serve_served_model_name": "m"} for h in "abc"}
    assert fleet_problems(["a", "b", "c"], "glm53_serving", GROUPS, same) == []


def test_the_builder_is_agreed_on_and_in_the_run():
    wheel = {h: {"vllm_fork_build_mode": "wheel"} for h in "abc"}
    assert fleet_problems(["a", "b", "c"], "g", GROUPS, wheel) == []  # the default builder: the first host
    outside = {h: {"vllm_fork_build_mode": "wheel", "vllm_fork_builder_host": "builder9"} for h in "abc"}
    (msg,) = fleet_problems(["a", "b", "c"], "g", GROUPS, outside)
    assert msg.startswith("vllm_fork_builder_host=builder9 is not one of the hosts of this run (a, b, c)"), msg
    split = dict(outside, c={"vllm_fork_build_mode": "wheel", "vllm_fork_builder_host": "c"})
    (msg,) = fleet_problems(["a", "b", "c"], "g", GROUPS, split)
    assert "disagree on vllm_fork_builder_host: builder9 on a, b; c on c" in msg, msg
    # in local mode every host builds for itself: the builder is not read
    local = {h: {"vllm_fork_builder_host": "builder9"} for h in "abc"}
    assert fleet_problems(["a", "b", "c"], "g", GROUPS, local) == []
    # one builder host for both builds: FlashInfer's build-once mode reads it too, and it is refused once
    both = {h: {"vllm_fork_build_mode": "wheel", "flashinfer_build_mode": "index", "vllm_fork_builder_host": "builder9"}
            for h in "abc"}
    (msg,) = fleet_problems(["a", "b", "c"], "g", GROUPS, both)
    assert msg.startswith("vllm_fork_builder_host=builder9") and "index/wheel build mode" in msg, msg
    flashinfer_only = {h: {"flashinfer_build_mode": "wheel", "vllm_fork_builder_host": "builder9"} for h in "abc"}
    (msg,) = fleet_problems(["a", "b", "c"], "g", GROUPS, flashinfer_only)
    assert msg.startswith("vllm_fork_builder_host=builder9"), msg
