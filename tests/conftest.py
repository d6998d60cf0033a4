"""Shared fixtures: run modules in-process (the collection is importable through testlib)."""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import StandIn, start_etcd  # noqa: E402  pylint: disable=wrong-import-position


# Scratch folders in a folder only root can write. The roles refuse, as they should, a path that root runs, sources or
# loads inside a folder another user can write (/tmp is one), so the tests that give roles scratch paths need theirs
# under a root-owned chain: pytest's basetemp moves from /tmp to /var/lib/glm53-tests/pytest-XXXX (one per session,
# removed at its end; xdist's workers get folders inside it). A run as another user, or with --basetemp, keeps its own.
SCRATCH_ROOT = "/var/lib/glm53-tests"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    _figures_marker(config)
    if getattr(config, "workerinput", None) is not None or config.option.basetemp or os.geteuid() != 0:
        return
    os.makedirs(SCRATCH_ROOT, mode=0o700, exist_ok=True)
    os.chmod(SCRATCH_ROOT, 0o700)
    config.option.basetemp = tempfile.mkdtemp(prefix="pytest-", dir=SCRATCH_ROOT)
    config._glm53_scratch = config.option.basetemp
    if hasattr(config, "_tmp_path_factory"):  # made already (the tmp_path plugin configures before conftests)
        from _pytest.tmpdir import TempPathFactory
        config._tmp_path_factory = TempPathFactory.from_config(config, _ispytest=True)


def pytest_unconfigure(config):
    made = getattr(config, "_glm53_scratch", None)
    if made:
        shutil.rmtree(made, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def controller_output(tmp_path_factory):
    """Each test module's playbooks keep their controller output (glm53_output_dir: the golden records, the numerics
    references, the wheelhouse, the report) in a folder of its own. The default is $PWD/glm53-output, here the clone:
    shared by every test and every run, where one test's recorded release would judge the next test's engines."""
    folder = tmp_path_factory.mktemp("controller")
    before = os.environ.get("PWD")
    os.environ["PWD"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("PWD", None)
    else:
        os.environ["PWD"] = before


@pytest.fixture(scope="module")
def etcd(tmp_path_factory):
    """A real etcd of one member (Debian's etcd-server) for a test module: its client URL."""
    proc, url = start_etcd(tmp_path_factory.mktemp("etcd"))
    yield url
    proc.terminate()
    proc.wait(10)


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
def _figures_marker(config):
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
    one (GLM53_TEST_LEDGER), one per test worker, never the machine's own /var/lib/glm53-ledger/ledger.json."""
    os.environ["GLM53_TEST_LEDGER"] = str(tmp_path_factory.mktemp("ledger") / "ledger.json")
