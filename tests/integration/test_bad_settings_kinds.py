"""Bad settings by kind: values that pass a shape check but are unsafe or absurd by what they mean.

The same machinery as test_bad_settings.py (its good base, its inventory of one host per case, one ansible-playbook
run of site.yml and one of playbooks/rolling_restart.yml): each case is one host with one bad setting on top of the
good base, and must be refused by playbooks/validate.yml (a play named "Refuse bad ...") with a message that names
the setting. The kinds: shell metacharacters in a value that reaches a command line run as root; a path that root
runs, sources or loads placed where another user can write; two settings naming one file or folder under another
spelling; URLs with credentials, a port that is none, an unbracketed IPv6 host, a token sent in clear, a scheme that
is none of the ones the setting takes; references to hosts and groups the inventory does not have; unit names that
collide or are no name; durations, thresholds and gate settings absurd by meaning; secrets written into URLs.

The rollout and heal settings are checked by the rolling_restart.yml run (glm53_validate_rollout=true adds the
rollout and heal roles to validate.yml's checks); everything else, and the monitoring host's settings (hosts named
monitoring-*, in glm53_monitoring), by the site.yml run.

Both runs are made with ANSIBLE_RUN_TAGS naming no tag: only the tasks tagged `always` run, which are validate.yml's
and site.yml's ledger claims (the ledger lies beside the scratch folder). A case that is not refused therefore goes
no further than the claims: no build, no restart turn, no Alertmanager request, no Prometheus file, whatever its
value. The GOOD cases (realistic good values of the same settings) must pass the whole run (failed=0 in the recap).
"""
from __future__ import annotations

import os
import pwd
import re

import pytest

from documented_settings import documented_examples
from test_bad_settings import FATAL_RE, UNIT, _message, run
from testlib import REPO

HAPROXY_HOOK = os.path.join(REPO, "playbooks", "examples", "lb_haproxy.yml")
UPSTREAM_HOOK = os.path.join(REPO, "playbooks", "examples", "lb_upstream.yml")
UV = {"venv_python_source": "uv"}
UV_ARCHIVE = dict(UV, venv_uv_python_version="3.10.13", venv_uv_python_archive_sha256="0" * 64)
HUB = {"model_source": "hub", "model_hf_repo": "spele1100/GLM-5.3-Flash-AWQ-INT4",
       "model_hf_revision": "0123456789abcdef0123456789abcdef01234567", "model_hf_token": "hf_tabletoken"}
HOST_MATCHER = {"name": "host", "value": "{{ inventory_hostname }}", "isRegex": False, "isEqual": True}

