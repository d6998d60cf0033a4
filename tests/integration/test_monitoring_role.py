"""The monitoring role by ansible-playbook on this machine, for a three-host fleet: promtool (Debian's
prometheus package) validates the configuration and the rules, `promtool test rules` shows each alert fires
on the series that should trip it and stays quiet otherwise, and bad settings are refused before any write."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from testlib import COLLECTIONS_ROOT

PLAYBOOK = os.path.join(os.path.dirname(__file__), "monitoring", "playbook.yml")
PROMTOOL = shutil.which("promtool")
if PROMTOOL is None:  # pragma: no cover - hack/lib.sh installs Debian's prometheus package
    raise RuntimeError("promtool is needed for these tests (make test installs Debian's prometheus package)")

INVENTORY = """
[glm53_serving]
gpu-a ansible_host=10.0.0.11
gpu-b ansible_host=10.0.0.12 serve_port=8001
gpu-c ansible_host=10.0.0.13

[monitoring]
localhost ansible_connection=local
"""


def run_role(tmp_path, inventory=INVENTORY, **overrides):
    tmp_path.mkdir(parents=True, exist_ok=True)
    inv = tmp_path / "hosts"
    inv.write_text(inventory)
    extra = {"ansible_python_interpreter": sys.executable, "monitoring_dir": str(tmp_path / "prometheus"),
             "monitoring_promtool": PROMTOOL, "monitoring_require_promtool": True, **overrides}
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(["ansible-playbook", "-i", str(inv), PLAYBOOK, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("monitoring")
    first = run_role(tmp)
    second = run_role(tmp)
    return tmp / "prometheus", first, second


def test_rendered_files_pass_promtool_and_a_rerun_changes_nothing(rendered):
    out, first, second = rendered
    assert first.returncode == 0, first.stdout[-3000:]
    assert re.search(r"changed=0\s", second.stdout.split("PLAY RECAP")[1]), second.stdout[-2000:]
    check = subprocess.run([PROMTOOL, "check", "config", str(out / "prometheus.yml")], capture_output=True, text=True,
                           check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 9 rules found" in check.stdout + check.stderr  # the alerts
    assert "SUCCESS: 16 rules found" in check.stdout + check.stderr  # the recording rules
    config = (out / "prometheus.yml").read_text()
    for target in ('"10.0.0.11:8000"', '"10.0.0.12:8001"', '"http://10.0.0.13:8000/health"', '"10.0.0.13:9100"'):
        assert target in config
    # no Alertmanager in this inventory: no alerting block, and the run says the alerts go nowhere
    assert "alerting:" not in config and "No Alertmanager: prometheus.yml has no alerting block" in first.stdout


def test_the_alerts_go_to_the_alertmanagers_of_the_inventory_group_and_the_list(tmp_path):
    inv = INVENTORY + "\n[glm53_alertmanager]\nam-1 ansible_host=10.0.0.21\nam-2\n"
    proc = run_role(tmp_path, inventory=inv, monitoring_alertmanagers=["am.example:9093"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    config = (tmp_path / "prometheus" / "prometheus.yml").read_text()
    assert 'targets: ["am.example:9093", "10.0.0.21:9093", "am-2:9093"]' in config, config[:1500]
    assert "No Alertmanager" not in proc.stdout
    bad = run_role(tmp_path / "bad", monitoring_alertmanagers=["http://am:9093"])
    assert bad.returncode != 0 and "monitoring_alertmanagers[0]" in bad.stdout and "host:port" in bad.stdout


ALERT_TESTS = """
rule_files: [RULES]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'up{job="vllm-glm53", host="gpu-a", instance="10.0.0.11:8000"}'
        values: '1 0x10'
      - series: 'up{job="vllm-glm53", host="gpu-b", instance="10.0.0.12:8001"}'
        values: '1x10'
      - series: 'probe_success{job="vllm-glm53-health", host="gpu-c", instance="http://10.0.0.13:8000/health"}'
        values: '0x10'
    alert_rule_test:
      - eval_time: 1m
        alertname: GLM53EngineDown
        exp_alerts: []
      - eval_time: 4m
        alertname: GLM53EngineDown
        exp_alerts:
          - exp_labels: {severity: critical, job: vllm-glm53, host: gpu-a, instance: "10.0.0.11:8000"}
            exp_annotations:
              runbook_url: "https://github.com/glm53/serving/blob/main/docs/runbooks.md#glm53enginedown"
              summary: "vLLM on gpu-a does not answer /metrics"
              description: "The engine is down or still loading for over 2m (a load of about 46 shards takes minutes)."
      - eval_time: 4m
        alertname: GLM53HealthFailing
        exp_alerts:
          - exp_labels: {severity: critical, job: vllm-glm53-health, host: gpu-c, instance: "http://10.0.0.13:8000/health"}
            exp_annotations:
              runbook_url: "https://github.com/glm53/serving/blob/main/docs/runbooks.md#glm53healthfailing"
              summary: "/health fails on gpu-c"
              description: "vLLM answers /health with 503 after an engine death (EngineDeadError), or not at all."
  - interval: 1m
    input_series:
      - series: 'vllm:kv_cache_usage_perc{job="vllm-glm53", host="gpu-a", engine="0", model_name="glm53-flash-awq"}'
        values: '0.95x30'
      - series: 'vllm:kv_cache_usage_perc{job="vllm-glm53", host="gpu-b", engine="0", model_name="glm53-flash-awq"}'
        values: '0.5x30'
      - series: 'vllm:num_requests_waiting{job="vllm-glm53", host="gpu-a", engine="0", model_name="glm53-flash-awq"}'
        values: '0+1x40'
      - series: 'vllm:num_requests_waiting{job="vllm-glm53", host="gpu-b", engine="0", model_name="glm53-flash-awq"}'
        values: '20x40'
    alert_rule_test:
      - eval_time: 5m
        alertname: GLM53KVCacheNearlyFull
        exp_alerts: []
      - eval_time: 15m
        alertname: GLM53KVCacheNearlyFull
        exp_alerts:
          - exp_labels: {severity: warning, host: gpu-a}
            exp_annotations:
              runbook_url: "https://github.com/glm53/serving/blob/main/docs/runbooks.md#glm53kvcachenearlyfull"
              summary: "KV cache above 90% on gpu-a"
              description: "Requests will queue or be preempted; long-context requests need most of the cache."
      - eval_time: 30m
        alertname: GLM53WaitingQueueGrowing
        exp_alerts:
          - exp_labels: {severity: warning, host: gpu-a}
            exp_annotations:
              runbook_url: "https://github.com/glm53/serving/blob/main/docs/runbooks.md#glm53waitingqueuegrowing"
              summary: "Waiting queue growing on gpu-a (30 waiting)"
              description: "More than 8 requests waiting and rising for 10m."
  - interval: 1m
    input_series:
      - series: 'vllm:time_to_first_token_seconds_bucket{job="vllm-glm53", host="gpu-a", le="10.0"}'
        values: '0+0x40'
      - series: 'vllm:time_to_first_token_seconds_bucket{job="vllm-glm53", host="gpu-a", le="120.0"}'
        values: '0+10x40'
      - series: 'vllm:time_to_first_token_seconds_bucket{job="vllm-glm53", host="gpu-a", le="+Inf"}'
        values: '0+10x40'
      - series: 'vllm:time_to_first_token_seconds_bucket{job="vllm-glm53", host="gpu-b", le="10.0"}'
        values: '0+10x40'
      - series: 'vllm:time_to_first_token_seconds_bucket{job="vllm-glm53", host="gpu-b", le="120.0"}'
        values: '0+10x40'
      - series: 'vllm:time_to_first_token_seconds_bucket{job="vllm-glm53", host="gpu-b", le="+Inf"}'
        values: '0+10x40'
    alert_rule_test:
      - eval_time: 10m
        alertname: GLM53TimeToFirstTokenHigh
        exp_alerts: []
      - eval_time: 30m
        alertname: GLM53TimeToFirstTokenHigh
        exp_alerts:
          - exp_labels: {severity: warning, host: gpu-a}
            exp_annotations:
              runbook_url: "https://github.com/glm53/serving/blob/main/docs/runbooks.md#glm53timetofirsttokenhigh"
              summary: "Time to first token p95 above 60 s on gpu-a"
              description: "p95 is 1m 54s over 5 minutes."
