"""What a user meets first: a plain clone runs its playbooks as the README says, and the tarball installs into a
fresh path and is reusable by FQCN from a playbook outside the repository. (ansible-test sanity runs on that
installed tarball in the `sanity` stage of hack/test.sh.)"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap

import pytest
import yaml

from testlib import REPO, clone_working_tree


BIN = os.path.dirname(sys.executable)
# Nothing of ours in the environment: no ANSIBLE_* variable, a HOME with no collections in it.
CLEAN_ENV = {"PATH": BIN + ":/usr/bin:/bin", "LANG": "C.UTF-8"}
PLAYBOOKS = ["site.yml"] + sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "playbooks", "*.yml")))
# What a run, a test or a lint leaves in a checkout; none of it may be packed.
LEFTOVERS = ["build/demo/report/report.html", "glm53-output/report/report.html", "glm53-output/wheelhouse/x.whl",
             ".ansible/tmp/x", ".pytest_cache/v/x", "plugins/modules/__pycache__/x.cpython-312.pyc",
             "tests/standin/build/lib/x.py", "tests/standin/vllm_standin.egg-info/PKG-INFO", "tests/output/x.xml",
             "changelogs/.plugin-cache.yaml", "glm53-serving-0.0.9.tar.gz", "hosts", "group_vars/glm53_serving/vault.yml",
             "host_vars/gpu-01.yml"]


def run(cmd, cwd, home, env=None, check=True):
    """Run with nothing of ours in the environment but HOME (and what env adds)."""
    proc = subprocess.run(cmd, cwd=cwd, env={**CLEAN_ENV, "HOME": str(home), **(env or {})},
                          capture_output=True, text=True)
    if check:
        assert proc.returncode == 0, "%s failed (%d):\n%s\n%s" % (cmd, proc.returncode, proc.stdout[-3000:],
                                                                  proc.stderr[-3000:])
    return proc


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """git clone of this repository, with the working tree's uncommitted changes laid over it."""
    root = tmp_path_factory.mktemp("clone")
    dest = root / "serving-checkout"
    clone_working_tree(dest)
    home = root / "home"
    home.mkdir()
    return dest, home


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_plain_clone_runs_each_playbook(clone, playbook):
    dest, home = clone
    run(["ansible-playbook", playbook, "-i", "inventory.example", "--syntax-check"], dest, home)


def test_plain_clone_lists_the_roles_tasks(clone):
    dest, home = clone
    out = run(["ansible-playbook", "site.yml", "-i", "inventory.example", "--list-tasks"], dest, home).stdout
    for role in ("preflight", "venv", "flashinfer", "vllm_fork", "model", "serve", "service", "probes", "monitoring"):
        assert "glm53.serving.%s : " % role in out, role


def test_without_the_link_a_clone_cannot_find_itself(clone, tmp_path):
    """The control: the same clone less ansible.cfg and collections/ fails as the issue saw."""
    dest, home = clone
    bare = tmp_path / "bare"
    shutil.copytree(dest, bare, symlinks=True, ignore=shutil.ignore_patterns(".git", "collections", "ansible.cfg"))
    proc = run(["ansible-playbook", "playbooks/verify.yml", "-i", "inventory.example", "--syntax-check"], bare, home,
               check=False)
    assert proc.returncode != 0 and "couldn't resolve module/action 'glm53.serving." in proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def tarball(clone, tmp_path_factory):
    dest, home = clone
    for name in LEFTOVERS:
        os.makedirs(os.path.dirname(dest / name), exist_ok=True)
        (dest / name).write_text("left behind\n")
    out = tmp_path_factory.mktemp("dist")
    run(["ansible-galaxy", "collection", "build", "--output-path", str(out), "."], dest, home)
    (path,) = glob.glob(str(out / "glm53-serving-*.tar.gz"))
    return dest, home, path


def test_tarball_packs_only_the_collection(tarball):
    dest, _, path = tarball
    tracked = set(subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                                 check=True).stdout.split())
    with tarfile.open(path) as tar:
        packed = {m.name for m in tar.getmembers() if m.isfile()} - {"MANIFEST.json", "FILES.json"}
    assert not {n for n in packed if n not in tracked and not os.path.exists(os.path.join(REPO, n))}, \
        "packed files that are neither tracked nor new: a leftover got in"
    assert not packed & set(LEFTOVERS)
    assert not {n for n in packed if n.startswith("tests/")}, "tests ship nothing (the sanity ignore file included)"
    for lint in (".ansible-lint", ".ansible-lint-ignore", ".yamllint"):  # an installed copy lints as the checkout
        assert lint in packed, lint
    assert not {n for n in packed if n.split("/")[0] in ("molecule", "hack", "collections", ".ci", ".config")}
    for must in ("LICENSE", "README.md", "meta/runtime.yml", "playbooks/site.yml", "roles/serve/tasks/main.yml",
                 "plugins/modules/vllm_needle.py", "changelogs/changelog.yaml"):
        assert must in packed, must
    assert os.path.getsize(path) < 1_000_000, "%d bytes" % os.path.getsize(path)
    with tarfile.open(path) as tar:  # the relaunch gate's /proc helper: a link to the module_utils file, kept one
        link = tar.getmember("roles/service/files/glm53_procfs.py")
    assert link.issym() and link.linkname == "../../../plugins/module_utils/_procfs.py"


