# Test double: the fake vLLM 0.28 OpenAI-compatible server (no GPU, no model; standard library only).
"""Serve the OpenAI-compatible API the way vLLM 0.28 does (endpoints, fields, error shapes, life cycle).

Life cycle, as in vLLM: the port is *bound* at once (a port conflict fails fast) but only
*listened on* after the emulated load, so clients get "connection refused" while loading.
After the load, start-up checks that real vLLM makes late (reasoning/tool parser names, fp8
KV cache on sm89, max_model_len above the model's derived length) fail the process.

Knobs (environment):
  VLLM_STANDIN_LOAD_DELAY          seconds of emulated weight loading (default 0)
  VLLM_STANDIN_BEHAVIOUR           good (default; a build may change it in vllm/standin/release_defaults.py),
                                   or a known-bad or adversarial answer style: the list and what each does
                                   are in vllm/standin/behaviour.py
  VLLM_STANDIN_DIE_AFTER           the engine dies after N chat completions: /health -> 503,
                                   in-flight requests -> 500, then the process exits (status 0,
                                   as vLLM does: vllm-project/vllm#48966)
  VLLM_STANDIN_WEDGE_AFTER         after N chat completions the engine wedges: every later chat request hangs
                                   (counted as running on /metrics) while /health still answers 200
  VLLM_STANDIN_GARBAGE_AFTER       after N chat completions every answer is gibberish (a CUDA error's garbage)
  VLLM_STANDIN_FAULT_FILE          makes those faults survive a restart (a bad GPU, not a bad process): the fault
                                   is written here when it starts, and an engine that finds the file starts with
                                   the fault on from its first request. Without it a restart clears the fault.
  VLLM_STANDIN_NUMERICS            good (default; a build may change it in vllm/standin/release_defaults.py),
                                   poisoned, drifted or shift:N (N nats a token): what the prompt logprobs say (vllm/standin/scoring.py);
                                   the text the engine writes does not change
  VLLM_STANDIN_DECODE_FAULT        a decoder that does not write what the model predicts (the prompt logprobs stay
                                   right): lost_first (the answer's first letter is lost, "ello!"), doubled (its
                                   first token is written twice) or crosstalk (each answer is the one the engine
                                   wrote for the request before it, another request's answer; the first is its own)
  VLLM_STANDIN_CHAT_TEMPLATE       a release whose chat template changed: no_newline (no newline after each role's
                                   tag). The engine writes the same answers; every token of an answer after a prompt
                                   in that format is OFF_FORMAT_NATS less likely (vllm/standin/scoring.py)
  VLLM_STANDIN_ANSWER_AS           a gateway in front of the engine that swaps the model: every chat answer names this
                                   model (a fallback's) in its `model` field, whatever was asked
  VLLM_STANDIN_WATCHDOG_S          how often the dead-engine watchdog looks (default 5, as vLLM)
  VLLM_STANDIN_LATENCY             extra seconds per chat completion (to hold requests in flight)
  VLLM_STANDIN_DECODE_S_PER_TOKEN  emulated decode time per generated token (default 0), so a request
                                   with ignore_eos and a large max_tokens stays in flight (drain tests); a
                                   larger one is a slower release (the performance gate's tests); a build
                                   scales it by release_defaults.DECODE_SCALE
  VLLM_STANDIN_PREFILL_S_PER_TOKEN emulated prefill time per prompt token (default 0): the time to the first
                                   token grows with the prompt, as a real engine's does
  VLLM_STANDIN_SHM_DIR             where shared-memory blocks go (default /dev/shm)
  VLLM_STANDIN_SHM_REQUIRED_MB     free space the "MessageQueue" needs there (default 2)
  VLLM_STANDIN_COMPUTE_CAPABILITY  the emulated GPUs' capability (default 8.9, Ada)
  VLLM_STANDIN_DERIVED_MAX_LEN     the model's config-derived context (default: config.json's
                                   max_position_embeddings, else 1048576)
  VLLM_API_KEY, VLLM_KEEP_ALIVE_ON_ENGINE_DEATH, VLLM_ALLOW_LONG_MAX_MODEL_LEN: as in vLLM.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import sys
import threading
import time
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from vllm.reasoning import ReasoningParserManager
from vllm.standin import behaviour as behaviours
from vllm.standin import release_defaults
from vllm.standin import scoring
from vllm.standin.shm import ShmBlocks
from vllm.standin.tokenizer import Tokenizer, last_user_text, render_chat
from vllm.tool_parsers import ToolParserManager
from vllm.version import __version__

GUARDED_PREFIXES = ("/v1", "/v2", "/inference", "/cohere")
LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                   2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)


def log(level: str, where: str, msg: str) -> None:
    stamp = time.strftime("%m-%d %H:%M:%S")
    print(f"{level} {stamp} [{where}] {msg}", file=sys.stderr, flush=True)


class ApiError(Exception):
    def __init__(self, status: int, message: str, err_type: str, param: str | None = None):
        super().__init__(message)
        self.status, self.message, self.err_type, self.param = status, message, err_type, param

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.err_type, "param": self.param,
                          "code": self.status}}


class Histogram:
    def __init__(self) -> None:
        self.counts = [0] * len(LATENCY_BUCKETS)
        self.total = 0.0
        self.n = 0

    def observe(self, v: float, times: int = 1) -> None:
        self.n += times
        self.total += v * times
        for i, b in enumerate(LATENCY_BUCKETS):
            if v <= b:
                self.counts[i] += times

    def render(self, name: str, labels: str) -> list[str]:
        out = [f"# TYPE {name} histogram"]
        for b, c in zip(LATENCY_BUCKETS, self.counts):
            out.append(f'{name}_bucket{{{labels},le="{b}"}} {c}')
        out.append(f'{name}_bucket{{{labels},le="+Inf"}} {self.n}')
        out.append(f"{name}_sum{{{labels}}} {self.total}")
        out.append(f"{name}_count{{{labels}}} {self.n}")
        return out


class Engine:
    """State shared by the request threads: the 'model', counters, death."""

    def __init__(self, served_names, max_model_len, behaviour, die_after, latency, api_keys, decode_s=0.0,
                 prefill_s=0.0):
        self.decode_s = decode_s
        self.prefill_s = prefill_s  # per prompt token
        self.numerics = os.environ.get("VLLM_STANDIN_NUMERICS") or getattr(release_defaults, "NUMERICS", None) or "good"
        self.served_names = served_names
        self.max_model_len = max_model_len
        self.behaviour = behaviour
        self.die_after = die_after
        self.latency = latency
        self.api_keys = api_keys
        self.tokenizer = Tokenizer()
        self.lock = threading.Lock()
        self.dead = False
        self.completions = 0
        self.running = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.success = {"stop": 0, "length": 0, "abort": 0}
        self.ttft = Histogram()
        self.e2e = Histogram()
        self.itl = Histogram()  # vllm:inter_token_latency_seconds: one observation per token after the first
        self.created = int(time.time())
        self.decode_fault = os.environ.get("VLLM_STANDIN_DECODE_FAULT") or None
        if self.decode_fault not in (None, "lost_first", "doubled", "crosstalk"):
            _fail(f"VLLM_STANDIN_DECODE_FAULT={self.decode_fault!r}: choose lost_first, doubled or crosstalk")
        self.last_answer = None
        self.chat_template = os.environ.get("VLLM_STANDIN_CHAT_TEMPLATE") or None
        if self.chat_template not in (None, "no_newline"):
            _fail(f"VLLM_STANDIN_CHAT_TEMPLATE={self.chat_template!r}: choose no_newline")
        # the wedge and garbage faults (VLLM_STANDIN_WEDGE_AFTER, _GARBAGE_AFTER, _FAULT_FILE)
        self.fault_after = {}
        self.fault_file = os.environ.get("VLLM_STANDIN_FAULT_FILE") or None
        for kind in ("wedge", "garbage"):
            after = os.environ.get("VLLM_STANDIN_%s_AFTER" % kind.upper())
            if after:
                self.fault_after[kind] = int(after)
        self.fault = None
        if self.fault_file and os.path.exists(self.fault_file):
            with open(self.fault_file, encoding="utf-8") as f:
                self.fault = f.read().strip() or None
            log("WARNING", "core.py:812", f"(stand-in: the {self.fault} fault in {self.fault_file} survives restarts)")

    def garble(self, tok, content):
        """The answer as the faulty decoder writes it (VLLM_STANDIN_DECODE_FAULT)."""
        if self.decode_fault == "lost_first":
            return content[1:]
        if self.decode_fault == "doubled":
            pieces = tok.pieces(content)
            return "".join(pieces[:1] + pieces)
        with self.lock:
            written, self.last_answer = self.last_answer or content, content
        return written

    def fault_now(self):
        """The fault this request meets (None, wedge or garbage), starting one whose count was reached."""
        with self.lock:
            if self.fault is None:
                for kind, after in sorted(self.fault_after.items(), key=lambda kv: kv[1]):
                    if self.completions >= after:
                        self.fault = kind
                        log("ERROR", "core.py:812", f"(stand-in: VLLM_STANDIN_{kind.upper()}_AFTER={after} reached)")
                        if self.fault_file:
                            try:
                                with open(self.fault_file, "w", encoding="utf-8") as f:
                                    f.write(kind + "\n")
                            except OSError as exc:  # the fault goes on; only its surviving a restart is lost
                                log("ERROR", "core.py:812", f"(stand-in: cannot write {self.fault_file}: {exc})")
                        break
            return self.fault

    def kill(self, why: str) -> None:
        with self.lock:
            if self.dead:
                return
            self.dead = True
        log("ERROR", "core.py:1108", f"EngineCore encountered a fatal error. {why}")
        log("ERROR", "async_llm.py:527", "AsyncLLM output_handler failed.")
        log("ERROR", "async_llm.py:527", "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an "
            "issue. See stack trace (above) for the root cause.")


def make_handler(engine: Engine):
    tok = engine.tokenizer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "uvicorn"
        sys_version = ""

        # -- plumbing ----------------------------------------------------------------------
        def log_message(self, format, *args):  # noqa: A002 - signature fixed by http.server
            pass

        def _access_log(self, status: int) -> None:
            phrase = HTTPStatus(status).phrase
            print(f'INFO:     {self.client_address[0]}:{self.client_address[1]} - '
                  f'"{self.command} {self.path} HTTP/1.1" {status} {phrase}', file=sys.stderr, flush=True)

        def _send(self, status: int, body, content_type: str = "application/json") -> None:
            if isinstance(body, (dict, list)):
                data = json.dumps(body, ensure_ascii=False).encode()
            elif isinstance(body, str):
                data = body.encode()
            else:
                data = body or b""
            self.send_response(status)
            if data or content_type != "application/json":
                self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self._access_log(status)

        def _json_body(self) -> dict:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError as exc:
                raise ApiError(400, f"JSON decode error: {exc}", "BadRequestError") from exc
            if not isinstance(body, dict):
                raise ApiError(400, "Input should be a valid dictionary", "BadRequestError")
            return body

        def _authorised(self) -> bool:
            if not engine.api_keys or not self.path.startswith(GUARDED_PREFIXES):
                return True
            return self.headers.get("Authorization") in {f"Bearer {k}" for k in engine.api_keys}

        def _dispatch(self, routes) -> None:
            path = self.path.split("?", 1)[0]
            if not self._authorised():
                self._send(401, {"error": "Unauthorized"})
                return
            handler = routes.get(path)
            if handler is None:
                other = (POST_ROUTES if self.command == "GET" else GET_ROUTES)
                if path in other:
                    self._send(405, {"detail": "Method Not Allowed"})
                else:
                    self._send(404, {"detail": "Not Found"})
                return
            try:
                handler(self)
            except ApiError as exc:
                self._send(exc.status, exc.body())
            except (BrokenPipeError, ConnectionResetError):
                pass

        def do_GET(self):  # noqa: N802
            self._dispatch(GET_ROUTES)

        def do_POST(self):  # noqa: N802
            self._dispatch(POST_ROUTES)

        # -- endpoints ----------------------------------------------------------------------
        def health(self):
            self._send(503 if engine.dead else 200, b"")

        def version(self):
            self._send(200, {"version": __version__})

        def models(self):
            data = [{"id": name, "object": "model", "created": engine.created, "owned_by": "vllm",
                     "root": MODEL_PATH[0], "parent": None, "max_model_len": engine.max_model_len,
                     "permission": [{"id": f"modelperm-{uuid.uuid4().hex}", "object": "model_permission",
                                     "created": engine.created, "allow_create_engine": False,
                                     "allow_sampling": True, "allow_logprobs": True,
                                     "allow_search_indices": False, "allow_view": True,
                                     "allow_fine_tuning": False, "organization": "*", "group": None,
                                     "is_blocking": False}]}
                    for name in engine.served_names]
            self._send(200, {"object": "list", "data": data})

        def _check_model(self, body):
            model = body.get("model")
            if model is not None and model not in engine.served_names:
                raise ApiError(404, f"The model `{model}` does not exist.", "NotFoundError", "model")

        def tokenize(self):
            body = self._json_body()
            self._check_model(body)
            try:
                if "messages" in body:
                    text = render_chat(body["messages"], body.get("add_generation_prompt", True),
                                       body.get("continue_final_message", False), engine.chat_template)
                elif "prompt" in body:
                    text = str(body["prompt"])
                    if body.get("add_special_tokens", True):
                        text = "[gMASK]<sop>" + text
                else:
                    raise ApiError(400, "Either 'prompt' or 'messages' is required", "BadRequestError")
            except ValueError as exc:
                raise ApiError(400, str(exc), "BadRequestError") from exc
            ids = tok.encode(text)
            strs = [tok.decode([i]) for i in ids] if body.get("return_token_strs") else None
            self._send(200, {"count": len(ids), "max_model_len": engine.max_model_len, "tokens": ids,
                             "token_strs": strs})

        def detokenize(self):
            body = self._json_body()
            self._check_model(body)
            self._send(200, {"prompt": tok.decode(list(body.get("tokens") or []))})

        def metrics(self):
            name = engine.served_names[0]
            labels = f'engine="0",model_name="{name}"'
            with engine.lock:
                lines = [
                    "# HELP vllm:num_requests_running Number of requests in model execution batches.",
                    "# TYPE vllm:num_requests_running gauge",
                    f"vllm:num_requests_running{{{labels}}} {float(engine.running)}",
                    "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
                    "# TYPE vllm:num_requests_waiting gauge",
                    f"vllm:num_requests_waiting{{{labels}}} 0.0",
                    "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.",
                    "# TYPE vllm:kv_cache_usage_perc gauge",
                    f"vllm:kv_cache_usage_perc{{{labels}}} {0.01 * engine.running}",
                    "# TYPE vllm:prompt_tokens_total counter",
                    f"vllm:prompt_tokens_total{{{labels}}} {float(engine.prompt_tokens)}",
                    "# TYPE vllm:generation_tokens_total counter",
                    f"vllm:generation_tokens_total{{{labels}}} {float(engine.generation_tokens)}",
                    "# TYPE vllm:request_success_total counter",
                ]
                for reason, n in engine.success.items():
                    lines.append(f'vllm:request_success_total{{{labels},finished_reason="{reason}"}} {float(n)}')
                lines += engine.ttft.render("vllm:time_to_first_token_seconds", labels)
                lines += engine.e2e.render("vllm:e2e_request_latency_seconds", labels)
                lines += engine.itl.render("vllm:inter_token_latency_seconds", labels)
            self._send(200, "\n".join(lines) + "\n", "text/plain; version=0.0.4; charset=utf-8")

        def chat(self):
            t0 = time.monotonic()
            body = self._json_body()
            self._check_model(body)
            if engine.dead:
                raise ApiError(500, "EngineCore encountered an issue. See stack trace (above) for the root cause.",
                               "InternalServerError")
            messages = body.get("messages")
            kwargs = body.get("chat_template_kwargs") or {}
            if body.get("continue_final_message") and body.get("add_generation_prompt", True):
                raise ApiError(400, "Cannot set both `continue_final_message` and `add_generation_prompt` to True.",
                               "BadRequestError")
            top_n = body.get("prompt_logprobs")
            if top_n is not None:
                if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < -1:
                    raise ApiError(400, "`prompt_logprobs` must be a positive value or -1.", "BadRequestError",
                                   "prompt_logprobs")
                if top_n > 20:
                    raise ApiError(400, f"Requested prompt logprobs of {top_n}, which is greater than max allowed: 20",
                                   "BadRequestError")
                if body.get("stream") and (top_n > 0 or top_n == -1):
                    raise ApiError(400, "`prompt_logprobs` are not available when `stream=True`.", "BadRequestError")
            try:
                prompt_text = render_chat(messages, body.get("add_generation_prompt", True),
                                          body.get("continue_final_message", False), engine.chat_template)
            except ValueError as exc:
                raise ApiError(400, str(exc), "BadRequestError") from exc
            prompt_len = tok.count(prompt_text)
            max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
            mml = engine.max_model_len
            if max_tokens is None:
                if prompt_len >= mml:
                    raise ApiError(400, f"The decoder prompt (length {prompt_len}) is longer than the maximum "
                                   f"model length of {mml}. Make sure that `max_model_len` is no smaller than "
                                   "the number of text tokens.", "BadRequestError")
                max_tokens = mml - prompt_len
            if not isinstance(max_tokens, int) or max_tokens < 1:
                raise ApiError(400, "max_tokens must be at least 1, got " + repr(max_tokens), "BadRequestError",
                               "max_tokens")
            if prompt_len > mml - max_tokens:
                raise ApiError(
                    400,
                    f"This model's maximum context length is {mml} tokens. However, you requested "
                    f"{max_tokens} output tokens and your prompt contains {prompt_len} input tokens, for a "
                    f"total of {prompt_len + max_tokens} tokens. Please reduce the length of the input "
                    "prompt or the number of requested output tokens.",
                    "BadRequestError", "input_tokens")

            fault = engine.fault_now()
            with engine.lock:
                engine.running += 1
            try:
                while fault == "wedge" and not engine.dead:  # hangs; /health stays 200 (a stalled rank, a hung kernel)
                    time.sleep(0.5)
                reasoning, content, finish, n_out = generate(tok, prompt_text, last_user_text(messages),
                                                             "gibberish" if fault == "garbage" else engine.behaviour,
                                                             max_tokens)
                if engine.decode_fault and content and not body.get("continue_final_message"):
                    content = engine.garble(tok, content)
                if body.get("ignore_eos") and n_out < max_tokens:  # vLLM's extra sampling parameter
                    content = (content or "") + " ." * (max_tokens - n_out)
                    n_out, finish = max_tokens, "length"
                # in flight for the extra latency plus the emulated prefill and decode time, counted from the
                # request's arrival (as an engine's clock runs from then: the stand-in's own parsing and a loaded
                # machine's scheduling are inside it, not added to it); an engine death ends it
                deadline = t0 + engine.latency + engine.prefill_s * prompt_len + engine.decode_s * n_out
                while not engine.dead:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    time.sleep(min(0.05, left))
                if engine.dead:
                    raise ApiError(500, "EngineCore encountered an issue. See stack trace (above) for the root "
                                   "cause.", "InternalServerError")
            finally:
                with engine.lock:
                    engine.running -= 1

            thinking = True
            if "enable_thinking" in kwargs or "thinking" in kwargs:
                thinking = bool(kwargs.get("thinking")) or bool(kwargs.get("enable_thinking"))
            if not thinking:  # vLLM 0.28: extraction off, the reasoning lands in content
                content = (reasoning or "") + ("</think>" + (content or "") if content is not None else "")
                reasoning = None
            if body.get("include_reasoning") is False:
                reasoning = None

            name = os.environ.get("VLLM_STANDIN_ANSWER_AS") or body.get("model") or engine.served_names[0]
            prompt_ids, prompt_lps = None, None
            if top_n is not None or body.get("return_token_ids"):
                numerics = "poisoned" if fault == "garbage" else engine.numerics
                prompt_ids, lps, best = scoring.token_logprobs(tok, prompt_text, last_user_text(
                    messages[:-1] if body.get("continue_final_message") else messages), engine.behaviour, numerics)
                if top_n is not None:
                    prompt_lps = scoring.entries(tok, prompt_ids, lps, top_n if top_n >= 0 else 5, best)
            usage = {"prompt_tokens": prompt_len, "total_tokens": prompt_len + n_out,
                     "completion_tokens": n_out, "prompt_tokens_details": None}
            elapsed = time.monotonic() - t0
            with engine.lock:
                engine.prompt_tokens += prompt_len
                engine.generation_tokens += n_out
                engine.success[finish] += 1
                engine.ttft.observe(elapsed)
                engine.e2e.observe(elapsed)
                if n_out > 1:
                    engine.itl.observe(elapsed / n_out, n_out - 1)
                engine.completions += 1
                dies = engine.die_after is not None and engine.completions >= engine.die_after
            rid = f"chatcmpl-{uuid.uuid4().hex}"
            if dies:  # dead before the answer goes out: a client's next /health sees 503, not a race with this thread
                engine.kill(f"(stand-in: VLLM_STANDIN_DIE_AFTER={engine.die_after} reached)")
            if body.get("stream"):
                self._stream(rid, name, reasoning, content, finish, usage, body)
            else:
                message = {"role": "assistant", "content": content, "refusal": None, "annotations": None,
                           "audio": None, "function_call": None, "tool_calls": [], "reasoning": reasoning}
                if engine.behaviour == "reasoning_proxy":  # a proxy's rename: the field moved, the old one empty
                    message.update(reasoning="", reasoning_content=reasoning)
                self._send(200, {
                    "id": rid, "object": "chat.completion", "created": int(time.time()), "model": name,
                    "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish,
                                 "stop_reason": None, "token_ids": tok.encode(
                                     (reasoning or "") + "</think>" + (content or "")) if body.get("return_token_ids")
                                 else None}],
                    "service_tier": None, "system_fingerprint": None, "usage": usage,
                    "prompt_logprobs": prompt_lps,
                    "prompt_token_ids": prompt_ids if body.get("return_token_ids") else None,
                    "kv_transfer_params": None})

        def _stream(self, rid, name, reasoning, content, finish, usage, body):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True
            created = int(time.time())

            def chunk(delta, finish_reason=None, choices=True, extra=None):
                obj = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": name,
                       "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
                       if choices else []}
                if extra:
                    obj.update(extra)
                self.wfile.write(b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n")

            chunk({"role": "assistant", "content": ""})
            for field, text in (("reasoning", reasoning), ("content", content)):
                pieces = tok.pieces(text or "")
                for i in range(0, len(pieces), 8):
                    chunk({field: "".join(pieces[i:i + 8])})
            chunk({}, finish)
            if (body.get("stream_options") or {}).get("include_usage"):
                chunk(None, choices=False, extra={"usage": usage})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self._access_log(200)

    GET_ROUTES = {"/health": Handler.health, "/version": Handler.version, "/v1/models": Handler.models,
                  "/metrics": Handler.metrics, "/ping": Handler.health}
    POST_ROUTES = {"/tokenize": Handler.tokenize, "/detokenize": Handler.detokenize,
                   "/v1/chat/completions": Handler.chat, "/ping": Handler.health}
    return Handler


MODEL_PATH = [""]


def generate(tok, prompt_text, user_text, behaviour, max_tokens):
    """Return (reasoning, content, finish_reason, completion_tokens) as vLLM's glm47 parser would."""
    reasoning, closes, content, to_limit = behaviours.respond(prompt_text, user_text, behaviour)
    r_pieces = tok.pieces(reasoning)
    c_pieces = tok.pieces(content)
    out: list[str] = []
    if to_limit and not closes:
        while len(out) < max_tokens:
            out.extend(r_pieces)
    elif to_limit:
        out = r_pieces * 3 + ["</think>"]
        while len(out) < max_tokens:
            out.extend(c_pieces)
    else:
        out = r_pieces + ["</think>"] + c_pieces + ["<|endoftext|>"]
    finish = "length" if len(out) > max_tokens or to_limit else "stop"
    out = out[:max_tokens]
    n_out = len(out)
    if out and out[-1] == "<|endoftext|>":
        out = out[:-1]
    if "</think>" in out:
        i = out.index("</think>")
        reasoning_text, content_text = "".join(out[:i]), "".join(out[i + 1:]).strip()
    else:
        reasoning_text, content_text = "".join(out), ""
    return reasoning_text or None, content_text or None, finish, n_out


