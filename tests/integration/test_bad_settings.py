"""A table of bad settings of the kind users write, across every role: each is refused before any change.

One ansible-playbook run of site.yml (and one of rolling_restart.yml for the rollout settings) over an
inventory with one host per case, each host carrying one bad setting on top of a good base whose every path
points into a temporary folder. site.yml's first play (playbooks/validate.yml, with
glm53_validate_stop_all=false so that every host reports its own refusal) must fail every host with a
message naming the variable (or the flag) and the fix; the bring-up play must not start for any of them, the
temporary folder must stay empty, no user is created and no unit is installed. A host with the good base
alone passes validation, so the table cannot pass by refusing everything (it is then stopped in preflight,
which only reads: no GPU tool is on its path).
"""
from __future__ import annotations

import json
import os
import pwd
import re
import subprocess
import sys

import pytest
import yaml

from testlib import COLLECTIONS_ROOT, REPO


USER = "glm53-table-test"
UNIT = "vllm-glm53-table-test"


def base(tmp):
    t = str(tmp)
    return {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "glm53_validate_stop_all": False,
        "venv_path": t + "/venv", "venv_service_user": USER, "venv_service_group": USER,
        "venv_service_home": t + "/home",
        "flashinfer_src_dir": t + "/src/flashinfer", "flashinfer_build_log": t + "/log/fi.log",
        "vllm_fork_src_dir": t + "/src/vllm", "vllm_fork_build_log": t + "/log/vllm.log",
        "vllm_fork_wheelhouse": t + "/wheels", "vllm_fork_controller_wheelhouse": t + "/relay",
        "model_path": t + "/models/glm", "model_hf_cache_dir": t + "/models/cache", "model_tools_venv": t + "/tools",
        "model_verify_cache_file": t + "/cache/verify.json",
        "serve_script_path": t + "/bin/serve.sh", "serve_env_file": t + "/etc/vllm.env",
        "serve_api_key": "table-test-key",
        "service_name": UNIT, "service_gate_dir": t + "/libexec", "service_config_dir": t + "/etc",
        "service_state_dir": t + "/run", "service_log_dir": t + "/log",
        "probes_evidence_dir": t + "/evidence", "probes_report_dir": t + "/report",
        "preflight_nvidia_smi": t + "/no-nvidia-smi",
        "preflight_disk_requirements": [{"path": t + "/opt", "min_free_gib": 1}],
        # the good hosts pass validation and write the host's ledger (this machine's) before preflight stops them:
        # beside the scratch folder, which must stay empty
        "__glm53_ledger_file": os.path.dirname(t) + "/ledger.json",
        # node_exporter's folder of this machine is not the table's: the claims of the good hosts stay beside scratch
        "probes_textfile_dir": os.path.dirname(t) + "/textfile",
    }


