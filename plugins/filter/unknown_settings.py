# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: unknown_settings
short_description: Name the variables that carry a role's prefix but that no role of this collection knows
version_added: "0.3.0"
description:
  - A misspelt setting (C(serve_prot) for C(serve_port)) is an inventory variable like any other, so Ansible
    ignores it and the role uses its default. This filter takes the names of the variables that are set (for
    instance from C(query('ansible.builtin.varnames', ...))) and returns one message per name that starts with a
    role's prefix (C(serve_), C(service_), C(vllm_fork_), ...) but is neither an option of that role's argument
    specs nor one of the results the roles set themselves (C(service_ready), C(venv_runtime_env), ...), with the
    closest known names.
  - Reads the roles' C(meta/argument_specs.yml), C(tasks/*.yml) and C(vars/main.yml), and the names the
    collection's playbooks read (C(rollout_serial), C(rollout_hosts)), once per process.
  - A setting the collection removed or renamed is named with what replaces it (C(service_extra_unit_lines), with
    the typed unit settings), so that a value a user set is refused, never silently ignored.
positional: _input
options:
  _input:
    description: The names of the variables that are set.
    type: list
    elements: str
    required: true
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Refuse a misspelt setting
  ansible.builtin.assert:
    that: __unknown | length == 0
    fail_msg: "{{ __unknown | join(' ') }}"
  vars:
    __unknown: "{{ query('ansible.builtin.varnames', '^(serve|service)_') | glm53.serving.unknown_settings }}"
"""

RETURN = r"""
_value:
  description: One message per unknown name, with the closest known names.
  type: list
  elements: str