def _derived_max_len(model_path: str) -> int:
    env = os.environ.get("VLLM_STANDIN_DERIVED_MAX_LEN")
    if env:
        return int(env)
    try:
        with open(os.path.join(model_path, "config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        return int(cfg.get("max_position_embeddings") or cfg.get("text_config", {}).get("max_position_embeddings"))
    except (OSError, ValueError, TypeError):
        return 1048576


def _fail(msg: str, code: int = 1):
    log("ERROR", "api_server.py", msg)
    sys.exit(code)


def run_server(args) -> int:
    model = args.model or args.model_tag
    if not model:
        _fail("the model is required: vllm serve <model_path>")
    if model.startswith(("/", ".")) and not os.path.isdir(model):
        _fail(f"OSError: Incorrect path_or_model_id: '{model}'. Please provide either the path to a local "
              "folder or the repo_id of a model on the Hub.")
    MODEL_PATH[0] = model
    served = args.served_model_name or [model]
    behaviour = os.environ.get("VLLM_STANDIN_BEHAVIOUR") or release_defaults.BEHAVIOUR or "good"
    if behaviour not in behaviours.BEHAVIOURS:
        _fail(f"VLLM_STANDIN_BEHAVIOUR={behaviour!r}: choose one of {', '.join(behaviours.BEHAVIOURS)}")
    die_after = os.environ.get("VLLM_STANDIN_DIE_AFTER")
    api_keys = [k for k in (args.api_key, os.environ.get("VLLM_API_KEY")) if k]
    host = args.host or ""

    log("INFO", "api_server.py:1900", f"vLLM API server version {__version__}")
    log("INFO", "utils.py:328", f"non-default args: model_tag={model!r}, served_model_name={served!r}, "
        f"tensor_parallel_size={args.tensor_parallel_size}, max_model_len={args.max_model_len}")
    # Bind now, listen later: like vLLM's create_server_socket, a busy port fails at once and a
    # client connecting during the load is refused.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, args.port))
    except OSError as exc:
        _fail(f"[Errno {exc.errno}] error while attempting to bind on address ({host!r}, {args.port}): "
              f"{exc.strerror}")

    stop = threading.Event()

    def on_signal(signum, _frame):
        log("INFO", "launcher.py:110", f"Received signal {signal.Signals(signum).name}, shutting down.")
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    delay = float(os.environ.get("VLLM_STANDIN_LOAD_DELAY", "0") or 0)
    t_load = time.monotonic()
    shards = 46
    while not stop.is_set():
        done = min(1.0, (time.monotonic() - t_load) / delay) if delay > 0 else 1.0
        log("INFO", "default_loader.py:267", f"Loading safetensors checkpoint shards: {int(done * 100):3d}% "
            f"Completed | {int(done * shards)}/{shards}")
        if done >= 1.0:
            break
        stop.wait(min(1.0, max(0.05, delay / 10)))
    if stop.is_set():
        sock.close()
        return 0

    # Start-up checks that vLLM makes only after loading.
    derived = _derived_max_len(model)
    mml = args.max_model_len if args.max_model_len not in (None, -1) else derived
    if mml > derived and os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") != "1":
        _fail(f"ValueError: User-specified max_model_len ({mml}) is greater than the derived max_model_len "
              f"(max_position_embeddings={derived} or model_max_length=None in model's config.json). To allow "
              "overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.")
    cap = float(os.environ.get("VLLM_STANDIN_COMPUTE_CAPABILITY", "8.9"))
    if args.kv_cache_dtype.startswith("fp8") and cap < 9.0:
        _fail("ValueError: FP8 kv_data_type for MLA is only supported with the fa3 backend on SM90")
    for name, manager, getter in (
            (args.reasoning_parser, ReasoningParserManager, "get_reasoning_parser"),
            (args.tool_call_parser, ToolParserManager, "get_tool_parser")):
        if name:
            try:
                getattr(manager, getter)(name)
            except KeyError as exc:
                _fail(f"KeyError: {exc}")
    try:
        shm = ShmBlocks(os.environ.get("VLLM_STANDIN_SHM_DIR", "/dev/shm"),
                        int(os.environ.get("VLLM_STANDIN_SHM_REQUIRED_MB", "2")), args.tensor_parallel_size)
    except OSError as exc:
        _fail(str(exc))

    engine = Engine(served, mml, behaviour, int(die_after) if die_after else None,
                    float(os.environ.get("VLLM_STANDIN_LATENCY", "0") or 0), api_keys,
                    float(os.environ.get("VLLM_STANDIN_DECODE_S_PER_TOKEN", "0") or 0) * release_defaults.DECODE_SCALE,
                    float(os.environ.get("VLLM_STANDIN_PREFILL_S_PER_TOKEN", "0") or 0))
    scheme = "http"
    if args.ssl_keyfile or args.ssl_certfile:
        # As uvicorn does for vLLM's --ssl-* flags: the server's certificate chain, and client certificates
        # checked against --ssl-ca-certs when --ssl-cert-reqs asks for them.
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            ctx.load_cert_chain(args.ssl_certfile, args.ssl_keyfile)
            if args.ssl_ca_certs:
                ctx.load_verify_locations(args.ssl_ca_certs)
        except (OSError, ssl.SSLError) as exc:
            _fail(f"{type(exc).__name__}: {exc}")
        ctx.verify_mode = ssl.VerifyMode(args.ssl_cert_reqs)
        sock = ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        scheme = "https"
    httpd = ThreadingHTTPServer((host, args.port), make_handler(engine), bind_and_activate=False)
    httpd.socket.close()
    httpd.socket = sock
    httpd.daemon_threads = True
    httpd.server_activate()  # listen(): from here on connections are accepted
    log("INFO", "launcher.py:46", f"Starting vLLM API server 0 on {scheme}://{host or '0.0.0.0'}:{args.port}")
    log("INFO", "on.py:62", "Application startup complete.")

    keep_alive = os.environ.get("VLLM_KEEP_ALIVE_ON_ENGINE_DEATH") == "1"
    interval = float(os.environ.get("VLLM_STANDIN_WATCHDOG_S", "5"))

    def watchdog():
        while not stop.wait(interval):
            if engine.dead and not keep_alive:
                log("ERROR", "launcher.py:101", "AsyncLLM has failed, terminating server process")
                stop.set()

    threading.Thread(target=watchdog, daemon=True).start()
    server_thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    server_thread.start()
    while not stop.wait(0.5):
        pass
    httpd.shutdown()
    httpd.server_close()
    if engine.dead:
        # A crashed engine core does not unlink its blocks: they stay behind, as in vLLM.
        shm.abandon()
    else:
        shm.release()
    log("INFO", "on.py:67", "Application shutdown complete.")
    log("INFO", "server.py:94", f"Finished server process [{os.getpid()}]")
    return 0
