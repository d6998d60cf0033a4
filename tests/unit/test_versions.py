"""galaxy.yml's version means something: a release (its section in the changelog, no fragment waiting) or a
pre-release of the next one (x.y.z-dev, the fragments waiting for it); every file that names the version names the
same one (docs/releasing.md)."""
from __future__ import annotations

import glob
import os
import re

import pytest

from testlib import REPO, release_key, version_problems, version_state


@pytest.mark.parametrize("version, releases, waiting, said", [
    ("0.3.0", ["0.1.0", "0.2.0", "0.3.0"], [], None),
    ("0.4.0-dev", ["0.2.0", "0.3.0"], ["57-versions.yml"], None),
    ("0.4.0-dev", ["0.3.0"], [], None),
    ("1.0.0-rc.1", ["0.3.0"], ["x.yml"], None),
    ("0.3.0", ["0.1.0", "0.2.0"], [], "which the changelog has no section for"),
    ("0.3.0", ["0.1.0", "0.2.0", "0.3.0"], ["57-versions.yml"], "fragments are not in it"),
    ("0.2.0", ["0.2.0", "0.3.0"], [], "below the last release 0.3.0"),
    ("0.3.0-dev", ["0.2.0", "0.3.0"], ["x.yml"], "not above the last release 0.3.0"),
    ("0.2.9-dev", ["0.2.0", "0.3.0"], [], "not above the last release 0.3.0"),
    ("0.4", ["0.3.0"], [], "neither a release"),
    ("v0.4.0", ["0.3.0"], [], "neither a release"),
    ("0.4.0-dev+1", ["0.3.0"], [], "neither a release"),
    ("0.4.0-", ["0.3.0"], [], "neither a release"),
])
def test_the_version_rule(version, releases, waiting, said):
    problems = version_problems(version, releases, waiting)
    if said is None:
        assert problems == []
    else:
        assert len(problems) == 1 and said in problems[0], problems


def test_galaxy_yml_is_a_release_or_a_pre_release():
    version, releases, waiting = version_state(REPO)
    assert version_problems(version, releases, waiting) == []


def test_every_file_names_the_same_version():
    """The README's tarball lines and git pin, the execution environment's example tag, the report's version (its
    own test in test_role_specs.py), and no plugin's version_added above the version being made."""
    version, _, _ = version_state(REPO)
    release = "-" not in version
    with open(os.path.join(REPO, "README.md")) as fh:
        readme = fh.read()
    tarballs = set(re.findall(r"glm53-serving-([0-9][^\s/]*?)\.tar\.gz", readme))
    assert tarballs == {version}, "the README's tarball name: %s" % sorted(tarballs)
    pins = re.findall(r"^      version: (\S+)(.*)$", readme, re.M)
    if release:
        assert [p for p, _ in pins] == [version], "a release's README pins its tag: %s" % pins
    else:
        upcoming = "%d.%d.%d" % release_key(version)
        assert len(pins) == 1 and pins[0][0] == "main", "a pre-release's README pins the main branch: %s" % pins
        assert "until the %s tag is published" % upcoming in pins[0][1], pins
    with open(os.path.join(REPO, "execution-environment.yml")) as fh:
        assert set(re.findall(r"glm53-serving-ee:(\S+)", fh.read())) == {version}
    added = set()
    for path in glob.glob(os.path.join(REPO, "plugins", "*", "*.py")):
        with open(path) as fh:
            found = re.search(r'^version_added: "?([0-9.]+)"?$', fh.read(), re.M)
        if found:
            added.add(found.group(1))
    assert added and all(release_key(v) <= release_key(version) for v in added), sorted(added)
