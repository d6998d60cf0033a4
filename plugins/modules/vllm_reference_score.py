#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: vllm_reference_score
short_description: Prove a GLM-5.3 engine's numerics by scoring fixed reference passages
version_added: "0.3.0"
description:
  - Scores fixed reference passages (English prose, Traditional Chinese prose, Python code; a few hundred tokens each)
    through the chat template with vLLM's C(prompt_logprobs) request parameter, one prefill per passage (the passages
    sent at once), and reports
    each passage's mean negative log-likelihood per token (nats). The figure is language-free - it does not depend on
    what text the model would write - and a broken kernel, a wrong checkpoint or a wrong chat template moves it by
    orders of magnitude.
  - Judged two ways. An absolute band for this model (O(band)); and drift against O(baseline), the reference
    figures of these weights (recorded once, on the controller, from hosts whose every proof passed; never replaced
    by a later release), by more than O(tolerance_nats). The fleet's median for the weights is compared by the
    P(glm53.serving.probe_verdict#filter) filter, which sees every host.
  - Changes nothing on the host.
author:
  - glm53.serving contributors (@glm53)
options:
  served_model_name:
    description: The served model name (the engine's C(--served-model-name)).
    type: str
    required: true
  passages:
    description: The reference passages to score, by name.
    type: list
    elements: str
    choices: [english, chinese, code]
    default: [english, chinese, code]
  band:
    description:
      - The absolute band, C([low, high]) in nats per token, every passage's figure must lie in. The collection's
        C(docs/verdicts.md) says how the default was chosen.
    type: list
    elements: float
    default: [0.02, 5.0]
  baseline:
    description:
      - The reference figures to hold the engine to (passage name to nats per token), the weights' reference or
        the figures of the release an upgrade replaces; empty when there is none yet.
    type: dict
    default: {}
  baseline_name:
    description: What O(baseline) is, as failures name it.
    type: str
    default: the weights' reference
  tolerance_nats:
    description:
      - The largest departure from O(baseline), in nats per token (absolute; the collection's C(docs/verdicts.md)
        says how the default was chosen).
    type: float
    default: 0.08
  release:
    description: The serving release the figures belong to, returned as it is.
    type: str
  weights:
    description: The weights the figures belong to, returned as it is (the fleet's median is per weights).
    type: str
  request_timeout:
    description: Seconds per request.
    type: int
    default: 600
extends_documentation_fragment:
  - glm53.serving.openai_endpoint
  - glm53.serving.info_module
"""

EXAMPLES = r"""
- name: Score the reference passages against the weights' reference
  glm53.serving.vllm_reference_score:
    served_model_name: glm53-flash-awq
    baseline: {english: 2.41, chinese: 2.87, code: 1.62}
    weights: zai-org/GLM-5.3-Flash-AWQ-INT4@main
"""

RETURN = r"""
passed:
  description: Whether every passage was scored, inside the band and within the tolerance of the baseline.
  returned: always
  type: bool
passages:
  description: Each passage's figures - C(tokens), C(nll) (mean negative log-likelihood, nats per token), C(ppl)
    (its exponential) and C(worst) (the lowest token logprob).
  returned: always
  type: dict
  sample: {english: {tokens: 131, nll: 2.41, ppl: 11.13, worst: -3.4}}
release:
  description: O(release), as given.
  returned: always
  type: str
weights:
  description: O(weights), as given.
  returned: always
  type: str
figures:
  description: Each scored passage's mean negative log-likelihood alone (nats per token), as a baseline records it.
  returned: always
  type: dict
  sample: {english: 2.41, chinese: 2.87, code: 1.62}
baseline:
  description: The baseline the figures were compared with (O(baseline)).
  returned: always
  type: dict
seconds:
  description: Wall time of the scoring (all passages).
  returned: always
  type: float
summary:
  description: One line per problem, each led by its signal (C(no_scores), C(numerics_band), C(numerics_drift)).
  returned: always
  type: list
  elements: str
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._openai_client import (
    ProbeConnectionRefused,
    ProbeHTTPError,
    ProbeTimeout,
    client_from_params,
    endpoint_argument_spec,
)
from ansible_collections.glm53.serving.plugins.module_utils._reference import (
    PASSAGES,
    TOLERANCE_NATS,
    ScoreError,
    band_problem,
    drift_problem,
    in_parallel,
    score_text,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **endpoint_argument_spec(),
            served_model_name=dict(type="str", required=True),
            passages=dict(type="list", elements="str", choices=sorted(PASSAGES), default=["english", "chinese", "code"]),
            band=dict(type="list", elements="float", default=[0.02, 5.0]),
            baseline=dict(type="dict", default={}),
            baseline_name=dict(type="str", default="the weights' reference"),
            tolerance_nats=dict(type="float", default=TOLERANCE_NATS),
            release=dict(type="str"),
            weights=dict(type="str"),
            request_timeout=dict(type="int", default=600),
        ),
        supports_check_mode=True,
    )
    p = module.params
    band = p["band"]
    if len(band) != 2 or not 0 <= band[0] < band[1] <= 20:
        module.fail_json(msg="band must be [low, high] nats per token with 0 <= low < high <= 20, got %s" % band)
    if not 0.001 <= p["tolerance_nats"] <= 1:
        module.fail_json(msg="tolerance_nats must be between 0.001 and 1 nats per token, got %s" % p["tolerance_nats"])
    baseline = {}
    for name, value in (p["baseline"] or {}).items():
        try:
            baseline[str(name)] = float(value)
        except (TypeError, ValueError):
            module.fail_json(msg="baseline[%s] must be a number of nats per token, got %r" % (name, value))
    client = client_from_params(p, p["request_timeout"])
    t0 = time.monotonic()
    passages, summary = {}, []
    scored = in_parallel([
        (lambda n=name: score_text(client, p["served_model_name"], PASSAGES[n]["prompt"], PASSAGES[n]["text"],
                                   p["request_timeout"])) for name in p["passages"]])
    for name, (figures, exc) in zip(p["passages"], scored):
        if exc is not None:
            if not isinstance(exc, (ScoreError, ProbeHTTPError, ProbeConnectionRefused, ProbeTimeout)):
                raise exc
            summary.append("no_scores: %s: %s" % (name, exc))
            continue
        passages[name] = figures
        nll = figures["nll"]
        for signal, problem in (("numerics_band", band_problem(name, nll, band)),
                                ("numerics_drift", drift_problem(name, nll, baseline.get(name), p["tolerance_nats"],
                                                                 p["baseline_name"]))):
            if problem:
                summary.append("%s: %s" % (signal, problem))
    result = dict(changed=False, passed=not summary, passages=passages, baseline=baseline, release=p["release"],
                  weights=p["weights"],
                  figures=dict((name, fig["nll"]) for name, fig in passages.items()),
                  seconds=round(time.monotonic() - t0, 3), summary=summary)
    if summary:
        module.fail_json(msg="Reference scoring failed: " + "; ".join(summary), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
