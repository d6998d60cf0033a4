"""upgrade.yml's validation looks for the canary's benchmark client: with rollout_bench, the performance gate runs
`vllm bench serve` from the serving release's venv, so a host without it (a demo host, a trimmed venv) is refused
in the validate play, before any build, with the fix; a client that answers passes, and rollout_bench=false or a
host with no serving release yet skips the look. playbooks/validate.yml as upgrade.yml imports it, on this machine."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from testlib import COLLECTIONS_ROOT, REPO
from test_bad_settings import base

MISSING = "#!/bin/sh\necho 'vllm bench: this vllm has no benchmark client' >&2\nexit 2\n"
PRESENT = "#!/bin/sh\n[ \"$1 $2 $3\" = 'bench serve --help' ] && echo 'usage: vllm bench serve' && exit 0\nexit 2\n"


def validate(tmp_path, client, extra=None):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    releases = tmp_path / "releases"
    if client is not None:
        vllm = releases / "r1" / "venv" / "bin" / "vllm"
        vllm.parent.mkdir(parents=True)
        vllm.write_text(client)
        vllm.chmod(0o755)
        (releases / "current").symlink_to(releases / "r1")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"vars": dict(base(scratch), venv_releases_dir=str(releases),
                                                          **(extra or {})),
                                             "children": {"glm53_serving": {"hosts": {"canary": {}, "second": {}}}}}}))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(["ansible-playbook", "-i", str(inventory), os.path.join(REPO, "playbooks", "validate.yml"),
                           "-e", json.dumps({"glm53_validate_rollout": True, "glm53_validate_upgrade": True})],
                          capture_output=True, text=True, env=env, timeout=600, check=False)


def test_a_canary_without_the_benchmark_client_is_refused_with_the_fix(tmp_path):
    proc = validate(tmp_path, MISSING)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "fatal: [canary]" in proc.stdout and "rollout_bench=true: the performance gate benchmarks the canary" in proc.stdout
    assert "vllm bench: this vllm has no benchmark client" in proc.stdout and "set rollout_bench=false" in proc.stdout
    assert "fatal: [second]" not in proc.stdout  # only the canary runs the gate


@pytest.mark.parametrize("client, extra", [(PRESENT, None), (MISSING, {"rollout_bench": False}), (None, None)],
                         ids=["client-present", "gate-off", "no-serving-release"])
def test_a_client_that_answers_or_no_gate_passes(tmp_path, client, extra):
    proc = validate(tmp_path, client, extra)
    assert proc.returncode == 0, proc.stdout[-3000:]
