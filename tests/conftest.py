"""Make this checkout importable as ansible_collections.glm53.serving and run modules in-process."""
from __future__ import annotations

import json
import os
import sys
import tempfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
FAKES = os.path.join(REPO, "tests", "fakes")

COLLECTIONS_ROOT = _root = tempfile.mkdtemp(prefix="glm53-collections-")
os.makedirs(os.path.join(_root, "ansible_collections", "glm53"))
os.symlink(REPO, os.path.join(_root, "ansible_collections", "glm53", "serving"))
sys.path.insert(0, _root)


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
        out = capsys.readouterr().out
        return ModuleResult(json.loads(out))

    return run
