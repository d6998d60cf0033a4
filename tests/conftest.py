"""Shared fixtures: run modules in-process (the collection is importable through testlib)."""
from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import StandIn  # noqa: E402  pylint: disable=wrong-import-position


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


@pytest.fixture
def standin_factory(tmp_path):
    made = []

    def make(**kwargs):
        d = tmp_path / f"s{len(made)}"
        d.mkdir()
        s = StandIn(d, **kwargs)
        made.append(s)
        return s

    yield make
    for s in made:
        s.stop()


@pytest.fixture
def standin(standin_factory):
    return standin_factory().start().wait_ready()
