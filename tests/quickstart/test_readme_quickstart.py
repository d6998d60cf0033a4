"""The README's quick start, pasted as a new user pastes it, in a fresh Debian 12 container: its blocks as they are in
README.md (tests/helpers/readme_quickstart.py finds them), run in order in one shell session, as a user with sudo.

What runs, in one `bash` session (`set -e`: the first failing line stops it, and the test names its stage):
  controller  the controller block: apt-get (Debian's archive), a venv, ansible-core 2.18 from PyPI, the clone;
  inventory   the inventory block, written to `hosts` as it is;
  vault       the vault block: `ansible-vault create`, the editor writing `serve_api_key: "<key>"` as the user would;
  validate    `ansible-playbook playbooks/validate.yml -i hosts` on that inventory: it must pass;
  demo-host   `hosts` again, the two example hosts replaced by the container itself (`ansible_connection=local`);
  site        `ansible-playbook site.yml -i hosts --check` on it;
  tarball     the Install section's tarball route: built in the clone, installed by name into ~/.ansible/collections
              outside it, `ansible-doc -l`, and the site playbook by name, `--check`, on the demo host.
Every line the test runs differently from the README is in SUBSTITUTIONS (tests/helpers/readme_quickstart.py), with
its reason: the `git clone` of GitHub (unreachable here) clones this checkout instead, under the same folder name; the
demo host; `--check`; verify.yml is not run. Interactive input comes from the environment: EDITOR writes the key,
ANSIBLE_VAULT_PASSWORD_FILE (the README's own way to give the vault's password) answers the password prompts.

The demo host is the container itself: converging the systemd demo host of `make demo` from here would need the
molecule machinery inside the container. A dry run of site.yml cannot pass on a host without GPUs, and the test does
not pretend otherwise: it asserts that site.yml gets past validation (one fleet of one host, every setting checked),
gathers facts and claims its paths in check mode (nothing written: no ledger on the host), and is then refused by
preflight's first read of the host, `nvidia-smi was not found`, the refusal any host without the NVIDIA driver gets,
and nothing else. The weights' folder (model_path as the README gives it) exists on the demo host, empty: the run
stops before the model role reads it.

Machine matters, not the README's: the image is Debian 12 from mmdebstrap (hack/lib.sh's ensure_quickstart_image:
systemd and sudo, no apt lists, as a fresh install before its first `apt-get update`); apt's downloaded packages and
pip's cache are kept in $GLM53_WORK/quickstart-cache between runs; where this machine's pip trusts a CA of its own
(PIP_CERT, a TLS-inspecting proxy), the container's pip is given the same file.

Runs in hack/test.sh's `quickstart` stage (dockerd up); needs docker and mmdebstrap, and PyPI and Debian's archive.
Each stage's time is printed (run pytest with -s to see it)."""
from __future__ import annotations

import glob
import json
import os
import re
import secrets
import subprocess
import time

import pytest
import yaml

from readme_quickstart import (SOURCE_IN_CONTAINER, VAULT_PASSWORD_ENV, quickstart_blocks, substitute)
from testlib import REPO, clone_working_tree

WORK = os.environ.get("GLM53_WORK", "/var/tmp/glm53-ci")
CACHE = os.path.join(WORK, "quickstart-cache")
USER, HOME = "ops", "/home/ops"
CHECKOUT = HOME + "/glm53-serving"
MODEL_PATH = "/srv/models/GLM-5.3-Flash-AWQ-INT4"
EDITOR = "/usr/local/bin/glm53-quickstart-editor"
VAULT_PASS = HOME + "/.vault-pass"
PIP_CACHE = "/var/cache/glm53-quickstart-pip"
MARK = "@@glm53-quickstart"
STAGES = ["controller", "inventory", "vault", "validate", "demo-host", "site", "tarball", "end"]
PROLOGUE = """set -eo pipefail
glm53_stage() { printf '\\n%(mark)s stage %%s %%s\\n' "$1" "$(date +%%s.%%N)"; }
glm53_refused() { printf '\\n%(mark)s refused %%s\\n' "$1"; }
""" % {"mark": MARK}
VERSION = str(yaml.safe_load(open(os.path.join(REPO, "galaxy.yml")))["version"])
MODULES = sorted("glm53.serving." + os.path.basename(p)[:-3] for p in glob.glob(os.path.join(REPO, "plugins/modules/*.py")))


