# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Options of the modules that talk to vLLM's OpenAI-compatible server."""

from __future__ import annotations


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  base_url:
    description: The server's base URL (with or without C(/v1)).
    type: str
    default: http://127.0.0.1:8000
  api_key:
    description: API key for C(/v1) endpoints (never logged).
    type: str
  validate_certs:
    description: Verify TLS certificates.
    type: bool
    default: true
  ca_path:
    description:
      - Over HTTPS, the PEM file of the CA that signed the server's certificate (vLLM's C(--ssl-certfile)); the
        system's trust store when unset.
      - A certificate it does not verify fails at once (waiting does not fix it), naming the URL.
    type: path
    version_added: "0.2.0"
notes:
  - Changes nothing. Uses only the Python standard library on the target.
"""
