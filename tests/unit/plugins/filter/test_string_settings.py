"""string_settings: the mapping and list settings of the roles, and the ones that arrived as strings."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.filter.string_settings import string_settings


def test_names_are_the_public_mapping_and_list_settings():
    names = string_settings(["serve", "service"])
    assert {"serve_compilation_config", "serve_extra_args", "serve_hf_overrides", "service_environment"} <= set(names)
    assert "serve_port" not in names and "serve_enforce_eager" not in names
    assert not [n for n in names if n.startswith("_")]


def test_a_string_is_named_without_its_value_and_real_shapes_pass():
    token_env = "HF_TOKEN=hf_secret_value"
    out = string_settings(["serve", "service"], {
        "serve_compilation_config": '{"cudagraph_mode": "NONE"}', "service_environment": token_env,
        "serve_extra_args": ["--enable-chunked-prefill"], "serve_hf_overrides": {"a": None}})
    assert len(out) == 2
    assert out[0].startswith("serve_compilation_config is a string (26 characters), not a mapping")
    assert "-e '{\"serve_compilation_config\": {\"key\": \"value\"}}'" in out[0]
    assert out[1].startswith("service_environment is a string") and "hf_secret_value" not in " ".join(out)


@pytest.mark.parametrize("roles", ["serve", ["../etc"], ["no_such_role"]])
def test_bad_role_names_are_refused(roles):
    with pytest.raises(AnsibleFilterError):
        string_settings(roles)