def run(cmd, timeout=600, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert proc.returncode == 0, "%s failed (%d):\n%s\n%s" % (cmd, proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc.stdout


def heredoc(path, text):
    assert "GLM53_QUICKSTART_EOF" not in text
    return "cat >%s <<'GLM53_QUICKSTART_EOF'\n%sGLM53_QUICKSTART_EOF\n" % (path, text if text.endswith("\n") else text + "\n")


def session_script(blocks):
    """The README's blocks in the order a user pastes them, with the stage marks between them."""
    playbooks = substitute("playbooks", blocks["playbooks"]).splitlines(keepends=True)
    at = next(i for i, line in enumerate(playbooks) if "playbooks/validate.yml" in line) + 1
    parts = [
        ("controller", substitute("controller", blocks["controller"])),
        ("inventory", heredoc("hosts", blocks["inventory"])),
        ("vault", blocks["vault"]),
        ("validate", "".join(playbooks[:at])),
        ("demo-host", heredoc("hosts", substitute("demo-inventory", blocks["inventory"]))),
        ("site", "".join(playbooks[at:])),
        ("tarball", substitute("tarball", blocks["tarball"])),
    ]
    body = "".join("glm53_stage %s\n%s\n" % (name, text) for name, text in parts)
    return PROLOGUE + body + "glm53_stage end\n"


def stages(output):
    """{stage: (seconds, its output)} from the session's marks."""
    marks = list(re.finditer(r"^%s stage (\S+) ([0-9.]+)$" % re.escape(MARK), output, re.M))
    found = {}
    for i, m in enumerate(marks):
        end = marks[i + 1] if i + 1 < len(marks) else None
        seconds = float(end.group(2)) - float(m.group(2)) if end else 0.0
        found[m.group(1)] = (seconds, output[m.end():end.start() if end else len(output)])
    return found


class Container:
    def __init__(self, image, name):
        self.name = name
        self.image = image

    def start(self, mounts):
        argv = ["docker", "run", "-d", "--name", self.name, "--label", "owner=glm53-quickstart", "--tmpfs", "/tmp"]
        for src, dest in mounts:
            argv += ["-v", "%s:%s" % (src, dest)]
        run(argv + [self.image, "sleep", "infinity"])

    def root(self, script):
        return run(["docker", "exec", self.name, "bash", "-euo", "pipefail", "-c", script])

    def user(self, script, env=(), tty=False, timeout=600):
        argv = ["docker", "exec", "-u", USER, "-w", HOME, "-e", "HOME=" + HOME] + (["-t"] if tty else [])
        for item in env:
            argv += ["-e", item]
        return subprocess.run(argv + [self.name, "bash", "-c", script], capture_output=True, timeout=timeout)

    def remove(self):
        subprocess.run(["docker", "rm", "-f", self.name], capture_output=True)


@pytest.fixture(scope="module")
def image():
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        pytest.fail("docker does not answer: this test runs in hack/test.sh's quickstart stage, once dockerd is up")
    t0 = time.time()
    out = run(["bash", "-c", '. hack/lib.sh && ensure_quickstart_image >&2 && echo "$GLM53_IMAGE_QUICKSTART"'], cwd=REPO)
    print("\nquick-start image %s ready in %.0f s" % (out.strip(), time.time() - t0))
    return out.strip()


@pytest.fixture(scope="module")
def quickstart(image, tmp_path_factory):
    """The whole session, once: (its stages, the container, the key, the script's exit status and output)."""
    blocks = quickstart_blocks(open(os.path.join(REPO, "README.md")).read())
    source = tmp_path_factory.mktemp("quickstart") / "glm53-serving"
    clone_working_tree(source)
    git = ["git", "-C", str(source), "-c", "user.name=quickstart", "-c", "user.email=quickstart@localhost"]
    run(git + ["add", "-A"])
    run(git + ["commit", "-q", "--allow-empty", "-m", "the working tree under test"])
    for sub in ("apt", "pip"):
        os.makedirs(os.path.join(CACHE, sub), exist_ok=True)
    mounts = [(os.path.join(CACHE, "apt"), "/var/cache/apt/archives"), (os.path.join(CACHE, "pip"), PIP_CACHE)]
    # the session has a terminal (as the user's): ansible-doc -l pages a list taller than it, where the user presses q;
    # here the pager prints it through
    env = ["ANSIBLE_NOCOLOR=1", "EDITOR=" + EDITOR, "%s=%s" % (VAULT_PASSWORD_ENV, VAULT_PASS), "PIP_CACHE_DIR=" + PIP_CACHE,
           "PAGER=cat", "ANSIBLE_PAGER=cat"]
    if os.environ.get("PIP_CERT"):
        mounts.append((os.environ["PIP_CERT"], "/etc/glm53-quickstart-ca.crt:ro"))
        env.append("PIP_CERT=/etc/glm53-quickstart-ca.crt")
    key = "quickstart-" + secrets.token_hex(16)
    box = Container(image, "glm53-quickstart-%d-%s" % (os.getpid(), secrets.token_hex(3)))
    t0 = time.time()
    try:
        box.start(mounts)
        run(["docker", "cp", str(source), "%s:%s" % (box.name, SOURCE_IN_CONTAINER)])
        box.root(f"""
useradd -m -s /bin/bash {USER}
echo '{USER} ALL=(ALL) NOPASSWD:ALL' >/etc/sudoers.d/{USER} && chmod 0440 /etc/sudoers.d/{USER}
chown -R {USER}: {SOURCE_IN_CONTAINER} {PIP_CACHE}
mkdir -p {MODEL_PATH}
cat >{EDITOR} <<'EOF'
#!/bin/sh
# the user typing the API key into the editor ansible-vault create opens
printf 'serve_api_key: "%s"\\n' '{key}' >"$1"
EOF
chmod 0755 {EDITOR}
printf '%s\\n' {secrets.token_hex(16)} >{VAULT_PASS} && chown {USER}: {VAULT_PASS} && chmod 0600 {VAULT_PASS}
""")
        setup = time.time() - t0
        proc = box.user(session_script(blocks), env=env, tty=True)
        output = proc.stdout.decode(errors="replace").replace("\r\n", "\n") + proc.stderr.decode(errors="replace")
        found = stages(output)
        print("\nquick start in a fresh Debian 12 container (%s): exit status %d" % (box.name, proc.returncode))
        print("  %-10s %6.1f s  (container, source, user)" % ("setup", setup))
        for name in STAGES[:-1]:
            if name in found:
                print("  %-10s %6.1f s" % (name, found[name][0]))
        print("  %-10s %6.1f s" % ("total", time.time() - t0))
        yield {"stages": found, "box": box, "key": key, "rc": proc.returncode, "output": output}
    finally:
        box.remove()


def stage(quickstart, name):
    """A stage's output; a stage the session did not reach fails, naming where it stopped and why."""
    found = quickstart["stages"]
    if name not in found:
        last = list(found)[-1] if found else "(before the first stage)"
        pytest.fail("the quick start stopped in stage %r (exit status %d), before %r:\n%s" % (
            last, quickstart["rc"], name, (found[last][1] if found else quickstart["output"])[-4000:]))
    return found[name][1]


def recap(text, host):
    m = re.search(r"^%s +: ok=(\d+) +changed=(\d+) +unreachable=(\d+) +failed=(\d+)" % re.escape(host), text, re.M)
    assert m, "no PLAY RECAP line for %s:\n%s" % (host, text[-3000:])
    return dict(zip(("ok", "changed", "unreachable", "failed"), map(int, m.groups())))


def test_every_block_runs_to_the_end(quickstart):
    """Every README line ran and none failed (set -e), but the two refusals the demo host is expected to give."""
    stage(quickstart, "end")
    assert quickstart["rc"] == 0
    assert list(quickstart["stages"]) == STAGES


def test_controller_has_ansible_core_218_on_debians_python(quickstart):
    stage(quickstart, "inventory")  # the controller block ran to its end
    box = quickstart["box"]
    out = box.user("~/ansible/bin/ansible --version").stdout.decode()
    assert re.search(r"^ansible \[core 2\.18\.\d+\]", out, re.M), out
    assert "python version = 3.11." in out, out
    head = box.user("git -C %s log -1 --format=%%s; git -C %s remote get-url origin" % (CHECKOUT, CHECKOUT)).stdout.decode()
    assert head.split("\n")[:2] == ["the working tree under test", SOURCE_IN_CONTAINER], head


def test_the_key_is_in_a_vault(quickstart):
    stage(quickstart, "validate")
    box = quickstart["box"]
    path = CHECKOUT + "/group_vars/glm53_serving/vault.yml"
    assert box.user("head -1 " + path).stdout.decode().startswith("$ANSIBLE_VAULT;")
    plain = box.user("~/ansible/bin/ansible-vault view " + path, env=["%s=%s" % (VAULT_PASSWORD_ENV, VAULT_PASS)])
    assert yaml.safe_load(plain.stdout.decode()) == {"serve_api_key": quickstart["key"]}


def test_validate_passes_on_the_readme_inventory(quickstart):
    text = stage(quickstart, "validate")
    assert '"msg": "one fleet of 2 hosts"' in text
    for host in ("gpu-01", "gpu-02"):
        assert recap(text, host)["failed"] == 0 and recap(text, host)["unreachable"] == 0
    assert "fatal:" not in text and MARK + " refused" not in text


def _refused_by_preflight(text, where):
    assert '"msg": "one fleet of 1 hosts"' in text, "validation did not pass on the demo host"
    assert re.search(r"TASK \[Claim what this bring-up writes on the host.*\n+changed: \[gpu-01\]", text), \
        "the ledger claim did not run (in check mode) before preflight"
    fatal = re.findall(r"^fatal: \[(\S+)\]: FAILED! => (.*)$", text, re.M)
    assert len(fatal) == 1, fatal
    assert fatal[0][0] == "gpu-01" and json.loads(fatal[0][1])["msg"].startswith("nvidia-smi was not found"), fatal
    assert re.search(r"TASK \[glm53\.serving\.preflight : Read the GPUs\]", text)
    assert "included: %s/roles/preflight/tasks/gather.yml for gpu-01" % where in text
    assert recap(text, "gpu-01")["failed"] == 1 and recap(text, "gpu-01")["unreachable"] == 0
    assert re.search(r"^%s refused 2$" % re.escape(MARK), text, re.M)


def test_site_check_is_refused_by_preflight_only_for_the_missing_gpus(quickstart):
    """Validation passes on the demo inventory; the run reaches the host and stops at its first read of the GPUs."""
    _refused_by_preflight(stage(quickstart, "site"), CHECKOUT + "/collections/ansible_collections/glm53/serving")
    ledger = quickstart["box"].user("sudo test -e /var/lib/glm53-ledger")
    assert ledger.returncode == 1, "a dry run wrote the host's ledger"


def test_tarball_installs_by_name_outside_the_clone(quickstart):
    text = stage(quickstart, "tarball")
    box = quickstart["box"]
    installed = HOME + "/.ansible/collections/ansible_collections/glm53/serving"
    assert box.user("test -f ~/glm53-serving-%s.tar.gz" % VERSION).returncode == 0, "the tarball is built beside the clone"
    manifest = json.loads(box.user("cat %s/MANIFEST.json" % installed).stdout.decode())
    assert manifest["collection_info"]["version"] == VERSION
    listed = sorted(line.split()[0] for line in text.splitlines() if line.startswith("glm53.serving."))
    assert listed == MODULES
    files = box.user("cd %s && ls -A" % installed).stdout.decode().split()
    assert "roles" in files and not {"hosts", "group_vars", "host_vars"} & set(files), \
        "the user's inventory and vault went into the tarball: %s" % files
    _refused_by_preflight(text, installed)
