"""The serve role run by ansible-playbook on this machine: the default render is the card's command flag by
flag, and each unsafe setting is refused (naming the variable) before anything is written."""
from __future__ import annotations

import os
import re
import stat
import subprocess
import sys

import pytest

from testlib import FIXTURES, REPO, exec_argv, failures_by_host, held_port, normalise, run_serve_role as run_role
from testlib import run_serve_role_hosts as run_role_hosts


def test_default_render_is_the_cards_command_flag_by_flag(tmp_path):
    proc, extra = run_role(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    script = (tmp_path / "bin" / "serve.sh").read_text()
    card = open(os.path.join(FIXTURES, "reference-serve.txt")).read()
    card = card.replace("<model_path>", extra["model_path"]).replace("<port>", str(extra["serve_port"]))
    ours, ref = exec_argv(script), exec_argv(card)
    assert os.path.basename(ours[0]) == ref[0] == "vllm"
    assert normalise(ours[1:]) == normalise(ref[1:])
    assert "Ansible managed" in "".join(script.splitlines()[:4])
    assert "export PYTHONPATH=/opt/glm53/src/vllm-glm53" in script
    assert subprocess.run(["bash", "-n", str(tmp_path / "bin" / "serve.sh")], check=False).returncode == 0


def test_wheel_builds_keep_the_checkout_off_pythonpath(tmp_path):
    """With vllm_fork_build_mode=wheel the checkout has no compiled extensions: on PYTHONPATH it would shadow
    the installed wheel (found by the fleet scenario: hosts that only installed the wheel imported the bare
    checkout)."""
    proc, _extra = run_role(tmp_path, vllm_fork_build_mode="wheel")
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "PYTHONPATH" not in (tmp_path / "bin" / "serve.sh").read_text()
    assert "PYTHONPATH" not in (tmp_path / "etc" / "vllm.env").read_text()


def test_env_file_is_private_and_the_key_is_nowhere_else(tmp_path):
    proc, _extra = run_role(tmp_path)
    env_file = tmp_path / "etc" / "vllm.env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    content = env_file.read_text()
    assert "VLLM_API_KEY=s3cret-key" in content and "VLLM_USE_BREAKABLE_CUDAGRAPH=0" in content
    assert "PYTHONPATH=/opt/glm53/src/vllm-glm53" in content and "CUDA_HOME=" in content
    assert "s3cret-key" not in (tmp_path / "bin" / "serve.sh").read_text()
    assert "s3cret-key" not in proc.stdout + proc.stderr


def test_second_run_changes_nothing(tmp_path):
    extra = run_role(tmp_path)[1]
    second = run_role(tmp_path, serve_port=extra["serve_port"])[0]
    assert second.returncode == 0 and re.search(r"changed=0\s", second.stdout.split("PLAY RECAP")[1])


def test_tls_off_removes_only_the_roles_own_files(tmp_path):
    """With TLS off the role removes the TLS files it puts in serve_tls_dir, in its own marked folder only: never a
    folder without its marker, whatever its files are called, nor what else is in its folder; its own folder
    (marked, nothing else in it) goes with its files."""
    foreign = tmp_path / "ssl"
    foreign.mkdir()
    (foreign / "bundle.pem").write_text("a CA bundle the role did not put here\n")
    (foreign / "server.crt").write_text("someone's certificate, named as the role names its own\n")
    proc, _extra = run_role(tmp_path, serve_tls_dir=str(foreign))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert sorted(p.name for p in foreign.iterdir()) == ["bundle.pem", "server.crt"]
    unmarked = tmp_path / "unmarked"
    unmarked.mkdir()
    for name in ("server.crt", "server.key"):
        (unmarked / name).write_text("x\n")
    proc, _extra = run_role(tmp_path, serve_tls_dir=str(unmarked))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert sorted(p.name for p in unmarked.iterdir()) == ["server.crt", "server.key"]
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for name in ("server.crt", ".glm53-serving", "notes.txt"):
        (mixed / name).write_text("x\n")
    proc, _extra = run_role(tmp_path, serve_tls_dir=str(mixed))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert sorted(p.name for p in mixed.iterdir()) == ["notes.txt"]
    own = tmp_path / "tls"
    own.mkdir()
    for name in ("server.crt", "server.key", "ca.crt", ".glm53-serving"):
        (own / name).write_text("x\n")
    proc, _extra = run_role(tmp_path, serve_tls_dir=str(own))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert not own.exists()


def test_tls_on_refuses_a_folder_that_holds_other_files(tmp_path):
    src = tmp_path / "pki"
    subprocess.run([sys.executable, os.path.join(REPO, "tests", "helpers", "make_tls.py"), str(src)], check=True)
    foreign = tmp_path / "ssl"
    foreign.mkdir()
    (foreign / "bundle.pem").write_text("a CA bundle the role did not put here\n")
    # the claim refuses a folder that is not in the ledger; past it (a folder the ledger lists), the role's own
    # check still refuses one that holds files it did not put there
    proc, _extra = run_role(tmp_path, serve_tls_dir=str(foreign), serve_ssl_certfile_src=str(src / "server.crt"),
                            serve_ssl_keyfile_src=str(src / "server.key"))
    assert proc.returncode != 0
    assert "serve_tls_dir=%s exists and glm53.serving did not make it" % foreign in proc.stdout, proc.stdout[-3000:]
    proc, _extra = run_role(tmp_path, serve_tls_dir=str(foreign), serve_ssl_certfile_src=str(src / "server.crt"),
                            serve_ssl_keyfile_src=str(src / "server.key"), __glm53_claimed={})
    assert proc.returncode != 0
    assert "serve_tls_dir=\"%s\" holds bundle.pem, which the serve role did not put there" % foreign in proc.stdout
    assert sorted(p.name for p in foreign.iterdir()) == ["bundle.pem"]
    assert stat.S_IMODE(foreign.stat().st_mode) != 0o700


GUARDS = {
    "context_above_512k": ({"serve_max_model_len": 600000}, ["serve_max_model_len=600000", "serve_allow_long_context"]),
    "one_million_even_with_opt_in": ({"serve_max_model_len": 1048576, "serve_allow_long_context": True},
                                     ["serve_max_model_len=1048576", "1M not to be trusted: no opt-in goes beyond 614400"]),
    "fp8_kv_on_sm89": ({"serve_kv_cache_dtype": "fp8"},
                       ["serve_kv_cache_dtype=fp8",
                        "FP8 kv_data_type for MLA is only supported with the fa3 backend on SM90"]),
    "enforce_eager_with_full_decode_only": ({"serve_enforce_eager": True},
                                            ["serve_enforce_eager=true", "FULL_DECODE_ONLY"]),
    "tp_exceeds_gpus": ({"serve_tensor_parallel_size": 16}, ["serve_tensor_parallel_size=16", "serve_gpu_count=8"]),
    "tp_does_not_divide": ({"serve_tensor_parallel_size": 3}, ["serve_tensor_parallel_size=3"]),
    "auto_tool_choice_without_parser": ({"serve_tool_call_parser": ""},
                                        ["serve_enable_auto_tool_choice=true needs serve_tool_call_parser"]),
    "sparse_indexer_above_512k": ({"serve_hf_overrides": {}, "serve_max_model_len": 600000,
                                   "serve_allow_long_context": True}, ["persistent_topk smem bug"]),
    "public_without_key": ({"serve_api_key": ""}, ["serve_host=0.0.0.0", "no serve_api_key"]),
    "bad_served_name": ({"serve_served_model_name": "glm 53"}, ["serve_served_model_name="]),
    # found by the validation's table of vLLM 0.28.0, before the installed vLLM's parser check could run
    "misspelt_reasoning_parser": ({"serve_reasoning_parser": "glm-47"},
                                  ["is not a reasoning parser of vLLM 0.28.0", "did you mean glm47"]),
    "unknown_extra_flag": ({"serve_extra_args": ["--no-such-flag"]}, ["--no-such-flag is not a flag of vllm serve"]),
}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """Every unsafe setting in one run (one inventory host per case), and a port another process holds."""
    tmp = tmp_path_factory.mktemp("guards")
    listener = held_port()
    cases = dict((name, overrides) for name, (overrides, _words) in GUARDS.items())
    cases["port_held"] = {"serve_port": listener.getsockname()[1]}
    try:
        proc, _hosts = run_role_hosts(tmp, cases)
    finally:
        listener.close()
    expected = dict((name, words) for name, (_overrides, words) in GUARDS.items())
    expected["port_held"] = ["is held by pid %d" % os.getpid()]
    return proc, failures_by_host(proc.stdout), tmp, expected


@pytest.mark.parametrize("name", sorted(GUARDS) + ["port_held"])
def test_unsafe_settings_are_refused_before_anything_is_written(guarded, name):
    proc, refusals, tmp, expected = guarded
    assert proc.returncode != 0
    assert name in refusals, "%s was not refused:\n%s" % (name, proc.stdout[-4000:])
    for text in expected[name]:
        assert text in refusals[name], "%r not in %s's refusal:\n%s" % (text, name, refusals[name][-2500:])
    assert not (tmp / name / "bin").exists() and not (tmp / name / "etc").exists()


def test_long_context_opt_in_warns(tmp_path):
    proc, _extra = run_role(tmp_path, serve_max_model_len=600000, serve_allow_long_context=True)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "above the card's verified 524288" in proc.stdout + proc.stderr