# case: (host variables, words the refusal must contain)
SITE = {
    # serve: ranges and shapes
    "serve-port-0": ({"serve_port": 0}, ["serve_port=0 is not a TCP port"]),
    "serve-port-70000": ({"serve_port": 70000}, ["serve_port=70000", "1 to 65535"]),
    "serve-port-negative": ({"serve_port": -1}, ["serve_port=-1"]),
    "serve-port-text": ({"serve_port": "80x"}, ["serve_port"]),
    "serve-gmu-0": ({"serve_gpu_memory_utilization": 0}, ["serve_gpu_memory_utilization=0", "from 0.5 to 1", "the card uses 0.94"]),
    "serve-gmu-1-5": ({"serve_gpu_memory_utilization": 1.5}, ["serve_gpu_memory_utilization=1.5"]),
    "serve-gmu-percent": ({"serve_gpu_memory_utilization": 94}, ["serve_gpu_memory_utilization=94"]),
    "serve-gmu-text": ({"serve_gpu_memory_utilization": "high"}, ["serve_gpu_memory_utilization"]),
    "serve-context-1m": ({"serve_max_model_len": 1048576}, ["serve_max_model_len=1048576", "no opt-in goes beyond"]),
    "serve-context-800k-opt-in": ({"serve_max_model_len": 819200, "serve_allow_long_context": True},
                                  ["serve_max_model_len=819200", "no opt-in goes beyond 614400"]),
    "serve-context-600k-no-opt-in": ({"serve_max_model_len": 600000}, ["serve_allow_long_context=true"]),
    "serve-context-0": ({"serve_max_model_len": 0}, ["serve_max_model_len=0"]),
    "serve-fp8-kv": ({"serve_kv_cache_dtype": "fp8"}, ["serve_kv_cache_dtype=fp8", "serve_kv_cache_dtype=auto"]),
    "serve-fp8-e5m2-kv": ({"serve_kv_cache_dtype": "fp8_e5m2"}, ["serve_kv_cache_dtype=fp8_e5m2"]),
    "serve-enforce-eager": ({"serve_enforce_eager": True}, ["serve_enforce_eager=true", "FULL_DECODE_ONLY"]),
    "serve-tp-3": ({"serve_tensor_parallel_size": 3}, ["serve_tensor_parallel_size=3"]),
    "serve-tp-0": ({"serve_tensor_parallel_size": 0}, ["serve_tensor_parallel_size=0"]),
    "serve-batched-0": ({"serve_max_num_batched_tokens": 0}, ["serve_max_num_batched_tokens=0"]),
    "serve-auto-tool-no-parser": ({"serve_tool_call_parser": ""}, ["serve_tool_call_parser"]),
    "serve-sparse-long": ({"serve_max_model_len": 600000, "serve_allow_long_context": True,
                           "serve_hf_overrides": {"text_config": {"index_topk": 2048}}},
                          ["serve_hf_overrides", "persistent_topk"]),
    "serve-public-no-key": ({"serve_api_key": ""}, ["serve_host=0.0.0.0", "serve_api_key"]),
    "serve-tls-public-no-key": ({"serve_api_key": "", "serve_ssl_certfile_src": "/etc/hostname",
                                 "serve_ssl_keyfile_src": "/etc/hostname"}, ["serve_host=0.0.0.0", "serve_api_key"]),
    "serve-tls-cert-no-key": ({"serve_ssl_certfile_src": "/etc/hostname"},
                              ["serve_ssl_certfile_src and serve_ssl_keyfile_src go together"]),
    "serve-tls-key-no-cert": ({"serve_ssl_keyfile_src": "/etc/hostname"},
                              ["serve_ssl_certfile_src and serve_ssl_keyfile_src go together"]),
    "serve-tls-ca-alone": ({"serve_ssl_ca_certs_src": "/etc/hostname"}, ["serve_ssl_ca_certs_src needs"]),
    "serve-tls-missing-file": ({"serve_ssl_certfile_src": "/nonexistent/server.crt",
                                "serve_ssl_keyfile_src": "/etc/hostname"},
                               ["serve_ssl_certfile_src must name a readable PEM file on the controller"]),
    "serve-tls-relative-dir": ({"serve_tls_dir": "tls"}, ["serve_tls_dir=\"tls\""]),
    "extra-ssl-keyfile": ({"serve_extra_args": ["--ssl-keyfile", "/tmp/k.pem"]}, ["serve_ssl_keyfile_src instead"]),
    "serve-blank-key": ({"serve_api_key": "   "}, ["serve_api_key=(hidden)", "non-blank"]),
    "serve-key-newline": ({"serve_api_key": "abc\ndef"}, ["serve_api_key=(hidden)", "line break"]),
    "serve-relative-script": ({"serve_script_path": "bin/serve.sh"}, ["serve_script_path=\"bin/serve.sh\"", "absolute"]),
    "serve-relative-env": ({"serve_env_file": "vllm.env"}, ["serve_env_file=\"vllm.env\""]),
    "serve-relative-model": ({"model_path": "models/GLM"}, ["model_path=\"models/GLM\""]),
    "serve-dotdot-model": ({"model_path": "/srv/../etc"}, ["model_path=\"/srv/../etc\""]),
    "serve-relative-venv": ({"venv_path": "venv"}, ["venv_path=\"venv\""]),
    "serve-name-space": ({"serve_served_model_name": "glm53 flash"}, ["serve_served_model_name"]),
    # serve: the escape hatch
    "extra-max-model-len": ({"serve_extra_args": ["--max-model-len", "1048576"]}, ["'--max-model-len'", "serve_max_model_len instead"]),
    "extra-prefix": ({"serve_extra_args": ["--max-model", "1M"]}, ["'--max-model'", "serve_max_model_len instead"]),
    "extra-underscore-equals": ({"serve_extra_args": ["--max_model_len=1000000"]}, ["serve_max_model_len instead"]),
    "extra-fp8-equals": ({"serve_extra_args": ["--kv-cache-dtype=fp8"]}, ["serve_kv_cache_dtype instead"]),
    "extra-enforce-eager": ({"serve_extra_args": ["--enforce-eager"]}, ["serve_enforce_eager instead"]),
    "extra-host": ({"serve_extra_args": ["--host", "0.0.0.0"]}, ["serve_host instead"]),
    "extra-api-key": ({"serve_extra_args": ["--api-key", "s3cr3t-on-the-cli"]}, ["serve_api_key"]),
    "extra-api-key-equals": ({"serve_extra_args": ["--api_key=s3cr3t-on-the-cli"]}, ["'--api_key=...'", "serve_api_key"]),
    "extra-tp-short": ({"serve_extra_args": ["-tp", "4"]}, ["'-tp'", "serve_tensor_parallel_size instead"]),
    "extra-O3": ({"serve_extra_args": ["-O3"]}, ["'-O3'", "serve_compilation_config instead"]),
    "extra-dotted-cc": ({"serve_extra_args": ["--compilation-config.cudagraph_mode=NONE"]}, ["serve_compilation_config instead"]),
    "extra-gmu": ({"serve_extra_args": ["--gpu-memory-utilization=0.99"]}, ["serve_gpu_memory_utilization instead"]),
    "extra-prefix-caching": ({"serve_extra_args": ["--enable-prefix-caching"]}, ["serve_enable_prefix_caching instead"]),
    "extra-port": ({"serve_extra_args": ["--port", "9000"]}, ["serve_port instead"]),
    "extra-served-name": ({"serve_extra_args": ["--served-model-name", "other"]}, ["serve_served_model_name instead"]),
    "extra-model": ({"serve_extra_args": ["--model", "/other"]}, ["model_path instead"]),
    "extra-reasoning": ({"serve_extra_args": ["--reasoning-parser", "deepseek_r1"]}, ["serve_reasoning_parser instead"]),
    "extra-hf-overrides": ({"serve_extra_args": ["--hf-overrides", "{}"]}, ["serve_hf_overrides instead"]),
    # service
    "service-start-60": ({"service_timeout_start_sec": 60}, ["service_timeout_start_sec=60", "from 600 to 86400"]),
    "service-start-0": ({"service_timeout_start_sec": 0}, ["service_timeout_start_sec=0"]),
    "service-ready-30": ({"service_ready_timeout": 30}, ["service_ready_timeout=30"]),
    "service-gate-5": ({"service_gate_timeout": 5}, ["service_gate_timeout=5", "from 60 to 3600"]),
    "service-restart-0": ({"service_restart_sec": 0}, ["service_restart_sec=0"]),
    "service-tries-0": ({"service_start_tries": 0}, ["service_start_tries=0", "from 1 to 20"]),
    "service-tries-text": ({"service_start_tries": "many"}, ["service_start_tries", "many"]),
    "service-max-delay-below-restart": ({"service_restart_sec": 10, "service_restart_max_delay_sec": 5},
                                        ["service_restart_max_delay_sec=5", "from 10 to 3600"]),
    "service-writable-relative": ({"service_writable_paths": ["/var/lib/glm53", "cache"]},
                                  ["service_writable_paths"]),
    "service-stop-negative": ({"service_timeout_stop_sec": -5}, ["service_timeout_stop_sec=-5"]),
    "service-name-space": ({"service_name": "vllm glm53"}, ["service_name=\"vllm glm53\""]),
    # free-text unit lines are gone (a removed setting is refused, naming the typed ones), whatever the line says
    "service-execstart": ({"service_extra_unit_lines": ["ExecStart=/bin/bash -c 'vllm serve x'"]},
                          ["service_extra_unit_lines was removed", "service_nice"]),
    "service-unset-key": ({"service_extra_unit_lines": ["UnsetEnvironment=VLLM_API_KEY"]},
                          ["service_extra_unit_lines was removed", "drop-in you own"]),
    "service-nice-40": ({"service_nice": 40}, ["service_nice=40", "-20"]),
    # in range by type, absurd by meaning: each duration, count and fraction has a range with its reason
    "service-start-1e20": ({"service_timeout_start_sec": 10 ** 20}, ["service_timeout_start_sec=", "from 600 to 86400"]),
    "serve-gmu-tiny": ({"serve_gpu_memory_utilization": 1e-9}, ["serve_gpu_memory_utilization=", "from 0.5 to 1"]),
    "venv-keep-million": ({"venv_releases_keep": 1000000}, ["venv_releases_keep=1000000", "from 2 to 20"]),
    # invisible characters, in any setting: refused before anything, naming the character and never the value
    "serve-key-zero-width": ({"serve_api_key": "table-test-key\u200b"}, ["serve_api_key holds U+200B ZERO WIDTH SPACE"]),
    "model-token-bom": ({"model_hf_token": "\ufeffhf_table"}, ["model_hf_token holds U+FEFF"]),
    "serve-name-rtl-override": ({"serve_served_model_name": "glm53\u202eflash"},
                                ["serve_served_model_name holds U+202E RIGHT-TO-LEFT OVERRIDE"]),
    "service-nofile-100": ({"service_limit_nofile": 100}, ["service_limit_nofile=100 is below 1024"]),
    "service-nofile-huge": ({"service_limit_nofile": 10 ** 9}, ["service_limit_nofile=1000000000"]),
    "service-memlock-unlimited": ({"service_limit_memlock": "unlimited"}, ["service_limit_memlock"]),
    "service-mode-docker": ({"service_mode": "docker"}, ["service_mode"]),
    "service-relative-log": ({"service_log_dir": "logs"}, ["service_log_dir=\"logs\""]),
    "service-url-no-scheme": ({"serve_url": "localhost:8000"}, ["serve_url=\"localhost:8000\""]),
    # a second name for one value, removed: refused with the owner's name, never ignored
    "service-port-old-name": ({"service_port": 8001}, ["service_port was another name for serve_port", "set serve_port instead"]),
    # probes
    "probes-chat-512": ({"probes_chat_max_tokens": 512}, ["probes_chat_max_tokens=512", "2048"]),
    "probes-no-targets": ({"probes_needle_targets": []}, ["probes_needle_targets=[]"]),
    "probes-target-above-context": ({"probes_needle_targets": [600000]}, ["probes_needle_targets[0]=600000", "1000 to 520192", "serve_max_model_len"]),
    "probes-target-tiny": ({"probes_needle_targets": [500]}, ["probes_needle_targets[0]=500"]),
    "probes-depth-150": ({"probes_needle_depths": [10, 150]}, ["probes_needle_depths[1]=150", "0 to 100"]),
    "probes-depth-negative": ({"probes_needle_depths": [-10]}, ["probes_needle_depths[0]=-10"]),
    "probes-url-no-scheme": ({"serve_url": "127.0.0.1:8000"}, ["serve_url=\"127.0.0.1:8000\""]),
    "probes-health-0": ({"probes_health_timeout": 0}, ["probes_health_timeout=0"]),
    "probes-health-request-0": ({"probes_health_request_timeout": 0}, ["probes_health_request_timeout=0"]),
    "watchdog-tmux": ({"service_mode": "tmux", "service_watchdog": True}, ["service_watchdog=true needs service_mode=systemd"]),
    "watchdog-failures-0": ({"service_watchdog_failures": 0}, ["service_watchdog_failures=0"]),
    "probes-request-negative": ({"probes_needle_request_timeout": -1}, ["probes_needle_request_timeout=-1"]),
    "probes-relative-evidence": ({"probes_evidence_dir": "evidence"}, ["probes_evidence_dir=\"evidence\""]),
    "probes-relative-report": ({"probes_report_dir": "report"}, ["probes_report_dir=\"report\""]),
    "output-dir-relative": ({"glm53_output_dir": "out"}, ["glm53_output_dir=\"out\""]),
    "probes-needle-max-10": ({"probes_needle_max_tokens": 10}, ["probes_needle_max_tokens=10"]),
    # the benchmark's settings are checked with it off too (a rollout turns it on after the drain, too late to refuse)
    "probes-bench-long-above-context": ({"probes_bench_long_input_len": 600000},
                                        ["probes_bench_long_input_len=600000", "0 to 524288"]),
    "probes-bench-repeats-0": ({"probes_bench_repeats": 0}, ["probes_bench_repeats=0"]),
    "probes-bench-rate-0": ({"probes_bench_request_rate": "0"}, ["probes_bench_request_rate=\"0\""]),
    "probes-bench-fit-context": ({"probes_bench_input_len": 524200}, ["probes_bench_input_len=524200", "1 to 524032", "probes_bench_output_len"]),
    "probes-bench-label-path": ({"probes_bench_label": "../rel"}, ["probes_bench_label=\"../rel\""]),
    "probes-bench-relative-dir": ({"probes_bench_dir": "bench"}, ["probes_bench_dir=\"bench\""]),
    # vllm_fork
    "fork-min-head": ({"vllm_fork_minimum_commit": "HEAD"}, ["vllm_fork_minimum_commit=\"HEAD\" is not a commit"]),
    "fork-min-branch": ({"vllm_fork_minimum_commit": "sm89-longctx-fix-v2"}, ["vllm_fork_minimum_commit=\"sm89-longctx-fix-v2\""]),
    "fork-min-origin": ({"vllm_fork_minimum_commit": "origin/sm89-longctx-fix-v2"}, ["vllm_fork_minimum_commit"]),
    "fork-min-short": ({"vllm_fork_minimum_commit": "f2935"}, ["vllm_fork_minimum_commit=\"f2935\""]),
    "fork-required-branch": ({"vllm_fork_required_commits": [{"commit": "main", "name": "fix"}]},
                             ["vllm_fork_required_commits[0]=\"main\" is not a commit"]),
    "fork-arch-90": ({"vllm_fork_cuda_arch_list": "9.0"}, ["vllm_fork_cuda_arch_list=\"9.0\"", "vllm_fork_allow_other_arch"]),
    "fork-arch-list": ({"vllm_fork_cuda_arch_list": "8.9;9.0"}, ["vllm_fork_cuda_arch_list=\"8.9;9.0\""]),
    "fork-relative-src": ({"vllm_fork_src_dir": "src/vllm"}, ["vllm_fork_src_dir=\"src/vllm\""]),
    "fork-timeout-0": ({"vllm_fork_build_timeout": 0}, ["vllm_fork_build_timeout=0"]),
    "fork-jobs-negative": ({"vllm_fork_max_jobs": -2}, ["vllm_fork_max_jobs=-2"]),
    "fork-mode-both": ({"vllm_fork_build_mode": "both"}, ["vllm_fork_build_mode"]),
    "fork-index-no-url": ({"vllm_fork_build_mode": "index"}, ["vllm_fork_build_mode=index", "vllm_fork_index_url is empty"]),
    "flashinfer-index-no-url": ({"flashinfer_build_mode": "index"},
                                ["flashinfer_build_mode=index", "vllm_fork_index_url (the index both build roles use)"]),
    "fork-index-no-scheme": ({"vllm_fork_build_mode": "index", "vllm_fork_index_url": "pypi.internal:8080"},
                             ["vllm_fork_index_url=\"pypi.internal:8080\""]),
    "fork-index-simple-newline": ({"vllm_fork_build_mode": "index", "vllm_fork_index_url": "http://pypi:8080/",
                                   "vllm_fork_index_simple_url": "http://pypi:8080/simple/\n"}, ["vllm_fork_index_simple_url="]),
    "fork-seed-relative": ({"vllm_fork_dependency_src_dirs": {"cutlass": "src/cutlass"}},
                           ['vllm_fork_dependency_src_dirs["cutlass"]="src/cutlass" must be an absolute path']),
    "fork-seed-space": ({"vllm_fork_dependency_src_dirs": {"mydep": "/srv/my sources/dep"}},
                        ['vllm_fork_dependency_src_dirs["mydep"]', "no spaces in it"]),
    "fork-seed-name": ({"vllm_fork_dependency_src_dirs": {"cut lass": "/srv/cutlass"}},
                       ['"cut lass" is not a FetchContent name']),
    "fork-seed-twice": ({"vllm_fork_dependency_src_dirs": {"cutlass": "/usr"},
                         "vllm_fork_extra_build_env": {"VLLM_CUTLASS_SRC_DIR": "/usr"}},
                        ["VLLM_CUTLASS_SRC_DIR is set in vllm_fork_extra_build_env too"]),
    "fork-seed-missing": ({"vllm_fork_dependency_src_dirs": {"cutlass": "/nonexistent/cutlass", "flashmla": "/usr"}},
                          ['{"cutlass": "/nonexistent/cutlass"}: not a directory']),
    "fork-seed-list": ({"vllm_fork_dependency_src_dirs": ["/srv/cutlass"]}, ["vllm_fork_dependency_src_dirs"]),
    # flashinfer
    "flashinfer-arch-120": ({"flashinfer_cuda_arch_list": "12.0"}, ["flashinfer_cuda_arch_list=\"12.0\"", "flashinfer_allow_other_arch"]),
    "flashinfer-relative-src": ({"flashinfer_src_dir": "flashinfer"}, ["flashinfer_src_dir=\"flashinfer\""]),
    "flashinfer-timeout-0": ({"flashinfer_build_timeout": 0}, ["flashinfer_build_timeout=0"]),
    # venv
    "venv-python-312": ({"venv_python": "python3.12"}, ["venv_python=\"python3.12\"", "venv_allow_other_python=true"]),
    "venv-relative": ({"venv_path": "venv"}, ["venv_path=\"venv\""]),
    "venv-keep-1": ({"venv_releases_keep": 1}, ["venv_releases_keep=1"]),
    "venv-releases-relative": ({"venv_releases_dir": "releases"}, ["venv_releases_dir=\"releases\""]),
    "venv-release-id-slash": ({"venv_release_id": "../../etc"}, ["venv_release_id=\"../../etc\""]),
    "venv-blank-user": ({"venv_service_user": ""}, ["venv_service_user=\"\""]),
    "venv-user-space": ({"venv_service_user": "glm 53"}, ["venv_service_user=\"glm 53\" is not a user or group name"]),
    "venv-group-upper": ({"venv_service_group": "GLM53"}, ["venv_service_group=\"GLM53\""]),
    # the Python through uv: typed options, each shape checked, no free text
    "uv-source-typo": ({"venv_python_source": "pyenv"}, ["venv_python_source=\"pyenv\" is not one of: system, uv"]),
    "uv-python-given-too": ({"venv_python_source": "uv", "venv_python": "/usr/bin/python3.10"},
                            ["venv_python=\"/usr/bin/python3.10\" with venv_python_source=uv", "/opt/glm53/uv/bin/python3.10"]),
    "uv-version-range": ({"venv_python_source": "uv", "venv_uv_version": ">=0.13"},
                         ["venv_uv_version=\">=0.13\" is not a uv release"]),
    "uv-python-float": ({"venv_python_source": "uv", "venv_uv_python_version": 3.1},
                        ["venv_uv_python_version"]),
    "uv-python-newline": ({"venv_python_source": "uv", "venv_uv_python_version": "3.10\n"},
                          ["venv_uv_python_version=\"3.10\\n\" must be a non-blank string"]),
    "uv-dir-system": ({"venv_python_source": "uv", "venv_uv_dir": "/usr/local"}, ["venv_uv_dir=\"/usr/local\" is a system folder"]),
    "uv-archive-no-sha": ({"venv_python_source": "uv", "venv_uv_python_version": "3.10.13",
                           "venv_uv_python_archive_url": "https://mirror.example/cpython-3.10.13.tar.gz"},
                          ["venv_uv_python_archive_sha256=\"\" is not a sha256"]),
    "uv-archive-short-version": ({"venv_python_source": "uv", "venv_uv_python_archive_sha256": "a" * 64,
                                  "venv_uv_python_archive_url": "https://mirror.example/cpython-3.10.13.tar.gz"},
                                 ["venv_uv_python_version=\"3.10\"", "the full version of the archive"]),
    "uv-archive-relative": ({"venv_python_source": "uv", "venv_uv_python_version": "3.10.13",
                             "venv_uv_python_archive_sha256": "a" * 64, "venv_uv_python_archive_url": "cpython.tar.gz"},
                            ["venv_uv_python_archive_url=\"cpython.tar.gz\" must be an https://"]),
    "uv-sha-without-archive": ({"venv_python_source": "uv", "venv_uv_python_archive_sha256": "a" * 64},
                               ["venv_uv_python_archive_sha256 is set but venv_uv_python_archive_url is not"]),
    "uv-mirror-and-archive": ({"venv_python_source": "uv", "venv_uv_python_version": "3.10.13",
                               "venv_uv_python_archive_sha256": "a" * 64,
                               "venv_uv_python_archive_url": "https://mirror.example/cpython-3.10.13.tar.gz",
                               "venv_uv_python_mirror": "https://mirror.example/pbs"}, ["Set one of them"]),
    "uv-mirror-space": ({"venv_python_source": "uv", "venv_uv_python_mirror": "https://mirror.example/p b s"},
                        ["venv_uv_python_mirror=\"https://mirror.example/p b s\" must be an https://"]),
    # model
    "model-relative": ({"model_path": "models/glm"}, ["model_path=\"models/glm\""]),
    "model-hub-branch": ({"model_source": "hub", "model_hf_repo": "spele1100/GLM-5.3-Flash-AWQ-INT4",
                          "model_hf_revision": "main"}, ["model_hf_revision", "40-hex"]),
    "model-hub-no-owner": ({"model_source": "hub", "model_hf_repo": "GLM", "model_hf_revision": "a" * 40},
                           ["model_hf_repo as owner/name"]),
    "model-workers-0": ({"model_verify_workers": 0}, ["model_verify_workers=0"]),
    "model-blank-token": ({"model_hf_token": "  "}, ["model_hf_token=(hidden)"]),
    # preflight
    "preflight-tp-old-name": ({"preflight_tensor_parallel_size": 8}, ["preflight_tensor_parallel_size was another name for serve_tensor_parallel_size"]),
    "preflight-release-gib-0": ({"preflight_release_gib": 0}, ["preflight_release_gib=0"]),
    "probes-key-old-name": ({"probes_api_key": "other-key"}, ["probes_api_key was another name for serve_api_key"]),
    "preflight-relative-disk": ({"preflight_disk_requirements": [{"path": "models", "min_free_gib": 10}]},
                                ["preflight_disk_requirements[0]=\"models\""]),
    "preflight-disk-0": ({"preflight_disk_requirements": [{"path": "/srv", "min_free_gib": 0}]},
                         ["preflight_disk_requirements (min_free_gib)[0]=0"]),
    "preflight-gpu-mem-0": ({"preflight_gpu_min_memory_mib": 0}, ["preflight_gpu_min_memory_mib=0"]),
    "preflight-unknown-skip": ({"preflight_skip_checks": ["gpu_cout"]}, ["preflight_skip_checks", "gpu_cout"]),
    # the command line: -e key=value always gives a string ("false" is true to Jinja; a JSON mapping stays text)
    "cli-public-no-key-false": ({"serve_api_key": "", "serve_allow_unauthenticated_remote": "false"},
                                ["serve_host=0.0.0.0 exposes the endpoint"]),
    "cli-enforce-eager-true": ({"serve_enforce_eager": "true"}, ["serve_enforce_eager=true", "FULL_DECODE_ONLY"]),
    "cli-long-context-false": ({"serve_max_model_len": 600000, "serve_allow_long_context": "false"},
                               ["serve_allow_long_context=true"]),
    "cli-fork-arch-allow-no": ({"vllm_fork_cuda_arch_list": "9.0", "vllm_fork_allow_other_arch": "no"},
                               ["vllm_fork_cuda_arch_list=\"9.0\""]),
    "cli-python-allow-0": ({"venv_python": "python3.12", "venv_allow_other_python": "0"}, ["venv_python=\"python3.12\""]),
    "cli-compilation-json": ({"serve_compilation_config": '{"cudagraph_mode": "FULL_DECODE_ONLY"}'},
                             ["serve_compilation_config is a string", "not a mapping",
                              "-e '{\"serve_compilation_config\": {\"key\": \"value\"}}'"]),
    "cli-hf-overrides-json": ({"serve_hf_overrides": '{"text_config": {"index_topk": null}}'},
                              ["serve_hf_overrides is a string"]),
    "cli-extra-args-text": ({"serve_extra_args": "--enable-chunked-prefill"}, ["serve_extra_args is a string", "a list"]),
    "cli-targets-text": ({"probes_needle_targets": "450000"}, ["probes_needle_targets is a string"]),
    "cli-writable-text": ({"service_writable_paths": "/var/lib/glm53"}, ["service_writable_paths is a string"]),
    "cli-env-text": ({"service_environment": "NCCL_DEBUG=INFO"}, ["service_environment is a string"]),
    "cli-pins-text": ({"venv_release_pins": "transformers==5.8.0"}, ["venv_release_pins is a string"]),
    "cli-seeds-json": ({"vllm_fork_dependency_src_dirs": '{"cutlass": "/srv/cutlass"}'},
                       ["vllm_fork_dependency_src_dirs is a string"]),
    "cli-required-commits-text": ({"vllm_fork_required_commits": "ab12cd34ef"}, ["vllm_fork_required_commits is a string"]),
    "cli-flashinfer-env-text": ({"flashinfer_build_env": "MAX_JOBS=4"}, ["flashinfer_build_env is a string"]),
    "cli-disk-text": ({"preflight_disk_requirements": "/srv:100"}, ["preflight_disk_requirements"]),
    # the second round: folders the collection writes into or removes from must be its own, not a system folder
    "own-tls-dir-etc": ({"serve_tls_dir": "/etc"}, ["serve_tls_dir=\"/etc\" is a system folder"]),
    "own-releases-opt": ({"venv_releases_dir": "/opt/"}, ["venv_releases_dir=\"/opt/\" is a system folder"]),
    "own-releases-root": ({"venv_releases_dir": "//"}, ["venv_releases_dir=\"//\" is a system folder"]),
    "own-log-dir-var-log": ({"service_log_dir": "/var/log"}, ["service_log_dir=\"/var/log\" is a system folder"]),
    "own-model-path-srv": ({"model_path": "/srv"}, ["model_path=\"/srv\" is a system folder"]),
    "own-wheelhouse-tmp": ({"vllm_fork_wheelhouse": "/tmp"}, ["vllm_fork_wheelhouse=\"/tmp\" is a system folder"]),
    "own-home-root": ({"venv_service_home": "/root"}, ["venv_service_home=\"/root\" is a system folder"]),
    "own-report-home": ({"probes_report_dir": "/home"}, ["probes_report_dir=\"/home\" is a system folder"]),
    "own-gate-dir-usr-local-bin": ({"service_gate_dir": "/usr/local/bin"}, ["service_gate_dir=\"/usr/local/bin\""]),
    "release-id-current": ({"venv_release_id": "current"}, ["venv_release_id=\"current\"", "not 'current' or 'previous'"]),
    "release-id-previous": ({"venv_release_id": "previous"}, ["venv_release_id=\"previous\""]),
    "release-id-newline": ({"venv_release_id": "r1\n"}, ["venv_release_id=\"r1\\n\""]),
    # a trailing line break, a control character, full-width digits: whole-value rules
    "port-fullwidth": ({"serve_port": "\uff18\uff10\uff10\uff11"}, ["serve_port=", "is not a whole number (ASCII digits only"]),
    "port-trailing-newline": ({"serve_port": "8001\n"}, ["serve_port=\"8001\\n\" is not a TCP port"]),
    "gmu-fullwidth": ({"serve_gpu_memory_utilization": "\uff10.9"}, ["serve_gpu_memory_utilization="]),
    "commit-all-digits": ({"vllm_fork_minimum_commit": 1234567890}, ["vllm_fork_minimum_commit=1234567890 was read as a number",
                                                                      "Quote it"]),
    "commit-trailing-newline": ({"vllm_fork_minimum_commit": "f2935ce322\n"}, ["vllm_fork_minimum_commit=", "is not a commit"]),
    "served-name-newline": ({"serve_served_model_name": "glm53-flash\n"}, ["serve_served_model_name="]),
    "service-name-newline": ({"service_name": "vllm-glm53\n"}, ["service_name="]),
    "script-path-control": ({"serve_script_path": "/opt/glm53/bin/serve\x1b.sh"}, ["serve_script_path holds U+001B",
                                                                                   "control character"]),
    # TLS files parsed on the controller before any change (@PKI@: made by tests/helpers/make_tls.py at run time)
    "tls-cert-not-pem": ({"serve_ssl_certfile_src": "/etc/hostname", "serve_ssl_keyfile_src": "@PKI@/server.key"},
                         ["serve_ssl_certfile_src=/etc/hostname is not a PEM certificate"]),
    "tls-key-not-pem": ({"serve_ssl_certfile_src": "@PKI@/server.crt", "serve_ssl_keyfile_src": "/etc/hostname"},
                        ["serve_ssl_keyfile_src=/etc/hostname is not a PEM private key"]),
    "tls-key-of-another-cert": ({"serve_ssl_certfile_src": "@PKI@/server.crt", "serve_ssl_keyfile_src": "@PKI@/other.key"},
                                ["serve_ssl_keyfile_src=@PKI@/other.key is not the key of serve_ssl_certfile_src"]),
    "tls-expired": ({"serve_ssl_certfile_src": "@PKI@/expired.crt", "serve_ssl_keyfile_src": "@PKI@/server.key"},
                    ["serve_ssl_certfile_src=@PKI@/expired.crt expired on", "renew it"]),
    "tls-other-name": ({"serve_ssl_certfile_src": "@PKI@/other-name.crt", "serve_ssl_keyfile_src": "@PKI@/server.key"},
                       ["does not name 127.0.0.1 (subjectAltName: other.example)"]),
    "tls-weak-rsa": ({"serve_ssl_certfile_src": "@PKI@/weak.crt", "serve_ssl_keyfile_src": "@PKI@/weak.key"},
                     ["serve_ssl_certfile_src=@PKI@/weak.crt has a 1024-bit RSA key"]),
    "tls-client-auth-only": ({"serve_ssl_certfile_src": "@PKI@/client-only.crt", "serve_ssl_keyfile_src": "@PKI@/server.key"},
                             ["serve_ssl_certfile_src=@PKI@/client-only.crt may not serve TLS", "no serverAuth"]),
    "fork-index-simple-as-upload": ({"vllm_fork_build_mode": "index", "vllm_fork_index_url": "http://pypi:8080/simple/"},
                                    ["vllm_fork_index_url=\"http://pypi:8080/simple/\" is a simple index"]),
    "fork-index-user-no-password": ({"vllm_fork_build_mode": "index", "vllm_fork_index_url": "http://pypi:8080/",
                                     "vllm_fork_index_username": "ci", "vllm_fork_index_password": ""},
                                    ["vllm_fork_index_username and vllm_fork_index_password go together"]),
    "tls-wrong-ca": ({"serve_ssl_certfile_src": "@PKI@/server.crt", "serve_ssl_keyfile_src": "@PKI@/server.key",
                      "serve_ssl_ca_certs_src": "@PKI@/wrong-ca.crt"},
                     ["serve_ssl_ca_certs_src=@PKI@/wrong-ca.crt did not sign serve_ssl_certfile_src"]),
    # invisible and control characters, found by their Unicode category, in any setting
    "inv-key-zero-width": ({"serve_api_key": "table\u200bkey"}, ["serve_api_key holds U+200B ZERO WIDTH SPACE"]),
    "inv-token-bom": ({"model_hf_token": "\ufeffhf_abc"}, ["model_hf_token holds U+FEFF"]),
    "inv-unit-rlo": ({"service_name": "vllm\u202eglm53"}, ["service_name holds U+202E RIGHT-TO-LEFT OVERRIDE"]),
    "inv-env-nul": ({"service_environment": {"NCCL_DEBUG": "WARN\u0000"}}, ['service_environment["NCCL_DEBUG"] holds U+0000']),
    "inv-name-private-use": ({"serve_served_model_name": "glm\ue00053"}, ["serve_served_model_name holds U+E000"]),
    "inv-host-line-separator": ({"serve_host": "0.0.0.0\u2028"}, ["serve_host holds U+2028 LINE SEPARATOR"]),
    "inv-extra-arg-tag": ({"serve_extra_args": ["--seed\U000e0001", "1"]}, ["serve_extra_args[0] holds U+E0001"]),
    # a value that uses a variable that is not defined, or a broken expression: named by the setting, not by Jinja
    "undefined-port": ({"serve_port": "{{ my_port }}"}, ["serve_port uses my_port, which is not defined"]),
    "undefined-in-a-list": ({"service_writable_paths": ["{{ data_root }}/scratch"]},
                            ["service_writable_paths uses data_root, which is not defined"]),
    "undefined-key": ({"serve_api_key": "{{ vault_glm53_key }}"}, ["serve_api_key uses vault_glm53_key"]),
    "undefined-model-name": ({"serve_served_model_name": "{{ model_alias }}"},
                             ["serve_served_model_name uses model_alias, which is not defined"]),
    "broken-expression": ({"serve_host": "{{ 127.0.0.1 + }}"}, ["serve_host could not be evaluated"]),
    # in range by type, absurd by meaning
    "start-timeout-1e20": ({"service_timeout_start_sec": 10 ** 20}, ["service_timeout_start_sec="]),
    "gpu-memory-1e-9": ({"serve_gpu_memory_utilization": 1e-9}, ["serve_gpu_memory_utilization=", "0.5"]),
    "releases-keep-million": ({"venv_releases_keep": 1000000}, ["venv_releases_keep=1000000", "from 2 to 20"]),
    "needle-and-answer-past-context": ({"probes_needle_targets": [524000]},
                                       ["probes_needle_targets[0]=524000", "1000 to 520192", "probes_needle_max_tokens"]),
    "unit-name-300": ({"service_name": "v" * 300}, ["service_name=", "at most 200 characters"]),
    "folder-name-300": ({"service_state_dir": "/run/" + "s" * 300}, ["service_state_dir=", "at most 255 bytes a name"]),
    "writable-root": ({"service_writable_paths": ["/"]}, ["service_writable_paths[0]=\"/\" is a system folder"]),
    "writable-space": ({"service_writable_paths": ["/srv/my data"]}, ["service_writable_paths[0]=\"/srv/my data\" has a space"]),
    "state-dir-space": ({"service_state_dir": "/run/glm 53"}, ["service_state_dir=\"/run/glm 53\" has a space"]),
    "writable-etc": ({"service_writable_paths": ["/var/lib/glm53", "/etc"]}, ["service_writable_paths[1]=\"/etc\" is a system folder"]),
    "writable-usr-local": ({"service_writable_paths": ["/usr/local"]}, ["service_writable_paths[0]=\"/usr/local\" is a system folder"]),
    "folder-path-past-4095": ({"model_tools_venv": "/opt" + "/abcdefgh" * 520}, ["model_tools_venv=", "4095 in all"]),
    "inv-token-soft-hyphen": ({"model_hf_token": "hf\u00adabc"}, ["model_hf_token holds U+00AD SOFT HYPHEN"]),
    "inv-release-id-zwj": ({"venv_release_id": "r1\u200d"}, ["venv_release_id holds U+200D"]),
    "fork-index-devpi-simple-as-upload": ({"vllm_fork_build_mode": "index",
                                           "vllm_fork_index_url": "http://devpi:3141/root/pypi/+simple/"},
                                          ["is a simple index"]),
    "fork-index-password-no-user": ({"flashinfer_build_mode": "index", "vllm_fork_index_url": "https://pypi:8080/",
                                     "vllm_fork_index_username": "", "vllm_fork_index_password": "s3cr3t-on-the-cli"},
                                    ["vllm_fork_index_username and vllm_fork_index_password go together"]),
    "monitoring-ttft-never-fires": ({"monitoring_ttft_p95_threshold_s": 10 ** 9}, ["monitoring_ttft_p95_threshold_s="]),
    "monitoring-queue-never-fires": ({"monitoring_waiting_requests_threshold": 10 ** 9}, ["monitoring_waiting_requests_threshold="]),
    "monitoring-alertmanager-no-port": ({"monitoring_alertmanagers": ["am.example"]},
                                        ["monitoring_alertmanagers[0]=\"am.example\" must be host:port"]),
    "monitoring-verdict-age-1": ({"monitoring_verdict_max_age_s": 1}, ["monitoring_verdict_max_age_s=1"]),
    # messages name the variable the user set
    "port-leading-space": ({"serve_port": " 8000"}, ["serve_port=\" 8000\""]),
    "release-id-newline": ({"venv_release_id": "r1\n"}, ["venv_release_id="]),
    "port-trailing-space": ({"serve_port": "18150 "}, ["serve_port=\"18150 \""]),
    # a misspelt setting would be ignored: refused, with the closest names
    "misspelt-serve-prot": ({"serve_prot": 8001}, ["serve_prot is not a setting of any glm53.serving role",
                                                   "did you mean serve_port"]),
    "misspelt-service-timeout": ({"service_timout_start_sec": 900}, ["did you mean service_timeout_start_sec"]),
    "misspelt-fork-version": ({"vllm_fork_versoin": "f2935ce322"}, ["vllm_fork_versoin", "did you mean vllm_fork_version"]),
    "misspelt-no-close-name": ({"probes_zzz_qqq": 1}, ["probes_zzz_qqq is not a setting of any glm53.serving role"]),
    # injection through free-form values
    "unit-line-break": ({"service_extra_unit_lines": ["Nice=5\nExecStart=/bin/sh -c evil"]},
                        ["service_extra_unit_lines was removed"]),
    "unit-typed-under-tmux": ({"service_mode": "tmux", "service_watchdog": False, "service_limit_memlock": "infinity"},
                              ["service_limit_memlock set a systemd unit setting, and service_mode is tmux"]),
    "env-key-shell": ({"venv_extra_env": {"X=1; rm -rf /tmp/x; Y": "1"}},
                      ["a key of venv_extra_env=", "is not an environment variable name"]),
    "env-key-digit": ({"venv_extra_env": {"1ABC": "1"}}, ["a key of venv_extra_env=\"1ABC\""]),
    "env-value-newline": ({"venv_extra_env": {"NCCL_DEBUG": "WARN\nVLLM_API_KEY=stolen"}},
                          ["venv_extra_env[\"NCCL_DEBUG\"]=", "one line of text"]),
    "env-value-mapping": ({"venv_extra_env": {"NCCL_DEBUG": {"level": "WARN"}}}, ["venv_extra_env[\"NCCL_DEBUG\"]="]),
    "service-env-key": ({"service_environment": {"BAD KEY": "1"}}, ["a key of service_environment=\"BAD KEY\""]),
    "service-env-value-newline": ({"service_environment": {"VLLM_LOGGING_LEVEL": "INFO\nUser=root"}},
                                  ["service_environment[\"VLLM_LOGGING_LEVEL\"]=", "Environment= line"]),
    # types, before any argument spec (which would print the role's whole spec beside its error)
    "null-api-key": ({"serve_api_key": None}, ["serve_api_key is null", "('' for none)"]),
    "null-tool-parser": ({"serve_tool_call_parser": None}, ["serve_tool_call_parser is null"]),
    "null-port": ({"serve_port": None}, ["serve_port is null", "`serve_port:` with nothing after it"]),
    "null-extra-args": ({"serve_extra_args": None}, ["serve_extra_args is null", "give a list"]),
    "null-env": ({"venv_extra_env": None}, ["venv_extra_env is null"]),
    "null-unit-lines": ({"service_extra_unit_lines": None}, ["service_extra_unit_lines was removed"]),
    "null-targets": ({"probes_needle_targets": None}, ["probes_needle_targets is null"]),
    "list-port": ({"serve_port": [8000]}, ["serve_port=[8000] is a list, not a whole number"]),
    "bool-port": ({"serve_port": True}, ["serve_port=true is a boolean"]),
    "float-port": ({"serve_port": 8000.5}, ["serve_port=8000.5 is not a whole number"]),
    "bool-reasoning-parser": ({"serve_reasoning_parser": False}, ["serve_reasoning_parser=false was read as a boolean",
                                                                   "quote it"]),
    "extra-args-mapping": ({"serve_extra_args": {"--seed": 1}}, ["serve_extra_args=", "is a mapping, not a list"]),
    "extra-args-item-mapping": ({"serve_extra_args": ["--seed", {"n": 1}]}, ["serve_extra_args[1]=", "not a string"]),
    "enforce-eager-maybe": ({"serve_enforce_eager": "maybe"}, ["serve_enforce_eager=\"maybe\" is not a boolean"]),
    "gmu-percent-text": ({"serve_gpu_memory_utilization": "94%"}, ["serve_gpu_memory_utilization=\"94%\" is not a number"]),
    "kv-dtype-unknown": ({"serve_kv_cache_dtype": "fp9"}, ["serve_kv_cache_dtype=\"fp9\" is not one of"]),
    "cli-tp-3": ({"serve_tensor_parallel_size": "3"}, ["serve_tensor_parallel_size=3 does not fit"]),
    "cli-context-1m": ({"serve_max_model_len": "1048576"}, ["serve_max_model_len=\"1048576\"", "no opt-in goes beyond"]),
    "cli-workers-text": ({"model_verify_workers": "four"}, ["model_verify_workers=\"four\" is not a whole number"]),
    # names and flags the pinned vLLM does not know, refused before any build
    "vllm-reasoning-dash": ({"serve_reasoning_parser": "glm-47"},
                            ["serve_reasoning_parser=\"glm-47\" is not a reasoning parser of vLLM 0.28.0", "glm47"]),
    "vllm-reasoning-dot": ({"serve_reasoning_parser": "glm4.7"}, ["serve_reasoning_parser=\"glm4.7\""]),
    "vllm-tool-parser": ({"serve_tool_call_parser": "glm_47"},
                         ["serve_tool_call_parser=\"glm_47\" is not a tool-call parser"]),
    "vllm-cudagraph-mode": ({"serve_compilation_config": {"cudagraph_mode": "FULL_DECODE"}},
                            ["serve_compilation_config", "\"FULL_DECODE\" is not a CompilationConfig.cudagraph_mode"]),
    "vllm-cc-key": ({"serve_compilation_config": {"cuda_graph_mode": "FULL_DECODE_ONLY"}},
                    ["CompilationConfig has no field 'cuda_graph_mode'", "did you mean cudagraph_mode"]),
    "vllm-cc-nested-key": ({"serve_compilation_config": {"cudagraph_mode": "FULL_DECODE_ONLY", "pass_config": {"bogus": 1}}},
                           ["CompilationConfig.pass_config has no field 'bogus'"]),
    "vllm-cc-mode-7": ({"serve_compilation_config": {"cudagraph_mode": "FULL_DECODE_ONLY", "mode": 7}},
                       ["7 is not a CompilationConfig.mode"]),
    "vllm-extra-misspelt": ({"serve_extra_args": ["--enabel-chunked-prefill"]},
                            ["serve_extra_args[0]=\"--enabel-chunked-prefill\"", "is not a flag of vllm serve",
                             "did you mean --enable-chunked-prefill"]),
    "vllm-extra-removed": ({"serve_extra_args": ["--disable-log-requests"]}, ["--disable-log-requests is not a flag"]),
    "vllm-extra-ambiguous": ({"serve_extra_args": ["--enable"]}, ["--enable could be any of", "write the whole flag"]),
    "vllm-extra-no-value": ({"serve_extra_args": ["--max-num-seqs"]}, ["--max-num-seqs needs a value"]),
    "vllm-extra-int": ({"serve_extra_args": ["--max-num-seqs", "eight"]}, ["--max-num-seqs takes a whole number"]),
    "vllm-extra-choice": ({"serve_extra_args": ["--scheduling-policy", "lifo"]},
                          ["\"lifo\" is not one of the values --scheduling-policy takes", "fcfs"]),
    "vllm-extra-stray": ({"serve_extra_args": ["--enable-chunked-prefill", "true"]},
                         ["serve_extra_args[1]=\"true\" is a word no flag takes"]),
    "vllm-extra-config-key": ({"serve_extra_args": ["--attention-config.bogus=1"]}, ["AttentionConfig has no field 'bogus'"]),
    "vllm-extra-bad-json": ({"serve_extra_args": ["--attention-config", "{bad"]}, ["is not valid JSON"]),
    # two inventory hosts on one machine (the same ansible_host)
    "machine-port-a": ({"ansible_host": "10.9.9.1"}, ["machine-port-a and machine-port-b are one machine",
                                                      "both serve on serve_port=8000"]),
    "machine-port-b": ({"ansible_host": "10.9.9.1"}, ["machine-port-b and machine-port-a are one machine"]),
    "machine-gpus-a": ({"ansible_host": "10.9.9.2", "serve_port": 8001,
                        "service_environment": {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}},
                       ["would both use GPUs 3", "service_environment.CUDA_VISIBLE_DEVICES"]),
    "machine-gpus-b": ({"ansible_host": "10.9.9.2", "serve_port": 8002,
                        "service_environment": {"CUDA_VISIBLE_DEVICES": "3,4,5,6"}}, ["would both use GPUs 3"]),
    # the monitoring host's settings (glm53_monitoring), in the validation play too
    "monitoring-interval-bare": ({"monitoring_scrape_interval": "15"}, ["monitoring_scrape_interval=\"15\" must be a Prometheus duration"]),
    "monitoring-interval-newline": ({"monitoring_scrape_interval": "15s\n"}, ["monitoring_scrape_interval="]),
    "monitoring-for-fraction": ({"monitoring_ttft_for": "1.5h"}, ["monitoring_ttft_for=\"1.5h\""]),
    "monitoring-kv-2": ({"monitoring_kv_cache_usage_threshold": 2}, ["monitoring_kv_cache_usage_threshold=2 must be a number"]),
    "monitoring-kv-never-fires": ({"monitoring_kv_cache_usage_threshold": 1.0}, ["monitoring_kv_cache_usage_threshold=1.0",
                                                                               "can never fire"]),
    "monitoring-ttft-0": ({"monitoring_ttft_p95_threshold_s": 0}, ["monitoring_ttft_p95_threshold_s=0"]),
    "monitoring-queue-negative": ({"monitoring_waiting_requests_threshold": -1}, ["monitoring_waiting_requests_threshold=-1"]),
    "monitoring-dir-etc": ({"monitoring_dir": "/etc"}, ["monitoring_dir=\"/etc\" is a system folder"]),
    "monitoring-blackbox-url": ({"monitoring_blackbox_exporter": "http://127.0.0.1:9115"},
                                ["monitoring_blackbox_exporter=\"http://127.0.0.1:9115\" must be host:port"]),
    "monitoring-group-missing": ({"monitoring_targets_group": "glm53_nope"}, ["monitoring_targets_group=\"glm53_nope\" is not an inventory group"]),
    "monitoring-null-dir": ({"monitoring_dir": None}, ["monitoring_dir is null"]),
    "monitoring-misspelt": ({"monitoring_scrape_intreval": "30s"}, ["did you mean monitoring_scrape_interval"]),
    "monitoring-promtool-relative": ({"monitoring_promtool": "promtool"}, ["monitoring_promtool=\"promtool\" must be an absolute path"]),
    "monitoring-reload-newline": ({"monitoring_reload_command": "systemctl reload prometheus\nrm -rf /"},
                                  ["monitoring_reload_command=", "one line of text"]),
}

