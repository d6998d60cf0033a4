"""The model role, run for real by ansible-playbook on this machine: local weights verified, bad hub pins refused."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from testlib import COLLECTIONS_ROOT

from make_model import make_model

PLAYBOOK = os.path.join(os.path.dirname(__file__), "model", "playbook.yml")


def run_role(**extra):
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCALHOST_WARNING": "false", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false"}
    extra = {"ansible_python_interpreter": sys.executable, **extra}
    return subprocess.run(["ansible-playbook", "-i", "localhost,", PLAYBOOK, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)


def test_local_weights_verify_and_second_run_hashes_nothing(tmp_path):
    model = tmp_path / "GLM"
    make_model(str(model), shards=3, shard_mib=0.5)
    common = {"model_path": str(model), "model_manifest_file": str(model) + ".sha256",
              "model_verify_cache_file": str(tmp_path / "cache.json")}
    first = run_role(**common)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "3 shards" in first.stdout and "(3 hashed, 0 from the cache)" in first.stdout
    second = run_role(**common)
    assert second.returncode == 0 and "(0 hashed, 3 from the cache)" in second.stdout


@pytest.mark.parametrize("repo,revision,expected", [
    ("spele1100/GLM-5.3-Flash-AWQ-INT4", "main", 'model_hf_revision pinned to a full 40-hex commit (got "main")'),
    ("spele1100/GLM-5.3-Flash-AWQ-INT4", "f2935ce322", '(got "f2935ce322")'),
    ("GLM-5.3-Flash-AWQ-INT4", "a" * 40, 'model_hf_repo as owner/name (got "GLM-5.3-Flash-AWQ-INT4")'),
])
def test_hub_without_a_pinned_revision_is_refused_before_download(tmp_path, repo, revision, expected):
    proc = run_role(model_source="hub", model_hf_repo=repo, model_hf_revision=revision,
                    model_tools_venv=str(tmp_path / "venv"), model_path=str(tmp_path / "m"))
    assert proc.returncode != 0 and expected in proc.stdout
    assert not (tmp_path / "venv").exists(), "the refused run created the download venv"


def test_token_never_appears_in_the_output(tmp_path):
    proc = run_role(model_source="hub", model_hf_repo="o/r", model_hf_revision="main", model_hf_token="hf_SECRET123",
                    model_tools_venv=str(tmp_path / "venv"))
    assert proc.returncode != 0 and "hf_SECRET123" not in proc.stdout + proc.stderr


def test_both_manifests_are_refused(tmp_path):
    proc = run_role(model_path=str(tmp_path), model_manifest={"a": "b"}, model_manifest_file="/x")
    assert proc.returncode != 0 and "Set model_manifest or model_manifest_file, not both." in proc.stdout
