"""The vLLM stand-in behaves like vLLM 0.28 where the collection depends on it (docs/testing.md lists what it emulates)."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time

import pytest

from vllm.standin.tokenizer import Tokenizer, render_chat


# ---------------------------------------------------------------- life cycle
def test_connection_refused_while_loading_then_ready(standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_LOAD_DELAY": "2"}).start()
    time.sleep(0.4)
    assert s.proc.poll() is None
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", s.port), timeout=1).close()
    t0 = time.monotonic()
    s.wait_ready(timeout=15)
    assert time.monotonic() - t0 > 0.8, "the port opened before the emulated load finished"
    assert s.request("GET", "/health") == (200, None)
    assert "Loading safetensors checkpoint shards: 100% Completed | 46/46" in s.log.read_text()


def test_busy_port_fails_fast(standin, standin_factory):
    other = standin_factory()
    other.port = standin.port
    other.argv[-1] = str(standin.port)
    other.start()
    assert other.proc.wait(10) == 1
    assert "Address already in use" in other.log.read_text()


def test_models_version_and_health(standin):
    status, body = standin.request("GET", "/v1/models")
    assert status == 200 and body["object"] == "list"
    (card,) = body["data"]
    assert card["id"] == "glm53-flash-awq" and card["max_model_len"] == 524288 and card["owned_by"] == "vllm"
    status, body = standin.request("GET", "/version")
    assert status == 200 and re.match(r"\d+\.\d+", body["version"])


def test_unknown_model_is_404(standin):
    status, body = standin.request("POST", "/v1/chat/completions",
                                   {"model": "nope", "messages": [{"role": "user", "content": "hi"}]})
    assert status == 404 and body["error"]["type"] == "NotFoundError"


# ---------------------------------------------------------------- auth
def test_api_key_guards_v1_only(standin_factory):
    s = standin_factory(env={"VLLM_API_KEY": "s3cret"}).start().wait_ready()
    assert s.request("GET", "/v1/models") == (401, {"error": "Unauthorized"})
    assert s.request("GET", "/v1/models", headers={"Authorization": "Bearer wrong"})[0] == 401
    assert s.request("GET", "/v1/models", headers={"Authorization": "Bearer s3cret"})[0] == 200
    assert s.request("GET", "/health")[0] == 200
    assert s.request("GET", "/metrics")[0] == 200
    assert s.request("POST", "/tokenize", {"prompt": "hi"})[0] == 200


# ---------------------------------------------------------------- chat completions
def test_reasoning_and_content_split_at_think(standin):
    status, body = standin.chat("Hello there!")
    assert status == 200
    choice = body["choices"][0]
    msg = choice["message"]
    assert "reasoning_content" not in msg, "vLLM 0.28 names the field `reasoning`"
    assert msg["reasoning"] and "</think>" not in msg["reasoning"]
    assert msg["content"].startswith("Hello") and "</think>" not in msg["content"]
    assert choice["finish_reason"] == "stop"
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_max_tokens_cut_gives_length_and_null_content(standin):
    status, body = standin.chat("Hello there!", max_tokens=5)
    choice = body["choices"][0]
    assert status == 200 and choice["finish_reason"] == "length"
    assert choice["message"]["content"] is None and choice["message"]["reasoning"]
    assert body["usage"]["completion_tokens"] == 5


def test_traditional_chinese_answer(standin):
    body = standin.chat("用一句話介紹自己")[1]
    content = body["choices"][0]["message"]["content"]
    assert re.search(r"[\u4e00-\u9fff]", content)
    assert "個" in content and "个" not in content and "语" not in content


@pytest.mark.parametrize("question,answer", [("What is 17 * 23?", "391"), ("Compute 1234 + 4321", "5555"),
                                             ("What is 100 minus 58?", "42"), ("計算 12 × 12", "144")])
def test_arithmetic(standin, question, answer):
    body = standin.chat(question)[1]
    assert body["choices"][0]["message"]["content"].endswith(f"= {answer}")


NEEDLE_PROMPT = (
    "Some filler about rivers and mountains. One of the special magic numbers for brave-otter is: 4729103. "
    "More filler text about cities. One of the special magic numbers for calm-heron is: 8812345. End.\n"
    "What is the special magic number for brave-otter mentioned in the provided text?")


def test_needle_found(standin):
    body = standin.chat(NEEDLE_PROMPT)[1]
    msg = body["choices"][0]["message"]
    assert "4729103" in msg["content"] and "8812345" not in msg["content"]


def test_needle_absent_is_not_invented(standin):
    body = standin.chat(NEEDLE_PROMPT.replace("for brave-otter mentioned", "for shy-lynx mentioned"))[1]
    assert not re.search(r"\d{7}", body["choices"][0]["message"]["content"])


def test_chat_template_kwargs_thinking_off_puts_reasoning_in_content(standin):
    body = standin.chat("Hello", chat_template_kwargs={"enable_thinking": False})[1]
    msg = body["choices"][0]["message"]
    assert msg["reasoning"] is None and "</think>" in msg["content"]


def test_streaming_with_usage(standin):
    import json
    import urllib.request
    req = urllib.request.Request(
        standin.url + "/v1/chat/completions", method="POST", headers={"Content-Type": "application/json"},
        data=json.dumps({"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 2048, "stream": True,
                         "stream_options": {"include_usage": True}}).encode())
    with urllib.request.urlopen(req, timeout=10) as resp:
        events = [line[6:] for line in resp.read().decode().splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    reasoning = "".join(c["choices"][0]["delta"].get("reasoning") or "" for c in chunks if c["choices"])
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert reasoning and content.startswith("Hello")
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0


# ---------------------------------------------------------------- prompt length
def test_prompt_too_long_is_400_bad_request(standin_factory):
    s = standin_factory(flags=["--served-model-name", "m", "--max-model-len", "300", "--host", "127.0.0.1"])
    s.start().wait_ready()
    long_prompt = "word " * 280
    status, body = s.request("POST", "/v1/chat/completions",
                             {"messages": [{"role": "user", "content": long_prompt}], "max_tokens": 100})
    assert status == 400
    err = body["error"]
    assert err["type"] == "BadRequestError" and err["param"] == "input_tokens" and err["code"] == 400
    assert "maximum context length is 300 tokens" in err["message"]
    assert "you requested 100 output tokens" in err["message"]
    # exactly at the limit (prompt + max_tokens == max_model_len) is accepted
    tok = s.request("POST", "/tokenize", {"messages": [{"role": "user", "content": long_prompt}]})[1]
    status = s.request("POST", "/v1/chat/completions",
                       {"messages": [{"role": "user", "content": long_prompt}], "max_tokens": 300 - tok["count"]})[0]
    assert status == 200


def test_tokenize_chat_form_matches_usage(standin):
    messages = [{"role": "user", "content": "Hello there, 12345 and 用一句話"}]
    tok = standin.request("POST", "/tokenize", {"messages": messages, "add_generation_prompt": True})[1]
    prompt_form = standin.request("POST", "/tokenize", {"prompt": "Hello there"})[1]
    assert tok["max_model_len"] == 524288 and isinstance(tok["tokens"], list) and tok["token_strs"] is None
    body = standin.request("POST", "/v1/chat/completions", {"messages": messages, "max_tokens": 2048})[1]
    assert body["usage"]["prompt_tokens"] == tok["count"]
    assert prompt_form["count"] == 4  # [gMASK] <sop> Hello ·there


def test_metrics_requests_running_tracks_in_flight(standin_factory):
    import threading
    s = standin_factory(env={"VLLM_STANDIN_LATENCY": "1.5"}).start().wait_ready()
    t = threading.Thread(target=s.chat, args=("Hello",))
    t.start()
    time.sleep(0.5)
    text = s.request("GET", "/metrics")[1]
    assert re.search(r'^vllm:num_requests_running\{engine="0",model_name="glm53-flash-awq"\} 1\.0$', text, re.M)
    t.join()
    text = s.request("GET", "/metrics")[1]
    assert re.search(r"^vllm:num_requests_running\{.*\} 0\.0$", text, re.M)
    assert re.search(r'^vllm:request_success_total\{.*finished_reason="stop"\} 1\.0$', text, re.M)


def test_ignore_eos_decodes_to_max_tokens_at_the_emulated_rate(standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_DECODE_S_PER_TOKEN": "0.002"}).start().wait_ready()
    t0 = time.monotonic()
    body = s.chat("Hello", max_tokens=1000, ignore_eos=True)[1]
    took = time.monotonic() - t0
    assert body["usage"]["completion_tokens"] == 1000 and body["choices"][0]["finish_reason"] == "length"
    assert 2.0 <= took < 10, took
    t0 = time.monotonic()
    short = s.chat("Hello")[1]
    assert short["choices"][0]["finish_reason"] == "stop" and time.monotonic() - t0 < 1.5


# ---------------------------------------------------------------- bad behaviours
def test_gibberish_runs_to_the_limit(standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_BEHAVIOUR": "gibberish"}).start().wait_ready()
    body = s.chat("Hello", max_tokens=300)[1]
    choice = body["choices"][0]
    assert choice["finish_reason"] == "length" and body["usage"]["completion_tokens"] == 300
    words = choice["message"]["content"].split()
    assert len(set(words)) <= 4 and len(words) > 50


def test_unclosed_reasoning_leaves_content_null(standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_BEHAVIOUR": "unclosed_reasoning"}).start().wait_ready()
    body = s.chat("Hello")[1]
    choice = body["choices"][0]
    assert choice["finish_reason"] == "length" and choice["message"]["content"] is None
    assert len(choice["message"]["reasoning"]) > 1000


def test_needle_lossy_keeps_words_loses_digits(standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_BEHAVIOUR": "needle_lossy"}).start().wait_ready()
    body = s.chat(NEEDLE_PROMPT)[1]
    content = body["choices"][0]["message"]["content"]
    assert "brave-otter" in content and "4729103" not in content and re.search(r"\d{7}", content)


def test_engine_death_gives_503_then_exit(standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_DIE_AFTER": "1", "VLLM_STANDIN_WATCHDOG_S": "1.5"}).start().wait_ready()
    assert s.chat("Hello")[0] == 200
    assert s.request("GET", "/health")[0] == 503
    assert s.chat("Hello")[0] == 500
    t0 = time.monotonic()
    assert s.proc.wait(10) == 0, "vLLM exits 0 after an engine death (vllm-project/vllm#48966)"
    assert time.monotonic() - t0 < 5
    log = s.log.read_text()
    assert "EngineCore encountered a fatal error" in log and "Finished server process" in log


def _metric(s, name):
    _status, text = s.request("GET", "/metrics")
    return next(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{"))


def test_a_wedge_hangs_chat_while_health_answers_and_a_restart_clears_it(standin_factory, tmp_path):
    s = standin_factory(env={"VLLM_STANDIN_WEDGE_AFTER": "2"}).start().wait_ready()
    assert s.chat("Hello")[0] == 200 and s.chat("Hello")[0] == 200
    with pytest.raises(OSError):  # urllib's timeout: no answer at all
        s.request("POST", "/v1/chat/completions", {"model": "glm53-flash-awq", "max_tokens": 1,
                                                   "messages": [{"role": "user", "content": "Hi"}]}, timeout=2)
    assert s.request("GET", "/health")[0] == 200
    assert _metric(s, "vllm:num_requests_running") >= 1  # the hung request is still in the engine
    s.proc.terminate()
    assert s.proc.wait(10) == 0
    t = standin_factory(env={"VLLM_STANDIN_WEDGE_AFTER": "2"}).start().wait_ready()
    assert t.chat("Hello")[0] == 200  # a fresh process: the count starts again


def test_garbage_after_n_and_a_fault_file_survives_the_restart(standin_factory, tmp_path):
    fault = tmp_path / "fault"
    env = {"VLLM_STANDIN_GARBAGE_AFTER": "1", "VLLM_STANDIN_FAULT_FILE": str(fault)}
    s = standin_factory(env=env).start().wait_ready()
    good = s.chat("What is 12 * 34?")[1]["choices"][0]["message"]["content"]
    assert "408" in good
    bad = s.chat("What is 12 * 34?")[1]["choices"][0]["message"]["content"]
    assert "408" not in (bad or "") and fault.read_text() == "garbage\n"
    s.proc.terminate()
    assert s.proc.wait(10) == 0
    t = standin_factory(env=env).start().wait_ready()
    first = t.chat("What is 12 * 34?")[1]["choices"][0]["message"]["content"]
    assert "408" not in (first or ""), "the fault file makes the garbage survive a restart"
    assert "survives restarts" in t.log.read_text()


def test_sigkill_leaves_shm_residue_sigterm_cleans_up(standin_factory):
    s = standin_factory().start().wait_ready()
    names = sorted(os.listdir(s.shm))
    assert any(n.startswith("psm_") for n in names)
    assert any(n.startswith("sem.mp-") for n in names)
    assert any(re.fullmatch(rf"torch_{s.proc.pid}_\d+_0", n) for n in names)
    maps = open(f"/proc/{s.proc.pid}/maps").read()
    assert all(str(s.shm / n) in maps for n in names), "blocks must be mapped by the live engine"
    s.proc.send_signal(signal.SIGKILL)
    s.proc.wait(5)
    assert sorted(os.listdir(s.shm)) == names

    t = standin_factory().start().wait_ready()
    assert os.listdir(t.shm)
    t.proc.terminate()
    assert t.proc.wait(10) == 0
    assert os.listdir(t.shm) == []


def test_full_shm_refuses_to_start(standin_factory):
    s = standin_factory(env={"VLLM_STANDIN_SHM_REQUIRED_MB": str(10**9)}).start()
    assert s.proc.wait(10) == 1
    assert "Insufficient space in" in s.log.read_text()


# ---------------------------------------------------------------- start-up failures
@pytest.mark.parametrize("extra,env,message", [
    (["--kv-cache-dtype", "fp8"], {}, "FP8 kv_data_type for MLA is only supported with the fa3 backend on SM90"),
    (["--reasoning-parser", "glm47x"], {}, "KeyError: \"reasoning helper: 'glm47x' not found"),
    (["--max-model-len", "2M"], {}, "User-specified max_model_len (2097152) is greater than the derived"),
])
def test_late_startup_failures(standin_factory, extra, env, message):
    s = standin_factory(flags=["--served-model-name", "m", "--host", "127.0.0.1", *extra], env=env).start()
    assert s.proc.wait(10) == 1
    assert message in s.log.read_text()


@pytest.mark.parametrize("extra,message", [
    (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["--hf-overrides", "{not json"], "cannot be converted to"),
    (["--enable-auto-tool-choice"], "--enable-auto-tool-choice requires --tool-call-parser"),
    (["--gpu-memory-utilization", "1.5"], "gpu_memory_utilization must be in (0, 1]"),
])
def test_bad_flags_fail_before_loading(standin_factory, extra, message):
    s = standin_factory(flags=["--served-model-name", "m", *extra], env={"VLLM_STANDIN_LOAD_DELAY": "30"}).start()
    assert s.proc.wait(10) != 0
    assert message in s.log.read_text()


def test_missing_model_dir_fails(standin_factory, tmp_path):
    s = standin_factory(model_dir=tmp_path / "absent")
    s.model.rmdir()
    s.start()
    assert s.proc.wait(10) == 1 and "Incorrect path_or_model_id" in s.log.read_text()


def test_console_script_version():
    out = subprocess.run(["vllm", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert re.match(r"\d+\.\d+", out)


# ---------------------------------------------------------------- tokenizer
@pytest.mark.parametrize("text", ["Hello  world!\n", "用一句話介紹自己", "a1b22 ccc\t", "  lead and trail  ",
                                  "[gMASK]<sop><|user|>\nhi<|assistant|>\n<think>x</think>y"])
def test_tokenizer_round_trip(text):
    tok = Tokenizer()
    assert tok.decode(tok.encode(text)) == text
    assert "".join(tok.pieces(text)) == text


def test_tokenizer_counts_digits_and_cjk_individually():
    tok = Tokenizer()
    assert tok.count("1234567") == 7
    assert tok.count("介紹自己") == 4
    assert tok.count("<think>") == 1


def test_render_chat_opens_think():
    assert render_chat([{"role": "user", "content": "hi"}]).endswith("<|assistant|>\n<think>")
    with pytest.raises(ValueError):
        render_chat([])


def test_bench_runs_the_real_client_or_says_it_is_missing(tmp_path):
    """`vllm bench ...` of the stand-in runs vLLM's own benchmark client with the Python that
    VLLM_STANDIN_BENCH_PYTHON names (isolated, so the real vllm is imported); without one it says so."""
    from testlib import VLLM
    missing = subprocess.run([*VLLM, "bench", "serve", "--help"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "VLLM_STANDIN_BENCH_PYTHON": str(tmp_path / "none" / "python")})
    assert missing.returncode == 2 and "benchmark client is the real vLLM 0.28.0's" in missing.stderr, missing.stderr
    assert str(tmp_path / "none" / "python") in missing.stderr
    client = tmp_path / "python"  # records how it was run, as the real interpreter would be
    client.write_text("#!/bin/sh\nprintf '%s\\n' \"$@\" > " + str(tmp_path / "argv") + "\n")
    client.chmod(0o755)
    ran = subprocess.run([*VLLM, "bench", "serve", "--seed", "0"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "VLLM_STANDIN_BENCH_PYTHON": str(client)})
    assert ran.returncode == 0, ran.stderr
    argv = (tmp_path / "argv").read_text().split("\n")[:-1]
    assert argv[0] == "-I" and argv[1].endswith(os.path.join("vllm", "standin", "bench_client.py"))
    assert argv[2:] == ["bench", "serve", "--seed", "0"]


SCORE = {"model": "glm53-flash-awq", "max_tokens": 1, "prompt_logprobs": 0, "continue_final_message": True,
         "add_generation_prompt": False, "return_token_ids": True,
         "messages": [{"role": "user", "content": "Say hello."}, {"role": "assistant", "content": "Hello there!"}]}


def test_prompt_logprobs_have_vllms_shape(standin):
    """One entry per prompt token, the first null; each a dict from the token id (a string) to its logprob, rank and
    text; prompt_token_ids in the same order; -1 < logprob < 0 for a healthy engine."""
    status, body = standin.request("POST", "/v1/chat/completions", SCORE)
    assert status == 200, body
    entries, ids = body["prompt_logprobs"], body["prompt_token_ids"]
    assert entries[0] is None and len(entries) == len(ids) == body["usage"]["prompt_tokens"]
    for tid, entry in zip(ids[1:], entries[1:]):
        assert list(entry) == [str(tid)] and -13 < entry[str(tid)]["logprob"] < 0
    status, top = standin.request("POST", "/v1/chat/completions", {**SCORE, "prompt_logprobs": 3})
    assert status == 200 and all(len(e) in (3, 4) for e in top["prompt_logprobs"][1:])


@pytest.mark.parametrize("change, message", [
    ({"add_generation_prompt": True}, "continue_final_message"),
    ({"add_generation_prompt": None}, "continue_final_message"),
    ({"prompt_logprobs": 21}, "greater than max allowed: 20"),
    ({"prompt_logprobs": -2}, "prompt_logprobs"),
    ({"prompt_logprobs": 1, "stream": True}, "stream=True"),
    ({"max_tokens": 0}, "max_tokens"),
])
def test_scoring_requests_vllm_refuses_are_refused(standin, change, message):
    body = {k: v for k, v in {**SCORE, **change}.items() if v is not None}
    status, err = standin.request("POST", "/v1/chat/completions", body)
    assert status == 400 and message in err["error"]["message"], err
