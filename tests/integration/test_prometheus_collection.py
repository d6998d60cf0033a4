"""playbooks/monitoring_prometheus.yml: the monitoring role's configuration handed to prometheus.prometheus's
prometheus and alertmanager roles through their variables, run on this machine against real Prometheus and
Alertmanager (Debian's packages) and node_exporter.

prometheus.prometheus is not in the `ansible` package on PyPI and Galaxy is out of reach here, so its two roles are
a test double (tests/integration/monitoring/prometheus_collection, README.md there): each takes the real role's
variables, validated against their types, and writes prometheus.yml and alertmanager.yml from them as the real
templates do, checked by promtool and amtool; the binaries come from prometheus_binary_local_dir and
alertmanager_binary_local_dir. What the test proves of the hand-off: the whole configuration the collection writes
from it loads (promtool check config, and Prometheus starts on it) and equals the standalone prometheus.yml's jobs
and Alertmanagers; an engine-down alert (gpu-a's /metrics does not answer) and a probe-failure alert (gpu-b's
verdict, from node_exporter's textfile collector) reach the Alertmanager configured from the hand-off's route and
receiver; and the rollout role's silence holds each host's alerts during its turn, and lets them page after."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest
import yaml

from testlib import COLLECTIONS_ROOT, REPO, free_port, start_alertmanager, start_node_exporter, wait_for_http

BINARIES = {"prometheus": "prometheus", "promtool": "promtool", "alertmanager": "prometheus-alertmanager",
            "amtool": "amtool", "node_exporter": "prometheus-node-exporter"}
if not all(shutil.which(b) for b in BINARIES.values()):  # pragma: no cover - hack/lib.sh installs them
    raise RuntimeError("prometheus, prometheus-alertmanager and prometheus-node-exporter are needed (make test installs "
                       "Debian's packages)")
PLAYBOOK = os.path.join(REPO, "playbooks", "monitoring_prometheus.yml")
STANDALONE = os.path.join(REPO, "tests", "integration", "monitoring", "playbook.yml")
SILENCE = os.path.join(REPO, "tests", "integration", "monitoring", "silence_hold.yml")
DOUBLE = os.path.join(REPO, "tests", "integration", "monitoring", "prometheus_collection")
ENV = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT + os.pathsep + DOUBLE, "ANSIBLE_NOCOLOR": "1"}


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def playbook(inventory, path, extra):
    return subprocess.run(["ansible-playbook", "-i", str(inventory), path, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=ENV, timeout=300, check=False)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, request):
    tmp = tmp_path_factory.mktemp("promcoll")
    times, t0 = {}, time.monotonic()
    procs = []
    request.addfinalizer(lambda: [p.terminate() for p in procs])
    # the collection's local-binary options: a folder with the binaries under the names its roles look for
    (tmp / "bin").mkdir()
    for name, binary in BINARIES.items():
        os.symlink(shutil.which(binary), tmp / "bin" / name)
    # gpu-b's verdict fails, read by node_exporter's textfile collector at 127.0.0.2; that /metrics also stands in
    # for gpu-b's engine (only `up` matters here). Nothing answers gpu-a's engine port: its engine is down.
    textfiles = tmp / "textfile"
    textfiles.mkdir()
    from ansible_collections.glm53.serving.plugins.modules import verdict_metrics
    (textfiles / "glm53_probes.prom").write_text(verdict_metrics.render(
        {"passed": False, "engine_version": "0.28.1", "engine_commit": "f2935ce322", "health": {"ready": True},
         "chat": {"passed": False}}, "fork-f2935ce322-fi-1a2b3c4d5e", int(time.time()), {}))
    node, node_port = start_node_exporter(textfiles, address="127.0.0.2")
    procs.append(node)
    am_port = free_port()
    (tmp / "hosts").write_text(
        "[glm53_serving]\ngpu-a ansible_host=127.0.0.1 serve_port=%d\ngpu-b ansible_host=127.0.0.2 serve_port=%d\n"
        "[glm53_monitoring]\nlocalhost ansible_connection=local ansible_host=127.0.0.1\n"
        "[glm53_alertmanager]\nlocalhost\n[monitoring]\nlocalhost\n" % (free_port(), node_port))
    settings = {"ansible_python_interpreter": sys.executable, "monitoring_scrape_interval": "1s",
                "monitoring_engine_down_for": "0s", "monitoring_blackbox_exporter": "",
                "monitoring_dcgm_exporter_port": 0, "monitoring_node_exporter_port": node_port,
                "monitoring_alertmanager_port": am_port}
    collection = {**settings, "prometheus_binary_local_dir": str(tmp / "bin"),
                  "prometheus_config_dir": str(tmp / "prometheus"), "prometheus_db_dir": str(tmp / "prometheus-data"),
                  "alertmanager_binary_local_dir": str(tmp / "bin"), "alertmanager_config_dir": str(tmp / "alertmanager")}
    run = playbook(tmp / "hosts", PLAYBOOK, collection)
    assert run.returncode == 0, run.stdout[-4000:]
    standalone = playbook(tmp / "hosts", STANDALONE,
                          {**settings, "monitoring_dir": str(tmp / "standalone"), "monitoring_require_promtool": True})
    assert standalone.returncode == 0, standalone.stdout[-3000:]
    times["hand-off playbook and standalone role"] = time.monotonic() - t0

    t = time.monotonic()
    config = tmp / "prometheus" / "prometheus.yml"
    check = subprocess.run([shutil.which("promtool"), "check", "config", str(config)], capture_output=True, text=True,
                           check=False)
    am_check = subprocess.run([shutil.which("amtool"), "check-config", str(tmp / "alertmanager" / "alertmanager.yml")],
                              capture_output=True, text=True, check=False)
    times["promtool check config, amtool check-config"] = time.monotonic() - t

    t = time.monotonic()
    am, am_url = start_alertmanager(tmp, config=str(tmp / "alertmanager" / "alertmanager.yml"), port=am_port)
    procs.append(am)
    prom_port, prom_log = free_port(), str(tmp / "prometheus.log")
    procs.append(subprocess.Popen([shutil.which("prometheus"), "--config.file=%s" % config,
                                   "--storage.tsdb.path=%s" % (tmp / "prometheus-data"),
                                   "--web.listen-address=127.0.0.1:%d" % prom_port],
                                  stdout=open(prom_log, "w"), stderr=subprocess.STDOUT))
    prom_url = "http://127.0.0.1:%d" % prom_port
    wait_for_http(prom_url + "/-/ready", procs[-1], prom_log)
    times["Alertmanager and Prometheus started"] = time.monotonic() - t
    return {"tmp": tmp, "run": run, "check": check, "am_check": am_check, "am_url": am_url, "prom_url": prom_url,
            "times": times, "prom_log": prom_log}


def test_the_whole_configuration_loads_and_is_the_standalone_one(stack):
    """promtool passes what the collection wrote from the hand-off, with the role's 8 alerts (no blackbox exporter
    here) and 16 recording rules and none of the collection's example rules; its jobs, Alertmanagers and global
    settings are those of the standalone prometheus.yml; Prometheus started on it loads both rule groups."""
    tmp, check = stack["tmp"], stack["check"]
    out = check.stdout + check.stderr
    assert check.returncode == 0, out
    assert "SUCCESS: 8 rules found" in out and "SUCCESS: 16 rules found" in out, out
    assert sorted(os.listdir(tmp / "prometheus" / "rules")) == ["glm53-alerts.yml", "glm53-recording.yml"]
    handed = yaml.safe_load((tmp / "prometheus" / "prometheus.yml").read_text())
    alone = yaml.safe_load((tmp / "standalone" / "prometheus.yml").read_text())
    assert handed["scrape_configs"] == alone["scrape_configs"]
    assert [j["job_name"] for j in handed["scrape_configs"]] == ["vllm-glm53", "vllm-glm53-node"]
    assert handed["alerting"] == alone["alerting"]
    assert handed["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] == [stack["am_url"][len("http://"):]]
    assert {k: handed["global"][k] for k in alone["global"]} == alone["global"] == {"scrape_interval": "1s",
                                                                                    "evaluation_interval": "1s"}
    assert handed["rule_files"] == [str(tmp / "prometheus" / "rules" / "*.yml")]
    groups = get(stack["prom_url"] + "/api/v1/rules")["data"]["groups"]
    assert sorted((g["name"], len(g["rules"])) for g in groups) == [("glm53-recording", 16), ("glm53-serving", 8)], groups


def test_alertmanager_takes_the_fleets_route(stack):
    am_check, tmp = stack["am_check"], stack["tmp"]
    assert am_check.returncode == 0, am_check.stdout + am_check.stderr
    written = yaml.safe_load((tmp / "alertmanager" / "alertmanager.yml").read_text())
    assert written["route"] == {"receiver": "glm53-fleet", "group_by": ["alertname", "host"], "group_wait": "30s",
                                "group_interval": "5m", "repeat_interval": "4h"}
    assert written["receivers"] == [{"name": "glm53-fleet"}]
    running = yaml.safe_load(get(stack["am_url"] + "/api/v2/status")["config"]["original"])
    assert running["route"]["receiver"] == "glm53-fleet"


def fleet_alerts(am_url):
    return {(a["labels"]["alertname"], a["labels"]["host"]): a for a in get(am_url + "/api/v2/alerts")
            if a["labels"].get("alertname", "").startswith("GLM53")}


@pytest.fixture(scope="module")
def delivered(stack):
    t, deadline, got = time.monotonic(), time.monotonic() + 60, {}
    want = {("GLM53EngineDown", "gpu-a"), ("GLM53ProbeFailing", "gpu-b")}
    while time.monotonic() < deadline:
        got = fleet_alerts(stack["am_url"])
        if want <= set(got):
            break
        time.sleep(0.5)
    stack["times"]["both alerts in Alertmanager"] = time.monotonic() - t
    assert want <= set(got), (sorted(got), open(stack["prom_log"]).read()[-2000:])
    return {key: got[key] for key in want}


def test_engine_down_and_probe_failure_reach_alertmanager(delivered):
    for (name, host), alert in sorted(delivered.items()):
        assert alert["status"]["state"] == "active", alert
        assert alert["labels"]["severity"] == "critical" and alert["annotations"]["runbook_url"].endswith(
            "#" + name.lower())
        assert [r["name"] for r in alert["receivers"]] == ["glm53-fleet"]  # the route the hand-off gave
        print("%s for %s arrived in Alertmanager (%s), receiver glm53-fleet" % (name, host, alert["startsAt"]))


@pytest.mark.figures
def test_the_rollout_silence_holds_them_during_each_turn(stack, delivered):
    """The rollout role's silence (tasks_from silence), over the alerts Prometheus keeps sending: during each host's
    turn all its alerts are suppressed by that silence; once the silence is expired they are active again."""
    tmp, t = stack["tmp"], time.monotonic()
    (tmp / "out").mkdir()
    (tmp / "fleet").write_text("[fleet]\ngpu-a\ngpu-b\n")
    extra = {"ansible_python_interpreter": sys.executable, "out_dir": str(tmp / "out"),
             "rollout_alertmanager_url": stack["am_url"], "rollout_action": "restart"}
    turns = playbook(tmp / "fleet", SILENCE, extra)
    stack["times"]["rollout silences, held and expired"] = time.monotonic() - t
    assert turns.returncode == 0, turns.stdout[-4000:]
    for (name, host) in sorted(delivered):
        seen = json.loads((tmp / "out" / ("%s.json" % host)).read_text())
        silence_id = seen["silence"]["silenceID"]
        assert name in [a["labels"]["alertname"] for a in seen["during"]]
        assert all(a["status"]["state"] == "suppressed" and a["status"]["silencedBy"] == [silence_id]
                   for a in seen["during"]), seen["during"]
        assert name in [a["labels"]["alertname"] for a in seen["after"]]
        assert all(a["status"]["state"] == "active" and not a["status"]["silencedBy"] for a in seen["after"])
    for stage, seconds in stack["times"].items():
        print("%-45s %5.1f s" % (stage, seconds))
