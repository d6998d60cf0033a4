"""The model role's hub download path, run for real against a local Hub stand-in (tests/hubstandin/hub.py).

A real Hugging Face mirror cannot serve offline: olah, the self-hosted mirror on PyPI, caches what it fetches
from huggingface.co and has nothing to serve without it. So the Hub's HTTP API is stood in by a small server
that serves a checkpoint made by tests/helpers/make_model.py at a pinned 40-hex revision, and the role
downloads it with the real, pinned huggingface_hub (installed from PyPI into the role's tools venv, as on a
host). The shards are larger than huggingface_hub's 10 MiB read chunk, so a connection dropped mid-file is
resumed with a Range request.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from testlib import COLLECTIONS_ROOT, REPO

from make_model import make_model

HUB = os.path.join(REPO, "tests", "hubstandin", "hub.py")
PLAYBOOK = os.path.join(os.path.dirname(__file__), "model", "playbook.yml")
REPO_ID = "spele1100/GLM-5.3-Flash-AWQ-INT4"
SHARDS = ["model-%05d-of-00003.safetensors" % i for i in (1, 2, 3)]


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Hub:
    def __init__(self, root, log, *flags):
        self.port = _port()
        self.proc = subprocess.Popen([sys.executable, HUB, "--root", str(root), "--port", str(self.port),
                                      "--log", str(log), *flags], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("the hub stand-in did not start")

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def hub_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    make_model(str(root / REPO_ID), shards=3, shard_mib=12)
    (root / (REPO_ID + ".sha256")).unlink()  # the reference digests come from the hub itself
    return root


@pytest.fixture(scope="module")
def tools_venv(tmp_path_factory):
    return tmp_path_factory.mktemp("tools") / "venv"  # shared: pip installs huggingface_hub once


def revision(hub_root):
    with open(os.path.join(str(hub_root), REPO_ID + ".commit")) as fh:
        return fh.read().strip()


def run_role(tmp_path, hub, hub_root, tools_venv, cache):
    extra = {"ansible_python_interpreter": sys.executable, "model_source": "hub", "model_hf_repo": REPO_ID,
             "model_hf_revision": revision(hub_root), "model_hf_endpoint": hub.url,
             "model_hf_cache_dir": str(cache), "model_path": str(tmp_path / "models" / "GLM"),
             "model_tools_venv": str(tools_venv), "model_tools_python": os.path.realpath(sys.executable),  # root's, not under /var/tmp
             "model_verify_cache_file": str(tmp_path / "verify-cache.json")}
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCALHOST_WARNING": "false", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false"}
    return subprocess.run(["ansible-playbook", "-i", "localhost,", PLAYBOOK, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=600, check=False)


def requests(log):
    return [json.loads(line) for line in open(log)] if os.path.exists(log) else []


def test_pinned_download_resumes_a_dropped_connection_and_checks_the_lfs_sha256(tmp_path, hub_root, tools_venv):
    log = tmp_path / "hub.log"
    hub = Hub(hub_root, log, "--drop-after", str(11 * 1024 * 1024))
    try:
        cache = tmp_path / "cache"
        first = run_role(tmp_path, hub, hub_root, tools_venv, cache)
        out = first.stdout + first.stderr
        assert first.returncode == 0, out[-4000:]
        resumed = [r for r in requests(log) if r["range"] and r["status"] == 206]
        assert len(resumed) == 3 and all(r["range"] == "bytes=10485760-" for r in resumed), requests(log)
        assert "3 shards" in first.stdout and "(3 hashed, 0 from the cache)" in first.stdout
        assert "SHA-256 against the reference digests" in first.stdout
        manifest = json.loads(next((cache / "manifests").iterdir()).read_text())
        assert sorted(manifest) == SHARDS and all(len(v) == 64 for v in manifest.values())
        link = tmp_path / "models" / "GLM"
        assert os.path.realpath(link).endswith("/snapshots/" + revision(hub_root))
        # the second run downloads nothing, hashes nothing and changes nothing
        before = len(requests(log))
        second = run_role(tmp_path, hub, hub_root, tools_venv, cache)
        assert second.returncode == 0 and "changed=0" in second.stdout.split("PLAY RECAP")[1], second.stdout[-3000:]
        assert not [r for r in requests(log)[before:] if "/resolve/" in r["path"] and r["method"] == "GET"]
        assert "(0 hashed, 3 from the cache)" in second.stdout
    finally:
        hub.stop()


def test_a_corrupted_transfer_is_caught_by_the_hub_sha256(tmp_path, hub_root, tools_venv):
    hub = Hub(hub_root, tmp_path / "hub.log", "--corrupt", SHARDS[1])
    try:
        proc = run_role(tmp_path, hub, hub_root, tools_venv, tmp_path / "cache")
    finally:
        hub.stop()
    assert proc.returncode != 0
    assert "%s: sha256" % SHARDS[1] in proc.stdout and "the manifest says" in proc.stdout, proc.stdout[-3000:]


def test_a_download_that_keeps_failing_fails_the_role_and_the_next_run_completes(tmp_path, hub_root, tools_venv):
    cache = tmp_path / "cache"
    # dropped before the first 10 MiB chunk is complete, every time: no progress, so the retries run out
    hub = Hub(hub_root, tmp_path / "hub.log", "--drop-after", str(1024 * 1024), "--drop-times", "50")
    try:
        proc = run_role(tmp_path, hub, hub_root, tools_venv, cache)
    finally:
        hub.stop()
    assert proc.returncode != 0 and "Download the pinned revision" in proc.stdout
    # huggingface_hub 2.4 keeps no partial file across processes: the next run starts those files again
    assert not list(cache.rglob("*.incomplete"))
    hub = Hub(hub_root, tmp_path / "hub2.log")
    try:
        again = run_role(tmp_path, hub, hub_root, tools_venv, cache)
    finally:
        hub.stop()
    assert again.returncode == 0, again.stdout[-3000:]
