"""The rollout role's Alertmanager silence against a real Alertmanager (Debian's prometheus-alertmanager): during a
host's turn the engine-down alert is suppressed by the role's silence; after the turn the silence is expired, also
for the host that failed its turn, so its alert is active (it pages)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request

import pytest

from testlib import COLLECTIONS_ROOT, REPO, start_alertmanager

if shutil.which("prometheus-alertmanager") is None:  # pragma: no cover - hack/lib.sh installs it
    raise RuntimeError("prometheus-alertmanager is needed (make test installs Debian's package)")
PLAYBOOK = os.path.join(REPO, "tests", "integration", "rollout", "silence.yml")


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


@pytest.fixture(scope="module")
def turns(tmp_path_factory, request):
    tmp = tmp_path_factory.mktemp("silence")
    am, url = start_alertmanager(tmp)
    request.addfinalizer(am.terminate)
    (tmp / "out").mkdir()
    (tmp / "hosts").write_text("[fleet]\ngpu-a\ngpu-b\ngpu-c\n")
    extra = {"ansible_python_interpreter": sys.executable, "rollout_alertmanager_url": url, "fail_turn": ["gpu-b"],
             "out_dir": str(tmp / "out"), "rollout_action": "restart"}
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp / "hosts"), PLAYBOOK, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    return proc, url, tmp / "out"


def test_each_host_is_silenced_during_its_turn(turns):
    proc, _url, out = turns
    # gpu-b failed its turn: serial 1 stops the play there, gpu-c never starts (the rollout stops)
    assert proc.returncode == 2 and "gpu-b failed its turn" in proc.stdout, proc.stdout[-3000:]
    assert not (out / "gpu-c-during.json").exists()
    for host in ("gpu-a", "gpu-b"):
        alerts = json.loads((out / ("%s-during.json" % host)).read_text())["alerts"]
        assert [a["labels"]["host"] for a in alerts] == [host]
        assert alerts[0]["status"]["state"] == "suppressed" and alerts[0]["status"]["silencedBy"], alerts


def test_after_the_turn_no_silence_is_left_and_the_failed_host_pages(turns):
    _proc, url, _out = turns
    silences = get(url + "/api/v2/silences")
    assert len(silences) == 2 and all(s["status"]["state"] == "expired" for s in silences), silences
    assert {s["createdBy"] for s in silences} == {"glm53.serving.rollout"}
    assert sorted(m["value"] for s in silences for m in s["matchers"]) == ["gpu-a", "gpu-b"]
    states = {a["labels"]["host"]: a["status"]["state"] for a in get(url + "/api/v2/alerts")}
    assert states == {"gpu-a": "active", "gpu-b": "active"}


def test_the_silence_would_expire_on_its_own(turns):
    """During the turn each silence is active, on the host alone, and ends on its own after
    rollout_silence_duration_s (3600 s) if nothing expires it."""
    from datetime import datetime
    _proc, _url, out = turns
    for host in ("gpu-a", "gpu-b"):
        silence = json.loads((out / ("%s-during.json" % host)).read_text())["silence"]
        assert silence["status"]["state"] == "active" and silence["comment"] == (
            "restart of %s by glm53.serving (ansible-playbook, planned)" % host)
        assert silence["matchers"] == [{"name": "host", "value": host, "isRegex": False, "isEqual": True}]
        length = (datetime.fromisoformat(silence["endsAt"].replace("Z", "+00:00"))
                  - datetime.fromisoformat(silence["startsAt"].replace("Z", "+00:00"))).total_seconds()
        assert 3590 <= length <= 3610, silence