def test_installed_tarball_is_reusable_by_fqcn_from_outside(tarball, tmp_path):
    _, home, path = tarball
    fresh = tmp_path / "fresh"
    run(["ansible-galaxy", "collection", "install", "--offline", "-p", str(fresh), path], tmp_path, home)
    assert (fresh / "ansible_collections/glm53/serving/MANIFEST.json").is_file()
    helper = fresh / "ansible_collections/glm53/serving/roles/service/files/glm53_procfs.py"
    assert helper.read_text() == open(os.path.join(REPO, "plugins/module_utils/_procfs.py")).read()
    user = tmp_path / "my-fleet"
    user.mkdir()
    shutil.copy(os.path.join(REPO, "playbooks/examples/fleet_reuse.yml"), user / "fleet.yml")
    shutil.copy(os.path.join(REPO, "inventory.example"), user / "hosts")
    env = {"ANSIBLE_COLLECTIONS_PATH": str(fresh)}
    text = (user / "fleet.yml").read_text()
    for fqcn in ("glm53.serving.preflight", "glm53.serving.serve", "glm53.serving.service",
                 "glm53.serving.vllm_health", "glm53.serving.vllm_chat_probe"):
        assert fqcn in text
    run(["ansible-playbook", "fleet.yml", "-i", "hosts", "--syntax-check"], user, home, env)
    # The collection's own playbooks, by name, from the installed copy.
    run(["ansible-playbook", "glm53.serving.site", "-i", "hosts", "--syntax-check"], user, home, env)
    out = run(["ansible-doc", "-t", "module", "-l", "glm53.serving"], user, home, env).stdout
    listed = sorted(line.split()[0] for line in out.splitlines() if line.startswith("glm53.serving."))
    shipped = sorted("glm53.serving." + os.path.basename(p)[:-3]
                     for p in glob.glob(os.path.join(REPO, "plugins/modules/*.py")))
    assert listed == shipped


def _readme_block(heading, lang):
    """The code block under a bullet of the README's Install section, as written."""
    readme = open(os.path.join(REPO, "README.md")).read()
    section = readme[readme.index("## Install"):]
    start = section.index("```" + lang, section.index(heading)) + len("```" + lang)
    return textwrap.dedent(section[start:section.index("```", start)].strip("\n"))


