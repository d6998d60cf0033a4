"""Paths shared by the tests, and this checkout importable as ansible_collections.glm53.serving."""
from __future__ import annotations

import atexit
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
FAKES = os.path.join(REPO, "tests", "fakes")
HELPERS = os.path.join(REPO, "tests", "helpers")

COLLECTIONS_ROOT = tempfile.mkdtemp(prefix="glm53-collections-")
# gone with the process that made it (rmtree removes the link below, never what it points at)
atexit.register(shutil.rmtree, COLLECTIONS_ROOT, True)
os.makedirs(os.path.join(COLLECTIONS_ROOT, "ansible_collections", "glm53"))
os.symlink(REPO, os.path.join(COLLECTIONS_ROOT, "ansible_collections", "glm53", "serving"))
sys.path.insert(0, COLLECTIONS_ROOT)
sys.path.insert(0, HELPERS)


def clone_working_tree(dest):
    """git clone of this repository at dest, with the working tree's uncommitted changes laid over it (new files that
    git does not ignore, changes, deletions): what a user would clone once this tree is pushed."""
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", REPO, str(dest)], check=True)
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           check=True, capture_output=True).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        src = os.path.join(REPO, name)
        if os.path.islink(src) or not os.path.exists(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, name))
    committed = subprocess.run(["git", "ls-files", "-z"], cwd=dest, check=True, capture_output=True).stdout
    for name in filter(None, (f.decode() for f in committed.split(b"\0"))):
        if not os.path.lexists(os.path.join(REPO, name)):  # deleted in the working tree, not yet committed
            os.unlink(os.path.join(dest, name))


# ---------------------------------------------------------------- the vLLM stand-in as a process
VLLM = [sys.executable, "-m", "vllm.entrypoints.cli.main"]
REFERENCE_FLAGS = [
    "--served-model-name", "glm53-flash-awq", "--tensor-parallel-size", "8", "--host", "127.0.0.1",
    "--max-model-len", "524288", "--no-enable-prefix-caching",
    "--hf-overrides", '{"text_config": {"index_topk": null, "index_n_heads": null, "index_head_dim": null, '
                      '"index_kpool": null}}',
    "--compilation-config", '{"cudagraph_mode": "FULL_DECODE_ONLY"}', "--gpu-memory-utilization", "0.94",
    "--max-num-batched-tokens", "4096", "--reasoning-parser", "glm47", "--tool-call-parser", "glm47",
    "--enable-auto-tool-choice",
]


_HANDED_OUT: set[int] = set()


def run_module_here(module, args):
    """A module's result, its main() run in this process with these arguments (failed or not)."""
    import contextlib
    import io

    from ansible.module_utils.testing import patch_module_args
    out = io.StringIO()
    with patch_module_args(args), contextlib.redirect_stdout(out):
        try:
            module.main()
        except SystemExit:
            pass
    return json.loads(out.getvalue())


def held_port():
    """A socket of this process listening on a free loopback port: a port another process holds. Close it after."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def fill_listen_queue(port, most=5000, refusals=3):
    """Other clients' connections to a stopped engine: connect to the port until the kernel takes no more (its listen
    queue is full: `refusals` new connections in a row are not accepted within two seconds each, so a handshake slowed
    by a busy machine is not taken for a full queue), and return the open sockets (close them after). vLLM's uvicorn
    listens with a queue of 2048, the stand-in's with Python's 5: either fills the same way."""
    held, missed = [], 0
    for _ in range(most):
        s = socket.socket()
        s.settimeout(2.0)
        try:
            s.connect(("127.0.0.1", port))
        except (socket.timeout, TimeoutError):
            s.close()
            missed += 1
            if missed == refusals:
                return held
            continue
        missed = 0
        held.append(s)
    for s in held:
        s.close()
    raise AssertionError("port %d took %d connections without filling its listen queue" % (port, most))


def free_port() -> int:
    """A port nothing listens on, never one this process handed out before: the kernel offers a port again once
    its probe socket closes, and a stand-in binds its port later, so two objects made before either starts could
    otherwise get one port."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


