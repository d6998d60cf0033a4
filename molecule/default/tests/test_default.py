"""Verify the default scenario: systemd as PID 1 and the engine answering as a systemd service."""
import json
import os
import re

import lifecycle_checks


def test_systemd_is_pid1(host):
    assert host.run("cat /proc/1/comm").stdout.strip() == "systemd"
    assert host.run("systemctl is-system-running").stdout.strip() in ("running", "degraded")


def test_engine_runs_as_a_systemd_service(host):
    svc = host.service("vllm-glm53")
    assert svc.is_running and svc.is_enabled
    main_pid = host.run("systemctl show -p MainPID --value vllm-glm53").stdout.strip()
    assert main_pid != "0"
    cmdline = host.file(f"/proc/{main_pid}/cmdline").content_string.replace("\0", " ")
    # The engine runs from the current release (releases side by side under /opt/glm53/releases).
    release = host.file("/opt/glm53/releases/current").linked_to
    assert release.startswith("/opt/glm53/releases/") and host.file(release + "/release.json").exists
    venv = release + "/venv"
    assert cmdline.startswith(venv + "/bin/python") and venv + "/bin/vllm serve" in cmdline
    assert host.process.get(pid=int(main_pid)).user == "glm53"


def test_models_endpoint_reports_served_name_and_context(host):
    assert host.run("curl -sf http://127.0.0.1:8000/v1/models").rc != 0, "/v1 answered without the API key"
    out = host.check_output("curl -sf -H 'Authorization: Bearer molecule-test-key' http://127.0.0.1:8000/v1/models")
    card = json.loads(out)["data"][0]
    assert card["id"] == "glm53-flash-awq"
    assert card["max_model_len"] == 524288


def test_chat_completion_has_reasoning_and_content(host):
    body = json.dumps({"model": "glm53-flash-awq", "max_tokens": 2048,
                       "messages": [{"role": "user", "content": "What is 21 * 2?"}]})
    out = host.check_output(
        f"curl -sf http://127.0.0.1:8000/v1/chat/completions -H 'Authorization: Bearer molecule-test-key' "
        f"-H 'Content-Type: application/json' -d '{body}'")
    msg = json.loads(out)["choices"][0]["message"]
    assert msg["reasoning"]
    assert msg["content"].endswith("= 42")


def test_preflight_evidence_records_the_skip(host):
    f = host.file("/var/lib/glm53/evidence/preflight.json")
    assert f.exists and f.mode == 0o644
    record = json.loads(f.content_string)
    assert record["skipped"] == ["build_tools"] and record["deferred"] == ["cuda_toolkit"]
    assert "gpu_compute_capability" in record["passed"] and record["compute_capabilities"] == ["8.9"]
    assert record["gpus"] == ["NVIDIA L40S"] * 8


def test_refused_h200_run_left_no_evidence(host):
    assert not host.file("/tmp/h200-evidence/preflight.json").exists


def test_model_digest_cache_covers_every_shard(host):
    cache = json.loads(host.file("/var/cache/glm53/model-verify.json").content_string)
    shards = [p for p in cache if p.startswith("/srv/models/GLM-5.3-Flash-AWQ-INT4/")]
    assert len(shards) == 6 and all(len(v["sha256"]) == 64 for v in cache.values())


def test_probe_evidence_on_the_host(host):
    evidence = json.loads(host.file("/var/lib/glm53/evidence/probes.json").content_string)
    assert evidence["passed"] and evidence["health"]["ready"] and evidence["chat"]["passed"]
    (needle,) = evidence["needle"]["results"]
    assert abs(needle["tokens"] - 450000) <= 4500 and needle["tokenize_calls"] <= 4
    assert [d["verdict"] for d in needle["depths"]] == ["retrieved"] * 5


def test_probe_report_fetched_to_the_controller(host):
    report = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "glm53-report")
    fetched = json.load(open(os.path.join(report, host.backend.get_hostname() + ".json")))
    assert fetched["host"] == host.backend.get_hostname() and fetched["passed"]
    html = open(os.path.join(report, "report.html")).read()
    assert 'class="host-row"' in html and 'id="heatmap"' in html


def test_serve_script_and_private_env_file(host):
    script = host.file("/opt/glm53/bin/serve-glm53.sh")
    assert script.mode == 0o755 and "--reasoning-parser glm47" in script.content_string
    assert "molecule-test-key" not in script.content_string
    env = host.file("/etc/glm53/vllm-glm53.env")
    assert env.mode == 0o600 and env.user == "root" and "VLLM_API_KEY=molecule-test-key" in env.content_string
    journal = host.check_output("journalctl -u vllm-glm53 --no-pager -o cat")
    assert "molecule-test-key" not in journal