"""

import difflib
import glob
import os
import re

from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.module_utils._role_specs import ROLES_DIR as _ROLES
from ansible_collections.glm53.serving.plugins.module_utils._role_specs import SpecError, role_names, role_options
from ansible_collections.glm53.serving.plugins.module_utils._role_specs import load_yaml as _load

# Each public role's prefix (the longest first: vllm_fork_ before a shorter one could match).
PREFIXES = ("vllm_fork_", "flashinfer_", "monitoring_", "preflight_", "rollout_", "service_", "probes_", "serve_",
            "model_", "venv_")
_ALT = "|".join(p.rstrip("_") for p in PREFIXES)
PREFIX_RE = "^(%s)_" % _ALT
_NAME_IN_TEXT = re.compile(r"\b(?:%s)_[a-z0-9_]+" % _ALT)
_KNOWN = {}
# Settings removed or renamed, with what to use instead: a user who set one is told, not ignored.
REMOVED = {
    "service_extra_unit_lines": (
        "service_extra_unit_lines was removed: a free-text unit line could undo what the role guards (the API key "
        "in the engine's environment, the restart policy, the sandbox). Use the typed settings service_nice, "
        "service_limit_nofile, service_limit_memlock, service_writable_paths and service_environment; anything "
        "else goes in a systemd drop-in you own (/etc/systemd/system/<service_name>.service.d/*.conf), which the "
        "collection never writes or removes."),
    "probes_reference_tolerance": (
        "probes_reference_tolerance (a fraction of each passage's own figure) was replaced by "
        "probes_reference_tolerance_nats, an absolute departure in nats per token (default 0.08): 5 % of a 2-nat "
        "passage let a drift of 0.1 nats through. Set probes_reference_tolerance_nats instead."),
    "probes_reference_baseline_file": (
        "probes_reference_baseline_file was removed: the reference is the weights', not a release's on one host, and "
        "lives on the controller (probes_reference_store, one file per probes_reference_weights), so a release never "
        "replaces it. Remove the setting; set probes_reference_store to keep the references elsewhere."),
}

# Second names of one value, removed: each role reads the owner's name (one name per value). A user who set the old
# name is told the owner's, not silently ignored.
RENAMED = {
    "service_user": "venv_service_user", "service_group": "venv_service_group", "service_port": "serve_port",
    "service_script_path": "serve_script_path", "service_env_file": "serve_env_file",
    "service_api_key": "serve_api_key", "service_served_model_name": "serve_served_model_name",
    "service_max_model_len": "serve_max_model_len", "service_watchdog_textfile_dir": "probes_textfile_dir",
    "heal_textfile_dir": "probes_textfile_dir", "preflight_tensor_parallel_size": "serve_tensor_parallel_size",
    "preflight_service_user": "venv_service_user", "preflight_service_name": "service_name",
    "preflight_python_interpreter": "venv_python", "preflight_serve_port": "serve_port",
    "probes_api_key": "serve_api_key", "probes_served_model_name": "serve_served_model_name",
    "probes_max_model_len": "serve_max_model_len", "probes_service_manager": "service_mode",
    "probes_service_name": "service_name", "rollout_releases_dir": "venv_releases_dir",
    "serve_model_path": "model_path", "serve_service_user": "venv_service_user", "serve_service_name": "service_name",
    "serve_gpu_compute_capability": "preflight_gpu_compute_capability", "flashinfer_service_user": "venv_service_user",
    "probes_bench_tokenizer": "model_path", "probes_base_url": "serve_url", "service_health_url": "serve_url",
    "rollout_metrics_url": "serve_url", "probes_ca_path": "serve_ca_path", "service_ca_path": "serve_ca_path",
    "flashinfer_builder_host": "vllm_fork_builder_host", "flashinfer_wheelhouse": "vllm_fork_wheelhouse",
    "flashinfer_controller_wheelhouse": "vllm_fork_controller_wheelhouse", "preflight_evidence_dir": "probes_evidence_dir",
    "flashinfer_venv_path": "venv_path", "vllm_fork_venv_path": "venv_path", "serve_venv_path": "venv_path",
    "flashinfer_runtime_env": "venv_runtime_env", "vllm_fork_runtime_env": "venv_runtime_env",
    "serve_runtime_env": "venv_runtime_env", "serve_fork_src_dir": "vllm_fork_src_dir",
    "heal_store_url": "glm53_store_url", "heal_pool": "glm53_pool", "heal_pool_size": "glm53_pool_size",
}
for _old, _new in RENAMED.items():
    REMOVED[_old] = ("%s was another name for %s and was removed (one name per value): set %s instead; every role "
                     "reads it." % (_old, _new, _new))


def _task_results(tasks, out):
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, dict):
            continue
        if isinstance(task.get("register"), str):
            out.add(task["register"])
        for key in ("ansible.builtin.set_fact", "set_fact"):
            if isinstance(task.get(key), dict):
                out.update(k for k in task[key] if k != "cacheable")
        for key in ("block", "rescue", "always"):
            _task_results(task.get(key), out)


def known_settings():
    """Every name a role reads (argument spec options) or sets (registered results, facts, public vars)."""
    if "names" not in _KNOWN:
        names = set()
        for role in role_names():
            names.update(role_options(role))
        for role in sorted(os.listdir(_ROLES)):
            for path in glob.glob(os.path.join(_ROLES, role, "tasks", "*.yml")):
                _task_results(_load(path), names)
            varfile = os.path.join(_ROLES, role, "vars", "main.yml")
            if os.path.exists(varfile):
                names.update(k for k in _load(varfile) if not k.startswith("_"))
        # the settings the collection's playbooks read themselves (rollout_serial, rollout_hosts, ...)
        for path in glob.glob(os.path.join(os.path.dirname(_ROLES), "playbooks", "*.yml")):
            with open(path) as f:
                text = "".join(line for line in f if not line.lstrip().startswith("#"))
            names.update(_NAME_IN_TEXT.findall(text))
        _KNOWN["names"] = frozenset(names)
    return _KNOWN["names"]


def unknown_settings(names):
    if not isinstance(names, list):
        raise AnsibleFilterError("unknown_settings expects a list of variable names")
    try:
        known = known_settings()
    except SpecError as exc:
        raise AnsibleFilterError("unknown_settings: %s" % exc)
    out = []
    for name in sorted(set(n for n in names if isinstance(n, str))):
        if name in REMOVED:
            out.append(REMOVED[name])
            continue
        if not re.match(PREFIX_RE, name) or name in known:
            continue
        prefix = next(p for p in PREFIXES if name.startswith(p))
        close = difflib.get_close_matches(name, sorted(n for n in known if n.startswith(prefix)), n=3, cutoff=0.6)
        hint = " (did you mean %s?)" % " or ".join(close) if close else ""
        out.append("%s is not a setting of any glm53.serving role%s: Ansible would ignore it and the role would use "
                   "its default. Correct the name, or give a variable of your own a name that does not start with "
                   "a role's prefix (%s)." % (name, hint, prefix))
    return out


class FilterModule(object):
    def filters(self):
        return {"unknown_settings": unknown_settings}
