"""The fleet dashboard against a real Prometheus (Debian's prometheus package).

Prometheus scrapes two stand-in engines and one node_exporter per host (Debian's prometheus-node-exporter,
textfile collector only). It evaluates the alert and recording rules the monitoring role rendered. Each
node_exporter's textfile folder holds that host's verdicts, written by glm53.serving.verdict_metrics as the
probes role writes them.

There is no GPU here, so the DCGM exporter's two fields the dashboard reads (DCGM_FI_DEV_FB_USED and
DCGM_FI_DEV_GPU_UTIL, one series per GPU) are given as a textfile beside the verdicts: synthetic series,
under DCGM's names.

Every panel's every query must return data. The test prints each query with the number of series it
returned (Grafana cannot run here, so no screenshot). The checked-in JSON must be what hack/gen_dashboard.py
builds."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

from testlib import COLLECTIONS_ROOT, REPO, StandIn, free_port, start_alertmanager

PROMETHEUS = shutil.which("prometheus")
ALERTMANAGER = shutil.which("prometheus-alertmanager")
NODE_EXPORTER = shutil.which("prometheus-node-exporter")
if PROMETHEUS is None or NODE_EXPORTER is None or ALERTMANAGER is None:  # pragma: no cover - hack/lib.sh installs them
    raise RuntimeError("prometheus, prometheus-node-exporter and prometheus-alertmanager are needed (make test installs "
                       "Debian's packages)")
DASHBOARD = os.path.join(REPO, "roles", "monitoring", "files", "glm53-fleet-dashboard.json")
PLAYBOOK = os.path.join(REPO, "tests", "integration", "monitoring", "playbook.yml")
HOSTS = ("gpu-a", "gpu-b")


def verdict_file(result):
    from ansible_collections.glm53.serving.plugins.modules import verdict_metrics
    return verdict_metrics.render(result, "fork-f2935ce322-fi-1a2b3c4d5e", int(time.time()), {})


def dcgm_file(gpus=8):
    lines = ["# TYPE DCGM_FI_DEV_FB_USED gauge", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for gpu in range(gpus):
        lines.append('DCGM_FI_DEV_FB_USED{gpu="%d",modelName="NVIDIA L40S"} %d' % (gpu, 41000 + gpu))
        lines.append('DCGM_FI_DEV_GPU_UTIL{gpu="%d",modelName="NVIDIA L40S"} %d' % (gpu, 80 + gpu))
    return "\n".join(lines) + "\n"


def query(url, expr):
    with urllib.request.urlopen(url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}), timeout=10) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


def panel_queries():
    with open(DASHBOARD) as f:
        dash = json.load(f)
    for panel in dash["panels"]:
        for target in panel.get("targets") or []:
            yield panel["title"], target["expr"].replace("$host", ".*")


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory, request):
    tmp = tmp_path_factory.mktemp("dashboard")
    procs = []
    request.addfinalizer(lambda: [p.terminate() for p in procs])
    # a real Alertmanager, which the role's prometheus.yml sends the alerts to (monitoring_alertmanagers)
    am, am_url = start_alertmanager(tmp)
    procs.append(am)
    am_port = int(am_url.rsplit(":", 1)[1])
    # the role's rules and configuration, rendered and checked by promtool as a real run does
    inv = tmp / "hosts"
    inv.write_text("[glm53_serving]\n%s\n[monitoring]\nlocalhost ansible_connection=local\n" % "\n".join(HOSTS))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    extra = {"ansible_python_interpreter": sys.executable, "monitoring_dir": str(tmp / "rules"),
             "monitoring_require_promtool": True, "monitoring_promtool": shutil.which("promtool"),
             "monitoring_grafana_dashboards_dir": str(tmp / "grafana"),
             "monitoring_alertmanagers": ["127.0.0.1:%d" % am_port]}
    role = subprocess.run(["ansible-playbook", "-i", str(inv), PLAYBOOK, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert role.returncode == 0, role.stdout[-3000:]
    import yaml
    rendered = yaml.safe_load((tmp / "rules" / "prometheus.yml").read_text())
    scrape = {"vllm-glm53": [], "vllm-glm53-node": []}
    engines = []
    for host in HOSTS:
        (tmp / host).mkdir()
        engine = StandIn(tmp / host).start()
        request.addfinalizer(engine.stop)
        engines.append(engine)
        textfiles = tmp / host / "textfile"
        textfiles.mkdir()
        passed = host == "gpu-a"
        (textfiles / "glm53_probes.prom").write_text(verdict_file({
            "passed": passed, "engine_version": "0.28.1", "engine_commit": "f2935ce322",
            "health": {"ready": True}, "chat": {"passed": passed},
            "needle": {"passed": True, "results": [{"target": 450000, "tokens": 449871,
                                                    "depths": [{"verdict": "retrieved"}] * 5}]}}))
        (textfiles / "dcgm.prom").write_text(dcgm_file())
        port = free_port()
        procs.append(subprocess.Popen([NODE_EXPORTER, "--collector.disable-defaults", "--collector.textfile",
                                       "--collector.textfile.directory=%s" % textfiles,
                                       "--web.listen-address=127.0.0.1:%d" % port],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        scrape["vllm-glm53"].append((host, "127.0.0.1:%d" % engine.port))
        scrape["vllm-glm53-node"].append((host, "127.0.0.1:%d" % port))
    for engine in engines:
        engine.wait_ready()
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "rule_files": [str(tmp / "rules" / "glm53-alerts.yml"), str(tmp / "rules" / "glm53-recording.yml")],
              "alerting": rendered["alerting"],  # as the role wrote it
              "scrape_configs": [{"job_name": job, "static_configs": [
                  {"targets": [target], "labels": {"host": host}} for host, target in targets]}
                  for job, targets in scrape.items()]}
    (tmp / "prometheus.yml").write_text(json.dumps(config))
    port = free_port()
    procs.append(subprocess.Popen([PROMETHEUS, "--config.file=%s" % (tmp / "prometheus.yml"),
                                   "--storage.tsdb.path=%s" % (tmp / "tsdb"), "--web.listen-address=127.0.0.1:%d" % port],
                                  stdout=open(tmp / "prometheus.log", "w"), stderr=subprocess.STDOUT))
    url = "http://127.0.0.1:%d" % port
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if len([r for r in query(url, "up == 1")]) == 4:
                break
        except OSError:
            pass
        time.sleep(0.5)
    else:
        pytest.fail("Prometheus did not scrape all four targets: %s" % (tmp / "prometheus.log").read_text()[-2000:])
    # traffic between scrapes, so the rates and the histogram quantiles have something to show
    for _round in range(3):
        for engine in engines:
            status, _body = engine.chat("Hello, who are you?", max_tokens=64)
            assert status == 200
        time.sleep(1.5)
    return url, tmp, am_port


def test_the_checked_in_dashboard_is_what_the_generator_builds():
    out = subprocess.run([sys.executable, os.path.join(REPO, "hack", "gen_dashboard.py"), "--check"],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_role_provisions_the_dashboard_file(prometheus):
    _url, tmp, _am = prometheus
    with open(DASHBOARD) as f:
        assert (tmp / "grafana" / "glm53-fleet-dashboard.json").read_text() == f.read()


@pytest.mark.figures
def test_every_panel_query_returns_data_on_a_real_prometheus(prometheus):
    url, _tmp, _am = prometheus
    pending = dict(((title, expr), 0) for title, expr in panel_queries())
    assert len(pending) >= 14
    deadline = time.monotonic() + 30  # the recording rules run every second; a 5m rate needs two samples
    while time.monotonic() < deadline:
        for key in pending:
            # a number: a quantile of a histogram that did not move is NaN, not data
            pending[key] = len([r for r in query(url, key[1]) if r["value"][1] != "NaN"])
        if all(pending.values()):
            break
        time.sleep(1)
    for (title, expr), series in pending.items():
        print("%-40s %2d series  %s" % (title, series, expr))
    assert all(pending.values()), [key for key, n in pending.items() if not n]


def test_the_verdicts_reach_prometheus_and_the_failing_one_alerts(prometheus):
    url, _tmp, _am = prometheus
    verdicts = {r["metric"]["host"]: r["value"][1] for r in query(url, 'glm53_probe_verdict{probe="all"}')}
    assert verdicts == {"gpu-a": "1", "gpu-b": "0"}
    assert query(url, "glm53_fleet:probe_verdict:pass_ratio")[0]["value"][1] == "0.5"
    alerts = query(url, 'ALERTS{alertname="GLM53ProbeFailing"}')
    assert [a["metric"]["host"] for a in alerts] == ["gpu-b"]


def test_the_failing_verdicts_alert_arrives_in_a_real_alertmanager(prometheus):
    """prometheus.yml's alerting block as the role renders it (monitoring_alertmanagers): Prometheus evaluates the
    rule against node_exporter's verdicts and sends the firing alert; Alertmanager's own API shows it."""
    _url, tmp, am_port = prometheus
    targets = yaml_load(tmp / "rules" / "prometheus.yml")["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]
    assert targets == ["127.0.0.1:%d" % am_port]
    deadline = time.monotonic() + 60
    got = []
    while time.monotonic() < deadline:
        with urllib.request.urlopen("http://127.0.0.1:%d/api/v2/alerts" % am_port, timeout=5) as resp:
            got = [a for a in json.load(resp) if a["labels"].get("alertname") == "GLM53ProbeFailing"]
        if got:
            break
        time.sleep(1)
    assert [a["labels"]["host"] for a in got] == ["gpu-b"], (tmp / "alertmanager.log").read_text()[-2000:]
    assert got[0]["status"]["state"] == "active" and got[0]["labels"]["severity"] == "critical"
    print("GLM53ProbeFailing for gpu-b arrived in Alertmanager (%s)" % got[0]["startsAt"])


def yaml_load(path):
    import yaml
    return yaml.safe_load(path.read_text())
