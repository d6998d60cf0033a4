"""glm53.serving.vllm_fork_commit over real git repositories made by tests/helpers/make_fixture_repos.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig

import pytest

from ansible_collections.glm53.serving.plugins.modules import vllm_fork_commit
from make_fixture_repos import main as make_fixture_repos
from testlib import REPO

REQUIRED = [{"commit": None, "name": "mHC fused-norm fix"}, {"commit": None, "name": "long-context graph fix"}]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    dest = tmp_path_factory.mktemp("repos")
    make_fixture_repos(os.path.join(REPO, "tests", "standin"), str(dest))
    return dest, json.loads((dest / "commits.json").read_text())


@pytest.fixture
def checkout(fixtures, tmp_path):
    dest, commits = fixtures
    path = tmp_path / "vllm-glm53"
    subprocess.run(["git", "clone", "-q", "-b", "sm89-longctx-fix-v2", str(dest / "vllm-glm53.git"), str(path)],
                   check=True)
    return path, commits


def git(path, *args):
    subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)


def args(path, commits, **extra):
    required = [{"commit": commits["mhc"][:9], "name": "mHC fused-norm fix"},
                {"commit": commits["longctx"], "name": "long-context graph fix"}]
    return {"path": str(path), "minimum_commit": commits["minimum"][:10], "required_commits": required, **extra}


def fake_editable_install(path, tmp_path):
    """What `pip install -e` leaves behind: _version.py written at build time, a .pth path entry."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run([sys.executable, "setup.py", "-q", "--version"], cwd=path, check=True, capture_output=True)
    purelib = sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"]
    with open(os.path.join(purelib, "__editable__.vllm.pth"), "w") as f:
        f.write(str(path) + "\n")
    return venv


def test_descendant_of_the_minimum_passes(run_module, checkout):
    path, commits = checkout
    r = run_module(vllm_fork_commit, args(path, commits))
    assert not r.failed, r.get("msg")
    assert r["head"] == commits["descendant"] and r["branch"] == "sm89-longctx-fix-v2"
    assert r["descends_from_minimum"] and not r["equals_minimum"] and r["missing_commits"] == []
    assert r["minimum_commit"] == commits["minimum"] and r["changed"] is False


def test_equal_to_the_minimum_passes(run_module, checkout):
    path, commits = checkout
    git(path, "checkout", "-q", commits["minimum"])
    r = run_module(vllm_fork_commit, args(path, commits))
    assert not r.failed and r["equals_minimum"] and r["branch"] is None


def test_non_descendant_fails_and_says_what_to_do(run_module, checkout):
    path, commits = checkout
    git(path, "checkout", "-q", "side-experiment")
    r = run_module(vllm_fork_commit, args(path, commits))
    assert r.failed and not r["descends_from_minimum"]
    assert "is not %s nor a descendant of it" % commits["minimum"][:10] in r["msg"]
    assert "check out the fork's branch (sm89-longctx-fix-v2)" in r["msg"]
    assert "mHC fused-norm fix" in r["msg"] and len(r["missing_commits"]) == 2


def test_missing_fix_commit_is_named(run_module, checkout):
    path, commits = checkout
    git(path, "checkout", "-q", commits["mhc"])  # has the mHC fix, not the long-context one
    r = run_module(vllm_fork_commit, args(path, commits, minimum_commit=commits["mhc"]))
    assert r.failed and r["missing_commits"] == ["%s (long-context graph fix)" % commits["longctx"]]


def test_dirty_tree_fails_unless_allowed(run_module, checkout):
    path, commits = checkout
    with open(path / "CHANGES.md", "a") as f:
        f.write("local edit\n")
    r = run_module(vllm_fork_commit, args(path, commits))
    assert r.failed and r["dirty"] and r["dirty_files"] == ["CHANGES.md"] and "local modifications" in r["msg"]
    assert not run_module(vllm_fork_commit, args(path, commits, allow_dirty=True)).failed


def test_an_untracked_source_file_in_the_package_is_dirty(run_module, checkout):
    """A new file inside the package goes into the build though no commit holds it; one the checkout's .gitignore
    names (the build's own output) or one outside the package does not make the tree dirty."""
    path, commits = checkout
    (path / "vllm").mkdir(exist_ok=True)
    (path / "notes.txt").write_text("an operator's notes, outside the package\n")
    assert not run_module(vllm_fork_commit, args(path, commits)).failed
    (path / "vllm" / "patched_attention.py").write_text("print('not in any commit')\n")
    r = run_module(vllm_fork_commit, args(path, commits))
    assert r.failed and r["dirty_files"] == ["vllm/patched_attention.py"] and "local modifications" in r["msg"]
    with open(path / ".gitignore", "a") as f:
        f.write("vllm/patched_attention.py\n")
    git(path, "add", ".gitignore")
    git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "ignore the patch")
    assert not run_module(vllm_fork_commit, args(path, commits)).failed


def test_unknown_commit_fails(run_module, checkout):
    path, commits = checkout
    r = run_module(vllm_fork_commit, args(path, commits, minimum_commit="deadbeef12"))
    assert r.failed and "the minimum commit deadbeef12 is not in this checkout" in r["msg"]