# case: (host variables, words the refusal must contain: only the setting's name, the messages are being rewritten)
SITE_KINDS = {
    # --- shell metacharacters in values that reach a command line (or a unit's ExecStart) run as root
    "sh-venv-path-semicolon": ({"venv_path": "/opt/glm53/venv;id"}, ["venv_path"]),
    "sh-releases-dir-subshell": ({"venv_releases_dir": "/opt/glm53/$(id)/releases"}, ["venv_releases_dir"]),
    "sh-uv-dir-backtick": (dict(UV, venv_uv_dir="/opt/glm53/`id`/uv"), ["venv_uv_dir"]),
    "sh-home-percent": ({"venv_service_home": "/var/lib/glm53%h"}, ["venv_service_home"]),
    "sh-script-semicolon": ({"serve_script_path": "/opt/glm53/bin/serve;id.sh"}, ["serve_script_path"]),
    "sh-gate-dir-subshell": ({"service_gate_dir": "/opt/glm53/libexec$(id)"}, ["service_gate_dir"]),
    # --- paths that root runs, sources or loads, where another user can write
    "trust-gate-dir-tmp": ({"service_gate_dir": "/tmp/glm53-gate"}, ["service_gate_dir"]),
    "trust-gate-dir-dev-shm": ({"service_gate_dir": "/dev/shm/glm53-gate"}, ["service_gate_dir"]),
    "trust-gate-dir-in-home": ({"service_gate_dir": "{{ venv_service_home }}/libexec"}, ["service_gate_dir"]),
    "trust-env-file-var-tmp": ({"serve_env_file": "/var/tmp/glm53/vllm.env"}, ["serve_env_file"]),
    "trust-env-file-in-home": ({"serve_env_file": "{{ venv_service_home }}/vllm.env"}, ["serve_env_file"]),
    "trust-script-tmp": ({"serve_script_path": "/tmp/serve-glm53.sh"}, ["serve_script_path"]),
    "trust-script-in-home": ({"serve_script_path": "{{ venv_service_home }}/bin/serve.sh"}, ["serve_script_path"]),
    "trust-uv-dir-tmp": (dict(UV, venv_uv_dir="/tmp/glm53-uv"), ["venv_uv_dir"]),
    "trust-uv-dir-in-home": (dict(UV, venv_uv_dir="{{ venv_service_home }}/uv"), ["venv_uv_dir"]),
    # the engine's home holds the ledger that root reads and rewrites (and heal's record)
    "trust-home-tmp": ({"venv_service_home": "/tmp/glm53-home"}, ["venv_service_home"]),
    "trust-env-pythonpath-tmp": ({"venv_extra_env": {"PYTHONPATH": "/tmp/glm53-py"}}, ["venv_extra_env"]),
    "trust-env-ld-preload-tmp": ({"venv_extra_env": {"LD_PRELOAD": "/tmp/libhook.so"}}, ["venv_extra_env"]),
    "trust-fi-build-env-pythonpath": ({"flashinfer_build_env": {"BUILD_NIXL_EP": "0", "PYTHONPATH": "/var/tmp/fi"}},
                                      ["flashinfer_build_env"]),
    "trust-fork-build-env-ld-preload": ({"vllm_fork_extra_build_env": {"LD_PRELOAD": "/dev/shm/x.so"}},
                                        ["vllm_fork_extra_build_env"]),
    "trust-service-env-ld-preload": ({"service_environment": {"LD_PRELOAD": "/tmp/libhook.so"}}, ["service_environment"]),
    # --- one file or folder under two settings (or two spellings)
    "alias-script-is-env-file": ({"serve_script_path": "{{ serve_env_file }}"}, ["serve_script_path"]),
    "alias-script-is-env-file-dot": ({"serve_script_path": "{{ serve_env_file | dirname }}/./vllm.env"},
                                     ["serve_script_path"]),
    "alias-script-is-env-file-slashes": ({"serve_script_path": "{{ serve_env_file | dirname }}//vllm.env"},
                                         ["serve_script_path"]),
    "alias-gate-dir-trailing-slash": ({"service_gate_dir": "{{ service_config_dir }}/"}, ["service_gate_dir"]),
    "alias-state-dir-is-log-dir-dot": ({"service_state_dir": "{{ service_log_dir }}/."}, ["service_state_dir"]),
    "alias-verify-cache-is-env-file": ({"model_verify_cache_file": "{{ serve_env_file }}"}, ["model_verify_cache_file"]),
    "alias-build-log-is-script": ({"flashinfer_build_log": "{{ serve_script_path }}"}, ["flashinfer_build_log"]),
    # --- URLs: credentials, no port, an unbracketed IPv6 host, a token in clear, a scheme the setting does not take
    "url-uv-mirror-credentials": (dict(UV, venv_uv_python_mirror="https://ci:s3cr3t@mirror.example.com/pbs"),
                                  ["venv_uv_python_mirror"]),
    "url-uv-mirror-port-99999": (dict(UV, venv_uv_python_mirror="https://mirror.example.com:99999/pbs"),
                                 ["venv_uv_python_mirror"]),
    "url-uv-mirror-ftp": (dict(UV, venv_uv_python_mirror="ftp://mirror.example.com/pbs"), ["venv_uv_python_mirror"]),
    "url-uv-archive-credentials": (dict(UV_ARCHIVE, venv_uv_python_archive_url=(
        "https://ci:s3cr3t@mirror.example.com/cpython-3.10.13.tar.gz")), ["venv_uv_python_archive_url"]),
    "url-uv-archive-ipv6-unbracketed": (dict(UV_ARCHIVE, venv_uv_python_archive_url=(
        "https://fd00::5:8443/cpython-3.10.13.tar.gz")), ["venv_uv_python_archive_url"]),
    "url-torch-index-credentials": ({"venv_torch_index_url": "https://ci:s3cr3t@pypi.example.com/whl/cu130"},
                                    ["venv_torch_index_url"]),
    "url-torch-index-ftp": ({"venv_torch_index_url": "ftp://pypi.example.com/whl/cu130"}, ["venv_torch_index_url"]),
    "url-torch-index-port-0": ({"venv_torch_index_url": "https://pypi.example.com:0/whl/cu130"},
                               ["venv_torch_index_url"]),
    "url-torch-index-ipv6-unbracketed": ({"venv_torch_index_url": "http://fe80::1:8080/whl/cu130"},
                                         ["venv_torch_index_url"]),
    "url-hub-token-plain-http": (dict(HUB, model_hf_endpoint="http://hf-mirror.example.com"), ["model_hf_endpoint"]),
    "url-hub-credentials": (dict(HUB, model_hf_endpoint="https://user:hf_s3cr3t@hf-mirror.example.com"),
                            ["model_hf_endpoint"]),
    "url-hub-file-scheme": (dict(HUB, model_hf_endpoint="file:///srv/hf-mirror"), ["model_hf_endpoint"]),
    "url-health-port-0": ({"serve_url": "http://127.0.0.1:0"}, ["serve_url"]),
    "url-probes-ipv6-unbracketed": ({"serve_url": "http://::1:8000"}, ["serve_url"]),
    "monitoring-url-alertmanager-credentials": ({"monitoring_alertmanagers": ["admin:s3cr3t@am.example.com:9093"]},
                                                ["monitoring_alertmanagers"]),
    "monitoring-url-alertmanager-port-0": ({"monitoring_alertmanagers": ["am.example.com:0"]},
                                           ["monitoring_alertmanagers"]),
    "monitoring-url-alertmanager-port-99999": ({"monitoring_alertmanagers": ["am.example.com:99999"]},
                                               ["monitoring_alertmanagers"]),
    "monitoring-url-alertmanager-ipv6-unbracketed": ({"monitoring_alertmanagers": ["fe80::1:9093"]},
                                                     ["monitoring_alertmanagers"]),
    "monitoring-url-alertmanager-port-setting-0": ({"monitoring_alertmanager_port": 0}, ["monitoring_alertmanager_port"]),
    "monitoring-url-blackbox-ipv6-unbracketed": ({"monitoring_blackbox_exporter": "::1:9115"},
                                                 ["monitoring_blackbox_exporter"]),
    "monitoring-url-runbook-ftp": ({"monitoring_runbook_url": "ftp://wiki.example.com/runbooks.md"},
                                   ["monitoring_runbook_url"]),
    # --- secrets written into a URL (logged, shown in alerts, kept in files)
    "secret-health-url-api-key": ({"serve_url": "http://127.0.0.1:8000/health?api_key=s3cr3t-in-url"},
                                  ["serve_url"]),
    "secret-probes-url-credentials": ({"serve_url": "http://glm53:s3cr3t-in-url@127.0.0.1:8000"},
                                      ["serve_url"]),
    "secret-hub-token-in-query": (dict(HUB, model_hf_endpoint="https://hf-mirror.example.com/?token=hf_s3cr3t"),
                                  ["model_hf_endpoint"]),
    "monitoring-secret-runbook-credentials": ({"monitoring_runbook_url": "https://wiki:s3cr3t@wiki.example.com/runbooks.md"},
                                              ["monitoring_runbook_url"]),
    # --- references to hosts and groups the inventory does not have (or the whole of it)
    "monitoring-ref-alertmanagers-group-misspelt": ({"monitoring_alertmanagers_group": "glm53_alertmanagr"},
                                                    ["monitoring_alertmanagers_group"]),
    "monitoring-ref-targets-group-all": ({"monitoring_targets_group": "all"}, ["monitoring_targets_group"]),
    # --- names: a unit name with a suffix, a slash, a dot-dot
    "name-service-dot-service": ({"service_name": "vllm-glm53.service"}, ["service_name"]),
    "name-service-slash": ({"service_name": "glm53/vllm"}, ["service_name"]),
    "name-service-dotdot": ({"service_name": "../vllm-glm53"}, ["service_name"]),
    # --- durations and thresholds absurd by meaning
    "dur-watchdog-interval-100-days": ({"service_watchdog_interval_s": 8640000}, ["service_watchdog_interval_s"]),
    "dur-watchdog-chat-100-days": ({"service_watchdog_chat_timeout_s": 8640000}, ["service_watchdog_chat_timeout_s"]),
    "dur-frozen-deadline-100-days": ({"probes_health_frozen_deadline": 8640000}, ["probes_health_frozen_deadline"]),
    "dur-watchdog-chat-1s": ({"service_watchdog_chat_timeout_s": 1}, ["service_watchdog_chat_timeout_s"]),
    "dur-probes-chat-1s": ({"probes_health_request_timeout": 1}, ["probes_health_request_timeout"]),
    "dur-watchdog-interval-10m": ({"service_watchdog_interval_s": "10m"}, ["service_watchdog_interval_s"]),
    # a uniform guess over the vocabulary scores ln(vocab) ~ 11.9 nats per token: a band above it passes noise
    "band-reference-above-uniform": ({"probes_reference_band": [0.02, 15.0]}, ["probes_reference_band"]),
    "band-reference-reversed": ({"probes_reference_band": [5.0, 0.02]}, ["probes_reference_band"]),
    # the reference belongs to the weights, with an absolute tolerance: the old relative one is named with the new
    "reference-old-relative-tolerance": ({"probes_reference_tolerance": 0.05}, ["probes_reference_tolerance_nats"]),
    "reference-old-baseline-file": ({"probes_reference_baseline_file": "/var/lib/glm53/evidence/b.json"},
                                    ["probes_reference_store"]),
    "reference-tolerance-passes-a-broken-quantisation": ({"probes_reference_tolerance_nats": 0.9},
                                                         ["probes_reference_tolerance_nats"]),
    "reference-tolerance-as-percent": ({"probes_reference_tolerance_nats": "5%"}, ["probes_reference_tolerance_nats"]),
    "reference-weights-two-lines": ({"probes_reference_weights": "zai-org/GLM\nother"}, ["probes_reference_weights"]),
    "reference-weights-blank": ({"probes_reference_weights": " "}, ["probes_reference_weights"]),
    "reference-store-relative": ({"probes_reference_store": "glm53-output/references"}, ["probes_reference_store"]),
}

