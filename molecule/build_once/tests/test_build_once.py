"""Verify build-once mode: one compile per component on the builder, the same wheels everywhere."""
import hashlib
import json
import os
import re

BUILDER = "glm53-once1"


def release_venv(host):
    """The one release the build made (releases side by side: /opt/glm53/releases/<id>/venv)."""
    venvs = host.check_output("ls -d /opt/glm53/releases/*/venv").split()
    assert len(venvs) == 1, venvs
    return venvs[0]


def test_only_the_builder_compiled_once_per_component(host):
    name = host.backend.get_hostname()
    for log in ("/var/log/glm53/flashinfer-build.log", "/var/log/glm53/vllm-fork-build.log"):
        f = host.file(log)
        if name == BUILDER:
            assert len(re.findall(r"^=== build of [0-9a-f]{40} .* \(wheel\)$", f.content_string, re.M)) == 1, log
        else:
            assert not f.exists, "%s compiled on %s" % (log, name)


def test_every_host_imports_the_relayed_wheels(host):
    relay = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "relay")
    wheels = sorted((os.path.join(d, f) for d, _s, files in os.walk(relay) for f in files if f.endswith(".whl")),
                    key=os.path.basename)
    assert [os.path.basename(w).split("-")[0] for w in wheels] == ["flashinfer_python", "vllm"]
    for wheel in wheels:
        digest = hashlib.sha256(open(wheel, "rb").read()).hexdigest()
        key = os.path.basename(os.path.dirname(wheel))
        on_host = host.file("/var/cache/glm53/wheelhouse/%s/%s" % (key, os.path.basename(wheel)))
        assert on_host.exists and on_host.sha256sum == digest


def test_the_installed_engine_is_the_branch_head_from_site_packages(host):
    commits = json.loads(host.file("/srv/mirrors/commits.json").content_string)
    venv = release_venv(host)
    assert json.loads(host.file(os.path.dirname(venv) + "/release.json").content_string)["pins"]["build_mode"] \
        == "wheel/wheel"
    assert host.check_output(venv + "/bin/vllm --version").endswith("+g" + commits["descendant"][:9])
    where = host.check_output(venv + "/bin/python -c 'import vllm, flashinfer; print(vllm.__file__, "
                              "flashinfer.__git_version__)'")
    path, fi_commit = where.split()
    assert "/site-packages/vllm/" in path and fi_commit == commits["flashinfer"]
