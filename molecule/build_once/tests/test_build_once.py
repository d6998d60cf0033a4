"""Verify build-once mode: one compile per component on the builder, the same wheels everywhere."""
import hashlib
import json
import os
import re

BUILDER = "glm53-once1"


EPH = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
INDEX_HOST = "glm53-once3"


def release_venv(host, build_mode="wheel/wheel"):
    """The release of that build mode (releases side by side: /opt/glm53/releases/<id>/venv): the wheel mode's
    converge made one, the index mode's side effect another."""
    venvs = [v for v in host.check_output("ls -d /opt/glm53/releases/*/venv").split()
             if json.loads(host.file(os.path.dirname(v) + "/release.json").content_string)["pins"]["build_mode"]
             == build_mode]
    assert len(venvs) == 1, venvs
    return venvs[0]


def test_only_the_builder_compiled_once_per_component(host):
    """Wheel mode compiled each component once; index mode compiled the fork once more (its build key holds the
    mode) and took FlashInfer's wheel of the same key from the builder's wheelhouse: nothing compiled twice."""
    name = host.backend.get_hostname()
    for log, builds in (("/var/log/glm53/flashinfer-build.log", 1), ("/var/log/glm53/vllm-fork-build.log", 2)):
        f = host.file(log)
        if name == BUILDER:
            found = re.findall(r"^=== build of ([0-9a-f]{40}) .* \(wheel\)$", f.content_string, re.M)
            assert len(found) == builds, (log, found)
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


def index_record():
    with open(os.path.join(EPH, "index.json")) as f:
        return json.load(f)


def test_index_mode_publishes_each_wheel_once_and_every_host_installs_it_from_the_index(host):
    """Index mode: the builder published one wheel per component to the package index (pypiserver, uploads behind a
    password); every host installed exactly those (pip --require-hashes from the requirement the build wrote),
    from the index, not from a file; the second run changed nothing; no wheel passed through the controller."""
    record = index_record()
    name = host.backend.get_hostname()
    for run in ("first", "again"):
        assert re.search(r"%s\s+: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=0" % name, record[run]), record[run][-3000:]
        assert "index-test-password" not in record[run], "the index's password is in the %s run's output" % run
    assert re.search(r"%s\s+: ok=\d+\s+changed=0\s" % name, record["again"]), record["again"][-3000:]
    assert "Upload it to the package index" in record["first"]
    # a wrong password: refused by playbooks/validate.yml, naming the settings, before anything was built
    refused = " ".join(record["refused"].split())  # the callback may fold long messages
    assert "vllm_fork_index_username and vllm_fork_index_password" in refused, record["refused"][-3000:]
    assert "refused the credentials for uploads (HTTP 403)" in refused
    assert "not-the-password" not in refused
    assert "Refuse a package index that cannot be used" in refused
    assert record["relay_after"] == record["relay_before"], "index mode passed a wheel through the controller"
    venv = release_venv(host, "index/index")
    for dist, pattern in (("vllm", "vllm-*.whl"), ("flashinfer_python", "flashinfer_python-*.whl")):
        req = host.check_output("cat /var/cache/glm53/wheelhouse/*/requirements.txt | grep -i '^%s=='" % dist)
        m = re.match(r"^(\S+)==(\S+) --hash=sha256:([0-9a-f]{64})$", req)
        assert m, req
        installed = host.check_output("%s/bin/python -m pip show %s | sed -n 's/^Version: //p'" % (venv, dist))
        assert installed == m.group(2), (installed, req)
        # from an index: pip records no direct URL (a local file would be file://...)
        dist_info = host.check_output("ls -d %s/lib/python3*/site-packages/%s-%s.dist-info" % (venv, dist, m.group(2)))
        assert not host.file(dist_info + "/direct_url.json").exists, "%s was installed from a file" % dist
        if name == INDEX_HOST:
            published = host.check_output("ls /opt/test-index/packages/%s" % pattern).split()
            assert len(published) == 1, published
            assert host.check_output("sha256sum %s" % published[0]).split()[0] == m.group(3)


def test_controller_bytes_per_mode(host):
    """Printed as figures: relay mode moves each wheel through the controller once from the builder and once to
    every host (N + 1 copies); index mode none, whatever N."""
    record = index_record()
    if host.backend.get_hostname() != BUILDER:
        return
    wheels = sum(size for path, size in record["relay_before"] if path.endswith(".whl"))
    n = record["hosts"]
    print("controller bytes for the wheels: relay mode %d (%d bytes of wheels x (1 fetch + %d hosts)); index mode %d"
          % (wheels * (n + 1), wheels, n, sum(size for _p, size in record["relay_after"]) - sum(
              size for _p, size in record["relay_before"])))
    assert wheels > 0
