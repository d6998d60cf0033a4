"""`make release VERSION=x.y.z` (hack/release.sh) on a clone of this repository: bad versions and a dirty tree are
refused with nothing changed; a release writes the version, turns the fragments into the changelog, commits and
tags; and the git `requirements.yml` path of the README installs the collection from that tag. The rule for
the repository's own version is tests/unit/test_versions.py's."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from testlib import version_problems, version_state

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
           GIT_AUTHOR_NAME="release test", GIT_AUTHOR_EMAIL="release@test.invalid",
           GIT_COMMITTER_NAME="release test", GIT_COMMITTER_EMAIL="release@test.invalid", RELEASE_DATE="2026-12-03")


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=ENV).stdout.strip()


def release(cwd, version):
    return subprocess.run(["bash", "hack/release.sh", version], cwd=cwd, capture_output=True, text=True, env=ENV)


def last_release(path):
    with open(os.path.join(path, "changelogs", "changelog.yaml")) as fh:
        releases = yaml.safe_load(fh)["releases"]
    return max(releases, key=lambda v: tuple(int(p) for p in v.split("."))), releases


def galaxy_version(path):
    with open(os.path.join(path, "galaxy.yml")) as fh:
        return yaml.safe_load(fh)["version"]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    assert os.path.exists(os.path.join(REPO, ".git")), "the release test needs a git checkout of the repository"
    path = str(tmp_path_factory.mktemp("release") / "serving")
    git(REPO, "clone", "-q", REPO, path)
    return path


@pytest.mark.parametrize("version, said", [
    ("1.2", "is not a release version"),
    ("v9.0.0", "is not a release version"),
    ("09.0.0", "is not a release version"),
    ("9.0.0\n", "is not a release version"),
    ("0.1.0", "is not above the last release"),
    ("", "say the version"),
])
def test_bad_versions_are_refused_and_change_nothing(clone, version, said):
    head = git(clone, "rev-parse", "HEAD")
    out = release(clone, version)
    assert out.returncode == 2, out.stdout + out.stderr
    assert said in out.stderr
    assert git(clone, "status", "--porcelain") == "" and git(clone, "rev-parse", "HEAD") == head


def test_a_dirty_tree_is_refused(clone):
    with open(os.path.join(clone, "galaxy.yml"), "a") as fh:
        fh.write("# local edit\n")
    try:
        out = release(clone, "9.9.9")
        assert out.returncode == 2 and "uncommitted changes" in out.stderr, out.stderr
        assert not git(clone, "tag", "--list", "9.9.9")
    finally:
        git(clone, "checkout", "--", "galaxy.yml")


def test_a_release_and_its_git_install(clone, tmp_path):
    fragments = [f for f in os.listdir(os.path.join(clone, "changelogs", "fragments")) if f.endswith((".yml", ".yaml"))]
    out = release(clone, "9.9.9")
    assert out.returncode == 0, out.stdout + out.stderr
    last, releases = last_release(clone)
    assert last == "9.9.9" and releases["9.9.9"]["release_date"] == "2026-12-03"
    assert sorted(releases["9.9.9"].get("fragments", [])) == sorted(fragments)
    assert galaxy_version(clone) == "9.9.9"
    assert version_problems(*version_state(clone)) == [], "a release commit is a release: no fragment left waiting"
    with open(os.path.join(clone, "README.md")) as fh:
        assert re.findall(r"^      version: (\S+)", fh.read(), re.M) == ["9.9.9"], "the README's git pin"
    with open(os.path.join(clone, "CHANGELOG.rst")) as fh:
        assert "v9.9.9" in fh.read()
    assert git(clone, "cat-file", "-t", "9.9.9") == "tag", "not an annotated tag"
    assert git(clone, "rev-parse", "9.9.9^{commit}") == git(clone, "rev-parse", "HEAD")
    assert git(clone, "status", "--porcelain") == ""
    assert git(clone, "log", "-1", "--format=%s") == "Release 9.9.9"
    again = release(clone, "9.9.9")
    assert again.returncode == 2 and "exists already" in again.stderr

    # The README's git path: a requirements.yml that names the repository and the tag.
    req = tmp_path / "requirements.yml"
    req.write_text(yaml.safe_dump({"collections": [{"name": "git+file://" + clone, "type": "git", "version": "9.9.9"}]}))
    dest = tmp_path / "collections"
    subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-galaxy"), "collection", "install",
                    "-r", str(req), "-p", str(dest)], check=True, capture_output=True, text=True, env=ENV)
    with open(dest / "ansible_collections" / "glm53" / "serving" / "MANIFEST.json") as fh:
        assert json.load(fh)["collection_info"]["version"] == "9.9.9"
