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

    from ansible.module_utils import _internal

    def run(module, args=None, check_mode=False):
        args = dict(args or {})
        if check_mode:
            args["_ansible_check_mode"] = True
        # A module runs on the target: once any test in this process has imported controller code (a filter
        # plugin imports ansible.errors), module_utils would print warnings instead of returning them.
        # module warnings are process-wide: an earlier test's would be reported by this module
        from ansible.module_utils.common import warnings as _warnings
        _warnings._global_warnings.clear()
        _warnings._global_deprecations.clear()
        was_controller, _internal.is_controller = _internal.is_controller, False
        try:
            with patch_module_args(args):
                with pytest.raises(SystemExit):
                    module.main()
        finally:
            _internal.is_controller = was_controller
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


# Tests marked `figures` print measurements (a benchmark's figures, each dashboard query's series). pytest keeps a
# passing test's output to itself, and xdist's workers print nothing, so their captured output is repeated at the end
# of the run, where `make test`'s log shows it.
def pytest_configure(config):
    config.addinivalue_line("markers", "figures: print the test's captured output in the run's summary")


def pytest_terminal_summary(terminalreporter):
    shown = []
    for reports in terminalreporter.stats.values():  # a passing setup's report is filed under ""
        for report in reports:
            if "figures" not in getattr(report, "keywords", {}) or getattr(report, "when", None) not in ("setup", "call"):
                continue
            text = "".join(content for name, content in report.sections
                           if name == "Captured stdout %s" % report.when)
            if text.strip():
                shown.append("%s (%s, %s)\n%s" % (report.nodeid, report.when, report.outcome, text.rstrip()))
    if shown:
        terminalreporter.write_sep("=", "figures")
        terminalreporter.write_line("\n\n".join(shown))


@pytest.fixture(autouse=True, scope="session")
def _role_test_ledger(tmp_path_factory):
    """A role run on this machine claims its paths in a ledger before it writes: the role tests' playbooks read this
    one (GLM53_TEST_LEDGER), one per test worker, never the machine's own /var/lib/glm53/ledger.json."""
    os.environ["GLM53_TEST_LEDGER"] = str(tmp_path_factory.mktemp("ledger") / "ledger.json")
