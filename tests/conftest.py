"""Shared fixtures: run modules in-process (the collection is importable through testlib)."""
from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testlib  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import


class ModuleResult(dict):
    @property
    def failed(self) -> bool:
        return bool(self.get("failed"))


@pytest.fixture
def run_module(capsys):
    """run_module(module, args) -> the module's JSON result (failed or not)."""
    from ansible.module_utils.testing import patch_module_args

    def run(module, args=None, check_mode=False):
        args = dict(args or {})
        if check_mode:
            args["_ansible_check_mode"] = True
        with patch_module_args(args):
            with pytest.raises(SystemExit):
                module.main()
        return ModuleResult(json.loads(capsys.readouterr().out))

    return run
