"""glm53.serving.shm_clean on a scratch folder: stale blocks go, held, foreign and unrelated files stay."""
from __future__ import annotations

import getpass
import mmap
import os

from ansible_collections.glm53.serving.plugins.modules import shm_clean


def touch(path, size=32):
    with open(path, "wb") as f:
        f.write(b"\0" * size)


def test_removes_stale_keeps_held_and_unrelated(run_module, tmp_path):
    for name in ("psm_1d77ccf7", "sem.mp-2ybvyhae", "torch_602_4246977563_0", "nccl-AbC123", "vllm_offload_1.mmap",
                 "psm_held", "psm_mapped", "unrelated.txt"):
        touch(tmp_path / name, 4096)
    os.mkdir(tmp_path / "psm_dir")
    held = open(tmp_path / "psm_held", "rb")
    fd = os.open(tmp_path / "psm_mapped", os.O_RDWR)
    mapped = mmap.mmap(fd, 4096)
    os.close(fd)  # only the mapping keeps it now
    try:
        preview = run_module(shm_clean, {"path": str(tmp_path), "user": getpass.getuser()}, check_mode=True)
        assert preview["changed"] and (tmp_path / "psm_1d77ccf7").exists(), "check mode removed a file"
        r = run_module(shm_clean, {"path": str(tmp_path), "user": getpass.getuser()})
        again = run_module(shm_clean, {"path": str(tmp_path), "user": getpass.getuser()})
    finally:
        held.close()
        mapped.close()
    removed = sorted(os.path.basename(e["path"]) for e in r["removed"])
    assert removed == sorted(["psm_1d77ccf7", "sem.mp-2ybvyhae", "torch_602_4246977563_0", "nccl-AbC123",
                              "vllm_offload_1.mmap"])
    assert sorted(os.path.basename(e["path"]) for e in preview["removed"]) == removed
    kept = dict((os.path.basename(e["path"]), e["reason"]) for e in r["kept"])
    assert kept == {"psm_held": "open or mapped by a live process", "psm_mapped": "open or mapped by a live process",
                    "psm_dir": "not a regular file"}
    assert (tmp_path / "unrelated.txt").exists()
    assert not again["changed"] and again["removed"] == []
    released = run_module(shm_clean, {"path": str(tmp_path), "user": getpass.getuser()})
    assert sorted(os.path.basename(e["path"]) for e in released["removed"]) == ["psm_held", "psm_mapped"]


def test_unknown_user(run_module, tmp_path):
    r = run_module(shm_clean, {"path": str(tmp_path), "user": "no-such-user-glm53"})
    assert r.failed and "does not exist" in r["msg"]
