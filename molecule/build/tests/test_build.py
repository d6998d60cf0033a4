"""Verify the build chain: the stand-in engine built from the fixture fork runs from the venv."""
import json
import re
import time

VENV = "/opt/glm53/venv"


def commits(host):
    return json.loads(host.file("/srv/mirrors/commits.json").content_string)


def test_installed_engine_is_the_branch_head(host):
    c = commits(host)
    out = host.check_output(f"{VENV}/bin/vllm --version")
    assert re.fullmatch(r"0\.28\.1rc1\.dev6\+g%s" % c["descendant"][:9], out), out


def test_flashinfer_built_from_source_with_submodules(host):
    c = commits(host)
    meta = host.check_output(f"{VENV}/bin/python -c 'import flashinfer; print(flashinfer.__version__, "
                             f"flashinfer.__git_version__)'")
    assert meta == f"0.6.18 {c['flashinfer']}"
    assert host.file("/opt/glm53/src/flashinfer/3rdparty/spdlog/include/spdlog.h").exists


def test_each_component_compiled_the_expected_number_of_times(host):
    # Each build starts with one "=== build of <commit>" line (setup.py itself runs several times per pip call).
    fi = host.file("/var/log/glm53/flashinfer-build.log").content_string
    assert fi.count("=== build of ") == 1 and "glm53-fixture: compiling flashinfer" in fi
    log = host.file("/var/log/glm53/vllm-fork-build.log").content_string
    c = commits(host)
    # converge 1, the killed build 1, its re-run 1, the return to the branch 1; the idempotence run and
    # the non-descendant pin add none
    assert re.findall(r"^=== build of ([0-9a-f]{40})", log, re.M) == [
        c["descendant"], c["minimum"], c["minimum"], c["descendant"]]
    assert "TORCH_CUDA_ARCH_LIST=8.9" in log and re.search(r"MAX_JOBS=[1-9]", log)
    # The re-run's pre-seeded dependency sources reached the build (the missing one was refused before it).
    seeded = re.findall(r"^\s*glm53-standin: dependency sources: (.*)$", log, re.M)  # pip -v indents it
    assert seeded and seeded[-1] == ("CMAKE_ARGS=-DFETCHCONTENT_SOURCE_DIR_MYDEP=/srv/seed/mydep "
                                     "FLASH_MLA_SRC_DIR=/srv/seed/flashmla VLLM_CUTLASS_SRC_DIR=/srv/seed/cutlass"), seeded


def test_runtime_environment_is_the_cards(host):
    env = json.loads(host.file("/root/venv_runtime_env.json").content_string)
    assert env["CUDA_HOME"].endswith("/site-packages/nvidia/cu13") and env["CUDA_HOME"].startswith(VENV)
    assert env["PATH"].startswith(env["CUDA_HOME"] + "/bin:" + VENV + "/bin:")
    assert env["FLASHINFER_DISABLE_VERSION_CHECK"] == "1" and env["PYTHONFAULTHANDLER"] == "1"
    assert env["VLLM_USE_BREAKABLE_CUDAGRAPH"] == "0"


def test_service_user_is_a_system_user_with_a_prewarmed_cache(host):
    user = host.user("glm53")
    assert user.exists and user.uid < 1000 and user.home == "/var/lib/glm53"
    cache = host.file("/var/lib/glm53/.cache/flashinfer/0.6.18/89/cached_ops/prewarmed.txt")
    assert cache.exists and cache.user == "glm53"


def test_the_stand_in_serves_from_the_built_venv(host):
    host.run("systemctl stop glm53-test-engine; systemctl reset-failed glm53-test-engine")
    host.check_output(f"systemd-run --unit=glm53-test-engine {VENV}/bin/vllm serve /srv/models/tiny "
                      "--served-model-name glm53-flash-awq --port 8011 --max-model-len 524288")
    for _attempt in range(50):
        out = host.run("curl -sf http://127.0.0.1:8011/v1/models")
        if out.rc == 0:
            break
        time.sleep(0.2)
    assert json.loads(out.stdout)["data"][0]["id"] == "glm53-flash-awq"
    version = json.loads(host.check_output("curl -sf http://127.0.0.1:8011/version"))["version"]
    assert version == host.check_output(f"{VENV}/bin/vllm --version")
    host.run("systemctl stop glm53-test-engine")


def test_the_venv_runs_on_the_python_uv_installed_from_the_mirror(host):
    """venv_python_source=uv: the container has only Debian's Python 3.11; uv (from the wheelhouse) installed the
    CPython 3.10 archive the mirror served, after checking its sha256, and the venv was made from it."""
    archive = json.loads(host.file("/srv/python-mirror/python.json").content_string)
    print("installed through uv: %s" % archive["source"])
    assert host.run("command -v python3.10").rc != 0, "the image itself has a python3.10"
    assert host.check_output("/opt/glm53/uv/tool/bin/uv --version").split()[1] == "0.13.9"
    runs = json.loads(host.check_output(
        f"{VENV}/bin/python -c 'import json, sys, ssl; print(json.dumps([sys.version.split()[0], sys.base_prefix]))'"))
    assert runs[0] == archive["version"] and runs[0].startswith("3.10.")
    assert runs[1].startswith("/opt/glm53/uv/python/cpython-%s-linux-" % archive["version"]), runs
    assert host.file("/opt/glm53/uv/bin/python3.10").is_symlink
    # the archive came over HTTP from the mirror (uv's downloads list names it with its sha256)
    listed = json.loads(host.file("/opt/glm53/uv/downloads.json").content_string)
    (entry,) = listed.values()
    assert entry["url"] == "http://127.0.0.1:8089/" + archive["file"] and entry["sha256"] == archive["sha256"]
    # the service user runs the engine from it
    assert host.run(f"runuser -u glm53 -- {VENV}/bin/python -c 'import ssl, sqlite3'").rc == 0
    # and the folder is the collection's: in a path the host's ledger records it made (the uninstall removes it)
    ledger = json.loads(host.file("/var/lib/glm53-ledger/ledger.json").content_string)
    assert any(p == "/opt/glm53/uv" or "/opt/glm53/uv".startswith(p + "/") for p in ledger["paths"]), ledger