# Odd but valid values a careful user writes: they must pass validation like good-base.
GOOD_ODD = {"venv_extra_env": {"_PRIV_1": 5, "NCCL_DEBUG": "WARN", "HF_HUB_OFFLINE": "1"},
            "service_nice": 5, "service_limit_nofile": "65536", "service_limit_memlock": "infinity",
            "service_environment": {"VLLM_LOGGING_LEVEL": "INFO", "OMP_NUM_THREADS": 8},
            "serve_port": "8001", "serve_gpu_memory_utilization": "0.90", "venv_release_id": "r1.current-2026",
            "serve_served_model_name": "zai-org/GLM-5.3-Flash",
            "serve_ssl_certfile_src": "@PKI@/server.crt", "serve_ssl_keyfile_src": "@PKI@/server.key",
            "serve_ssl_ca_certs_src": "@PKI@/ca.crt"}

# A host with the good base and every boolean given as the command line gives it (a string): it must pass
# validation like good-base (`| bool` reads "false", "no", "0" as false).
GOOD_CLI = {"serve_enforce_eager": "false", "serve_enable_prefix_caching": "no", "serve_allow_long_context": "False",
            "serve_allow_unauthenticated_remote": "0", "serve_enable_auto_tool_choice": "true",
            "vllm_fork_allow_other_arch": "false", "flashinfer_allow_other_arch": "no", "venv_allow_other_python": "false",
            "vllm_fork_use_ccache": "yes", "probes_needle": "true", "probes_chat": "yes", "probes_fail_host": "true"}

