"""_trust.trust_problem: OpenSSH's StrictModes for what root trusts. A path is refused when anyone but root could
replace it or a folder on the way: another owner, a group- or world-writable folder (a sticky one only when what
follows is root's), a link. The tests run as root, in pytest's scratch folders (/tmp is 1777, the rest root 0700)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.glm53.serving.plugins.module_utils._trust import trust_problem, trust_problems

OTHER = 65534  # nobody: the engine's user stands in


@pytest.fixture
def root_dir(tmp_path):
    assert os.geteuid() == 0, "these tests chown, as root"
    d = tmp_path / "root"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    return d


def test_the_scratch_folder_and_what_root_makes_there_are_trusted(root_dir):
    (root_dir / "state").mkdir()
    (root_dir / "state" / "ledger.json").write_text("{}")
    os.chmod(root_dir / "state" / "ledger.json", 0o644)
    assert trust_problem(str(root_dir / "state" / "ledger.json")) is None
    assert trust_problem(str(root_dir / "not" / "yet" / "made.json")) is None  # checked as far as it exists
    assert trust_problem("/") is None and trust_problem("/etc/passwd") is None
    assert trust_problem("relative/path") == "relative/path is not an absolute path"


@pytest.mark.parametrize("where", ["folder", "file"])
def test_another_owner_is_refused(root_dir, where):
    (root_dir / "home").mkdir()
    (root_dir / "home" / "ledger.json").write_text("{}")
    os.chown(root_dir / "home" / ("ledger.json" if where == "file" else ""), OTHER, OTHER)
    problem = trust_problem(str(root_dir / "home" / "ledger.json"))
    culprit = root_dir / "home" / ("ledger.json" if where == "file" else "")
    assert problem.startswith("%s (%s, owner nobody (uid 65534), mode " % (str(culprit).rstrip("/"), where))
    assert "is not root's" in problem and "chown root:root" in problem


def test_a_group_writable_folder_is_refused(root_dir):
    (root_dir / "shared").mkdir()
    os.chmod(root_dir / "shared", 0o775)
    problem = trust_problem(str(root_dir / "shared" / "ledger.json"))
    assert problem.startswith("%s (folder, owner root (uid 0), mode 0775) may be written by its group" % (
        root_dir / "shared"))
    assert "chmod go-w" in problem


def test_a_world_writable_folder_without_the_sticky_bit_is_refused(root_dir):
    (root_dir / "open").mkdir()
    os.chmod(root_dir / "open", 0o777)
    (root_dir / "open" / "mine").mkdir()
    problem = trust_problem(str(root_dir / "open" / "mine" / "ledger.json"))
    assert problem.startswith("%s (folder, owner root (uid 0), mode 0777) may be written by everyone" % (
        root_dir / "open"))


def test_a_sticky_world_writable_folder_is_accepted_only_before_a_path_of_roots(root_dir):
    tmp = root_dir / "tmp"
    tmp.mkdir()
    os.chmod(tmp, 0o1777)
    (tmp / "roots").mkdir(mode=0o700)
    assert trust_problem(str(tmp / "roots" / "ledger.json")) is None
    assert trust_problem(str(tmp / "not-made-yet")) is None
    (tmp / "theirs").mkdir()
    os.chown(tmp / "theirs", OTHER, OTHER)
    problem = trust_problem(str(tmp / "theirs" / "ledger.json"))
    assert problem.startswith("%s (folder, owner nobody (uid 65534), mode 0755) is in %s, which everyone may write" % (
        tmp / "theirs", tmp))
    # the sticky folder itself is not a place to trust
    assert "may be written by everyone" in trust_problem(str(tmp))


def test_links(root_dir):
    (root_dir / "real").mkdir()
    (root_dir / "real" / "ledger.json").write_text("{}")
    os.chmod(root_dir / "real" / "ledger.json", 0o644)
    # the path itself a link: refused, even root's
    os.symlink(root_dir / "real" / "ledger.json", root_dir / "ledger.json")
    assert "is a link" in trust_problem(str(root_dir / "ledger.json"))
    # a link of root's on the way is followed, and its target checked in its place
    os.symlink(root_dir / "real", root_dir / "via")
    assert trust_problem(str(root_dir / "via" / "ledger.json")) is None
    os.chown(root_dir / "real", OTHER, OTHER)
    assert trust_problem(str(root_dir / "via" / "ledger.json")).startswith("%s (folder, owner nobody" % (
        root_dir / "real"))
    os.chown(root_dir / "real", 0, 0)
    # a link on the way that another user owns: refused (it can point it anywhere)
    os.symlink(root_dir / "real", root_dir / "theirs")
    os.lchown(root_dir / "theirs", OTHER, OTHER)
    problem = trust_problem(str(root_dir / "theirs" / "ledger.json"))
    assert problem.startswith("%s is a link (link, owner nobody" % (root_dir / "theirs"))
    assert "its owner can point it elsewhere" in problem


def test_trust_problems_lists_only_the_refused(root_dir):
    (root_dir / "theirs").mkdir()
    os.chown(root_dir / "theirs", OTHER, OTHER)
    out = trust_problems([str(root_dir / "ok"), str(root_dir / "theirs" / "x")])
    assert list(out) == [str(root_dir / "theirs" / "x")]