"""


def test_each_alert_fires_on_its_signal_and_only_there(rendered, tmp_path):
    out, first, _second = rendered
    assert first.returncode == 0
    tests = tmp_path / "alerts_test.yml"
    tests.write_text(ALERT_TESTS.replace("RULES", json.dumps(str(out / "glm53-alerts.yml"))))
    result = subprocess.run([PROMTOOL, "test", "rules", str(tests)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


VERDICT_AND_RECORDING_TESTS = """
rule_files: [ALERTS, RECORDING]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'glm53_probe_verdict{job="vllm-glm53-node", host="gpu-a", probe="all", release="r1"}'
        values: '1x10'
      - series: 'glm53_probe_verdict{job="vllm-glm53-node", host="gpu-b", probe="all", release="r1"}'
        values: '0x10'
      - series: 'glm53_probe_last_run_timestamp_seconds{job="vllm-glm53-node", host="gpu-a", release="r1"}'
        values: '0x130'
      - series: 'glm53_probe_last_run_timestamp_seconds{job="vllm-glm53-node", host="gpu-b", release="r1"}'
        values: '7500x130'
      - series: 'glm53_heal_state{job="vllm-glm53-node", host="gpu-a", state="drained"}'
        values: '0x10'
      - series: 'glm53_heal_state{job="vllm-glm53-node", host="gpu-b", state="drained"}'
        values: '1x10'
      - series: 'glm53_watchdog_budget_exhausted{job="vllm-glm53-node", host="gpu-a", unit="vllm-glm53.service"}'
        values: '1x10'
      - series: 'vllm:generation_tokens_total{job="vllm-glm53", host="gpu-a", engine="0"}'
        values: '0+600x10'
      - series: 'vllm:generation_tokens_total{job="vllm-glm53", host="gpu-b", engine="0"}'
        values: '0+1200x10'
      - series: 'vllm:inter_token_latency_seconds_bucket{job="vllm-glm53", host="gpu-a", le="0.05"}'
        values: '0+60x10'
      - series: 'vllm:inter_token_latency_seconds_bucket{job="vllm-glm53", host="gpu-a", le="+Inf"}'
        values: '0+60x10'
    alert_rule_test:
      - eval_time: 5m
        alertname: GLM53ProbeFailing
        exp_alerts:
          - exp_labels: {severity: critical, job: vllm-glm53-node, host: gpu-b, probe: all, release: r1}
            exp_annotations:
              runbook_url: "https://github.com/glm53/serving/blob/main/docs/runbooks.md#glm53probefailing"
              summary: "The probes fail on gpu-b (release r1)"
              description: "/health may still answer 200: the chat smoke test or the needle test failed on the last verify."
      - eval_time: 5m
        alertname: GLM53HostLeftDrained
        exp_alerts:
          - exp_labels: {severity: critical, job: vllm-glm53-node, host: gpu-b, state: drained}
            exp_annotations:
              runbook_url: "https://github.com/glm53/serving/blob/main/docs/runbooks.md#glm53hostleftdrained"
              summary: "heal.yml left gpu-b out of the pool (drained)"
              description: "It failed again after its heal, or its service manager gave up on a crash loop: a person must look."
      - eval_time: 5m
        alertname: GLM53WatchdogBudgetSpent
        exp_alerts:
          - exp_labels: {severity: warning, job: vllm-glm53-node, host: gpu-a, unit: vllm-glm53.service}
            exp_annotations:
              runbook_url: "https://github.com/glm53/serving/blob/main/docs/runbooks.md#glm53watchdogbudgetspent"
              summary: "The engine on gpu-a is wedged and its watchdog's restarts for the hour are spent"
              description: "/health answers but a one-token chat does not; the next heal.yml run or a person must act."
      - eval_time: 2h
        alertname: GLM53VerdictStale
        exp_alerts: []
      - eval_time: 2h5m
        alertname: GLM53VerdictStale
        exp_alerts:
          - exp_labels: {severity: warning, job: vllm-glm53-node, host: gpu-a, release: r1}
            exp_annotations:
              runbook_url: "https://github.com/glm53/serving/blob/main/docs/runbooks.md#glm53verdictstale"
              summary: "No verdict from gpu-a for over 7200 s"
              description: "The scheduled verify.yml has not run on this host, or its probes could not write the textfile."
    promql_expr_test:
      - expr: glm53:generation_tokens:rate5m
        eval_time: 10m
        exp_samples:
          - labels: 'glm53:generation_tokens:rate5m{host="gpu-a"}'
            value: 10
          - labels: 'glm53:generation_tokens:rate5m{host="gpu-b"}'
            value: 20
      - expr: glm53_fleet:generation_tokens:rate5m
        eval_time: 10m
        exp_samples:
          - labels: 'glm53_fleet:generation_tokens:rate5m'
            value: 30
      - expr: glm53_fleet:probe_verdict:pass_ratio
        eval_time: 5m
        exp_samples:
          - labels: 'glm53_fleet:probe_verdict:pass_ratio'
            value: 0.5
      - expr: glm53:inter_token_latency_seconds:p50_5m
        eval_time: 10m
        exp_samples:
          - labels: 'glm53:inter_token_latency_seconds:p50_5m{host="gpu-a"}'
            value: 0.025