def test_engine_unit_is_hardened_and_verified(host):
    unit = host.file("/etc/systemd/system/vllm-glm53.service").content_string
    for line in ("KillMode=mixed", "Restart=on-failure", "RestartForceExitStatus=0", "LimitMEMLOCK=infinity",
                 "NoNewPrivileges=true", "ProtectSystem=strict", "ProtectHome=true", "PrivateTmp=true",
                 "CapabilityBoundingSet=\n", "RestrictNamespaces=true", "UMask=0077",
                 "TimeoutStartSec=900", "TimeoutStopSec=120", "User=glm53", "RestartPreventExitStatus=76",
                 "ExecStartPost=+/usr/bin/python3 -I /opt/glm53/libexec/relaunch_gate.py"):
        assert line in unit, line
    assert host.run("systemd-analyze verify /etc/systemd/system/vllm-glm53.service").rc == 0


def test_ten_kill9_cycles_relaunched_behind_the_gate_and_ready(host):
    journal = host.check_output("journalctl -u vllm-glm53 --no-pager -o cat")
    lifecycle_checks.ten_kill9_cycles(host, journal)
    assert "Start request repeated too quickly" not in journal


def test_crash_loop_fails_the_unit_with_a_reason_and_the_role_soon_after(host):
    r = lifecycle_checks.crash_loop(host)
    assert r["msg"].startswith("The server died while loading: systemd gave up on unit vllm-glm53"), r["msg"]
    assert r["engine"]["ActiveState"] == "failed" and r["engine"]["Result"] == "exit-code", r["engine"]
    assert r["engine"]["NRestarts"] == 3  # two relaunches that died, then the refused one (status 76)
    journal = host.check_output("journalctl -u vllm-glm53 --no-pager -o cat")
    assert "backoff 2 s (try 2 of 3)" in journal and "backoff 4 s (try 3 of 3)" in journal
    assert "Main process exited, code=exited, status=76" in journal
    # the fixed configuration converged in one run afterwards
    assert host.service("vllm-glm53").is_running


def test_tls_probes_pass_with_the_ca_and_fail_with_another(host):
    r = json.loads(host.file("/root/tls.json").content_string)
    assert r["good"] is True
    assert r["wrong_failed"] and any("TLS handshake" in f["detail"] for fs in r["wrong_findings"] for f in fs), r
    assert "TLS handshake with https://127.0.0.1:8000/health failed" in r["wrong_health_msg"]
    assert r["wrong_health_s"] < 10, r  # at once, not at the 600 s timeout
    state = r["state"]
    assert "/etc/glm53/tls 700 glm53" in state
    for name in ("server.crt", "server.key", "ca.crt"):
        assert "/etc/glm53/tls/%s 600 glm53" % name in state, state
    assert "script: 1" in state and "key-in-logs: 0" in state
    assert not host.file("/etc/glm53/tls").exists  # TLS turned off again: the files are gone
    assert "--ssl-certfile" not in host.file("/opt/glm53/bin/serve-glm53.sh").content_string


def test_unit_exposure_is_at_most_5(host):
    """systemd-analyze security on the running unit (the default profile, service_hardening=standard)."""
    out = host.run("systemd-analyze security --no-pager vllm-glm53.service").stdout
    level = float(re.search(r"Overall exposure level for vllm-glm53.service: ([0-9.]+)", out).group(1))
    print("systemd-analyze security vllm-glm53.service (running, standard profile): %.1f" % level)
    assert level <= 5.0


def test_dry_runs_said_what_they_would_do():
    """site.yml --check --diff: on the fresh host it said what it would build and start; converged, nothing."""
    eph = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
    fresh = open(os.path.join(eph, "dry-run-fresh.log")).read()
    converged = open(os.path.join(eph, "dry-run-converged.log")).read()
    for line in ("Would check out FlashInfer", "Would check out", "Would install, enable and start vllm-glm53.service",
                 "The probes prove the engine after a real run"):
        assert line in fresh, line
    assert "+++ after" in fresh, "no diff shown"
    fresh_recap = re.search(r"glm53-node1\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=0\s+failed=0", fresh)
    converged_recap = re.search(r"glm53-node1\s+: ok=(\d+)\s+changed=0\s+unreachable=0\s+failed=0", converged)
    assert fresh_recap and converged_recap
    print("dry run, fresh host: changed=%s; converged host: changed=0" % fresh_recap.group(2))


