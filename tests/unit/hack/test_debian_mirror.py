"""hack/lib.sh's debian_mirror: the test images come from the archive this machine's own apt uses."""
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def mirror(etc, suite="bookworm", **env):
    out = subprocess.run(
        ["bash", "-c", 'source hack/lib.sh >/dev/null && debian_mirror "$0"', suite],
        cwd=REPO, capture_output=True, text=True, check=True,
        env={**os.environ, "GLM53_APT_ETC": str(etc), "GLM53_WORK": str(etc / "work"), **env})
    return out.stdout.strip()


def write(etc, name, text):
    path = etc / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


DEB822 = """Types: deb
# a comment
URIs: http://mirror.corp.example/debian-security
Suites: bookworm-security
Components: main

Types: deb-src
URIs: http://src.example/debian
Suites: bookworm

Types: deb
URIs: http://mirror.corp.example/debian http://second.example/debian
Suites: bookworm bookworm-updates
Components: main
"""


@pytest.mark.parametrize("files, want", [
    ({"sources.list.d/debian.sources": DEB822}, "http://mirror.corp.example/debian"),
    ({"sources.list": "# deb http://commented.example/debian bookworm main\n"
                      "deb [arch=amd64 signed-by=/k.gpg] http://one.example/debian bookworm main\n"},
     "http://one.example/debian"),
    ({"sources.list.d/x.sources": "Types: deb\nEnabled: no\nURIs: http://off.example/debian\nSuites: bookworm\n",
      "sources.list.d/y.list": "deb http://on.example/debian bookworm main contrib\n"},
     "http://on.example/debian"),
    ({"sources.list": "deb http://other.example/debian trixie main\n"}, "http://deb.debian.org/debian"),
    ({}, "http://deb.debian.org/debian"),
], ids=["deb822", "one-line", "disabled-stanza", "other-suite", "none"])
def test_mirror_from_apt_sources(tmp_path, files, want):
    for name, text in files.items():
        write(tmp_path, name, text)
    assert mirror(tmp_path) == want


def test_variable_wins(tmp_path):
    write(tmp_path, "sources.list", "deb http://one.example/debian bookworm main\n")
    assert mirror(tmp_path, GLM53_DEBIAN_MIRROR="http://proxy.example/debian") == "http://proxy.example/debian"
