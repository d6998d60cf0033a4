# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The glue to the response contract (``_response_contract``): what a chat completion must be before its text is
judged. Standard library only."""

from __future__ import annotations

from ansible_collections.glm53.serving.plugins.module_utils._response_contract import chat_response
from ansible_collections.glm53.serving.plugins.module_utils._text_checks.registry import CONTRACT_FINAL


def contract_findings(body, served_model_name=None):
    """(fields, findings, final) for one chat completion body: ``final`` when the body leaves no text to judge (not
    JSON, or no message in it); otherwise the contract's breaches are reported beside the text's findings."""
    fields, findings = chat_response(body, served_model_name)
    final = any(f["signal"] in CONTRACT_FINAL for f in findings)
    return fields, findings, final
