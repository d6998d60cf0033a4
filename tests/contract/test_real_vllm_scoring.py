"""Contract test: the scoring requests the probes send (vllm_reference_score, the chat probe's relevance scores) and
the answers they read, against the *real* vLLM 0.28.0's request and response models in the contract venv.

1. The request body parses as vLLM's ChatCompletionRequest with the fields the probes rely on (prompt_logprobs 0,
   continue_final_message, add_generation_prompt false, return_token_ids, max_tokens 1).
2. A ChatCompletionResponse built by vLLM's own classes, with prompt logprobs as its serving code makes them (Logprob
   objects, -inf clamped by clamp_prompt_logprobs, top-N beside the prompt token), serialised as the server does, is
   read by the collection's span reader to the exact logprobs of the prompt's own tokens.
"""
from __future__ import annotations

import json
import os
import subprocess

from testlib import REPO  # noqa: F401  (makes the collection importable)
from ansible_collections.glm53.serving.plugins.module_utils._reference import CLAMPED, span_logprobs

VENV = os.environ.get("GLM53_VLLM_CONTRACT_VENV", "")
PYTHON = os.path.join(VENV, "bin", "python")
ENV = {**os.environ, "VLLM_TARGET_DEVICE": "cpu"}
if not os.path.exists(PYTHON):  # pragma: no cover - a setup error, not a skip
    raise RuntimeError("GLM53_VLLM_CONTRACT_VENV=%r is not a venv; run make test (it makes the venv)" % VENV)

# What _reference.score_text sends (client.chat's body), with a short passage.
REQUEST = {"model": "glm53-flash-awq", "max_tokens": 1, "temperature": 0, "prompt_logprobs": 0,
           "continue_final_message": True, "add_generation_prompt": False, "return_token_ids": True,
           "messages": [{"role": "user", "content": "Write a line."}, {"role": "assistant", "content": "A line."}]}

SCRIPT = r"""
import json, sys
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest, ChatCompletionResponse
from vllm.logprobs import Logprob
# vLLM's own clamp_prompt_logprobs, taken from its serving module's source (importing that module needs the engine's
# GPU-side packages, which the CPU contract venv leaves out); it reads nothing but its argument
import ast, importlib.util
path = importlib.util.find_spec("vllm.entrypoints.generate").submodule_search_locations[0] + "/base/serving.py"
tree = ast.parse(open(path, encoding="utf-8").read())
func = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "clamp_prompt_logprobs")
func.returns = None
for arg in func.args.args:
    arg.annotation = None
space = {}
exec(compile(ast.Module(body=[func], type_ignores=[]), path, "exec"), space)
clamp_prompt_logprobs = space["clamp_prompt_logprobs"]
req = ChatCompletionRequest.model_validate(json.loads(sys.argv[1]))
fields = {k: getattr(req, k) for k in ("prompt_logprobs", "continue_final_message", "add_generation_prompt",
                                        "return_token_ids", "max_tokens")}
ids = [5, 11, 42, 7, 99]
own = [None, -0.25, float("-inf"), -3.5, -0.001]
prompt_logprobs = [None]
for tid, lp in zip(ids[1:], own[1:]):
    entry = {tid: Logprob(logprob=lp, rank=3, decoded_token="t%d" % tid)}
    entry[1] = Logprob(logprob=-0.01, rank=1, decoded_token="top")  # top-N beside the prompt's own token
    prompt_logprobs.append(entry)
resp = ChatCompletionResponse(model="glm53-flash-awq", choices=[], usage={"prompt_tokens": 5, "total_tokens": 6,
                                                                        "completion_tokens": 1},
                              prompt_logprobs=clamp_prompt_logprobs(prompt_logprobs), prompt_token_ids=ids)
print(json.dumps({"fields": fields, "body": json.loads(resp.model_dump_json())}))
"""


def test_the_scoring_request_and_answer_are_vllms():
    out = subprocess.run([PYTHON, "-c", SCRIPT, json.dumps(REQUEST)], capture_output=True, text=True, env=ENV,
                         timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["fields"] == {"prompt_logprobs": 0, "continue_final_message": True, "add_generation_prompt": False,
                             "return_token_ids": True, "max_tokens": 1}
    body = got["body"]
    assert body["prompt_logprobs"][0] is None and set(body["prompt_logprobs"][1]) == {"11", "1"}  # ids as strings
    # the last 4 prompt tokens, each read by its own id (never the top entry), -inf as vLLM clamps it
    assert span_logprobs(body, 4) == [-0.25, CLAMPED, -3.5, -0.001]
