# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: shared_machine_problems
short_description: Find inventory hosts on one machine that would serve on the same port or the same GPUs
version_added: "0.3.0"
description:
  - Inventory hosts with the same C(ansible_host) (the inventory name when it is not set) are one machine. Two of
    them with the same C(serve_port) would fight for the port (the second engine never starts, or the probes
    prove the first); two whose GPUs overlap would each load a 8-way model on GPUs the other holds.
  - A host's GPUs are C(CUDA_VISIBLE_DEVICES) in C(service_environment) or C(venv_extra_env), comma-separated
    indices or UUIDs; without it the engine sees every GPU of the machine.
  - Returns a mapping of host name to message, for every host that shares a port or GPUs with another.
positional: _input, hostvars
options:
  _input:
    description: The hosts to compare (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: raw
    required: true
  default_port:
    description: The serve port of a host that does not set C(serve_port).
    type: int
    default: 8000
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Find hosts that share a machine's port or GPUs
  ansible.builtin.set_fact:
    __shared: "{{ ansible_play_hosts_all | glm53.serving.shared_machine_problems(hostvars) }}"
  run_once: true
"""

RETURN = r"""
_value:
  description: Host name to message, for each host in conflict.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.glm53.serving.plugins.module_utils._undefined import settled, unresolved


def _get(hvars, name, default=None):
    """A host's value of name (default when it is not set), or the unresolved mapping of a value that uses a variable
    that is not defined (module_utils/_undefined.py): the callers name the setting then."""
    try:
        value = settled(hvars.get(name, default))
    except Exception as exc:  # pylint: disable=broad-except  # the template engine's error, named by the caller
        return unresolved(getattr(exc, "message", None) or exc)
    return default if value is None else value


def _gpus(hvars):
    """(frozenset of GPU ids, where it was set) or (None, None) for every GPU of the machine."""
    for source in ("service_environment", "venv_extra_env"):
        env = _get(hvars, source, {})
        if isinstance(env, dict) and "CUDA_VISIBLE_DEVICES" in env:
            text = str(env["CUDA_VISIBLE_DEVICES"])
            return frozenset(g.strip() for g in text.split(",") if g.strip()), "%s.CUDA_VISIBLE_DEVICES" % source
    return None, None


def shared_machine_problems(hosts, hostvars, default_port=8000):
    if not isinstance(hosts, list):
        raise AnsibleFilterError("shared_machine_problems expects a list of host names and hostvars")
    machines = {}
    for host in hosts:
        hvars = hostvars[host]
        address = _get(hvars, "ansible_host", host)
        if not isinstance(address, str):
            address = str(address)
        machines.setdefault(address.strip().lower(), []).append(host)
    out = {}
    for address, group in machines.items():
        if len(group) < 2:
            continue
        facts = {}
        for host in group:
            hvars = hostvars[host]
            port = str(_get(hvars, "serve_port", default_port)).strip()
            facts[host] = (port, ) + _gpus(hvars)
        for host in group:
            port, gpus, where = facts[host]
            for other in group:
                if other == host:
                    continue
                o_port, o_gpus, o_where = facts[other]
                if port == o_port:
                    out.setdefault(host, []).append(
                        "%s and %s are one machine (ansible_host %s) and both serve on serve_port=%s: give each host "
                        "its own serve_port." % (host, other, address, port))
                if gpus is None or o_gpus is None or gpus & o_gpus:
                    shared = ("every GPU (%s sets no CUDA_VISIBLE_DEVICES)" % (host if gpus is None else other)
                              if gpus is None or o_gpus is None else "GPUs %s" % ",".join(sorted(gpus & o_gpus)))
                    out.setdefault(host, []).append(
                        "%s and %s are one machine (ansible_host %s) and would both use %s: give each host its own GPUs "
                        "with service_environment.CUDA_VISIBLE_DEVICES (\"0,1,2,3\" and \"4,5,6,7\")." % (
                            host, other, address, shared))
    return dict((host, " ".join(msgs)) for host, msgs in out.items())


class FilterModule(object):
    def filters(self):
        return {"shared_machine_problems": shared_machine_problems}