# Two hosts on one machine with their own ports and GPUs: both must pass validation.
GOOD_SPLIT = dict(("good-split-%s" % half, {"ansible_host": "10.9.9.3", "serve_port": port, "serve_tensor_parallel_size": 4,
                                            "serve_gpu_count": 4, "service_environment": {"CUDA_VISIBLE_DEVICES": gpus}})
                  for half, port, gpus in (("a", 8001, "0,1,2,3"), ("b", 8002, "4,5,6,7")))

SITE_ROLES = ("venv", "flashinfer", "vllm_fork", "model", "serve", "service", "preflight", "probes")


def cli_numbers(roles):
    """Every whole-number and number setting of the roles with a literal default, as -e gives it: a string."""
    out = {}
    for role in roles:
        with open(os.path.join(REPO, "roles", role, "meta", "argument_specs.yml"), encoding="utf-8") as fh:
            for entry in yaml.safe_load(fh)["argument_specs"].values():
                for name, option in (entry.get("options") or {}).items():
                    default = option.get("default")
                    if option.get("type") in ("int", "float") and isinstance(default, (int, float)) \
                            and not isinstance(default, bool):
                        out[name] = str(default)
    return out


ROLLOUT = {
    "heal-min-serving-negative": ({"heal_min_serving": "-1"}, ["heal_min_serving=\"-1\"", "a count of hosts"]),
    "heal-min-serving-150-percent": ({"heal_min_serving": "150%"}, ["heal_min_serving=\"150%\""]),
    "heal-parallel-0": ({"heal_max_parallel": 0}, ["heal_max_parallel=0"]),
    "heal-state-relative": ({"heal_state_file": "heal.json"}, ["heal_state_file=\"heal.json\""]),
    "rollout-serial-0": ({"rollout_serial": 0}, ["rollout_serial=0", "whole fleet"]),
    "rollout-serial-negative": ({"rollout_serial": -1}, ["rollout_serial=-1"]),
    "rollout-serial-0-percent": ({"rollout_serial": "0%"}, ["rollout_serial=\"0%\""]),
    "rollout-serial-2-sliced": ({"rollout_serial": 2, "glm53_store_url": "http://127.0.0.1:2379"},
                                ["rollout_serial=2 with glm53_store_url", "rollout_serial=1"]),
    "rollout-serial-150-percent": ({"rollout_serial": "150%"}, ["rollout_serial=\"150%\""]),
    "rollout-drain-0": ({"rollout_drain_timeout": 0}, ["rollout_drain_timeout=0"]),
    "rollout-drain-undefined": ({"rollout_drain_timeout": "{{ drain_s }}"},
                                ["rollout_drain_timeout uses drain_s, which is not defined"]),
    "rollout-alertmanager-no-scheme": ({"rollout_alertmanager_url": "am:9093"}, ["rollout_alertmanager_url=\"am:9093\""]),
    "rollout-silence-60": ({"rollout_silence_duration_s": 60}, ["rollout_silence_duration_s=60", "from 300 to 604800"]),
    "heal-drain-forever": ({"heal_drain_timeout": 10 ** 9}, ["heal_drain_timeout=1000000000", "never forever"]),
    "rollout-silence-31700-years": ({"rollout_silence_duration_s": 10 ** 12}, ["rollout_silence_duration_s=", "at most a week"]),
    "rollout-max-fail-200": ({"rollout_max_fail_percentage": 200}, ["rollout_max_fail_percentage=200"]),
    "rollout-metrics-no-scheme": ({"serve_url": "host:8000"}, ["serve_url=\"host:8000\""]),
    "rollout-metrics-newline": ({"serve_url": "http://127.0.0.1:8000/metrics\n"}, ["serve_url="]),
    "rollout-serial-fullwidth": ({"rollout_serial": "\uff12"}, ["rollout_serial="]),
    "rollout-serial-fraction": ({"rollout_serial": "12.5%"}, ["rollout_serial=\"12.5%\"", "a percentage is a whole number"]),
    "rollout-serial-list": ({"rollout_serial": [1, "0%"]}, ["rollout_serial[1]=\"0%\""]),
    "rollout-serial-text": ({"rollout_serial": "all"}, ["rollout_serial=\"all\""]),
    "rollout-drain-null": ({"rollout_drain_timeout": None}, ["rollout_drain_timeout is null"]),
    "rollout-max-fail-text": ({"rollout_max_fail_percentage": "half"}, ["rollout_max_fail_percentage=\"half\""]),
    # every engine at once, or a size Ansible cannot read
    "rollout-serial-100-percent": ({"rollout_serial": "100%"}, ["rollout_serial=\"100%\"", "stops every engine at once"]),
    "rollout-serial-exponent": ({"rollout_serial": "1e3"}, ["rollout_serial=\"1e3\"", "a size is digits"]),
    # a performance gate that could never fail, or fails after the canary was upgraded
    "rollout-gate-nan": ({"rollout_max_regression_pct": {"output_throughput": "@NAN@"}}, ["not these: output_throughput"]),
    "rollout-gate-infinite": ({"rollout_max_regression_pct": {"p99_ttft_ms": "@INF@"}}, ["not these: p99_ttft_ms"]),
    "rollout-gate-boolean": ({"rollout_max_regression_pct": {"output_throughput": True}},
                             ["not true or false", "not these: output_throughput"]),
    "rollout-gate-misspelt-figure": ({"rollout_max_regression_pct": {"p99_tfft_ms": 10}}, ["not these: p99_tfft_ms"]),
    "rollout-serial-list-100-first": ({"rollout_serial": ["100%"]}, ["rollout_serial[0]=\"100%\""]),
    "rollout-drain-tasks-missing": ({"rollout_drain_tasks": "/nonexistent/drain.yml"},
                                    ["rollout_drain_tasks points at /nonexistent/drain.yml, which is not a file"]),
    "rollout-admit-tasks-missing": ({"rollout_admit_tasks": "/nonexistent/admit.yml"},
                                    ["rollout_admit_tasks points at /nonexistent/admit.yml, which is not a file"]),
    "rollout-gate-negative": ({"rollout_max_regression_pct": {"output_throughput": -5}}, ["not these: output_throughput"]),
    "rollout-gate-past-1000": ({"rollout_max_regression_pct": {"p99_ttft_ms": 5000}}, ["not these: p99_ttft_ms"]),
    "rollout-gate-text": ({"rollout_max_regression_pct": {"output_throughput": "ten"}}, ["not these: output_throughput"]),
    "rollout-upgrade-role-typo": ({"rollout_upgrade_roles": ["glm53.serving.venvv"]},
                                  ["rollout_upgrade_roles names glm53.serving.venvv"]),
    "rollout-upgrade-role-misspelt": ({"rollout_upgrade_roles": ["glm53.serving.venv", "glm53.serving.vllm-fork"]},
                                      ["rollout_upgrade_roles names glm53.serving.vllm-fork"]),
}

