#!/usr/bin/env python3
"""Fleet-size runs on one machine: N stand-in hosts on loopback, the shipped playbooks at size, and a table.

    python3 hack/fleet_scale.py --setup [--root DIR] [--runs 10:5,50:20,100:50] [--serial 20%] [--wheelhouse DIR]
    python3 hack/fleet_scale.py [--root DIR] [--runs ...] [--playbooks verify,rolling_restart,upgrade]
    python3 hack/fleet_scale.py --teardown [--root DIR]

--setup makes a fleet of the largest N and converges it with site.yml (with the largest N's forks): each host is an
inventory host with a local connection and a folder of its own under ROOT/fleet/hNNN, which holds everything the
collection writes on a host (releases, the serve script, the env file, the gate, the tmux supervisor's files,
logs, evidence, the ledger): every one of those paths is a documented setting, set per host in the generated
inventory. Each host also gets its own port (20001 + i), its own service user (the relaunch gate waits for *its
user's* engine processes to exit; made by this script beforehand, as a fleet's image would hold it, so that N hosts
on one machine do not race for /etc/passwd) and its own tmux session (service_mode tmux: no systemd here). The
engine is the vLLM stand-in (tests/standin) built from the fixture fork mirror, the GPUs the fake nvidia-smi's
eight L40S, the weights a small checkpoint shared read-only by every host: test doubles only, in this script's
inventory; the roles and modules run unchanged. A fleet builds once: wheel build mode (the first host compiles,
the controller relays the wheels, every host installs them).

Then each playbook runs at each N:forks, on the first N hosts (-l), in order: verify.yml, rolling_restart.yml with
rollout_serial (a percentage), upgrade.yml with the same serial (to the pinned branch's newer head on hosts not
upgraded yet, or, when too few are left, on the first N to the fixture's slow-release commit, so that every
upgraded host builds a new release). Each run is timed: wall, CPU (ansible-playbook and everything it waited
for: with a local connection that includes the hosts' module runs, pip and git, not the engines), and the
controller's peak memory (the sum of the resident sets of ansible-playbook's own processes, its forked workers
included, sampled every 0.2 s; module processes are not counted). The table goes to stdout and to
ROOT/fleet-scale.md and .json after every run (a run without --setup adds to them), with each playbook's
per-host wall at the largest N against the smallest. The engines keep running between invocations (tmux
sessions) until --teardown.
Needs: ansible-core (ansible-playbook on PATH, or --ansible-playbook), git, tmux, python3 with venv, root.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAYBOOKS = ("site", "verify", "rolling_restart", "upgrade")
BASE_PORT = 20000
# What the upgrades move the fork to: the pinned branch's head (a newer commit than site.yml's pin), then, for hosts
# upgraded already, the fixture's slow-release branch (another new commit; its engine answers well, a little slower).
UPGRADE_TARGETS = ("sm89-longctx-fix-v2", "slow-release")
DEFAULT_LABEL = "defaults (forks, pipelining on, linear)"


def sh(argv, **kw):
    return subprocess.run(argv, check=True, **kw)


MARKER = ".glm53-fleet-scale"  # in ROOT: this script made it, so --setup and --teardown may remove what is under it
MADE_USERS = "made-users.txt"  # in ROOT: the service users this script made (--teardown removes those only)


def own_root(root):
    """Refuse a ROOT this script did not make (an existing folder of someone else's, `/`, ...): nothing under it
    is ever removed."""
    if os.path.isdir(root) and os.listdir(root) and not os.path.exists(os.path.join(root, MARKER)):
        sys.exit("fleet_scale: %s exists and was not made by this script (no %s in it); name another --root"
                 % (root, MARKER))


def prepare(root, wheelhouse):
    """The fleet's shared parts: fixture mirrors, weights, the fake nvidia-smi, the pip wheelhouse. main() has
    checked own_root(root) already (before anything under it is removed)."""
    os.makedirs(root, exist_ok=True)
    open(os.path.join(root, MARKER), "a").close()
    wh = os.path.join(root, "wheelhouse")
    if not os.path.isdir(wh):
        if wheelhouse:
            shutil.copytree(wheelhouse, wh)
        else:
            sh([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", wh,
                "pip", "wheel", "setuptools", "packaging"])
    mirrors = os.path.join(root, "mirrors")
    if not os.path.exists(os.path.join(mirrors, "commits.json")):
        sh([sys.executable, os.path.join(REPO, "tests/helpers/make_fixture_repos.py"),
            os.path.join(REPO, "tests/standin"), mirrors], stdout=subprocess.DEVNULL)
    model = os.path.join(root, "models", "GLM-5.3-Flash-AWQ-INT4")
    if not os.path.exists(os.path.join(model, "model.safetensors.index.json")):
        sh([sys.executable, os.path.join(REPO, "tests/helpers/make_model.py"), model, "--shards", "2",
            "--shard-mib", "1"], stdout=subprocess.DEVNULL)
    smi = os.path.join(root, "bin", "nvidia-smi")
    if not os.path.exists(smi):
        os.makedirs(os.path.dirname(smi), exist_ok=True)
        shutil.copy(os.path.join(REPO, "tests/fakes/nvidia-smi"), smi)
        os.chmod(smi, 0o755)
        shutil.copytree(os.path.join(REPO, "tests/fixtures/nvidia-smi/l40s-8x"), os.path.join(root, "fake-nvidia-smi"))
    colls = os.path.join(root, "collections", "ansible_collections", "glm53")
    if not os.path.exists(os.path.join(colls, "serving")):
        os.makedirs(colls, exist_ok=True)
        os.symlink(REPO, os.path.join(colls, "serving"))
    with open(os.path.join(mirrors, "commits.json")) as f:
        return json.load(f)


def host_name(i):
    return "h%03d" % i


def ensure_user(name, home):
    """Make the host's service user unless it exists; True when this call made it."""
    if subprocess.run(["id", "-u", name], capture_output=True).returncode == 0:
        return False
    if subprocess.run(["getent", "group", name], capture_output=True).returncode != 0:
        sh(["groupadd", "--system", name])
    # What the venv role's user task would create: the same group, home, shell and comment, so it finds it as is.
    sh(["useradd", "--system", "--gid", name, "--home-dir", home, "--create-home", "--shell", "/usr/sbin/nologin",
        "--comment", "GLM-5.3 vLLM engine", name])
    return True


def inventory(root, fleet, n, commits, python):
    shared = {
        "ansible_connection": "local",
        "ansible_python_interpreter": python,  # the hosts' Python runs the modules, as on a real host
        # The test doubles (as molecule's inventory sets them): the fake nvidia-smi, the shared small checkpoint,
        # the fixture mirrors, a wheelhouse; Python as it is on this machine.
        "preflight_nvidia_smi": os.path.join(root, "bin", "nvidia-smi"),
        "preflight_min_memory_gib": 4,
        "preflight_python_version": subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True,
            check=True).stdout.strip(),
        "preflight_skip_checks": ["build_tools"],
        "model_path": os.path.join(root, "models", "GLM-5.3-Flash-AWQ-INT4"),
        "model_manifest_file": os.path.join(root, "models", "GLM-5.3-Flash-AWQ-INT4.sha256"),
        "venv_python": python,
        "venv_allow_other_python": True,
        "venv_torch_spec": "",
        "venv_packages": ["packaging"],
        "venv_build_packages": [],
        "venv_base_packages": ["pip", "wheel", "setuptools>=61"],
        "venv_pip_extra_args": ["--no-index", "--find-links", os.path.join(root, "wheelhouse")],
        "flashinfer_repo_url": os.path.join(root, "mirrors", "flashinfer.git"),
        "flashinfer_version": "v0.6.18",
        "flashinfer_aot_prewarm": False,
        "vllm_fork_repo_url": os.path.join(root, "mirrors", "vllm-glm53.git"),
        "vllm_fork_version": commits["minimum"],
        "vllm_fork_minimum_commit": commits["minimum"][:10],
        "vllm_fork_required_commits": [{"commit": commits["mhc"][:9], "name": "mHC fused-norm fix"},
                                       {"commit": commits["longctx"][:9], "name": "long-context graph fix"}],
        # A fleet builds once: the first host compiles, the controller relays the wheels, every host installs.
        "flashinfer_build_mode": "wheel",
        "vllm_fork_build_mode": "wheel",
        "vllm_fork_controller_wheelhouse": os.path.join(fleet, "relay"),
        "serve_api_key": "fleet-scale-test-key",
        "service_mode": "tmux",
        "service_environment": {"VLLM_STANDIN_LOAD_DELAY": "1"},
        "service_restart_sec": 2,
        "probes_needle_depths": [50],
        # The upgrades' performance gate runs vLLM's own benchmark client, which the stand-in borrows from a real
        # vLLM 0.28.0 venv (molecule fleet's story proves the gate); here the rollouts are timed without it.
        "rollout_bench": False,
        "probes_textfile_dir": "",
        "probes_report_dir": os.path.join(fleet, "report"),
    }
    hosts = {}
    for i in range(1, n + 1):
        name = host_name(i)
        base = os.path.join(fleet, name)
        user = "glm53-" + name
        hosts[name] = {
            "venv_service_user": user,
            "venv_service_group": user,
            "venv_service_home": base + "/var/lib",
            "venv_releases_dir": base + "/opt/releases",
            "serve_script_path": base + "/opt/bin/serve-glm53.sh",
            "serve_env_file": base + "/etc/vllm-glm53.env",
            "serve_tls_dir": base + "/etc/tls",
            "serve_port": BASE_PORT + i,
            "service_name": "vllm-glm53-" + name,
            "service_gate_dir": base + "/opt/libexec",
            "service_shm_dir": base + "/shm",
            "service_config_dir": base + "/etc",
            "service_state_dir": base + "/run",
            "service_log_dir": base + "/log",
            "flashinfer_build_log": base + "/log/flashinfer-build.log",
            "vllm_fork_build_log": base + "/log/vllm-fork-build.log",
            "vllm_fork_wheelhouse": base + "/cache/wheelhouse",
            "model_tools_venv": base + "/opt/model-tools",
            "model_verify_cache_file": base + "/cache/model-verify.json",
            "preflight_disk_requirements": [{"path": base, "min_free_gib": 1, "purpose": "builds"}],
            "probes_evidence_dir": base + "/var/lib/evidence",
            "probes_bench_dir": base + "/var/lib/bench",
        }
        os.makedirs(base + "/shm", exist_ok=True)
        if ensure_user(user, base + "/var/lib"):
            with open(os.path.join(root, MADE_USERS), "a") as f:
                f.write(user + "\n")
    return {"all": {"children": {"glm53_serving": {"hosts": hosts, "vars": shared}}}}


