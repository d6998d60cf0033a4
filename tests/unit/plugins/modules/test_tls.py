"""Over HTTPS (vLLM's --ssl-certfile/--ssl-keyfile, the stand-in serving TLS as uvicorn does): the readiness
wait and the chat probe verify the server with the CA that signed it, and refuse at once with the wrong CA."""
from __future__ import annotations

import os
import sys
import time

import pytest

from testlib import REFERENCE_FLAGS, REPO
from ansible_collections.glm53.serving.plugins.modules import vllm_chat_probe, vllm_health

sys.path.insert(0, os.path.join(REPO, "tests", "helpers"))
import make_tls  # noqa: E402


@pytest.fixture
def tls_standin(standin_factory, tmp_path):
    files = make_tls.make(str(tmp_path / "tls"))
    s = standin_factory(flags=[*REFERENCE_FLAGS, "--ssl-certfile", files["server.crt"],
                               "--ssl-keyfile", files["server.key"], "--ssl-ca-certs", files["ca.crt"]]).start()
    s.https = "https://127.0.0.1:%d" % s.port
    s.files = files
    return s


def health(s, ca, **extra):
    return {"base_url": s.https, "served_model_name": "glm53-flash-awq", "max_model_len": 524288,
            "pid": s.proc.pid, "log_file": str(s.log), "timeout": 30, "ca_path": ca, **extra}


def test_probes_pass_over_https_with_the_ca_that_signed_the_server(run_module, tls_standin):
    r = run_module(vllm_health, health(tls_standin, tls_standin.files["ca.crt"]))
    assert not r.failed, r.get("msg")
    assert "on https://" in tls_standin.log.read_text()
    chat = run_module(vllm_chat_probe, {"base_url": tls_standin.https, "model": "glm53-flash-awq",
                                        "ca_path": tls_standin.files["ca.crt"]})
    assert not chat.failed and chat["passed"], chat.get("msg")


def test_the_wrong_ca_fails_at_once_naming_the_url(run_module, tls_standin):
    run_module(vllm_health, health(tls_standin, tls_standin.files["ca.crt"]))  # loaded
    t0 = time.monotonic()
    r = run_module(vllm_health, health(tls_standin, tls_standin.files["wrong-ca.crt"], timeout=600))
    assert r.failed and time.monotonic() - t0 < 10, r.get("msg")
    assert "TLS handshake with %s/health failed" % tls_standin.https in r["msg"]
    assert "CERTIFICATE_VERIFY_FAILED" in r["msg"] or "certificate verify failed" in r["msg"]
    chat = run_module(vllm_chat_probe, {"base_url": tls_standin.https, "model": "glm53-flash-awq",
                                        "ca_path": tls_standin.files["wrong-ca.crt"]})
    assert chat.failed and not chat["passed"] and "TLS handshake" in str(chat["probes"])


def test_plain_http_to_a_tls_server_is_not_taken_for_a_load(run_module, tls_standin):
    run_module(vllm_health, health(tls_standin, tls_standin.files["ca.crt"]))
    t0 = time.monotonic()
    r = run_module(vllm_health, {**health(tls_standin, None), "base_url": tls_standin.url, "timeout": 5})
    assert r.failed and time.monotonic() - t0 < 8  # no answer over plain HTTP: never "ready"
