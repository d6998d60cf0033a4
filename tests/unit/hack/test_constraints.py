"""hack/constraints.txt locks the tool venv: every range in hack/lib.sh is pinned exactly, inside its range."""
import re
import subprocess
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[3]


def ranges():
    out = subprocess.run(["bash", "-c", 'source hack/lib.sh >/dev/null && printf "%s\\n" "$CORE_PIN" "${TOOL_PINS[@]}"'],
                         cwd=REPO, capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "GLM53_WORK": "/tmp/glm53-lock-test"}).stdout
    return [Requirement(line) for line in out.split("\n") if line.strip()]


def pins():
    found = {}
    for line in (REPO / "hack/constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line.strip())
            assert m, "not an exact pin: %r" % line
            found[canonicalize_name(m.group(1))] = m.group(2)
    return found


def test_every_range_is_pinned_inside_it():
    locked = pins()
    reqs = ranges()
    assert len(reqs) >= 9
    for req in reqs:
        name = canonicalize_name(req.name)
        assert name in locked, "%s has no pin in hack/constraints.txt: run make lock" % req
        assert req.specifier.contains(locked[name], prereleases=True), \
            "%s==%s is outside %s: run make lock" % (name, locked[name], req)


def test_venv_installs_with_the_lock():
    lib = (REPO / "hack/lib.sh").read_text()
    assert '-c "$REPO/hack/constraints.txt"' in lib
    assert 'cat "$REPO/hack/constraints.txt"' in lib, "a changed lock must rebuild the venv"