FATAL_RE = re.compile(r"^fatal: \[([^\]]+)\]: FAILED! => (\{.*\})$", re.M)


def yaml_numbers(text):
    """The inventory's JSON text with the @NAN@ and @INF@ strings as YAML's .nan and .inf (JSON has neither)."""
    return text.replace('"@NAN@"', ".nan").replace('"@INF@"', ".inf")


def with_pki(value, pki):
    """The value with @PKI@ (in any string inside it) replaced by the folder make_tls.py filled."""
    return json.loads(json.dumps(value).replace("@PKI@", str(pki)))


def run(tmp_path_factory, playbook, cases, good):
    tmp = tmp_path_factory.mktemp(os.path.basename(playbook).split(".")[0])
    scratch = tmp / "scratch"
    scratch.mkdir()
    pki = tmp / "pki"
    subprocess.run([sys.executable, os.path.join(REPO, "tests", "helpers", "make_tls.py"), str(pki)],
                   check=True, capture_output=True)
    hosts = dict((name, with_pki(overrides, pki)) for name, (overrides, _words) in cases.items())
    monitoring = dict((name, hosts.pop(name)) for name in list(hosts) if name.startswith("monitoring-"))
    if good:
        hosts["good-base"] = {}
        hosts["good-cli-strings"] = GOOD_CLI
        hosts["good-cli-numbers"] = cli_numbers(SITE_ROLES)
        hosts["good-odd-values"] = with_pki(GOOD_ODD, pki)
        hosts.update(GOOD_SPLIT)
        # a context below the card's: the benchmark's long request follows it, and the needle targets fit it
        hosts["good-short-context"] = {"serve_max_model_len": 131072, "probes_needle_targets": [120000]}
        # the card's Python through uv, from one archive of a mirror (the folder is claimed, nothing is written)
        hosts["good-uv-archive"] = {"venv_python_source": "uv", "venv_uv_dir": str(scratch.parent / "uv"),
                                    "venv_uv_python_version": "3.10.13", "venv_uv_python_archive_sha256": "0" * 64,
                                    "venv_uv_python_archive_url": "file:///srv/python/cpython-3.10.13.tar.gz"}
        # passes validation; its own play (the last) stops at the missing promtool before any write
        monitoring["good-monitoring"] = dict(cli_numbers(["monitoring"]), monitoring_require_promtool=True,
                                             monitoring_promtool=str(scratch / "no-promtool"),
                                             monitoring_dir=str(scratch / "prometheus"))
    inventory = tmp / "hosts.yml"
    # JSON has no NaN or infinity: YAML's own (.nan, .inf), as a user writes them in group_vars
    inventory.write_text(yaml_numbers(json.dumps({"all": {"vars": base(scratch), "children": {
        "glm53_serving": {"hosts": hosts}, "glm53_monitoring": {"hosts": monitoring}}}})))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORKS": "10",
           "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "ANSIBLE_DISPLAY_OK_HOSTS": "false",
           "ANSIBLE_DISPLAY_SKIPPED_HOSTS": "false"}
    # About 2 s of validation per host: site.yml's 224 hosts took 462 s on an idle 2-core machine and over 900 s in
    # CI beside the molecule lanes, so the limit is twice that, not a figure at the edge.
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), os.path.join(REPO, playbook)],
                          capture_output=True, text=True, env=env, timeout=1800, check=False)
    failures = dict((host, json.loads(body)) for host, body in FATAL_RE.findall(proc.stdout))
    return proc, failures, scratch, pki


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return run(tmp_path_factory, "site.yml", SITE, good=True)