ROLLOUT_KINDS = {
    # --- shell metacharacters in the schedule's command line (cron's sh, or the unit's ExecStart), run as root
    "sh-heal-log-semicolon": ({"heal_schedule_log": "/var/log/glm53-heal.log;reboot"}, ["heal_schedule_log"]),
    "sh-heal-log-percent": ({"heal_schedule_log": "/var/log/glm53-heal-%Y.log"}, ["heal_schedule_log"]),
    "sh-heal-workdir-subshell": ({"heal_schedule_workdir": "/srv/glm53/$(id)"}, ["heal_schedule_workdir"]),
    "sh-heal-playbook-backtick": ({"heal_schedule_playbook": "/srv/glm53/`id`/heal.yml"}, ["heal_schedule_playbook"]),
    "sh-heal-vars-file-semicolon": ({"heal_schedule_extra_vars_files": ["/srv/glm53/heal-vars.yml;id"]},
                                    ["heal_schedule_extra_vars_files"]),
    "sh-heal-inventory-dollar": ({"heal_schedule_inventory": ["/srv/glm53/hosts-$HOSTNAME.yml"]},
                                 ["heal_schedule_inventory"]),
    "sh-heal-inventory-percent": ({"heal_schedule_inventory": ["/srv/glm53/hosts%d.yml"]}, ["heal_schedule_inventory"]),
    "sh-heal-ansible-playbook-and": ({"heal_schedule_ansible_playbook": "/opt/ansible/bin/ansible-playbook&&id"},
                                     ["heal_schedule_ansible_playbook"]),
    # --- what the schedule (root) runs or reads, where another user can write
    "trust-heal-vars-file-tmp": ({"heal_schedule_extra_vars_files": ["/tmp/heal-vars.yml"]},
                                 ["heal_schedule_extra_vars_files"]),
    "trust-heal-vars-file-in-home": ({"heal_schedule_extra_vars_files": ["{{ venv_service_home }}/heal-vars.yml"]},
                                     ["heal_schedule_extra_vars_files"]),
    "trust-heal-playbook-var-tmp": ({"heal_schedule_playbook": "/var/tmp/heal.yml"}, ["heal_schedule_playbook"]),
    "trust-heal-inventory-dev-shm": ({"heal_schedule_inventory": ["/dev/shm/hosts.yml"]}, ["heal_schedule_inventory"]),
    "trust-heal-workdir-tmp": ({"heal_schedule_workdir": "/tmp"}, ["heal_schedule_workdir"]),
    "trust-heal-log-tmp": ({"heal_schedule_log": "/tmp/glm53-heal.log"}, ["heal_schedule_log"]),
    "trust-heal-state-tmp": ({"heal_state_file": "/tmp/heal.json"}, ["heal_state_file"]),
    # --- one file under two settings (or two spellings)
    "alias-heal-state-is-env-file": ({"heal_state_file": "{{ serve_env_file }}"}, ["heal_state_file"]),
    "alias-heal-state-is-env-file-dot": ({"heal_state_file": "{{ serve_env_file | dirname }}/./vllm.env"},
                                         ["heal_state_file"]),
    "alias-heal-state-is-script-slashes": ({"heal_state_file": "{{ serve_script_path | dirname }}//serve.sh"},
                                           ["heal_state_file"]),
    # --- Alertmanager's URL
    "url-am-credentials": ({"rollout_alertmanager_url": "https://admin:s3cr3t@am.example.com:9093"},
                           ["rollout_alertmanager_url"]),
    "url-am-port-0": ({"rollout_alertmanager_url": "http://am.example.com:0"}, ["rollout_alertmanager_url"]),
    "url-am-ipv6-unbracketed": ({"rollout_alertmanager_url": "http://fe80::1:9093"}, ["rollout_alertmanager_url"]),
    "url-am-token-plain-http": ({"rollout_alertmanager_url": "http://am.example.com:9093",
                                 "rollout_alertmanager_token": "am-table-token"}, ["rollout_alertmanager_url"]),
    "url-am-ftp": ({"rollout_alertmanager_url": "ftp://am.example.com:9093"}, ["rollout_alertmanager_url"]),
    "url-metrics-port-99999": ({"serve_url": "http://127.0.0.1:99999"}, ["serve_url"]),
    # --- secrets in a URL
    "secret-am-token-in-query": ({"rollout_alertmanager_url": "https://am.example.com:9093/?token=s3cr3t-in-url"},
                                 ["rollout_alertmanager_url"]),
    "secret-metrics-url-credentials": ({"serve_url": "http://glm53:s3cr3t-in-url@127.0.0.1:8000"},
                                       ["serve_url"]),
    # --- references: hosts and groups the inventory does not have, or the whole inventory
    "ref-rollout-hosts-missing": ({"rollout_hosts": "gpu-node-99"}, ["rollout_hosts"]),
    "ref-rollout-hosts-all": ({"rollout_hosts": "all"}, ["rollout_hosts"]),
    "ref-rollout-hosts-star": ({"rollout_hosts": "*"}, ["rollout_hosts"]),
    "ref-lb-host-missing-haproxy": ({"rollout_drain_tasks": HAPROXY_HOOK, "rollout_admit_tasks": HAPROXY_HOOK,
                                     "lb_host": "lb-nope"}, ["lb_host"]),
    "ref-lb-host-missing-upstream": ({"rollout_drain_tasks": UPSTREAM_HOOK, "rollout_admit_tasks": UPSTREAM_HOOK,
                                      "lb_host": "nginx-lb-01", "lb_upstream_file": "/etc/nginx/conf.d/glm53.conf"},
                                     ["lb_host"]),
    "ref-heal-schedule-host-missing": ({"heal_schedule_host": "ansible-controller-01"}, ["heal_schedule_host"]),
    # --- names: the heal schedule's units must not be the engine's, and must be a unit name
    "name-heal-is-service-name": ({"heal_schedule_name": "{{ service_name }}"}, ["heal_schedule_name"]),
    "name-heal-is-service-literal": ({"heal_schedule_name": UNIT}, ["heal_schedule_name"]),
    "name-heal-is-watchdog": ({"heal_schedule_name": "{{ service_name }}-watchdog"}, ["heal_schedule_name"]),
    "name-heal-slash": ({"heal_schedule_name": "glm53/heal"}, ["heal_schedule_name"]),
    "name-heal-dotdot": ({"heal_schedule_name": "../glm53-heal"}, ["heal_schedule_name"]),
    "name-heal-dot-service": ({"heal_schedule_name": "glm53-heal.service"}, ["heal_schedule_name"]),
    # the engine's unit under the heal schedule's (default) name: either install overwrites the other
    "name-service-is-heal-schedule": ({"service_name": "glm53-heal"}, ["service_name"]),
    # --- durations given in the wrong unit, gates that cannot work
    "dur-drain-10m": ({"rollout_drain_timeout": "10m"}, ["rollout_drain_timeout"]),
    "dur-heal-drain-10m": ({"heal_drain_timeout": "10m"}, ["heal_drain_timeout"]),
    "dur-lb-drain-wait-10m": ({"rollout_drain_tasks": HAPROXY_HOOK, "rollout_admit_tasks": HAPROXY_HOOK,
                               "lb_haproxy_drain_wait_s": "10m"}, ["lb_haproxy_drain_wait_s"]),
    "dur-silence-10m": ({"rollout_silence_duration_s": "10m"}, ["rollout_silence_duration_s"]),
    "gate-quality-without-reference": ({"rollout_quality_gate": True, "probes_reference": False},
                                       ["rollout_quality_gate"]),
    "gate-quality-default-reference-off-cli": ({"probes_reference": "no"}, ["rollout_quality_gate"]),
    # vllm bench serve (as bench_serve runs it: default --percentile-metrics ttft,tpot,itl, --metric-percentiles 99)
    # never reports these
    "gate-figure-p90-not-reported": ({"rollout_max_regression_pct": {"p90_ttft_ms": 10}}, ["rollout_max_regression_pct"]),
    "gate-figure-e2el-not-reported": ({"rollout_max_regression_pct": {"p99_e2el_ms": 10}}, ["rollout_max_regression_pct"]),
    "gate-figure-unknown": ({"rollout_max_regression_pct": {"tokens_per_second": 10}}, ["rollout_max_regression_pct"]),
    # --- silence matchers that silence every host, the others, or nothing known
    "silence-regex-every-host": ({"rollout_silence_matchers": [{"name": "host", "value": ".*", "isRegex": True,
                                                                "isEqual": True}]}, ["rollout_silence_matchers"]),
    "silence-negated": ({"rollout_silence_matchers": [dict(HOST_MATCHER, isEqual=False)]}, ["rollout_silence_matchers"]),
    "silence-empty-list": ({"rollout_silence_matchers": []}, ["rollout_silence_matchers"]),
    "silence-empty-value": ({"rollout_silence_matchers": [dict(HOST_MATCHER, value="")]}, ["rollout_silence_matchers"]),
    "silence-job-only": ({"rollout_silence_matchers": [{"name": "job", "value": "vllm-glm53", "isRegex": False,
                                                        "isEqual": True}]}, ["rollout_silence_matchers"]),
}

