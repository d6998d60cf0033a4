# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A small client for vLLM's OpenAI-compatible server, on Ansible's urls.Request (standard library only).

It tells apart what the probes must tell apart: a port that refuses connections (vLLM still loading),
an HTTP error with vLLM's error body, a timeout, a TLS failure (an untrusted or mismatched certificate,
which waiting does not fix), and a good JSON answer. Over HTTPS it verifies the server's certificate
against a CA file (ca_path) or the system's trust store.
"""

from __future__ import annotations

import errno
import http.client
import json
import socket
import ssl
import time

import threading

from urllib.error import HTTPError, URLError
from ansible.module_utils.urls import Request, make_context


class ProbeConnectionRefused(Exception):
    """Nothing listens on the port (yet): vLLM binds but does not listen while it loads."""

    def __init__(self, url):
        self.url = url
        super().__init__("connection refused: %s" % url)


class ProbeTimeout(Exception):
    pass


class ProbeNoAnswer(ProbeTimeout):
    """The server accepted the connection (or the request) and gave no answer in time: a frozen or hung server,
    unlike a connection that could not be made."""


class ProbeConnectTimeout(ProbeTimeout):
    """The connection itself was not accepted in time: the port listens (a refusal would say it does not) and its
    listen queue is full, or the host cannot be reached. On an engine that was ready and still runs, that is a
    frozen engine that other clients keep connecting to (each connection waits in the queue, none is taken)."""


class ProbeTLSError(ProbeTimeout):
    """The TLS handshake failed (no usable answer, as a timeout; but waiting does not fix it)."""

    def __init__(self, url, reason):
        self.url = url
        super().__init__("TLS handshake with %s failed: %s (is ca_path the CA that signed the server's "
                         "certificate, and does the certificate name this host?)" % (url, reason))


class ProbeHTTPError(Exception):
    def __init__(self, status, body, url):
        self.status, self.body, self.url = status, body, url
        super().__init__("HTTP %s from %s: %s" % (status, url, error_message(body)))


def error_message(body):
    """vLLM's error shapes: {"error": {"message": ...}}, {"error": "Unauthorized"}, {"detail": ...}."""
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            return "%s: %s" % (err.get("type", "error"), err.get("message"))
        if err:
            return str(err)
        if body.get("detail"):
            return str(body["detail"])
    return str(body)[:500]


def _refused(exc):
    reason = getattr(exc, "reason", exc)
    return isinstance(reason, ConnectionRefusedError) or getattr(reason, "errno", None) == errno.ECONNREFUSED


class OpenAIClient:
    def __init__(self, base_url, api_key=None, timeout=60.0, validate_certs=True, ca_path=None):
        self.base_url = base_url.rstrip("/")
        if self.base_url.endswith("/v1"):
            self.base_url = self.base_url[:-3]
        self.api_key = api_key
        self.timeout = timeout
        self.validate_certs = validate_certs
        self.ca_path = ca_path
        self._context = None
        self._context_lock = threading.Lock()

    def context(self):
        """One TLS context for every request of this client: building one loads the CA store (about 20 ms of CPU),
        which open_url would do again for each request, HTTP ones too."""
        with self._context_lock:
            if self._context is None:
                self._context = make_context(cafile=self.ca_path, validate_certs=self.validate_certs)
            return self._context

    def request(self, method, path, body=None, timeout=None):
        """Return (status, parsed body, elapsed seconds). Raises the Probe* exceptions."""
        url = self.base_url + path
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = "Bearer %s" % self.api_key
        t0 = time.monotonic()
        try:
            resp = Request().open(method, url, data=data, headers=headers, timeout=timeout or self.timeout,
                                  follow_redirects="safe", use_proxy=False,
                                  context=self.context())
            raw = resp.read()
            status = resp.getcode()
        except HTTPError as exc:
            raw = exc.read() if hasattr(exc, "read") else b""
            raise ProbeHTTPError(exc.code, _parse(raw), url)
        except ssl.SSLError as exc:
            raise ProbeTLSError(url, exc)
        except URLError as exc:
            if _refused(exc):
                raise ProbeConnectionRefused(url)
            if isinstance(getattr(exc, "reason", None), ssl.SSLError):
                raise ProbeTLSError(url, exc.reason)
            if "CERTIFICATE_VERIFY_FAILED" in str(exc) or "SSL" in type(getattr(exc, "reason", None)).__name__:
                raise ProbeTLSError(url, exc.reason)
            if isinstance(getattr(exc, "reason", None), socket.timeout):
                raise ProbeConnectTimeout("%s did not accept the connection within %s s" % (url, timeout or self.timeout))
            raise
        except ConnectionRefusedError:
            raise ProbeConnectionRefused(url)
        except (http.client.HTTPException, ConnectionResetError, ConnectionAbortedError) as exc:
            raise ProbeTimeout("%s closed the connection without an HTTP answer (%s): a server going down, or "
                               "one that speaks TLS to an http:// URL" % (url, type(exc).__name__))
        except (socket.timeout, TimeoutError):  # after the connection was made: urllib wraps a connect timeout
            raise ProbeNoAnswer("%s accepted the connection and gave no answer within %s s" % (url, timeout or self.timeout))
        return status, _parse(raw), time.monotonic() - t0

    def get(self, path, timeout=None):
        return self.request("GET", path, timeout=timeout)

    def post(self, path, body, timeout=None):
        return self.request("POST", path, body, timeout=timeout)

    def chat(self, model, messages, max_tokens, timeout=None, **extra):
        body = {"model": model, "messages": messages, "max_tokens": max_tokens}
        body.update(extra)
        return self.post("/v1/chat/completions", body, timeout=timeout)


def endpoint_argument_spec():
    """The options every probe module shares (documented by the glm53.serving.openai_endpoint fragment)."""
    return dict(
        base_url=dict(type="str", default="http://127.0.0.1:8000"),
        api_key=dict(type="str", no_log=True),
        validate_certs=dict(type="bool", default=True),
        ca_path=dict(type="path"),
    )


def client_from_params(params, timeout):
    return OpenAIClient(params["base_url"], params["api_key"], timeout=timeout,
                        validate_certs=params["validate_certs"], ca_path=params["ca_path"])


def _parse(raw):
    if not raw:
        return None
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text