@pytest.fixture(scope="module")
def rollout(tmp_path_factory):
    return run(tmp_path_factory, "playbooks/rolling_restart.yml", ROLLOUT, good=False)


def _message(result):
    return result.get("msg") or json.dumps(result)


@pytest.mark.parametrize("case", sorted(SITE))
def test_site_refuses_before_any_change(site, case):
    proc, failures, _scratch, pki = site
    assert case in failures, "%s was not refused:\n%s" % (case, proc.stdout[-4000:])
    msg = _message(failures[case])
    for word in with_pki(SITE[case][1], pki):
        assert word in msg, "%r not in %s's refusal: %s" % (word, case, msg)
    assert "s3cr3t-on-the-cli" not in msg and "table-test-key" not in msg


@pytest.mark.parametrize("case", sorted(ROLLOUT))
def test_rollout_refuses_before_any_change(rollout, case):
    proc, failures, _scratch, _pki = rollout
    assert case in failures, "%s was not refused:\n%s" % (case, proc.stdout[-4000:])
    for word in ROLLOUT[case][1]:
        assert word in _message(failures[case]), (case, _message(failures[case]))


def test_nothing_was_written_and_only_the_good_host_went_on(site, rollout):
    for proc, failures, scratch, _pki in (site, rollout):
        assert list(scratch.iterdir()) == [], "a refused run wrote %s" % list(scratch.iterdir())
        assert "good-base" not in failures or "nvidia-smi" in _message(failures["good-base"])
        assert "Bring GLM-5.3-Flash serving hosts" not in proc.stdout or "good-base" in failures
    proc, failures, _scratch, _pki = site
    # the good base passed every role's validation and stopped at preflight's read of the GPUs; so did the good
    # base with every boolean given as a command-line string
    for good in ("good-base", "good-cli-strings", "good-cli-numbers", "good-odd-values",
                 "good-short-context", "good-uv-archive") + tuple(GOOD_SPLIT):
        assert "nvidia-smi" in _message(failures[good]), _message(failures[good])
    assert len(cli_numbers(SITE_ROLES)) >= 25
    # the monitoring host's settings were checked in the validation play, and the good one passed them
    assert "Refuse bad monitoring settings before anything changes" in proc.stdout
    # (it passed them and stopped in its own play at the missing promtool, before any write)
    assert "monitoring_require_promtool is set" in _message(failures["good-monitoring"]), _message(failures["good-monitoring"])
    assert len(SITE) + len(ROLLOUT) >= 240
    with pytest.raises(KeyError):
        pwd.getpwnam(USER)
    assert not os.path.exists("/etc/systemd/system/%s.service" % UNIT)
    for secret in ("s3cr3t-on-the-cli", "table-test-key"):
        assert secret not in proc.stdout + proc.stderr
