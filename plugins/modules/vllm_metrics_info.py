#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: vllm_metrics_info
short_description: Read a vLLM server's /metrics, or wait until it has no request in flight (drain)
version_added: "0.1.0"
description:
  - Reads the Prometheus text at C(/metrics) and returns the load gauges and token counters, summed over
    their series (C(vllm:num_requests_running), C(vllm:num_requests_waiting), C(vllm:kv_cache_usage_perc),
    C(vllm:prompt_tokens_total), C(vllm:generation_tokens_total)).
  - With O(wait_idle=true), polls until C(vllm:num_requests_running) and C(vllm:num_requests_waiting) are both
    0, for at most O(timeout) seconds; this is the drain step of a rolling restart, after the host has been
    taken out of the load balancer. A server that refuses connections has nothing in flight and counts as idle.
  - When the timeout passes first, fails, or with O(on_timeout=proceed) returns C(idle=false) with a warning,
    so that a rollout can go on and cut the remaining requests.
  - A server that accepts the connection but cannot answer C(/metrics) (a frozen engine, an error page) fails the
    read, or with O(wait_idle=true) and O(on_timeout=proceed) counts as nothing in flight, since an engine that
    cannot answer serves nothing, and the result says so (RV(answered) false, RV(why)) and the drain goes on to the
    relaunch that heals it.
author:
  - glm53.serving contributors (@glm53)
options:
  wait_idle:
    description: Wait until no request is running or waiting.
    type: bool
    default: false
  timeout:
    description: Seconds to wait for idle at most.
    type: int
    default: 600
  interval:
    description: Seconds between polls.
    type: float
    default: 1.0
  on_timeout:
    description: What to do when requests are still in flight after O(timeout).
    type: str
    choices: [fail, proceed]
    default: fail
  request_timeout:
    description: Seconds for each C(/metrics) request.
    type: int
    default: 10
extends_documentation_fragment:
  - glm53.serving.openai_endpoint
  - glm53.serving.info_module
notes:
  - C(/metrics) needs no API key in vLLM 0.28 (only C(/v1) paths are guarded).
"""

EXAMPLES = r"""
- name: Drain - wait until the last request in flight has finished (10 minutes at most)
  glm53.serving.vllm_metrics_info:
    base_url: http://127.0.0.1:8000
    wait_idle: true
    timeout: 600
    on_timeout: proceed
"""

RETURN = r"""
metrics:
  description: The gauges and counters, summed over their series (absent when the server is down).
  returned: always
  type: dict
  sample: {"vllm:num_requests_running": 0.0, "vllm:num_requests_waiting": 0.0, "vllm:kv_cache_usage_perc": 0.02}
idle:
  description: No request was running or waiting at the last poll (or the server refused connections).
  returned: always
  type: bool
reachable:
  description: The server accepted the connection at the last poll.
  returned: always
  type: bool
answered:
  description: The server answered C(/metrics) at the last poll (false when it refused, or accepted and did not
    answer).
  returned: always
  type: bool
why:
  description: What the last poll met when C(/metrics) gave no figures (connection refused, no answer, an HTTP error).
  returned: always
  type: str
waited_s:
  description: Seconds spent waiting.
  returned: always
  type: float
polls:
  description: How many times C(/metrics) was read.
  returned: always
  type: int
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._openai_client import (
    ProbeConnectionRefused, ProbeHTTPError, ProbeNoAnswer, ProbeTimeout, client_from_params, endpoint_argument_spec)
from ansible_collections.glm53.serving.plugins.module_utils._prometheus import parse, totals

NAMES = ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
         "vllm:prompt_tokens_total", "vllm:generation_tokens_total")
IN_FLIGHT = ("vllm:num_requests_running", "vllm:num_requests_waiting")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **endpoint_argument_spec(),
            wait_idle=dict(type="bool", default=False),
            timeout=dict(type="int", default=600),
            interval=dict(type="float", default=1.0),
            on_timeout=dict(type="str", choices=["fail", "proceed"], default="fail"),
            request_timeout=dict(type="int", default=10),
        ),
        supports_check_mode=True,
    )
    p = module.params
    client = client_from_params(p, p["request_timeout"])
    t0 = time.monotonic()
    polls = 0
    while True:
        polls += 1
        why = ""
        try:
            _status, text, _elapsed = client.get("/metrics")
            metrics, reachable = totals(parse(text if isinstance(text, str) else ""), NAMES), True
        except ProbeConnectionRefused:
            metrics, reachable, why = {}, False, "connection refused"
        except (ProbeHTTPError, ProbeTimeout) as exc:
            msg = "cannot read %s/metrics: %s" % (p["base_url"].rstrip("/"), exc)
            if not (p["wait_idle"] and p["on_timeout"] == "proceed"):
                module.fail_json(msg=msg, polls=polls, answered=False, why=str(exc))
            # an engine that cannot answer serves nothing: nothing to wait for, and the relaunch that follows heals it
            module.warn(msg + "; an engine that cannot answer serves nothing: proceeding (on_timeout=proceed)")
            module.exit_json(changed=False, metrics={}, idle=True,
                             reachable=isinstance(exc, (ProbeHTTPError, ProbeNoAnswer)),
                             answered=False, why=str(exc), waited_s=round(time.monotonic() - t0, 2),
                             polls=polls)
        in_flight = sum(metrics.get(name, 0.0) for name in IN_FLIGHT)
        idle = in_flight == 0
        waited = round(time.monotonic() - t0, 2)
        result = dict(changed=False, metrics=metrics, idle=idle, reachable=reachable, answered=reachable, why=why,
                      waited_s=waited, polls=polls)
        if not p["wait_idle"] or idle:
            module.exit_json(**result)
        if waited >= p["timeout"]:
            msg = "%d request(s) still in flight at %s after %d s" % (in_flight, p["base_url"], p["timeout"])
            if p["on_timeout"] == "fail":
                module.fail_json(msg=msg + " (raise timeout, or on_timeout=proceed to cut them)", **result)
            module.warn(msg + "; proceeding (on_timeout=proceed): they will be cut")
            module.exit_json(**result)
        time.sleep(p["interval"])


if __name__ == "__main__":
    main()