# Pool disagreement needs TWO hosts of one pool, and the table's hosts are all one pool (glm53_serving): a host with
# its own value disagrees with every other case, so no single case can carry it. Need multi-host support:
#   pool-api-key:        host A serve_api_key "key-a", host B serve_api_key "key-b" (a balancer's clients hold one)
#   pool-max-model-len:  host A serve_max_model_len 524288, host B 131072 (a request fits on one and not the other)
#   pool-url-scheme:     host A with serve_ssl_certfile_src/serve_ssl_keyfile_src (https), host B without (http)
#   pool-served-name:    host A serve_served_model_name "glm53-flash-awq", host B "glm53-flash" (fleet_problems lists
#                        it on localhost today, and with glm53_validate_stop_all=false that refuses no host)

# Realistic good values of the same settings: each must pass the whole run.
SITE_GOOD = {
    "good-kinds-reference-weights": ({"probes_reference_weights": "zai-org/GLM-5.3-Flash-AWQ-INT4@0f3c9a1",
                                      "probes_reference_tolerance_nats": 0.05,
                                      "probes_reference_store": "/srv/glm53/references"}, []),
    "good-kinds-root-paths": ({"service_gate_dir": "/opt/glm53/libexec", "serve_script_path": "/opt/glm53/bin/serve-glm53.sh",
                               "serve_env_file": "/etc/glm53/vllm-glm53.env"}, []),
    "good-kinds-uv-mirror-https": (dict(UV, venv_uv_python_mirror=(
        "https://mirror.example.com/python-build-standalone/releases/download")), []),
    "good-kinds-uv-archive-https": (dict(UV_ARCHIVE, venv_uv_python_archive_url=(
        "https://mirror.example.com/pbs/cpython-3.10.13+20240224-x86_64-unknown-linux-gnu-install_only.tar.gz")), []),
    "good-kinds-torch-index-ipv6": ({"venv_torch_index_url": "https://[fd00:5::10]:8443/whl/cu130"}, []),
    "good-kinds-hub-https": (dict(HUB, model_hf_endpoint="https://hf-mirror.example.com"), []),
    "good-kinds-hub-loopback-http": (dict(HUB, model_hf_endpoint="http://127.0.0.1:8080"), []),
    "good-kinds-env-own-paths": ({"venv_extra_env": {"PYTHONPATH": "/opt/glm53/lib/python3.10/site-packages"},
                                  "flashinfer_build_env": {"BUILD_NIXL_EP": "0", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"},
                                  "vllm_fork_extra_build_env": {"CCACHE_DIR": "/var/cache/ccache"}}, []),
    "good-kinds-durations": ({"service_watchdog_interval_s": 120, "service_watchdog_chat_timeout_s": 60,
                              "probes_health_frozen_deadline": 45, "probes_health_request_timeout": 300,
                              "probes_reference_band": [0.05, 4.0]}, []),
    "good-kinds-service-name": ({"service_name": "vllm-glm53-b"}, []),
    # Alertmanager beside Prometheus on the monitoring host (its group), and two more by host:port
    "monitoring-good-kinds": ({"monitoring_alertmanagers": ["alertmanager.example.com:9093", "[fd00::9]:9093"],
                               "monitoring_alertmanagers_group": "glm53_monitoring",
                               "monitoring_runbook_url": "https://wiki.example.com/glm53/runbooks.md",
                               "monitoring_alertmanager_port": 9093, "monitoring_scrape_interval": "30s",
                               "monitoring_kv_cache_for": "10m"}, []),
}

ROLLOUT_GOOD = {
    "good-rollout-base": ({}, []),
    "good-am-https-token": ({"rollout_alertmanager_url": "https://alertmanager.example.com:9093",
                             "rollout_alertmanager_token": "am-table-token"}, []),
    "good-am-ipv6": ({"rollout_alertmanager_url": "http://[fd00::9]:9093"}, []),
    "good-am-loopback-token": ({"rollout_alertmanager_url": "http://127.0.0.1:9093",
                                "rollout_alertmanager_token": "am-table-token"}, []),
    "good-heal-schedule": ({"heal_schedule_workdir": "/srv/glm53", "heal_schedule_playbook": "/srv/glm53/playbooks/heal.yml",
                            "heal_schedule_inventory": ["/srv/glm53/inventory/hosts.yml"],
                            "heal_schedule_extra_vars_files": ["/srv/glm53/heal-vars.yml"],
                            "heal_schedule_log": "/var/log/glm53-heal.log", "heal_schedule_name": "glm53-heal-fleet-a",
                            "heal_schedule_host": "localhost"}, []),
    "good-durations": ({"rollout_drain_timeout": 600, "heal_drain_timeout": 120, "rollout_silence_duration_s": 7200,
                        "rollout_drain_tasks": HAPROXY_HOOK, "rollout_admit_tasks": HAPROXY_HOOK,
                        "lb_haproxy_drain_wait_s": 600, "lb_host": "localhost"}, []),
    "good-silence-matchers": ({"rollout_silence_matchers": [HOST_MATCHER, {"name": "job", "value": "vllm-glm53",
                                                                           "isRegex": False, "isEqual": True}]}, []),
    "good-gates": ({"rollout_max_regression_pct": {"output_throughput": 5, "p99_ttft_ms": 15, "median_tpot_ms": 10},
                    "rollout_quality_gate": True, "probes_reference": True}, []),
    "good-lb-host-in-inventory": ({"rollout_drain_tasks": UPSTREAM_HOOK, "rollout_admit_tasks": UPSTREAM_HOOK,
                                   "lb_host": "good-rollout-base", "lb_kind": "nginx",
                                   "lb_upstream_file": "/etc/nginx/conf.d/glm53.conf",
                                   "lb_reload_command": "nginx -s reload"}, []),
    "good-rollout-hosts-group": ({"rollout_hosts": "glm53_serving"}, []),
}

# The documentation's own examples (tests/helpers/documented_settings.py): each command's -e values and each
# group_vars block a guide shows, as a host of its own; the rollout's and heal's in the rolling_restart.yml run. Each
# passes, or, where the guide shows it as a refusal, is refused naming the setting.
# An example naming what is on a user's hosts (a folder, an internal index) passes the rules and is refused by the
# check that reads the host (DOC_HOST_CHECKED).
ROLLOUT_PREFIXES = ("rollout_", "heal_", "lb_")
DOC_HOST_CHECKED = {}
for _case, _example in documented_examples().items():
    _rollout = any(k.startswith(ROLLOUT_PREFIXES) for k in _example["settings"])
    if _example["host_checked"]:
        DOC_HOST_CHECKED[_case] = (_example["settings"], _example["host_checked"])
        (ROLLOUT_GOOD if _rollout else SITE_GOOD)[_case] = (_example["settings"], [])
    elif _example["refused"]:
        (ROLLOUT_KINDS if _rollout else SITE_KINDS)[_case] = (_example["settings"], _example["refused"])
    else:
        (ROLLOUT_GOOD if _rollout else SITE_GOOD)[_case] = (_example["settings"], [])

VALIDATION_PLAYS = ("Refuse bad ", "Check the fleet as a whole ")  # playbooks/validate.yml's plays
PLAY_RE = re.compile(r"^PLAY \[(.*)\] \**$")
RECAP_RE = re.compile(r"^(\S+)\s+:\s+ok=\d+\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)", re.M)
NO_TAG = "glm53-table-validation-only"


def refusals(stdout):
    """{host: (play, result)} for each fatal, with the play it came from."""
    found, play = {}, None
    for line in stdout.splitlines():
        m = PLAY_RE.match(line)
        if m:
            play = m.group(1)
            continue
        m = FATAL_RE.match(line)
        if m:
            found.setdefault(m.group(1), (play, m.group(2)))
    return found


def run_kinds(tmp_path_factory, playbook, cases):
    """test_bad_settings.run, with only the tasks tagged always (validation and the ledger's claims)."""
    saved = os.environ.get("ANSIBLE_RUN_TAGS")
    os.environ["ANSIBLE_RUN_TAGS"] = NO_TAG
    try:
        proc, failures, scratch, _pki = run(tmp_path_factory, playbook, cases, good=False)
    finally:
        if saved is None:
            del os.environ["ANSIBLE_RUN_TAGS"]
        else:
            os.environ["ANSIBLE_RUN_TAGS"] = saved
    recap = dict((host, int(unreachable) + int(failed)) for host, unreachable, failed in RECAP_RE.findall(proc.stdout))
    return proc, failures, refusals(proc.stdout), recap, scratch


@pytest.fixture(scope="module")
def site_kinds(tmp_path_factory):
    return run_kinds(tmp_path_factory, "site.yml", {**SITE_GOOD, **SITE_KINDS})


@pytest.fixture(scope="module")
def rollout_kinds(tmp_path_factory):
    # the good hosts first: the first host of the run is the one a rollout would take first
    return run_kinds(tmp_path_factory, "playbooks/rolling_restart.yml", {**ROLLOUT_GOOD, **ROLLOUT_KINDS})


def check_refused(result, cases, case):
    proc, failures, plays, _recap, _scratch = result
    assert case in failures, "%s was accepted by validation:\n%s" % (case, proc.stdout[-3000:])
    play, _body = plays[case]
    msg = _message(failures[case])
    assert (play or "").startswith(VALIDATION_PLAYS), "%s was refused after validation, in %r: %s" % (case, play, msg)
    for word in cases[case][1]:
        assert word in msg, "%r not in %s's refusal: %s" % (word, case, msg)


def check_good(result, case):
    proc, failures, _plays, recap, _scratch = result
    assert case not in failures, "good %s was refused: %s" % (case, _message(failures[case]))
    assert recap.get(case) == 0, "good %s did not pass the run:\n%s" % (case, proc.stdout[-3000:])


@pytest.mark.parametrize("case", list(SITE_KINDS))
def test_site_kinds_refused(site_kinds, case):
    check_refused(site_kinds, SITE_KINDS, case)


@pytest.mark.parametrize("case", list(ROLLOUT_KINDS))
def test_rollout_kinds_refused(rollout_kinds, case):
    check_refused(rollout_kinds, ROLLOUT_KINDS, case)


@pytest.mark.parametrize("case", [c for c in SITE_GOOD if c not in DOC_HOST_CHECKED])
def test_site_kinds_good_values_pass(site_kinds, case):
    check_good(site_kinds, case)


@pytest.mark.parametrize("case", [c for c in DOC_HOST_CHECKED if c in SITE_GOOD])
def test_documented_host_values_pass_the_rules_and_meet_the_host_check(site_kinds, case):
    """A guide's folder or index, which this machine has not: refused by the check that reads the host, after the
    rules passed it (a refusal by the rules names no host check)."""
    proc, failures, _plays, _recap, _scratch = site_kinds
    assert case in failures, "%s was not checked on the host:\n%s" % (case, proc.stdout[-3000:])
    msg = _message(failures[case])
    for word in DOC_HOST_CHECKED[case][1]:
        assert word in msg, "%r not in %s's refusal: %s" % (word, case, msg)


@pytest.mark.parametrize("case", [c for c in ROLLOUT_GOOD if c not in DOC_HOST_CHECKED])
def test_rollout_kinds_good_values_pass(rollout_kinds, case):
    check_good(rollout_kinds, case)


def test_kinds_table_wrote_nothing(site_kinds, rollout_kinds):
    assert len(SITE_KINDS) + len(ROLLOUT_KINDS) >= 70
    assert not set(SITE_KINDS) & set(ROLLOUT_KINDS) and not set(SITE_GOOD) & set(SITE_KINDS)
    for _proc, _failures, _plays, _recap, scratch in (site_kinds, rollout_kinds):
        assert list(scratch.iterdir()) == [], "a run wrote %s" % list(scratch.iterdir())
    with pytest.raises(KeyError):
        pwd.getpwnam("glm53-table-test")
    assert not os.path.exists("/etc/systemd/system/%s.service" % UNIT)
