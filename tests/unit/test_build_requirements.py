"""The venv role installs what a --no-build-isolation build of the real sources needs. pip checks nothing
without build isolation, so each requirement in the [build-system] of FlashInfer 0.6.16.post3's and vLLM
0.28.0's sdists (quoted below from their pyproject.toml, as published on PyPI) must be in the venv role's
packages, and no version the role's specifier admits may be one the source refuses."""
from __future__ import annotations

import itertools

import yaml
from packaging.requirements import Requirement
from packaging.version import Version

from testlib import REPO

SDIST_BUILD_REQUIRES = {
    "flashinfer-python 0.6.16.post3": ["setuptools>=77", "packaging>=24",
                                       "apache-tvm-ffi>=0.1.6,!=0.1.8,!=0.1.8.post0,<0.2"],
    "vllm 0.28.0": ["cmake>=3.26.1", "ninja", "packaging>=24.2", "setuptools>=77.0.3,<81.0.0",
                    "setuptools-scm>=8.0", "setuptools-rust>=1.9.0", "torch == 2.13.0", "wheel", "jinja2"],
}


def role_requirements():
    with open(REPO + "/roles/venv/defaults/main.yml") as f:
        d = yaml.safe_load(f)
    specs = d["venv_base_packages"] + d["venv_build_packages"] + [d["venv_torch_spec"]]
    return {Requirement(s).name.lower(): Requirement(s) for s in specs}


def probes(*specifiers):
    """Versions at and around every bound either side names (with .post0 and .1 neighbours)."""
    out = {Version("0"), Version("999")}
    for spec in itertools.chain(*specifiers):
        v = Version(spec.version.replace(".*", ""))
        rel = v.release + (0,) * (3 - len(v.release))
        out |= {v, Version("%d.%d.%d.post0" % rel[:3]), Version("%d.%d.%d" % (rel[0], rel[1], rel[2] + 1)),
                Version("%d.%d" % (rel[0], rel[1] + 1))}
        if rel[2] > 0:
            out.add(Version("%d.%d.%d" % (rel[0], rel[1], rel[2] - 1)))
    return sorted(out)


def test_the_role_installs_every_build_requirement_no_looser_than_the_sources():
    ours = role_requirements()
    problems = []
    for source, requires in SDIST_BUILD_REQUIRES.items():
        for text in requires:
            theirs = Requirement(text)
            mine = ours.get(theirs.name.lower())
            if mine is None:
                problems.append("%s needs %s; the venv role does not install it" % (source, text))
                continue
            for v in probes(theirs.specifier, mine.specifier):
                if mine.specifier.contains(v, prereleases=True) and not theirs.specifier.contains(v, prereleases=True):
                    problems.append("%s: the role's %s admits %s, which %s refuses (%s)" % (
                        source, mine, v, source, text))
    assert problems == [], "\n".join(problems)
