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
    # from the baseline its release recorded on that host at its first proof (here: the healthy engine's figures).
    engines = {}
    for name in ("poisoned", "drifted"):
        (tmp / name).mkdir()
        engines[name] = StandIn(tmp / name, env={"VLLM_STANDIN_NUMERICS": name}).start().wait_ready()
        request.addfinalizer(engines[name].stop)
    from ansible_collections.glm53.serving.plugins.modules import vllm_reference_score
    from testlib import run_module_here
    baseline = run_module_here(vllm_reference_score, {"base_url": good.url, "served_model_name": "glm53-flash-awq"})
    assert baseline["passed"], baseline
    # an earlier run of the collection on this host made the evidence folder and recorded the release's baseline:
    # the folder is in the host's ledger (the probes claim it as their own before writing)
    from ansible_collections.glm53.serving.plugins.modules import install_ledger
    run_module_here(install_ledger, {"path": str(tmp / "ledger.json"), "claims": [
        {"name": "probes_evidence_dir", "path": str(tmp / "ev-drifted")}]})
    (tmp / "ev-drifted" / "baselines").mkdir(parents=True)
    (tmp / "ev-drifted" / "baselines" / "current.json").write_text(json.dumps(
        {"release": "current", "passages": baseline["figures"]}))
    inventory = tmp / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {
        "node-good": {"probes_base_url": good.url, "probes_evidence_dir": str(tmp / "ev-good"),
                      "probes_textfile_dir": str(tmp / "textfile-good")},
        "node-bad": {"probes_base_url": bad.url, "probes_evidence_dir": str(tmp / "ev-bad"),
                     "probes_textfile_dir": str(tmp / "textfile-bad")},
        "node-poisoned": {"probes_base_url": engines["poisoned"].url, "probes_evidence_dir": str(tmp / "ev-poisoned"),
                          "probes_textfile_dir": ""},
        "node-drifted": {"probes_base_url": engines["drifted"].url, "probes_evidence_dir": str(tmp / "ev-drifted"),
                         "probes_textfile_dir": ""}}}}))
    (tmp / "textfile-good").mkdir()
    (tmp / "textfile-bad").mkdir()
    extra = {"ansible_python_interpreter": sys.executable, "service_mode": "none",
             "probes_needle_targets": [60000], "probes_needle_depths": [10, 50, 90], "probes_bench_label": "current",
             "probes_report_dir": str(tmp / "report"),
             "__glm53_ledger_file": str(tmp / "ledger.json")}  # the host's ledger, here this machine's: kept in tmp
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), PLAYBOOK, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    return proc, tmp


def test_numerics_are_proved_with_a_baseline(report):
    """The reference figures are in each host's evidence; a healthy host records its release's baseline at its first
    proof; a broken engine fails the band and a drifted one its release's baseline, each naming both figures, though
    both write fluent text."""
    proc, tmp = report
    assert (tmp / "report" / "node-good.json").exists(), proc.stdout[-4000:]
    good = json.loads((tmp / "report" / "node-good.json").read_text())
    assert good["reference"]["passed"] and set(good["reference"]["figures"]) == {"english", "chinese", "code"}
    recorded = json.loads((tmp / "ev-good" / "baselines" / "current.json").read_text())
    assert recorded["passages"] == good["reference"]["figures"] and recorded["release"] == "current"
    poisoned = json.loads((tmp / "report" / "node-poisoned.json").read_text())
    assert not poisoned["passed"] and poisoned["needle"]["passed"]
    assert any(f.startswith("reference numerics_band: english: 11.9") for f in poisoned["failures"]), poisoned["failures"]
    assert not (tmp / "ev-poisoned" / "baselines").exists()  # a broken engine's figures are never a baseline
    drifted = json.loads((tmp / "report" / "node-drifted.json").read_text())
    assert not drifted["passed"] and drifted["chat"]["passed"] and drifted["needle"]["passed"]
    drift = [f for f in drifted["failures"] if "numerics_drift" in f]
    assert drift and "+15.0%" in drift[0] and "%.4f" % good["reference"]["figures"][drift[0].split()[2].rstrip(":")] \
        in drift[0], drifted["failures"]
    assert "Probes failed on node-drifted" in proc.stdout


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
