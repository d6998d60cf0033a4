"""The probes role, run by ansible-playbook for two hosts (a good and a gibberish stand-in), and its report
opened in headless Chromium (Debian's package): the host rows and the heatmap must be there."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from testlib import COLLECTIONS_ROOT


PLAYBOOK = os.path.join(os.path.dirname(__file__), "probes", "playbook.yml")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report(tmp_path_factory, request):
    tmp = tmp_path_factory.mktemp("probes")
    from testlib import StandIn
    (tmp / "good").mkdir()
    (tmp / "bad").mkdir()
    good = StandIn(tmp / "good").start().wait_ready()
    bad = StandIn(tmp / "bad", env={"VLLM_STANDIN_BEHAVIOUR": "gibberish"}).start().wait_ready()
    request.addfinalizer(good.stop)
    request.addfinalizer(bad.stop)
    # Two engines that write fluent text but whose numerics are off: one broken (outside the band), one drifted 15 %
    # (off the fleet's median: the weights have no reference yet).
    engines = {}
    for name in ("poisoned", "drifted"):
        (tmp / name).mkdir()
        engines[name] = StandIn(tmp / name, env={"VLLM_STANDIN_NUMERICS": name}).start().wait_ready()
        request.addfinalizer(engines[name].stop)
    inventory = tmp / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {
        "node-good": {"serve_url": good.url, "probes_evidence_dir": str(tmp / "ev-good"),
                      "probes_textfile_dir": str(tmp / "textfile-good")},
        "node-bad": {"serve_url": bad.url, "probes_evidence_dir": str(tmp / "ev-bad"),
                     "probes_textfile_dir": str(tmp / "textfile-bad")},
        "node-poisoned": {"serve_url": engines["poisoned"].url, "probes_evidence_dir": str(tmp / "ev-poisoned"),
                          "probes_textfile_dir": ""},
        "node-drifted": {"serve_url": engines["drifted"].url, "probes_evidence_dir": str(tmp / "ev-drifted"),
                         "probes_textfile_dir": ""}}}}))
    (tmp / "textfile-good").mkdir()
    (tmp / "textfile-bad").mkdir()
    proc = play(tmp, inventory)
    return proc, tmp


EXTRA = {"ansible_python_interpreter": sys.executable, "service_mode": "none", "probes_needle_targets": [60000],
         "probes_needle_depths": [10, 50, 90], "probes_bench_label": "current"}


def play(tmp, inventory, report="report"):
    extra = dict(EXTRA, probes_report_dir=str(tmp / report), probes_reference_store=str(tmp / "references"),
                 __glm53_ledger_file=str(tmp / "ledger.json"))  # the host's ledger, here this machine's: kept in tmp
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(["ansible-playbook", "-i", str(inventory), PLAYBOOK, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=600, check=False)


def stored(tmp):
    (path,) = [p for p in (tmp / "references").glob("*.json") if not p.name.endswith(".golden.json")]
    return json.loads(path.read_text())


def test_numerics_are_proved_and_the_weights_reference_recorded(report):
    """The reference figures are in each host's evidence; the first proof of the weights records their reference on
    the controller from the one host whose every proof passed (provisional); a broken engine fails the band and a
    drifted one the fleet's median, each naming both figures, though both write fluent text, and neither is part of
    the reference."""
    proc, tmp = report
    assert (tmp / "report" / "node-good.json").exists(), proc.stdout[-4000:]
    good = json.loads((tmp / "report" / "node-good.json").read_text())
    assert good["reference"]["passed"] and set(good["reference"]["figures"]) == {"english", "chinese", "code"}
    recorded = stored(tmp)
    assert recorded["figures"] == good["reference"]["figures"] and recorded["hosts"] == ["node-good"]
    assert recorded["state"] == "provisional" and recorded["weights"] == "GLM-5.3-Flash-AWQ-INT4"
    poisoned = json.loads((tmp / "report" / "node-poisoned.json").read_text())
    assert not poisoned["passed"] and poisoned["needle"]["passed"]
    assert any(f.startswith("reference numerics_band: english: 11.9") for f in poisoned["failures"]), poisoned["failures"]
    drifted = json.loads((tmp / "report" / "node-drifted.json").read_text())
    assert not drifted["passed"] and drifted["chat"]["passed"] and drifted["needle"]["passed"]
    drift = [f for f in drifted["failures"] if "numerics_drift" in f]
    assert drift and "for the fleet's median for these weights" in drift[0] and "+15.0%" in drift[0], drifted["failures"]
    assert "Probes failed on node-drifted" in proc.stdout


def test_a_fresh_host_is_held_to_the_reference_another_host_made(report, tmp_path):
    """The weights' reference belongs to the weights: a fresh host whose every token is 0.1 nats less likely fails
    against the reference node-good made, and is not recorded; a healthy fresh host confirms it, and the figures
    never move."""
    _proc, tmp = report
    from testlib import StandIn
    before = stored(tmp)
    engines = {}
    for name, numerics in (("fresh-drifted", "shift:0.1"), ("fresh-good", "good")):
        (tmp_path / name).mkdir()
        engines[name] = StandIn(tmp_path / name, env={"VLLM_STANDIN_NUMERICS": numerics}).start().wait_ready()
    try:
        for name in engines:
            inventory = tmp_path / (name + ".yml")
            inventory.write_text(json.dumps({"all": {"hosts": {name: {
                "serve_url": engines[name].url, "probes_evidence_dir": str(tmp_path / ("ev-" + name)),
                "probes_textfile_dir": ""}}}}))
            proc = play(tmp, inventory, report="report-fresh")
            if name == "fresh-drifted":
                assert proc.returncode == 2, proc.stdout[-3000:]
                drifted = json.loads((tmp / "report-fresh" / "fresh-drifted.json").read_text())
                drift = [f for f in drifted["failures"] if "numerics_drift" in f]
                assert drift and "(+0.1000 nats" in drift[0], drifted["failures"]
                assert "for the weights' reference (GLM-5.3-Flash-AWQ-INT4, provisional, from node-good)" in drift[0]
                assert stored(tmp) == before  # never recorded
            else:
                assert proc.returncode == 0, proc.stdout[-3000:]
    finally:
        for s in engines.values():
            s.stop()
    after = stored(tmp)
    assert after["state"] == "confirmed" and after["hosts"] == ["fresh-good", "node-good"]
    assert after["figures"] == before["figures"]


def test_each_release_is_held_to_the_weights_not_to_the_release_before(report, tmp_path):
    """Two upgrades of +0.06 nats a token each: the first release is within 0.08 of the weights' reference and passes;
    the second is +0.12 from it and fails, though it is only +0.06 from the release before. No release moves the
    reference."""
    _proc, tmp = report
    from testlib import StandIn
    before = stored(tmp)
    for release, shift, passes in (("r2", "0.06", True), ("r3", "0.12", False)):
        (tmp_path / release).mkdir()
        engine = StandIn(tmp_path / release, env={"VLLM_STANDIN_NUMERICS": "shift:" + shift}).start().wait_ready()
        try:
            inventory = tmp_path / (release + ".yml")
            inventory.write_text(json.dumps({"all": {"hosts": {"node-" + release: {
                "serve_url": engine.url, "probes_evidence_dir": str(tmp_path / ("ev-" + release)),
                "probes_reference_release": release, "probes_needle": False, "probes_textfile_dir": ""}}}}))
            proc = play(tmp, inventory, report="report-" + release)
        finally:
            engine.stop()
        ev = json.loads((tmp / ("report-" + release) / ("node-%s.json" % release)).read_text())
        assert ev["passed"] is passes and proc.returncode == (0 if passes else 2), ev["failures"]
        if not passes:
            drift = [f for f in ev["failures"] if "numerics_drift" in f]
            assert drift and "(+0.1200 nats" in drift[0] and "for the weights' reference" in drift[0], ev["failures"]
        assert stored(tmp)["figures"] == before["figures"]


def golden(tmp):
    (path,) = (tmp / "references").glob("*-current.golden.json")  # the release of the fixture's hosts
    return json.loads(path.read_text())


@pytest.mark.parametrize("fault, probe", [("lost_first", "greeting"), ("crosstalk", "copy")])
def test_the_golden_record_judges_a_fleet_of_its_release(report, tmp_path, fault, probe):
    """The release's first proof recorded its answers (node-good's). Three hosts of the release: the two
    healthy ones answer as recorded and pass with no text rule consulted (each probe decided by the record), which
    confirms the record; the third, whose decoder loses a token or hands out another request's answer, fails naming
    the record's answer and how many hosts answered otherwise."""
    _proc, tmp = report
    from testlib import StandIn
    before = golden(tmp)
    assert "node-good" in before["hosts"] and len(before["probes"]) == 6  # (confirmed by the fresh host above)
    engines = {}
    for name, env in (("gold-a", {}), ("gold-b", {}), ("faulty", {"VLLM_STANDIN_DECODE_FAULT": fault})):
        (tmp_path / name).mkdir()
        engines[name] = StandIn(tmp_path / name, env=env).start().wait_ready()
    try:
        inventory = tmp_path / "fleet.yml"
        inventory.write_text(json.dumps({"all": {"hosts": dict((name, {
            "serve_url": s.url, "probes_evidence_dir": str(tmp_path / ("ev-" + name)), "probes_needle": False,
            "probes_textfile_dir": ""}) for name, s in engines.items())}}))
        proc = play(tmp, inventory, report="report-" + fault)
    finally:
        for s in engines.values():
            s.stop()
    assert proc.returncode == 2, proc.stdout[-3000:]
    ev = dict((name, json.loads((tmp / ("report-" + fault) / (name + ".json")).read_text())) for name in engines)
    for name in ("gold-a", "gold-b"):
        assert ev[name]["passed"], ev[name]["failures"]
        assert all(p["layer"] == "golden" and not p["golden"]["differs"] for p in ev[name]["chat"]["probes"])
    recorded = dict((e["name"], e["content"]) for e in before["probes"])
    # The probes go out at once, so which request is another's depends on their arrival: under crosstalk the first to
    # arrive keeps its own answer and every other one is handed the one before it (a lost token is on every probe).
    lines = dict((name, [f for f in ev["faulty"]["failures"] if f.startswith("chat %s: not_own_answer" % name)])
                 for name in recorded)
    caught = [name for name, found in lines.items() if found]
    assert (probe in caught) if fault == "lost_first" else len(caught) >= len(recorded) - 1, ev["faulty"]["failures"]
    for name in caught:
        assert "the release's recorded answer is «%s" % recorded[name][:20] in lines[name][0], lines[name]
        assert "(it differs from 2 of 3 hosts of this release, which answered «%s" % recorded[name][:20] in lines[name][0]
    html = (tmp / ("report-" + fault) / "report.html").read_text()
    assert "differs from 2 of 3 hosts of this release, which answered" in html and "by the golden record" in html
    after = golden(tmp)
    assert after["probes"] == before["probes"] and after["state"] == "confirmed"
    assert {"gold-a", "gold-b", "node-good"} <= set(after["hosts"]) and "faulty" not in after["hosts"]


