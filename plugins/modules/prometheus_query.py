#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: prometheus_query
short_description: Read the fleet's state from Prometheus (an instant query through its HTTP API)
version_added: "0.4.0"
description:
  - Sends one instant query (C(GET /api/v1/query)) to Prometheus and returns its samples, each with its labels and
    value. Sliced runs (AWX job slicing) read the whole fleet's last verdicts here, which the probes export
    (C(glm53_probe_verdict), through node_exporter's textfile collector, labelled C(host) by the monitoring role's
    scrape configuration); heal.yml counts the pool's passing hosts that are not in its slice from it.
  - Standard library only (Ansible's open_url); run it on the controller (C(delegate_to) localhost).
  - A query Prometheus refuses, or an answer that is not Prometheus's, fails with its error; a result that is no
    instant vector (a scalar, a string) fails too.
author:
  - glm53.serving contributors (@glm53)
options:
  url:
    description: Prometheus's URL as the controller reaches it (http or https), for example C(http://prometheus:9090).
    type: str
    required: true
  query:
    description: The PromQL expression; its result must be an instant vector.
    type: str
    required: true
  timeout:
    description: Seconds the request may take.
    type: int
    default: 10
  ca_path:
    description: A CA bundle for an https O(url).
    type: path
  validate_certs:
    description: Whether to verify an https O(url)'s certificate.
    type: bool
    default: true
attributes:
  check_mode:
    description: Reads only; runs in check mode as it does otherwise.
    support: full
  diff_mode:
    description: Does not return a diff.
    support: none
  idempotent:
    description: Reads only.
    support: full
"""

EXAMPLES = r"""
- name: The last verdict of every host Prometheus scrapes
  glm53.serving.prometheus_query:
    url: http://prometheus.example:9090
    query: glm53_probe_verdict{probe="all"}
  delegate_to: localhost
  register: verdicts
"""

RETURN = r"""
samples:
  description: The result's samples, each its labels (C(__name__) included when the query keeps it) and value.
  returned: success
  type: list
  elements: dict
  sample: [{labels: {__name__: glm53_probe_verdict, host: gpu-03, probe: all, release: r1}, value: 1.0}]
"""

import json
import math
import re

from urllib.error import HTTPError, URLError
from urllib.parse import urlencode

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url


def query(url, expr, timeout, ca_path=None, validate_certs=True):
    """[{'labels', 'value'}] of an instant query's vector result; ValueError with Prometheus's error otherwise."""
    target = "%s/api/v1/query?%s" % (url.rstrip("/"), urlencode({"query": expr}))
    try:
        resp = open_url(target, method="GET", timeout=timeout, ca_path=ca_path, validate_certs=validate_certs,
                        follow_redirects="none")
        raw = resp.read()
    except HTTPError as err:
        raw = err.read()  # a refused query answers 400 with Prometheus's JSON error
        if not raw:
            raise ValueError("%s answered %s" % (url, err.code))
    except (URLError, OSError) as err:
        raise ValueError("%s: %s" % (url, getattr(err, "reason", err)))
    try:
        out = json.loads(raw.decode("utf-8"))
    except ValueError:
        raise ValueError("%s did not answer Prometheus's JSON: %r" % (url, raw[:200]))
    if not isinstance(out, dict) or out.get("status") != "success":
        err = out.get("error") if isinstance(out, dict) else out
        raise ValueError("Prometheus refused the query %r: %s" % (expr, err))
    data = out.get("data") or {}
    if data.get("resultType") != "vector":
        raise ValueError("the query %r gives a %s, not an instant vector" % (expr, data.get("resultType")))
    samples = []
    for item in data.get("result") or []:
        try:
            value = float(item["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            raise ValueError("a sample of %r has no value: %r" % (expr, item))
        samples.append({"labels": dict(item.get("metric") or {}), "value": value if math.isfinite(value) else None})
    return samples


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            query=dict(type="str", required=True),
            timeout=dict(type="int", default=10),
            ca_path=dict(type="path"),
            validate_certs=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not re.match(r"https?://[^/\s]+", p["url"] or ""):
        module.fail_json(msg="prometheus_query: url=%r must be an http or https URL of Prometheus "
                             "(http://prometheus:9090)" % p["url"])
    if not (p["query"] or "").strip():
        module.fail_json(msg="prometheus_query: query is empty")
    if p["timeout"] < 1:
        module.fail_json(msg="prometheus_query: timeout must be 1 or more seconds")
    try:
        samples = query(p["url"], p["query"], p["timeout"], p["ca_path"], p["validate_certs"])
    except ValueError as err:
        module.fail_json(msg="prometheus_query: %s" % err)
    module.exit_json(changed=False, samples=samples)


if __name__ == "__main__":
    main()