# ---------------------------------------------------------------- Prometheus and Alertmanager (Debian's packages)
def wait_for_http(url, proc, log, seconds=30):
    """Poll url until it answers 200, while proc runs; fail with the end of its log."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("%s did not answer (exit %s): %s" % (url, proc.poll(), open(log).read()[-2000:]))
            time.sleep(0.2)


def start_alertmanager(tmp, config=None, port=None, binary="prometheus-alertmanager"):
    """A real Alertmanager on a loopback port (`port`, or a free one), alone (no cluster), its data and log in tmp:
    with `config` (a path) or a route to a receiver with no integration. Returns (process, url); terminate the
    process after."""
    if config is None:
        config = os.path.join(str(tmp), "alertmanager.yml")
        with open(config, "w") as f:
            f.write("route: {receiver: none}\nreceivers: [{name: none}]\n")
    port, log = port or free_port(), os.path.join(str(tmp), "alertmanager.log")
    proc = subprocess.Popen([shutil.which(binary) or binary, "--config.file=%s" % config,
                             "--storage.path=%s" % os.path.join(str(tmp), "alertmanager-data"),
                             "--web.listen-address=127.0.0.1:%d" % port, "--cluster.listen-address="],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT)
    url = "http://127.0.0.1:%d" % port
    return _answering(proc, url, "/api/v2/status", log)


def start_node_exporter(textfiles, address="127.0.0.1", port=None):
    """A real node_exporter (Debian's) reading only the textfile folder textfiles (where the probes' verdict_metrics
    writes), on address:port (a free port by default). Returns (process, port); terminate the process after."""
    port, log = port or free_port(), os.path.join(str(textfiles), "node_exporter.log")
    proc = subprocess.Popen([shutil.which("prometheus-node-exporter") or "prometheus-node-exporter",
                             "--collector.disable-defaults", "--collector.textfile",
                             "--collector.textfile.directory=%s" % textfiles,
                             "--web.listen-address=%s:%d" % (address, port)],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT)
    _answering(proc, "http://%s:%d" % (address, port), "/metrics", log)
    return proc, port


def start_prometheus(tmp, targets, interval="1s"):
    """A real Prometheus (Debian's) on a loopback port scraping {host: address} every interval, each target labelled
    host as the monitoring role's scrape configuration labels it; its data and log in tmp. Returns (process, url)."""
    port, log = free_port(), os.path.join(str(tmp), "prometheus.log")
    config = os.path.join(str(tmp), "prometheus.yml")
    with open(config, "w") as f:
        f.write(json.dumps({"global": {"scrape_interval": interval, "evaluation_interval": interval},
                            "scrape_configs": [{"job_name": "node", "static_configs": [
                                {"targets": [address], "labels": {"host": host}} for host, address in sorted(targets.items())]}]}))
    proc = subprocess.Popen([shutil.which("prometheus") or "prometheus", "--config.file=%s" % config,
                             "--storage.tsdb.path=%s" % os.path.join(str(tmp), "prometheus-data"),
                             "--web.listen-address=127.0.0.1:%d" % port],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT)
    return _answering(proc, "http://127.0.0.1:%d" % port, "/-/ready", log)


def start_etcd(tmp):
    """A real etcd (Debian's etcd-server) of one member on loopback ports, its data and log in tmp: the store that
    sliced runs share. Returns (process, client url); terminate the process after."""
    client, peer, log = free_port(), free_port(), os.path.join(str(tmp), "etcd.log")
    url = "http://127.0.0.1:%d" % client
    proc = subprocess.Popen([shutil.which("etcd") or "etcd", "--name", "t", "--data-dir", os.path.join(str(tmp), "etcd-data"),
                             "--listen-client-urls", url, "--advertise-client-urls", url,
                             "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
                             "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
                             "--initial-cluster", "t=http://127.0.0.1:%d" % peer],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT)
    return _answering(proc, url, "/health", log)


def _answering(proc, url, path, log):
    """(proc, url) once url + path answers; the process stopped when it never does."""
    try:
        wait_for_http(url + path, proc, log)
    except AssertionError:
        proc.terminate()
        raise
    return proc, url


# ---------------------------------------------------------------- the serve role, rendered locally
SERVE_PLAYBOOK = os.path.join(REPO, "tests", "integration", "serve", "playbook.yml")


def serve_role_vars(tmp_path, **overrides):
    """The serve role's variables for a render into tmp_path, with the overrides."""
    return {"ansible_python_interpreter": sys.executable, "venv_path": sys.prefix,
             "serve_script_path": str(tmp_path / "bin" / "serve.sh"), "serve_env_file": str(tmp_path / "etc" / "vllm.env"),
             "model_path": "/srv/models/GLM-5.3-Flash-AWQ-INT4", "vllm_fork_src_dir": "/opt/glm53/src/vllm-glm53",
             "serve_api_key": "s3cret-key", "serve_port": free_port(),
             "venv_runtime_env": {"CUDA_HOME": "/opt/glm53/venv/lib/python3.10/site-packages/nvidia/cu13",
                                   "VLLM_USE_BREAKABLE_CUDAGRAPH": "0", "FLASHINFER_DISABLE_VERSION_CHECK": "1",
                                   "PYTHONFAULTHANDLER": "1"},
             **overrides}


def run_serve_role(tmp_path, **overrides):
    """The serve role by ansible-playbook on this machine, rendering into tmp_path; (process, extra vars)."""
    extra = serve_role_vars(tmp_path, **overrides)
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", SERVE_PLAYBOOK, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    return proc, extra


def run_serve_role_hosts(tmp_path, cases):
    """The serve role over one inventory host per case, in one ansible-playbook run: each host renders into
    tmp_path/<case> with the case's overrides as host variables; (process, {case: its extra vars})."""
    hosts = {}
    for name, overrides in cases.items():
        (tmp_path / name).mkdir()
        extra = serve_role_vars(tmp_path / name, **overrides)
        hosts[name] = dict(extra, ansible_connection="local")
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORKS": "10"}
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), SERVE_PLAYBOOK],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    return proc, hosts


