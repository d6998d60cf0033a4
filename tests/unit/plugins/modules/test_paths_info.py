"""glm53.serving.paths_info: several paths in one run, with stat's key names; missing paths are answers, not errors."""
from __future__ import annotations

import hashlib
import os

from ansible_collections.glm53.serving.plugins.modules import paths_info


def test_files_links_folders_and_missing_paths(run_module, tmp_path):
    (tmp_path / "release-1").mkdir()
    (tmp_path / "script.sh").write_text("echo hi\n")
    os.chmod(tmp_path / "script.sh", 0o750)
    os.symlink("release-1", tmp_path / "current")
    os.symlink("gone", tmp_path / "dangling")
    paths = [str(tmp_path / n) for n in ("script.sh", "current", "release-1", "dangling", "none", "none/deeper")]
    r = run_module(paths_info, {"paths": paths})
    assert not r.failed and not r["changed"] and list(r["paths"]) == paths
    f, link, d, dangling = (r["paths"][p] for p in paths[:4])
    assert f["isreg"] and f["mode"] == "0750" and f["size"] == 8
    assert f["checksum"] == hashlib.sha256(b"echo hi\n").hexdigest()
    assert link["islnk"] and not link["isdir"] and link["lnk_source"] == str(tmp_path / "release-1")
    assert link["lnk_target"] == "release-1" and "checksum" not in link
    assert d["isdir"] and not d["islnk"]
    assert dangling["exists"] and dangling["islnk"] and dangling["lnk_source"] == str(tmp_path / "gone")
    assert r["paths"][paths[4]] == {"exists": False} and r["paths"][paths[5]] == {"exists": False}
    plain = run_module(paths_info, {"paths": paths[:1], "checksum_algorithm": "none"})
    assert "checksum" not in plain["paths"][paths[0]]


def test_relative_paths_are_refused(run_module):
    r = run_module(paths_info, {"paths": ["/etc/hostname", "relative/x"]})
    assert r.failed and "relative/x" in r["msg"]
