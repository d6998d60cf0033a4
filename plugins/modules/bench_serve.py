#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
module: bench_serve
short_description: Measure a serving endpoint with vLLM's own benchmark (vllm bench serve)
version_added: 0.2.0
description:
  - Runs C(vllm bench serve) from the given vLLM (the release's venv on the host) against an OpenAI-compatible
    endpoint, with the random dataset at fixed input and output lengths, a fixed request rate, concurrency and
    seed, C(--ignore-eos) and temperature 0, so two releases meet the same load.
  - Reads the benchmark's own JSON result (C(--save-result)), not its printed text, and returns the median over
    O(repeats) runs of each figure (throughputs, TTFT, TPOT and ITL, median and p99), the failed requests, and
    each run's figures.
  - With O(long_input_len), one more run sends a single request of that many prompt tokens (one output token),
    and its TTFT is the prefill time at the card's context scale.
  - The API key goes to the benchmark through its environment (C(OPENAI_API_KEY)), never on its command line.
  - Only the Python standard library is needed besides the vLLM it runs.
options:
  vllm:
    description: The C(vllm) executable whose C(bench serve) runs (the release's C(<venv>/bin/vllm)).
    type: path
    required: true
  base_url:
    description: The endpoint's origin, such as C(http://127.0.0.1:8000).
    type: str
    required: true
  model:
    description: The served model name (C(--served-model-name)).
    type: str
    required: true
  tokenizer:
    description: The model directory, whose tokenizer the benchmark uses to make its prompts.
    type: path
    required: true
  api_key:
    description: The endpoint's API key, if it has one.
    type: str
  ca_path:
    description: A CA bundle for an HTTPS endpoint (given to the benchmark as C(SSL_CERT_FILE)).
    type: path
  input_len:
    description: Prompt tokens per request.
    type: int
    default: 1024
  output_len:
    description: Generated tokens per request.
    type: int
    default: 256
  num_prompts:
    description: Requests per run.
    type: int
    default: 64
  max_concurrency:
    description: Requests in flight at most.
    type: int
    default: 8
  request_rate:
    description: Requests per second, or C(inf) to send them as fast as the concurrency allows.
    type: str
    default: inf
  seed:
    description: The dataset's seed.
    type: int
    default: 0
  repeats:
    description: Runs to take the median of (noise).
    type: int
    default: 3
  long_input_len:
    description: Prompt tokens of the one long request (its prefill time); 0 for none.
    type: int
    default: 0
  result_dir:
    description: Where the benchmark writes its JSON results (made if missing).
    type: path
    required: true
  label:
    description: Names the result files and is recorded in them (C(--metadata release=...)); the release id.
    type: str
    default: bench
  timeout:
    description: Seconds one run may take.
    type: int
    default: 3600
author:
  - glm53.serving contributors (@glm53)
attributes:
  check_mode:
    description: Sends nothing and says what it would run.
    support: full
  diff_mode:
    description: Does not return a diff.
    support: none
  platform:
    description: Any POSIX host with the vLLM it runs.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Benchmark the local engine with the release's own vLLM
  glm53.serving.bench_serve:
    vllm: /opt/glm53/releases/current/venv/bin/vllm
    base_url: http://127.0.0.1:8000
    model: glm53-flash-awq
    tokenizer: /models/GLM-5.3-Flash-AWQ-INT4
    api_key: "{{ serve_api_key }}"
    result_dir: /var/lib/glm53/bench
    label: "{{ release_id }}"
    long_input_len: 450000
  no_log: true
  register: bench
"""

RETURN = r"""
figures:
  description:
    - The median over the repeats of each figure C(vllm bench serve) reports (names as in its JSON result), with
      C(completed) and C(failed) requests summed over the runs.
  returned: success, not in check mode
  type: dict
  sample: {output_throughput: 812.4, request_throughput: 3.2, median_ttft_ms: 210.3, p99_ttft_ms: 480.2,
           median_tpot_ms: 9.1, p99_tpot_ms: 12.4, completed: 192, failed: 0}
long:
  description: The long request's run (prompt tokens sent, its TTFT), when O(long_input_len) is set.
  returned: success, with long_input_len
  type: dict
  sample: {input_tokens: 450000, ttft_ms: 41230.5, failed: 0}
runs:
  description: Each repeat's figures, in order.
  returned: success, not in check mode
  type: list
  elements: dict
seconds:
  description: Wall time of all the runs (the benchmark's own cost).
  returned: success, not in check mode
  type: float
results:
  description: The JSON result files the benchmark wrote.
  returned: success, not in check mode
  type: list
  elements: str
"""

import json
import os
import re
import statistics
import time

from ansible.module_utils.basic import AnsibleModule

FIGURES = ("output_throughput", "request_throughput", "total_token_throughput", "mean_ttft_ms", "median_ttft_ms",
           "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "median_itl_ms",
           "p99_itl_ms", "duration")
LABEL_RE = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


def bench_argv(p, input_len, output_len, num_prompts, max_concurrency, request_rate, result_file):
    return [p["vllm"], "bench", "serve", "--backend", "openai-chat", "--base-url", p["base_url"].rstrip("/"),
            "--endpoint", "/v1/chat/completions", "--model", p["model"], "--tokenizer", p["tokenizer"],
            "--dataset-name", "random", "--random-input-len", str(input_len), "--random-output-len", str(output_len),
            "--num-prompts", str(num_prompts), "--max-concurrency", str(max_concurrency),
            "--request-rate", request_rate, "--seed", str(p["seed"]), "--ignore-eos", "--temperature", "0",
            "--disable-tqdm", "--metadata", "release=%s" % p["label"],
            "--save-result", "--result-dir", p["result_dir"], "--result-filename", result_file]


def run_once(module, env, argv, path):
    if os.path.exists(path):
        os.unlink(path)  # never read an earlier run's result
    # coreutils' timeout bounds the run (run_command has no limit of its own); it exits 124 when it stops it
    rc, out, err = module.run_command(["timeout", str(module.params["timeout"])] + argv, environ_update=env)
    if rc == 124:
        module.fail_json(msg="vllm bench serve ran past timeout (%d s) against %s" % (
            module.params["timeout"], module.params["base_url"]), rc=rc)
    if rc != 0 or not os.path.isfile(path):
        tail = (out + "\n" + err).strip()[-3000:]
        module.fail_json(msg="vllm bench serve failed (exit %d) against %s: %s" % (rc, module.params["base_url"], tail),
                         rc=rc)
    with open(path) as f:
        result = json.load(f)
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            vllm=dict(type="path", required=True),
            base_url=dict(type="str", required=True),
            model=dict(type="str", required=True),
            tokenizer=dict(type="path", required=True),
            api_key=dict(type="str", no_log=True),
            ca_path=dict(type="path"),
            input_len=dict(type="int", default=1024),
            output_len=dict(type="int", default=256),
            num_prompts=dict(type="int", default=64),
            max_concurrency=dict(type="int", default=8),
            request_rate=dict(type="str", default="inf"),
            seed=dict(type="int", default=0),
            repeats=dict(type="int", default=3),
            long_input_len=dict(type="int", default=0),
            result_dir=dict(type="path", required=True),
            label=dict(type="str", default="bench"),
            timeout=dict(type="int", default=3600),
        ),
        supports_check_mode=True,
    )
    p = module.params
    for name in ("input_len", "output_len", "num_prompts", "max_concurrency", "repeats", "timeout"):
        if p[name] < 1:
            module.fail_json(msg="%s must be at least 1, got %d" % (name, p[name]))
    if p["long_input_len"] < 0:
        module.fail_json(msg="long_input_len must be 0 (no long request) or a token count, got %d" % p["long_input_len"])
    if p["request_rate"] != "inf":
        try:
            if float(p["request_rate"]) <= 0:
                raise ValueError
        except ValueError:
            module.fail_json(msg="request_rate must be inf or a positive number, got %r" % p["request_rate"])
    if not LABEL_RE.match(p["label"]):
        module.fail_json(msg="label must be one file-name word (letters, digits, . _ -), got %r" % p["label"])
    if not (os.path.isfile(p["vllm"]) and os.access(p["vllm"], os.X_OK)):
        module.fail_json(msg="%s is not an executable vllm: the benchmark runs vLLM's own `vllm bench serve`" % p["vllm"])
    if module.check_mode:
        module.exit_json(changed=False, msg="Would run vllm bench serve %d time(s) against %s" % (
            p["repeats"], p["base_url"]))

    env = {"PYTHONUNBUFFERED": "1", "OPENAI_API_KEY": p["api_key"] or ""}
    if p["ca_path"]:
        env["SSL_CERT_FILE"] = p["ca_path"]
    if not os.path.isdir(p["result_dir"]):
        os.makedirs(p["result_dir"], mode=0o750)
    start = time.monotonic()
    runs, files = [], []
    for i in range(p["repeats"]):
        name = "%s-run%d.json" % (p["label"], i + 1)
        path = os.path.join(p["result_dir"], name)
        result = run_once(module, env, bench_argv(p, p["input_len"], p["output_len"], p["num_prompts"],
                                                  p["max_concurrency"], p["request_rate"], name), path)
        runs.append(dict((k, result.get(k)) for k in FIGURES + ("completed", "failed")))
        files.append(path)
    figures = {}
    for k in FIGURES:
        values = [r[k] for r in runs if isinstance(r.get(k), (int, float))]
        if values:
            figures[k] = statistics.median(values)
    figures["completed"] = sum(int(r.get("completed") or 0) for r in runs)
    figures["failed"] = sum(int(r.get("failed") or 0) for r in runs)
    out = dict(changed=False, figures=figures, runs=runs, results=files)
    if p["long_input_len"]:
        name = "%s-long.json" % p["label"]
        path = os.path.join(p["result_dir"], name)
        result = run_once(module, env, bench_argv(p, p["long_input_len"], 1, 1, 1, "inf", name), path)
        out["long"] = {"input_tokens": result.get("total_input_tokens"), "ttft_ms": result.get("median_ttft_ms"),
                       "failed": int(result.get("failed") or 0)}
        files.append(path)
    out["seconds"] = round(time.monotonic() - start, 1)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