def test_installed_build_of_head_matches(run_module, checkout, tmp_path):
    path, commits = checkout
    venv = fake_editable_install(path, tmp_path)
    r = run_module(vllm_fork_commit, args(path, commits, venv=str(venv)))
    assert not r.failed, r.get("msg")
    assert r["installed_matches_head"] and commits["descendant"].startswith(r["installed_commit"])
    assert r["installed_version"].startswith("0.28.1rc1.dev") and r["installed_location"] == str(path / "vllm")


def test_the_same_run_reads_other_versions_and_the_stamp(run_module, checkout, tmp_path):
    """What the role's build key needs (torch's version, the build stamp) comes back from the proving run."""
    path, commits = checkout
    venv = fake_editable_install(path, tmp_path)
    purelib = sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"]
    os.makedirs(os.path.join(purelib, "torch-2.9.0.dist-info"))
    with open(os.path.join(purelib, "torch-2.9.0.dist-info", "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\n")
    stamp = tmp_path / "stamp"
    missing = run_module(vllm_fork_commit, args(path, commits, venv=str(venv), versions_of=["torch", "no-such-dist"],
                                                stamp_file=str(stamp)))
    assert missing["installed_versions"] == {"torch": "2.9.0", "no-such-dist": None} and missing["stamp"] is None
    stamp.write_text("abc-torch2.9.0-editable\n")
    r = run_module(vllm_fork_commit, args(path, commits, venv=str(venv), stamp_file=str(stamp)))
    assert not r.failed and r["stamp"] == "abc-torch2.9.0-editable" and r["installed_versions"] == {}


def test_stale_installed_build_is_caught(run_module, checkout, tmp_path):
    path, commits = checkout
    git(path, "checkout", "-q", commits["minimum"])
    venv = fake_editable_install(path, tmp_path)  # built at the minimum commit ...
    git(path, "checkout", "-q", "sm89-longctx-fix-v2")  # ... then the checkout moved on
    r = run_module(vllm_fork_commit, args(path, commits, venv=str(venv)))
    assert r.failed and not r["installed_matches_head"]
    assert "the build is stale" in r["msg"] and commits["minimum"][:9] in r["msg"]
    # the checkout itself is fine: the role builds next instead of stopping (it fails on checkout_problems only)
    assert r["checkout_problems"] == [] and len(r["problems"]) == 1
    with open(path / "CHANGES.md", "a") as f:
        f.write("local edit\n")
    dirty = run_module(vllm_fork_commit, args(path, commits, venv=str(venv)))
    assert [p for p in dirty["checkout_problems"] if "local modifications" in p] and len(dirty["problems"]) == 2


def test_no_vllm_in_the_venv(run_module, checkout, tmp_path):
    path, commits = checkout
    venv = tmp_path / "empty"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    r = run_module(vllm_fork_commit, args(path, commits, venv=str(venv)))
    assert r.failed and "vLLM is not installed in" in r["msg"]


def test_not_a_checkout(run_module, tmp_path):
    r = run_module(vllm_fork_commit, {"path": str(tmp_path), "minimum_commit": "f2935ce322"})
    assert r.failed and "is not a git checkout" in r["msg"]


@pytest.mark.parametrize("pin", ["HEAD", "sm89-longctx-fix-v2", "origin/sm89-longctx-fix-v2", "v0.28.0", "HEAD~1",
                                 "f2935ce", "f2935c", "", "f2935ce322 ", "zz935ce322"])
def test_refs_and_malformed_pins_are_refused(run_module, checkout, pin):
    path, commits = checkout
    if pin == "f2935ce":  # seven hex digits: a valid pin shape, refused only because this fixture lacks it
        r = run_module(vllm_fork_commit, {"path": str(path), "minimum_commit": pin})
        assert r.failed and "not in this checkout" in r["msg"]
        return
    r = run_module(vllm_fork_commit, {"path": str(path), "minimum_commit": pin})
    assert r.failed and "not commits: minimum_commit %r" % pin in r["msg"] and "7 to 40 hex digits" in r["msg"]
    required = run_module(vllm_fork_commit, {"path": str(path), "minimum_commit": commits["minimum"][:10],
                                             "required_commits": [{"commit": pin or "main", "name": "fix"}]})
    assert required.failed and "required_commits" in required["msg"] and "not commits" in required["msg"]


def test_a_shallow_clone_is_named_as_such(run_module, fixtures, tmp_path):
    dest, commits = fixtures
    path = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "-b", "sm89-longctx-fix-v2",
                    "file://" + str(dest / "vllm-glm53.git"), str(path)], check=True)
    r = run_module(vllm_fork_commit, args(path, commits))
    assert r.failed and r["shallow"] is True
    assert "cannot prove ancestry in a shallow clone" in r["msg"] and "fetch --unshallow" in r["msg"]
    assert "mistyped" not in r["msg"] and "missing from HEAD" not in r["msg"]
    git(path, "fetch", "-q", "--unshallow")
    r = run_module(vllm_fork_commit, args(path, commits))
    assert not r.failed and r["shallow"] is False, r.get("msg")


def test_a_worktree_is_proved_like_a_clone(run_module, checkout, tmp_path):
    path, commits = checkout
    wt = tmp_path / "worktree"
    git(path, "worktree", "add", "-q", "--detach", str(wt), commits["minimum"])
    r = run_module(vllm_fork_commit, args(wt, commits))
    assert r["branch"] is None and r["equals_minimum"] is True
    assert r["failed"] if r["missing_commits"] else not r.failed