# a task's failure (fatal: [h]: FAILED! => ...) and a loop item's (failed: [h] (item=...) => ...)
FAILED_RE = re.compile(r"^(?:fatal|failed): \[([^\]]+)\](?: \(item=.*?\))?(?:: FAILED!)? => (.*)$", re.M)


def failures_by_host(stdout):
    """{host: its failure lines} from ansible-playbook's default output of a run over several hosts."""
    out = {}
    for host, body in FAILED_RE.findall(stdout):
        out[host] = out.get(host, "") + body + "\n"
    return out


def exec_argv(script_text):
    """The argv of the script's `exec` line, as bash would split it."""
    joined = script_text.replace("\\\n", " ")
    line = next(line for line in joined.splitlines() if line.strip().startswith("exec "))
    return shlex.split(line)[1:]


def normalise(argv):
    out = []
    for word in argv:
        try:
            out.append(json.loads(word) if word.startswith("{") else word)
        except ValueError:
            out.append(word)
    return out


# ---------------------------------------------------------------- the vLLM stand-in as a process
class StandIn:
    def __init__(self, tmp_path, env=None, flags=None, model_dir=None):
        self.port = free_port()
        self.shm = tmp_path / "shm"
        self.shm.mkdir(exist_ok=True)
        self.model = model_dir or tmp_path / "model"
        self.model.mkdir(exist_ok=True)
        self.log = tmp_path / "server.log"
        self.env = {**os.environ, "VLLM_STANDIN_SHM_DIR": str(self.shm), **(env or {})}
        if "VLLM_API_KEY" not in (env or {}):
            self.env.pop("VLLM_API_KEY", None)
        flags = REFERENCE_FLAGS if flags is None else flags
        self.argv = [*VLLM, "serve", str(self.model), *flags, "--port", str(self.port)]
        self.proc = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self._logf = open(self.log, "wb")
        self.proc = subprocess.Popen(self.argv, env=self.env, stdout=self._logf, stderr=subprocess.STDOUT)
        return self

    def wait_ready(self, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"stand-in exited {self.proc.returncode}:\n{self.log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError("stand-in did not listen in time:\n" + self.log.read_text())

    def request(self, method, path, body=None, headers=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as err:
            raw, status = err.read(), err.code
        text = raw.decode()
        try:
            return status, json.loads(text) if text else None
        except json.JSONDecodeError:
            return status, text

    def chat(self, content, **extra):
        body = {"model": "glm53-flash-awq", "messages": [{"role": "user", "content": content}],
                "max_tokens": 2048, **extra}
        return self.request("POST", "/v1/chat/completions", body)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self._logf.close()


# ---------------------------------------------------------------- the collection's version
# Semantic versioning's x.y.z with an optional pre-release (x.y.z-dev); no build metadata.
_IDENT = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
SEMVER = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-(%s(?:\.%s)*))?$" % (_IDENT, _IDENT))


def release_key(version):
    """x.y.z (or x.y.z-pre) as a tuple of three ints, for comparing releases."""
    found = SEMVER.match(version)
    assert found, "%r is not a semantic version" % version
    return tuple(int(p) for p in found.groups()[:3])


def version_state(root):
    """galaxy.yml's version, the changelog's releases, and the changelog fragments waiting to be released."""
    import yaml  # pylint: disable=import-outside-toplevel
    with open(os.path.join(root, "galaxy.yml")) as fh:
        version = str(yaml.safe_load(fh)["version"])
    with open(os.path.join(root, "changelogs", "changelog.yaml")) as fh:
        releases = sorted((yaml.safe_load(fh) or {}).get("releases") or {}, key=release_key)
    folder = os.path.join(root, "changelogs", "fragments")
    waiting = sorted(f for f in os.listdir(folder) if f.endswith((".yml", ".yaml"))) if os.path.isdir(folder) else []
    return version, releases, waiting


def version_problems(version, releases, waiting):
    """Why galaxy.yml's version does not mean what it says (an empty list when it does). A commit is a release,
    x.y.z with its section in the changelog and no fragment waiting, or a pre-release of the next one, x.y.z-dev with
    x.y.z above every release; the fragments wait only in a pre-release."""
    found = SEMVER.match(version)
    if not found:
        return ["galaxy.yml's version %r is neither a release x.y.z nor a pre-release x.y.z-dev" % version]
    last = releases[-1] if releases else None
    if found.group(4) is None:
        problems = []
        if version not in releases:
            problems.append("galaxy.yml says %s, which the changelog has no section for: release it (make release "
                            "VERSION=%s) or make it a pre-release (%s-dev)" % (version, version, version))
        elif version != last:
            problems.append("galaxy.yml says %s, below the last release %s" % (version, last))
        if waiting:
            problems.append("galaxy.yml says the release %s, but %d changelog fragments are not in it (%s): after a "
                            "release galaxy.yml carries the next pre-release, such as %d.%d.0-dev"
                            % (version, len(waiting), ", ".join(waiting[:3]), release_key(version)[0],
                               release_key(version)[1] + 1))
        return problems
    if last and release_key(version) <= release_key(last):
        return ["galaxy.yml says %s, a pre-release of a version not above the last release %s" % (version, last)]
    return []