# The engine's env file through systemd's own reader: hostile values, written as the serve template writes them
# (KEY={{ value | string | quote }}), come back unchanged in a unit's environment (the tmux supervisor's reader is
# checked with the same values in tests/unit/roles/test_env_file_round_trip.py).
HOSTILE_ENV = {
    "PLAIN": "WARN", "SPACES": "  two  words  ", "SINGLE": "it's", "DOUBLE": 'say "hi"', "DOLLAR": "$HOME and ${PATH}",
    "BACKTICK": "`id`", "SUBSHELL": "$(rm -rf /tmp/x)", "BACKSLASH": "C:\\models\\glm \\n not a newline",
    "HASH": "#not-a-comment", "EQUALS": "a=b=c", "SEMICOLON": "x; touch /tmp/pwned", "EMPTY": "",
    "UNICODE": "繁體中文 ✓", "MIXED": "'\"`$\\;#= ", "NUMBER": 8,
}


def test_hostile_env_values_come_back_unchanged_through_systemd(host):
    import base64

    from ansible.plugins.filter.core import FilterModule
    from jinja2 import Environment

    template = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "serve", "templates", "serve.env.j2")
    with open(template, encoding="utf-8") as fh:
        line = next(t for t in fh.read().splitlines() if t.startswith("{{ key }}="))
    env = Environment()
    env.filters.update(FilterModule().filters())
    text = env.from_string("{% for key, value in env | dictsort %}" + line + "\n{% endfor %}").render(env=HOSTILE_ENV)
    payload = base64.b64encode(("# Ansible managed\n" + text).encode()).decode()
    host.check_output("echo %s | base64 -d > /run/glm53-hostile.env" % payload)
    out = host.run("systemd-run --quiet --wait --pipe --collect -p EnvironmentFile=/run/glm53-hostile.env "
                   "/usr/bin/env -0")
    assert out.rc == 0, out.stderr
    got = dict(item.split("=", 1) for item in out.stdout.split("\0") if "=" in item)
    for key, value in HOSTILE_ENV.items():
        assert got.get(key) == str(value), (key, got.get(key), str(value))


def test_a_frozen_engine_is_healed_and_a_loading_one_never_restarted(host):
    """heal.yml on a pool of one: a SIGSTOPped engine found within its 5 s deadline, relaunched, proved, recorded
    with its time; a 20 s load after a restart left alone by heal.yml and by the watchdog on a 3 s timer; the
    watchdog alone restarts a frozen engine."""
    r = json.loads(host.file("/root/frozen_engine.json").content_string)
    heal, loading, wd = r["heal"], r["loading"], r["watchdog"]
    record = json.loads(heal["record"])
    print("frozen engine: heal.yml from the freeze to its end %.1f s (record: %s s from the survey's start to "
          "re-admission; deadline 5 s + drain + stop + relaunch + 3 s load + probes without the needle); steps %s"
          % (float(heal["seconds"]), record.get("seconds"), record.get("steps")))
    assert int(heal["rc"]) == 0, heal["output"]
    assert int(heal["pid_after"]) != int(heal["pid_before"]) and heal["active_after"] == "active", heal
    assert record["state"] == "healed" and "frozen" in record["reason"], record
    assert record["steps"] == ["drained", "stopped", "relaunched", "proved", "readmitted"], record
    assert float(record["seconds"]) < float(heal["seconds"]) < 300, (record, heal["seconds"])  # not the 1800 s load timeout
    assert re.search(r"glm53-node1: healed in [0-9.]+ s from detection to re-admission", heal["output"]), heal["output"]
    # still loading: neither heal.yml nor the watchdog restarted it
    assert int(loading["rc"]) == 0, loading["output"]
    assert int(loading["pid_after"]) == int(loading["pid_loading"]), loading
    assert "restart" not in loading["watchdog"] and "frozen" not in loading["watchdog"], loading["watchdog"]
    # the watchdog alone: two failed checks, then the restart
    stamps = [line.split(" ", 1) for line in wd["journal"].splitlines() if "glm53 watchdog:" in line]
    first = next(float(t) for t, text in stamps if "frozen: check 1 of 2 failed" in text)
    queued = next(float(t) for t, text in stamps if "systemctl restart vllm-glm53.service: queued" in text)
    print("watchdog: frozen at 0 s, first failed check %.1f s, restart queued %.1f s (timer 3 s, deadline 2 s, "
          "2 checks)" % (first - wd["frozen_at"], queued - wd["frozen_at"]))
    assert queued - wd["frozen_at"] < 30
    assert r["active_end"] == "active" and int(r["pid_end"]) != int(wd["pid_frozen"])