"""


def test_verdict_alerts_and_recording_rules_on_synthetic_series(rendered, tmp_path):
    """A failing verdict pages at once (the probes run on a schedule), a verdict older than
    monitoring_verdict_max_age_s warns, and the recording rules compute per-host and fleet figures."""
    out, first, _second = rendered
    assert first.returncode == 0
    tests = tmp_path / "verdicts_test.yml"
    tests.write_text(VERDICT_AND_RECORDING_TESTS.replace("ALERTS", json.dumps(str(out / "glm53-alerts.yml")))
                     .replace("RECORDING", json.dumps(str(out / "glm53-recording.yml"))))
    result = subprocess.run([PROMTOOL, "test", "rules", str(tests)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_links_to_its_runbook_section(rendered):
    out, _first, _second = rendered
    alerts = re.findall(r"- alert: (\w+)", (out / "glm53-alerts.yml").read_text())
    links = re.findall(r'runbook_url: "([^"]+)"', (out / "glm53-alerts.yml").read_text())
    assert len(alerts) == 9 and len(links) == 9
    runbook = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "runbooks.md")).read()
    anchors = {line[3:].strip().lower() for line in runbook.splitlines() if line.startswith("## ")}
    for alert, link in zip(alerts, links):
        assert link.endswith("/docs/runbooks.md#" + alert.lower()), (alert, link)
        assert alert.lower() in anchors, "docs/runbooks.md has no section ## %s" % alert
    for alert in alerts:  # each section says what to run
        section = runbook.split("## " + alert)[1].split("\n## ")[0]
        assert "ansible-playbook" in section or "systemctl" in section, alert


@pytest.mark.parametrize("overrides,variable", [
    ({"monitoring_kv_cache_usage_threshold": 1.5}, "monitoring_kv_cache_usage_threshold=1.5 must be a number from 0.5 to 0.99"),
    ({"monitoring_targets_group": "nobody"}, r'monitoring_targets_group=\"nobody\" is not an inventory group'),
    ({"monitoring_queue_for": "ten minutes"}, r'monitoring_queue_for=\"ten minutes\" must be a Prometheus duration'),
    ({"monitoring_promtool": "/nonexistent/promtool"}, "monitoring_require_promtool is set and /nonexistent/promtool"),
    ({"monitoring_alertmanager_route": {"receiver": "pager"}},
     r'monitoring_alertmanager_route.receiver=\"pager\" must name one of monitoring_alertmanager_receivers'),
])
def test_bad_settings_are_refused_before_any_write(tmp_path, overrides, variable):
    proc = run_role(tmp_path, **overrides)
    assert proc.returncode != 0 and variable in proc.stdout, proc.stdout[-2000:]
    assert not (tmp_path / "prometheus").exists()


def test_without_a_blackbox_exporter_the_health_job_and_alert_are_left_out(tmp_path):
    proc = run_role(tmp_path, monitoring_blackbox_exporter="")
    assert proc.returncode == 0, proc.stdout[-2000:]
    rules = (tmp_path / "prometheus" / "glm53-alerts.yml").read_text()
    assert "GLM53HealthFailing" not in rules and "/probe" not in (tmp_path / "prometheus" / "prometheus.yml").read_text()
    assert "GLM53EngineDown" in rules and textwrap.dedent(rules).count("- alert:") == 8


def test_without_promtool_the_files_are_written_unvalidated_unless_promtool_is_required(tmp_path):
    proc = run_role(tmp_path, monitoring_promtool="/nonexistent/promtool", monitoring_require_promtool=False)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "the rendered files are not validated" in proc.stdout
    assert (tmp_path / "prometheus" / "prometheus.yml").exists()


def test_tls_hosts_are_scraped_and_probed_over_https_with_the_ca(tmp_path):
    """A host whose serve role serves TLS (serve_ssl_certfile_src set) is scraped with __scheme__ https, its /health
    probed at https://, and the job verifies with monitoring_ca_file; the others stay on http. promtool passes."""
    inv = INVENTORY.replace("gpu-b ansible_host=10.0.0.12 serve_port=8001",
                            "gpu-b ansible_host=10.0.0.12 serve_port=8001 serve_ssl_certfile_src=files/server.crt")
    proc = run_role(tmp_path, inventory=inv, monitoring_ca_file="/etc/prometheus/glm53-ca.crt")
    assert proc.returncode == 0, proc.stdout[-3000:]
    config = (tmp_path / "prometheus" / "prometheus.yml").read_text()
    assert 'tls_config: {ca_file: "/etc/prometheus/glm53-ca.crt"}' in config
    assert 'labels: {host: "gpu-b", __scheme__: https}' in config and 'labels: {host: "gpu-a"}' in config
    assert '"https://10.0.0.12:8001/health"' in config and '"http://10.0.0.11:8000/health"' in config
    check = subprocess.run([PROMTOOL, "check", "config", "--syntax-only", str(tmp_path / "prometheus" / "prometheus.yml")],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    bad = run_role(tmp_path / "bad", monitoring_ca_file="certs/ca.crt")
    assert bad.returncode != 0 and r'monitoring_ca_file=\"certs/ca.crt\" must be an absolute path' in bad.stdout, \
        bad.stdout[-2000:]
    assert not (tmp_path / "bad" / "prometheus").exists()

