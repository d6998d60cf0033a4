# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: fleet_problems
short_description: Check the serving fleet as a whole, before anything changes
version_added: "0.3.0"
description:
  - Takes the hosts a run targets (the matches of C(rollout_hosts), default C(glm53_serving)), the host pattern, the
    inventory's groups and C(hostvars), and returns the problems no single host's checks can see.
  - A pattern that matches no host (a misspelt group, a misspelt C(-e rollout_hosts)) would make the run change
    nothing and pass; the message names the inventory's groups closest to it.
  - The hosts of one pool must agree on what they serve and build, each value as the inventory sets it (a value
    left to the role's default agrees with the others that leave it so) - the served name, the fork's repository,
    version and minimum commit, FlashInfer's version, and in the wheel or index build modes the builder host,
    which must be one of the run's hosts.
positional: _input, pattern, groups, hostvars
options:
  _input:
    description: The host names the pattern matches.
    type: list
    elements: str
    required: true
  pattern:
    description: The host pattern, as given (for the message).
    type: str
    required: true
  groups:
    description: The inventory's groups (the magic variable C(groups)).
    type: dict
    required: true
  hostvars:
    description: The magic variable C(hostvars).
    type: dict
    required: true
  agree:
    description:
      - Check that the hosts of the pool agree (the served name, the builds, the context, the API key, TLS, torch) and
        that no host's own URL is set once for several hosts. V(false) for a playbook that only probes
        (C(verify.yml)), which checks only that the pattern matches hosts.
    type: bool
    default: true
    version_added: "0.3.0"
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Refuse a fleet that is not one
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
  vars:
    __pattern: "{{ rollout_hosts | default('glm53_serving') }}"
    __problems: >-
      {{ query('ansible.builtin.inventory_hostnames', __pattern)
         | glm53.serving.fleet_problems(__pattern, groups, hostvars) }}
"""

RETURN = r"""
_value:
  description: One message per problem; empty when the fleet is one.
  type: list
  elements: str
"""

import difflib
from urllib.parse import urlsplit

from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.filter.shared_machine_problems import _get
from ansible_collections.glm53.serving.plugins.module_utils._role_specs import collection_variables
from ansible_collections.glm53.serving.plugins.module_utils._undefined import KEY, is_unresolved, unresolved_message

# Values every host of a pool must share, as the inventory sets them.
AGREE = ("serve_served_model_name", "vllm_fork_repo_url", "vllm_fork_version", "vllm_fork_minimum_commit",
         "flashinfer_repo_url", "flashinfer_version", "serve_max_model_len", "venv_torch_spec", "serve_api_key",
         "serve_ssl_certfile_src")
# Of those, the ones whose value is never shown (each host's is named only as the same as another's, or not).
SECRET = ("serve_api_key",)
# What a disagreement on a value means when the value itself is not what clients see (the URL scheme).
SHOWN_AS = {"serve_ssl_certfile_src": "TLS (serve_ssl_certfile_src set or empty: the pool's URL scheme)"}
# Each host's own address: set once for several hosts (a group's value), every host would reach the same engine.
PER_HOST = ("serve_url",)
# The one builder host, and the build modes that compile on it (both roles' build-once modes).
BUILDERS = (("vllm_fork_builder_host", ("vllm_fork_build_mode", "flashinfer_build_mode")),)
_UNSET = "(the role's default)"


def _unresolved(hosts, values, names):
    """The refusals of these settings where a host's value uses a variable that is not defined."""
    out = []
    for name in names:
        found = {}
        for host in hosts:
            value = values[name][host]
            if is_unresolved(value) and value.get(KEY) not in collection_variables():  # else resolved in a role
                found.setdefault(unresolved_message(name, value, " (on %s)"), []).append(host)
        out.extend(msg % (", ".join(h[:3]) + (" and %d more" % (len(h) - 3) if len(h) > 3 else ""))
                   for msg, h in sorted(found.items()))
    return out


def _disagree(hosts, values, name):
    groups = {}
    for host in hosts:
        value = values[name][host]
        if is_unresolved(value):
            return None  # refused as such
        if name in SHOWN_AS:
            value = "on" if value else "off"
        groups.setdefault(_UNSET if value is None else str(value), []).append(host)
    if len(groups) < 2:
        return None
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    if name in SECRET:
        ordered = [("value %d (hidden)" % (i + 1), h) for i, (value, h) in enumerate(ordered)]
    parts = ["%s on %s%s" % (value, ", ".join(sorted(h)[:3]), " and %d more" % (len(h) - 3) if len(h) > 3 else "")
             for value, h in ordered]
    return ("The hosts of one pool disagree on %s: %s. They serve one model from one build, behind one balancer: set "
            "it once for the group (group_vars), or run the hosts that differ as a pool of their own."
            % (SHOWN_AS.get(name, name), "; ".join(parts)))


def _shared_address(hosts, values, name):
    """A host's own URL set to one non-loopback address for several hosts: each would probe the same engine."""
    seen = {}
    for host in hosts:
        value = values[name][host]
        if isinstance(value, str) and value and not is_unresolved(value):
            seen.setdefault(value, []).append(host)
    for value, shared in sorted(seen.items()):
        try:
            address = urlsplit(value).hostname or ""
        except ValueError:
            continue  # refused by its kind
        if len(shared) > 1 and address and not address.startswith("127.") and address not in ("localhost", "::1"):
            hosts_named = ", ".join(sorted(shared)[:3]) + (" and %d more" % (len(shared) - 3) if len(shared) > 3 else "")
            return ("%s=%s is set for %s: each host's own address, given once for several hosts, makes every one of "
                    "them reach the same engine, and prove it %d times. Set it per host (host_vars, or an expression "
                    "of ansible_host), or leave it to its default (each host's own engine)."
                    % (name, value, hosts_named, len(shared)))
    return None


def fleet_problems(hosts, pattern, groups, hostvars, agree=True):
    if not isinstance(hosts, list) or not isinstance(pattern, str):
        raise AnsibleFilterError("fleet_problems expects the matched host names and the pattern")
    names = sorted(g for g in (groups or {}) if g not in ("all", "ungrouped"))
    if not hosts:
        close = difflib.get_close_matches(pattern, names, n=3, cutoff=0.8)
        return ["The hosts to run on, %r (rollout_hosts, default glm53_serving), match no host of the inventory: the "
                "run would change nothing and pass.%s The inventory's groups: %s. Put your serving hosts in "
                "glm53_serving, or give their group with -e rollout_hosts=GROUP." % (
                    pattern, (" Did you mean %s?" % " or ".join(close)) if close else "", ", ".join(names) or "none")]
    # each host's value of each setting, read (and templated) once
    if not agree:
        return []  # the pool's agreement is the bring-up's check; a playbook that only probes checks its own
    read = AGREE + PER_HOST + tuple(n for builder, modes in BUILDERS for n in (builder,) + modes)
    values = dict((name, dict((h, _get(hostvars[h], name)) for h in hosts)) for name in read)
    # a host's own URLs that do not resolve are the roles' to name (with the role's context); the pool's here
    out = _unresolved(hosts, values, tuple(n for n in read if n not in PER_HOST))
    out += [msg for msg in (_disagree(hosts, values, name) for name in AGREE) if msg]
    out += [msg for msg in (_shared_address(hosts, values, name) for name in PER_HOST) if msg]
    for builder_name, mode_names in BUILDERS:  # checked once, whichever build compiles on it
        modes = set(str(values[m][h] or "local") for m in mode_names for h in hosts if not is_unresolved(values[m][h]))
        if not modes & {"wheel", "index"}:
            continue
        msg = _disagree(hosts, values, builder_name)
        if msg:
            out.append(msg)
            continue
        builder = values[builder_name][hosts[0]]
        if builder is not None and not is_unresolved(builder) and str(builder) not in hosts:
            out.append("%s=%s is not one of the hosts of this run (%s): in the %s build mode it builds once for "
                       "all of them, and the others would wait for a build that never comes, after hours. Name one "
                       "of the run's hosts, or leave it to its default (the first)." % (
                           builder_name, builder, ", ".join(hosts[:5]) + (" ..." if len(hosts) > 5 else ""),
                           "/".join(sorted(modes & {"wheel", "index"}))))
    return out


class FilterModule(object):
    def filters(self):
        return {"fleet_problems": fleet_problems}