class Sampler(threading.Thread):
    """The controller's memory: the sum of the resident sets of ansible-playbook's processes (the main one and its
    forked workers, which keep its command line), every 0.2 s; module processes (AnsiballZ) are not counted."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.peak_procs, self.stop = pid, 0, 0, threading.Event()

    def tree(self):
        kids = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open("/proc/%s/stat" % name) as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
                kids.setdefault(ppid, []).append(int(name))
        out, todo = [], [self.pid]
        while todo:
            p = todo.pop()
            out.append(p)
            todo.extend(kids.get(p, []))
        return out

    def run(self):
        while not self.stop.wait(0.2):
            total, procs = 0, 0
            for p in self.tree():
                try:
                    with open("/proc/%d/cmdline" % p, "rb") as f:
                        if b"ansible-playbook" not in f.read():
                            continue
                    with open("/proc/%d/status" % p) as f:
                        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
                except (OSError, StopIteration, ValueError):
                    continue
                total, procs = total + rss, procs + 1
            if total > self.peak:
                self.peak, self.peak_procs = total, procs


def run_playbook(ansible_playbook, fleet, name, forks, extra, env, limit, label):
    log = os.path.join(fleet, "%s.log" % label)
    argv = [ansible_playbook, "-i", os.path.join(fleet, "inventory.json"), "-f", str(forks), "-l", limit,
            os.path.join(REPO, "playbooks", name + ".yml")]
    for k, v in extra.items():
        argv += ["-e", json.dumps({k: v})]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=fleet)
        sampler = Sampler(proc.pid)
        sampler.start()
        rc = proc.wait()
        sampler.stop.set()
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(log, errors="replace") as f:
        lines = f.read().splitlines()
    recap = [line for line in lines if " : ok=" in line]
    tasks = sum(1 for line in lines if line.startswith("TASK ["))
    failed = [line.split()[0] for line in recap if "failed=0" not in line or "unreachable=0" not in line]
    changed = sum(int(line.split("changed=")[1].split()[0]) for line in recap)
    return {"rc": rc, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "peak_rss_mib": round(sampler.peak / 1024),
            "peak_procs": sampler.peak_procs, "tasks": tasks, "hosts_in_recap": len(recap), "failed": failed,
            "changed": changed, "log": log}


def teardown(fleet):
    """Stop the fleet's engines (each host's tmux session and its service user's processes)."""
    try:
        with open(os.path.join(fleet, "inventory.json")) as f:
            hosts = json.load(f)["all"]["children"]["glm53_serving"]["hosts"]
    except (OSError, ValueError, KeyError):
        return
    # The supervisor's session, then whatever its engine left (it runs as the host's service user).
    for name in hosts:
        subprocess.run(["tmux", "kill-session", "-t", "vllm-glm53-" + name], capture_output=True)
        subprocess.run(["pkill", "-u", "glm53-" + name], capture_output=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not any(subprocess.run(["pgrep", "-u", "glm53-" + name], capture_output=True).stdout for name in hosts):
            break
        time.sleep(1)


def table(results):
    head = ("| N | forks | playbook | settings | rc | wall s | per host s | CPU s | CPU s per host | peak RSS MiB "
            "| tasks |")
    rows = [head, "|" + "---|" * 11]
    for r in results:
        rows.append("| %d | %d | %s | %s | %d | %.1f | %.2f | %.1f | %.2f | %d | %d |" % (
            r["n"], r["forks"], r["playbook"], r.get("settings", ""), r["rc"], r["wall_s"], r["wall_s"] / r["n"],
            r["cpu_s"], r["cpu_s"] / r["n"], r["peak_rss_mib"], r["tasks"]))
    return "\n".join(rows)


def scaling(results):
    """Per-host wall at the largest N against the smallest, per playbook and per settings label (the target: at most
    1.5x); a playbook run with one settings label at one N only is in the table only."""
    lines = []
    labels = sorted({r.get("settings", DEFAULT_LABEL) for r in results}, key=lambda s: (s != DEFAULT_LABEL, s))
    for label in labels:
        if label.startswith("setup:"):  # a quicker setup's split runs: not one fleet's run at two sizes
            continue
        for pb in PLAYBOOKS:
            rs = sorted((r for r in results if r["playbook"] == pb and r["rc"] == 0
                         and r.get("settings", DEFAULT_LABEL) == label), key=lambda r: r["n"])
            if len(rs) >= 2 and rs[0]["n"] != rs[-1]["n"]:
                lo, hi = rs[0], rs[-1]
                ratio = (hi["wall_s"] / hi["n"]) / (lo["wall_s"] / lo["n"])
                lines.append("%s, %s: per-host wall at N=%d is %.2fx that at N=%d (%.2f s against %.2f s)" % (
                    pb, label, hi["n"], ratio, lo["n"], hi["wall_s"] / hi["n"], lo["wall_s"] / lo["n"]))
    return "\n".join(lines)


def slices(runs, playbook, total):
    """The hosts each run of a playbook takes: the first N of the fleet, except for upgrades, which take hosts not
    upgraded yet while there are enough (each upgrade then starts from the release site.yml built), and otherwise
    the first N again with the next target (so every upgraded host builds a release it does not have)."""
    out, start, targets = [], 0, 0
    for n, forks in runs:
        if playbook != "upgrade":
            out.append((n, forks, 0, None))
            continue
        if start + n > total:
            start, targets = 0, targets + 1
        out.append((n, forks, start, UPGRADE_TARGETS[min(targets, len(UPGRADE_TARGETS) - 1)]))
        start += n
    return out


def setup_parallel(a, fleet, total, forks, env):
    """site.yml on the first host alone (it compiles the wheels and relays them), then on the others in a.setup_parallel
    runs at once, each with its own report folder (runs that end in the same second must not share one)."""
    label = "setup: h001, then %d runs at once" % a.setup_parallel
    r = run_playbook(a.ansible_playbook, fleet, "site", 1, {}, env, host_name(1), "site-setup-1")
    r.update(n=1, forks=1, playbook="site", hosts="h001", serial="", target="", settings=label)
    print("setup: site.yml on h001: rc=%d wall %.1f s, %d tasks" % (r["rc"], r["wall_s"], r["tasks"]), flush=True)
    if r["rc"] != 0 or total == 1:
        return [r]
    rest = list(range(2, total + 1))
    parts = [rest[k::a.setup_parallel] for k in range(a.setup_parallel) if rest[k::a.setup_parallel]]
    out = [None] * len(parts)

    def one(k):
        limit = ",".join(host_name(i) for i in parts[k])
        out[k] = run_playbook(a.ansible_playbook, fleet, "site", max(1, forks // len(parts)),
                              {"probes_report_dir": os.path.join(fleet, "report-setup-%d" % k)}, env, limit,
                              "site-setup-part%d" % k)
    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(k,)) for k in range(len(parts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    rc = max(x["rc"] for x in out)
    # CPU from getrusage(RUSAGE_CHILDREN) is the process's, so each part's figure holds its neighbours' too: the
    # phase's is the largest of them.
    summary = {"rc": rc, "wall_s": round(wall, 1), "cpu_s": max(x["cpu_s"] for x in out),
               "peak_rss_mib": sum(x["peak_rss_mib"] for x in out), "peak_procs": sum(x["peak_procs"] for x in out),
               "tasks": max(x["tasks"] for x in out), "hosts_in_recap": sum(x["hosts_in_recap"] for x in out),
               "failed": [h for x in out for h in x["failed"]], "changed": sum(x["changed"] for x in out),
               "log": " ".join(x["log"] for x in out), "n": total - 1, "forks": max(1, forks // len(parts)),
               "playbook": "site", "hosts": "h002-%s" % host_name(total), "serial": "", "target": "",
               "settings": label}
    print("setup: site.yml on h002-%s in %d runs: rc=%d wall %.1f s, failed: %s" % (
        host_name(total), len(parts), rc, wall, " ".join(summary["failed"][:5]) or "none"), flush=True)
    for x in out:
        if x["rc"] != 0:
            with open(x["log"], errors="replace") as f:
                print("".join(line for line in f.readlines()[-60:] if line.strip())[-6000:])
            break
    return [r, summary]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default="/var/tmp/glm53-fleet")
    ap.add_argument("--runs", default="10:5,50:20,100:50", help="N:forks pairs, comma-separated")
    ap.add_argument("--serial", default="20%", help="rollout_serial of the rollouts (a number or a percentage)")
    ap.add_argument("--playbooks", default="verify,rolling_restart,upgrade")
    ap.add_argument("--setup", action="store_true",
                    help="make a fleet of the largest N and converge it with site.yml (the forks of the largest N), "
                         "timed like the others; without it, the fleet made earlier is used")
    ap.add_argument("--setup-parallel", type=int, default=1, metavar="K",
                    help="converge the fleet in K site.yml runs at once (the first host alone first: it builds the "
                         "wheels the others install), each with its share of the forks: a quicker setup on a machine "
                         "of many cores, its rows labelled as such and left out of the ratios")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="an environment variable for ansible-playbook (a scaling setting: ANSIBLE_PIPELINING=False, "
                         "ANSIBLE_STRATEGY=mitogen_linear with ANSIBLE_STRATEGY_PLUGINS, ...); repeatable")
    ap.add_argument("--label", default="", help="what the table says of these runs' settings (default: the --env list)")
    ap.add_argument("--teardown", action="store_true", help="stop the fleet's engines and remove it, then exit")
    ap.add_argument("--wheelhouse", help="a folder of pip, wheel, setuptools and packaging wheels (offline machines)")
    ap.add_argument("--ansible-playbook", default=shutil.which("ansible-playbook") or "ansible-playbook")
    # The service users run the engine from a venv made of this interpreter: it must be readable by them (a pyenv
    # interpreter under /root is not, and the venv role refuses it).
    ap.add_argument("--python", help="the interpreter the hosts' venvs are made from (default: the first of "
                    "/usr/bin/python3 and python3 on PATH that has ensurepip)")
    a = ap.parse_args()
    runs = [tuple(int(x) for x in pair.split(":")) for pair in a.runs.split(",")]
    total = max(n for n, _ in runs)
    playbooks = [p for p in a.playbooks.split(",") if p]
    unknown = sorted(set(playbooks) - set(PLAYBOOKS))
    if unknown:
        ap.error("unknown playbooks %s (known: %s)" % (unknown, ", ".join(PLAYBOOKS)))
    root = os.path.abspath(a.root)
    fleet = os.path.join(root, "fleet")
    own_root(root)
    if a.teardown:
        teardown(fleet)
        try:
            with open(os.path.join(root, MADE_USERS)) as f:
                made = f.read().split()
        except OSError:
            made = []
        for user in made:  # the service users this script made, none other
            subprocess.run(["userdel", user], capture_output=True)
            subprocess.run(["groupdel", user], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
        return 0
    for tool in ("git", "tmux", "useradd", "runuser"):
        if not shutil.which(tool):
            sys.exit("fleet_scale: %s is not on PATH" % tool)
    if not a.python:
        a.python = next((p for p in ("/usr/bin/python3", shutil.which("python3")) if p and subprocess.run(
            [p, "-c", "import ensurepip, venv"], capture_output=True).returncode == 0), None)
        if not a.python:
            sys.exit("fleet_scale: no python3 with ensurepip (python3-venv) found; name one with --python")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(root, "collections"),
               FAKE_NVIDIA_SMI_DIR=os.path.join(root, "fake-nvidia-smi"), ANSIBLE_PIPELINING="True",
               ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_RETRY_FILES_ENABLED="False", ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="False")
    for item in a.env:
        name, sep, value = item.partition("=")
        if not sep:
            ap.error("--env takes NAME=VALUE, not %r" % item)
        env[name] = value
    label = a.label or " ".join(a.env) or DEFAULT_LABEL
    results_file = os.path.join(root, "fleet-scale.json")
    results = []
    if a.setup:
        teardown(fleet)
        shutil.rmtree(fleet, ignore_errors=True)
        t0 = time.monotonic()
        commits = prepare(root, a.wheelhouse)
        print("fleet_scale: prepared %s in %.1f s; the hosts' venvs are made from %s" % (
            root, time.monotonic() - t0, a.python), flush=True)
        os.makedirs(fleet)
        with open(os.path.join(fleet, "inventory.json"), "w") as f:
            json.dump(inventory(root, fleet, total, commits, a.python), f, indent=1)
        if a.setup_parallel > 1:
            results += setup_parallel(a, fleet, total, max(forks for _, forks in runs), env)
            if any(r["rc"] != 0 for r in results):
                print(table(results))
                return 1
            plan = []
        else:
            plan = [("site", total, max(forks for _, forks in runs), 0, None)]
    else:
        if not os.path.exists(os.path.join(fleet, "inventory.json")):
            sys.exit("fleet_scale: no fleet under %s; make one with --setup" % root)
        if os.path.exists(results_file):
            with open(results_file) as f:
                results = json.load(f)
        plan = []
    for pb in playbooks:
        plan += [(pb, n, forks, start, target) for n, forks, start, target in slices(runs, pb, total)]
    for pb, n, forks, start, target in plan:
        extra = {}
        if pb in ("rolling_restart", "upgrade"):
            extra["rollout_serial"] = a.serial
        if pb == "upgrade":
            extra["vllm_fork_version"] = target
        limit = ",".join(host_name(i) for i in range(start + 1, start + n + 1))
        r = run_playbook(a.ansible_playbook, fleet, pb, forks, extra, env, limit, "%s-%d" % (pb, n))
        r.update(n=n, forks=forks, playbook=pb, hosts="h%03d-h%03d" % (start + 1, start + n),
                 serial=extra.get("rollout_serial", ""), target=target or "",
                 settings=label)
        results.append(r)
        print("N=%d forks=%d %s (%s%s): rc=%d wall %.1f s (%.2f s/host) CPU %.1f s peak RSS %d MiB (%d processes) "
              "%d tasks, changed=%d%s" % (n, forks, pb, r["hosts"], (", to " + target) if target else "", r["rc"],
                                          r["wall_s"], r["wall_s"] / n, r["cpu_s"], r["peak_rss_mib"],
                                          r["peak_procs"], r["tasks"], r["changed"],
                                          (", failed: %s" % " ".join(r["failed"][:5])) if r["failed"] else ""),
              flush=True)
        with open(results_file, "w") as f:
            json.dump(results, f, indent=1)
        with open(os.path.join(root, "fleet-scale.md"), "w") as f:
            f.write(table(results) + "\n\n" + scaling(results) + "\n")
        if r["rc"] != 0:
            with open(r["log"], errors="replace") as f:
                print("".join(line for line in f.readlines()[-60:] if line.strip())[-6000:])
            break
    print(table(results))
    print(scaling(results))
    return 0 if all(r["rc"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