def test_readme_tarball_install_runs_as_written(clone, tmp_path):
    """The README's tarball steps, run as written from a clone named as the quick start names it, with a fresh home:
    the tarball is built beside the clone and installed by its name and version into ~/.ansible/collections, and
    ansible-doc, outside the clone, lists every module of the installed copy. Only the playbook line gets
    --syntax-check (its hosts are an example)."""
    dest, _ = clone
    version = str(yaml.safe_load(open(os.path.join(REPO, "galaxy.yml")))["version"])
    checkout = tmp_path / "glm53-serving"
    shutil.copytree(dest, checkout, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    shutil.copy(os.path.join(REPO, "inventory.example"), checkout / "hosts")
    home = tmp_path / "home"
    home.mkdir()
    block = _readme_block("**A tarball", "bash")
    assert "glm53-serving-%s.tar.gz" % version in block and "cd .." in block
    playbook = [line for line in block.splitlines() if line.startswith("ansible-playbook ")]
    assert len(playbook) == 1
    script = block.replace(playbook[0], playbook[0].split("#")[0].rstrip() + " --syntax-check")
    out = run(["bash", "-euo", "pipefail", "-c", script], checkout, home).stdout
    assert (tmp_path / ("glm53-serving-%s.tar.gz" % version)).is_file(), "the tarball is built beside the clone"
    installed = home / ".ansible/collections/ansible_collections/glm53/serving"
    with open(installed / "MANIFEST.json") as fh:
        assert json.load(fh)["collection_info"]["version"] == version
    assert not os.path.islink(installed), "the installed copy, not a link to the clone"
    listed = sorted(line.split()[0] for line in out.splitlines() if line.startswith("glm53.serving."))
    shipped = sorted("glm53.serving." + os.path.basename(p)[:-3]
                     for p in glob.glob(os.path.join(REPO, "plugins/modules/*.py")))
    assert listed == shipped
    where = run(["ansible-galaxy", "collection", "list", "glm53.serving"], tmp_path, home).stdout
    assert str(installed.parent.parent) in where and re.search(r"^glm53\.serving +%s *$" % re.escape(version), where,
                                                               re.M), where


def test_readme_shows_the_reuse_example():
    """docs/contents.md's "Using this collection" example is this file, so what it shows is what the test ran."""
    readme = open(os.path.join(REPO, "docs", "contents.md")).read()
    body = open(os.path.join(REPO, "playbooks/examples/fleet_reuse.yml")).read()
    tasks = body[body.index("- name:"):]
    assert tasks in readme


def _ee_context(path, tmp_path, home):
    """ansible-builder's build context for execution-environment.yml, with the tarball beside it."""
    work = tmp_path / "ee"
    work.mkdir()
    shutil.copy(os.path.join(REPO, "execution-environment.yml"), work)
    shutil.copy(path, work)
    run([os.path.join(BIN, "ansible-builder"), "create", "-f", "execution-environment.yml", "-c", "ctx",
         "--output-filename", "Containerfile"], work, home)
    return work


def test_execution_environment_context(tarball, tmp_path):
    """ansible-builder makes the build context from execution-environment.yml; its galaxy stage, replayed here
    (the mv, then the install of the generated requirements.yml's tarball entry), installs the collection from the
    tarball, and the Galaxy entries (tests/unit/test_ee_collections.py) reach requirements.yml as written.
    Building the image itself needs the base image's and Galaxy's registries, which are not reachable here."""
    dest, home, path = tarball
    work = _ee_context(path, tmp_path, home)
    containerfile = (work / "ctx/Containerfile").read_text()
    steps = [line for line in containerfile.splitlines() if line.startswith(("COPY", "RUN"))]
    i = steps.index("COPY _build/collection/ /build/")
    assert steps[i + 1] == "RUN mv /build/glm53-serving-*.tar.gz /build/glm53-serving.tar.gz"
    assert any("ansible-galaxy collection install" in s and "-r requirements.yml" in s for s in steps[i:])
    assert "ansible-core>=2.21,<2.22" in containerfile
    # Replay the galaxy stage: /build is the context's _build/collection plus _build.
    build = tmp_path / "build"
    shutil.copytree(work / "ctx/_build", build)
    (tarball_copy,) = glob.glob(str(work / "ctx/_build/collection/glm53-serving-*.tar.gz"))
    shutil.copy(tarball_copy, build / "glm53-serving.tar.gz")
    req = yaml.safe_load((build / "requirements.yml").read_text().replace("/build/", str(build) + "/"))
    with open(os.path.join(REPO, "execution-environment.yml")) as fh:
        wanted = [c for c in yaml.safe_load(fh)["dependencies"]["galaxy"]["collections"] if "type" not in c]
    assert [c for c in req["collections"] if c.get("type", "galaxy") == "galaxy"] == wanted
    req["collections"] = [c for c in req["collections"] if c.get("type") == "file"]
    (build / "requirements.yml").write_text(yaml.safe_dump(req))
    run(["ansible-galaxy", "collection", "install", "--offline", "-r", "requirements.yml", "-p",
         str(tmp_path / "usr-share")], build, home)
    assert (tmp_path / "usr-share/ansible_collections/glm53/serving/roles/serve/tasks/main.yml").is_file()


# Galaxy collections of the execution environment no test machine has: not in the PyPI `ansible` package that
# hack/test.sh unpacks, and Galaxy cannot be reached. The tests stand in for what the collection uses of them.
NOT_HERE = {"prometheus.prometheus": "its prometheus and alertmanager roles are stood in for, by their variables, in "
                                     "tests/integration/test_prometheus_collection.py"}


def test_execution_environment_ranges_admit_the_tested_collections():
    """Each Galaxy collection of the execution environment: the copy the tests run against (found on this run's
    ANSIBLE_COLLECTIONS_PATH, as hack/test.sh sets it) is inside the range execution-environment.yml asks Galaxy
    for, by ansible-galaxy's own reading of a range. One in NOT_HERE is named, with why, and must be absent."""
    from ansible.galaxy.dependency_resolution.versioning import meets_requirements  # pylint: disable=import-outside-toplevel
    with open(os.path.join(REPO, "execution-environment.yml")) as fh:
        wanted = [c for c in yaml.safe_load(fh)["dependencies"]["galaxy"]["collections"] if "type" not in c]
    assert wanted, "no Galaxy collection in execution-environment.yml"
    for entry in wanted:
        listed = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "list", entry["name"], "--format",
                                 "json"], capture_output=True, text=True, check=False)
        versions = [info["version"] for names in (json.loads(listed.stdout or "{}") or {}).values()
                    for name, info in names.items() if name == entry["name"]]
        if entry["name"] in NOT_HERE:
            assert not versions, "%s is installed here now: take it out of NOT_HERE" % entry["name"]
            print("%s %s: range not checked, no test machine has it (%s)" % (entry["name"], entry["version"],
                                                                           NOT_HERE[entry["name"]]))
            continue
        assert versions, "%s is not installed here (hack/test.sh unpacks it from the ansible package)" % entry["name"]
        assert meets_requirements(versions[0], entry["version"]), \
            "%s %s, which the tests run against, is outside %s" % (entry["name"], versions[0], entry["version"])
