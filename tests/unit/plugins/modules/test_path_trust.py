"""glm53.serving.path_trust: what root runs, sources or loads is refused when another user could replace it (one
message a path, naming the owner and mode found, and the fix); it changes nothing, in check mode or not."""
from __future__ import annotations

import os

from ansible_collections.glm53.serving.plugins.modules import path_trust


def test_refuses_what_the_engines_user_could_replace_and_passes_the_rest(run_module, tmp_path):
    assert os.geteuid() == 0, "this test chowns, as root"
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "serve.sh").write_text("#!/bin/sh\n")
    (tmp_path / "home").mkdir()
    os.chown(tmp_path / "home", 65534, 65534)
    paths = [str(tmp_path / "bin" / "serve.sh"), str(tmp_path / "home" / "env"), str(tmp_path / "new" / "file")]
    for check_mode in (True, False):
        out = run_module(path_trust, {"paths": paths}, check_mode=check_mode)
        assert out["failed"] and not out.get("changed")
        assert list(out["problems"]) == [paths[1]] and out["trusted"] == [paths[0], paths[2]]
        assert "%s: %s (folder, owner nobody (uid 65534), mode 0755) is not root's" % (paths[1], tmp_path / "home") \
            in out["msg"]
    report = run_module(path_trust, {"paths": paths, "fail_on_problem": False})
    assert not report.get("failed") and list(report["problems"]) == [paths[1]]
    assert run_module(path_trust, {"paths": [paths[0]]}) == {"changed": False, "problems": {}, "trusted": [paths[0]]}