def test_good_host_passes_bad_host_is_failed(report):
    proc, tmp = report
    recap = proc.stdout.split("PLAY RECAP")[1]
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert "node-good" in recap and "node-bad" in recap
    good = json.loads((tmp / "report" / "node-good.json").read_text())
    bad = json.loads((tmp / "report" / "node-bad.json").read_text())
    assert good["passed"] and good["health"]["ready"] and good["chat"]["passed"] and good["needle"]["passed"]
    assert not bad["passed"] and not bad["chat"]["passed"]
    assert any("repeated_ngram" in f for f in bad["failures"])
    assert "Probes failed on node-bad" in proc.stdout and "Probes failed on node-good" not in proc.stdout


def test_evidence_is_on_each_host(report):
    _proc, tmp = report
    assert json.loads((tmp / "ev-good" / "probes.json").read_text())["host"] == "node-good"


def test_verdicts_reach_the_textfile_collector(report):
    """Each host's verdicts are in node_exporter's textfile folder, in the Prometheus text format."""
    from prometheus_client.parser import text_string_to_metric_families
    _proc, tmp = report
    for host, verdict in (("good", 1), ("bad", 0)):
        families = {f.name: f for f in text_string_to_metric_families(
            (tmp / ("textfile-" + host) / "glm53_probes.prom").read_text())}
        got = {s.labels["probe"]: s.value for s in families["glm53_probe_verdict"].samples}
        assert got["all"] == verdict and got["health"] == 1 and got["chat"] == verdict, (host, got)
        depths = {s.labels["target"]: s.value for s in families["glm53_needle_depths_total"].samples}
        assert depths == {"60000": 3.0}


