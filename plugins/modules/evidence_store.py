#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: evidence_store
short_description: Keep every host's probe evidence in the fleet's store, and read the whole fleet's back
version_added: "0.4.0"
description:
  - Sliced runs (AWX or Automation Platform job slicing) probe a fleet as several jobs, each over its slice of the
    inventory, often on different execution nodes. Each slice writes its hosts' evidence (the probes role's
    C(probes_result)) to etcd, under C(<prefix>/<host>), naming the slice that probed it; any controller reads the
    whole fleet's back and makes one report of it (the probes role's report entry point, C(playbooks/report.yml)).
  - Runs on the controller (delegate it to localhost). Talks to etcd v3 through its JSON gateway with the standard
    library only. Writes one key per host (a put each, so no request grows past etcd's request limit with the fleet),
    then reads the prefix once. In check mode it only reads.
options:
  store_url:
    description: The etcd client URL (http, or https verified with O(ca_path) or the system's CAs).
    type: str
    required: true
  prefix:
    description: The key prefix the evidence is kept under.
    type: str
    default: /glm53/evidence
  evidence:
    description:
      - The evidence to keep, one entry per host (each a mapping with its C(host)); written over the host's earlier
        evidence. Empty - nothing is written (a report remade from the store).
    type: list
    elements: dict
    default: []
  slice:
    description:
      - What probed these hosts, kept with each host's evidence as its C(slice) (the AWX job and the run's name), so
        the merged report names the run of each slice.
    type: dict
    default: {}
  hosts:
    description: The hosts to read back (the inventory's); empty - every host the store holds.
    type: list
    elements: str
    default: []
  ca_path:
    description: A CA bundle for an https store.
    type: path
  validate_certs:
    description: Verify an https store's certificate.
    type: bool
    default: true
  timeout:
    description: Seconds for each request to the store.
    type: int
    default: 10
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Keep this slice's evidence in the store, and read the fleet's back
  glm53.serving.evidence_store:
    store_url: http://etcd.example:2379
    evidence: "{{ this_run }}"
    slice: {job: "{{ awx_job_id | default('') }}", run: 20261207T101500Z}
    hosts: "{{ groups['glm53_serving'] }}"
  delegate_to: localhost
  register: fleet
"""

RETURN = r"""
evidence:
  description: Every read host's evidence, with its C(slice), in the order of O(hosts) (else by host name).
  returned: success
  type: list
  elements: dict
written:
  description: The hosts whose evidence this call wrote.
  returned: success
  type: list
  elements: str
missing:
  description: The hosts of O(hosts) the store holds no evidence for.
  returned: success
  type: list
  elements: str
"""

import json

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._fleet_store import EtcdGateway, StoreError, put_op


def _key(prefix, host):
    return "%s/%s" % (prefix.rstrip("/"), host)


def run(module, gateway):
    p = module.params
    written = []
    for entry in p["evidence"]:
        host = entry.get("host") if isinstance(entry, dict) else None
        if not isinstance(host, str) or not host or "/" in host:
            module.fail_json(msg="evidence_store: every evidence entry needs its host (a name without '/'): %r"
                             % (entry if not isinstance(entry, dict) else sorted(entry),))
        if not module.check_mode:
            value = json.dumps(dict(entry, slice=p["slice"]), sort_keys=True)
            gateway.call("/v3/kv/put", put_op(_key(p["prefix"], host), value)["request_put"])
            written.append(host)
    _revision, kvs = gateway.range_prefix(p["prefix"].rstrip("/") + "/")
    found = {}
    for key, kv in kvs.items():
        try:
            value = json.loads(kv["value"])
        except ValueError:
            module.fail_json(msg="evidence_store: %s holds no evidence (not JSON); remove it or use another prefix"
                             % key)
        if isinstance(value, dict) and value.get("host"):
            found[value["host"]] = value
    order = p["hosts"] or sorted(found)
    return dict(changed=bool(written), written=written, evidence=[found[h] for h in order if h in found],
                missing=[h for h in order if h not in found])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            store_url=dict(type="str", required=True),
            prefix=dict(type="str", default="/glm53/evidence"),
            evidence=dict(type="list", elements="dict", default=[]),
            slice=dict(type="dict", default={}),
            hosts=dict(type="list", elements="str", default=[]),
            ca_path=dict(type="path"),
            validate_certs=dict(type="bool", default=True),
            timeout=dict(type="int", default=10),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not p["store_url"].startswith(("http://", "https://")):
        module.fail_json(msg="evidence_store: store_url=%r is not an http or https URL" % p["store_url"])
    if not p["prefix"].startswith("/") or p["prefix"].rstrip("/") == "":
        module.fail_json(msg="evidence_store: prefix=%r must start with / and name a folder below it" % p["prefix"])
    gateway = EtcdGateway(p["store_url"], timeout=p["timeout"], ca_path=p["ca_path"],
                          validate_certs=p["validate_certs"])
    try:
        module.exit_json(**run(module, gateway))
    except StoreError as err:
        module.fail_json(msg="evidence_store: the store at %s: %s (glm53_store_url; the evidence is still in "
                             "probes_report_dir on this controller)" % (p["store_url"], err))


if __name__ == "__main__":
    main()