def test_markdown_summary(report):
    _proc, tmp = report
    md = (tmp / "report" / "summary.md").read_text()
    assert "| node-good | PASS |" in md and "| node-bad | FAIL |" in md
    sent = json.loads((tmp / "report" / "node-good.json").read_text())["needle"]["results"][0]["tokens"]
    assert abs(sent - 60000) <= 600 and "60000 (%d sent): 3/3" % sent in md


def test_html_report_in_headless_chromium(report):
    if CHROMIUM is None:
        pytest.fail("chromium is not installed (make test installs Debian's chromium package)")
    _proc, tmp = report
    html = tmp / "report" / "report.html"
    shot = tmp / "report" / "report.png"
    profile = tmp / "chromium-profile"
    dom = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, "--user-data-dir=%s" % profile, "--dump-dom",
                          html.as_uri()], capture_output=True, text=True, timeout=120, check=True).stdout
    assert dom.count('class="host-row"') == 4
    assert 'id="heatmap"' in dom and dom.count('class="heatmap"') == 4
    assert dom.count('class="cell retrieved"') == 9  # the good, poisoned and drifted engines retrieve every needle
    assert dom.count('class="numerics"') == 2 and dom.count('class="numerics failed"') == 2
    subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, "--user-data-dir=%s" % profile, "--window-size=1400,900",
                    "--screenshot=%s" % shot, html.as_uri()], capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 10000
    print("report screenshot: %s" % shot)
