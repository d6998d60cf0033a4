"""The HAProxy drain/re-admit hook (playbooks/examples/lb_haproxy.yml, community.general.haproxy) against a real
HAProxy from Debian's packages: a request in flight on the host when the drain starts finishes, the drain returns only
after it has, new requests go to the other server meanwhile, the host is then in maintenance; the admit returns once
HAProxy's health check sees the host up, and it takes requests again."""
from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from testlib import COLLECTIONS_ROOT, REPO

HOOK = os.path.join(REPO, "playbooks", "examples", "lb_haproxy.yml")
SLOW_S = 6.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def backend(name, port):
    """An upstream that answers with its name; /slow takes SLOW_S seconds."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/slow":
                time.sleep(SLOW_S)
            body = name.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def stat(sock, server):
    """HAProxy's status of a server of backend glm53 (show stat)."""
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(sock)
        s.sendall(b"show stat\n")
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    head, *rows = out.decode().splitlines()
    cols = head.lstrip("# ").split(",")
    for row in rows:
        cells = dict(zip(cols, row.split(",")))
        if cells.get("pxname") == "glm53" and cells.get("svname") == server:
            return cells
    raise AssertionError("no server %s in %s" % (server, out[:500]))


def run_hook(tmp_path, sock, phase):
    inv = tmp_path / "hosts"
    inv.write_text("[glm53_serving]\ngpu-a ansible_connection=local\n")
    play = tmp_path / "play.yml"
    play.write_text(json.dumps([{"hosts": "glm53_serving", "gather_facts": False,
                                 "tasks": [{"ansible.builtin.include_tasks": HOOK}]}]))
    extra = {"ansible_python_interpreter": sys.executable, "rollout_phase": phase, "lb_haproxy_socket": sock,
             "lb_haproxy_drain_wait_s": 30, "lb_haproxy_up_wait_s": 30}
    # community.general from the tool venv's collections (hack/lib.sh unpacks it), after this checkout
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_COLLECTIONS_PATH": os.pathsep.join([COLLECTIONS_ROOT, os.environ.get("ANSIBLE_COLLECTIONS_PATH", "")])}
    t0 = time.monotonic()
    proc = subprocess.run(["ansible-playbook", "-i", str(inv), str(play), "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return time.monotonic() - t0, proc.stdout


@pytest.fixture
def haproxy(tmp_path):
    exe = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not os.path.exists(exe):
        pytest.fail("haproxy is not installed (hack/lib.sh installs Debian's package): apt-get install haproxy")
    front, port_a, port_b = free_port(), free_port(), free_port()
    servers = [backend("gpu-a", port_a), backend("gpu-b", port_b)]
    sock = str(tmp_path / "admin.sock")
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text("\n".join([
        "global", "    stats socket %s mode 600 level admin" % sock,
        "defaults", "    mode http", "    timeout connect 2s", "    timeout client 60s", "    timeout server 60s",
        "frontend fe", "    bind 127.0.0.1:%d" % front, "    default_backend glm53",
        "backend glm53", "    balance first",
        "    server gpu-a 127.0.0.1:%d check inter 300 maxconn 10" % port_a,
        "    server gpu-b 127.0.0.1:%d check inter 300 maxconn 10" % port_b, ""]))
    proc = subprocess.Popen([exe, "-db", "-f", str(cfg)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while not (os.path.exists(sock) and stat(sock, "gpu-a")["status"] == "UP"):
        assert time.monotonic() < deadline and proc.poll() is None, "haproxy did not come up"
        time.sleep(0.2)
    yield sock, "http://127.0.0.1:%d" % front
    proc.terminate()
    proc.wait(timeout=10)
    for server in servers:
        server.shutdown()


def get(url):
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.read().decode()


def test_the_drain_waits_for_the_request_in_flight_and_the_admit_for_the_health_check(tmp_path, haproxy):
    sock, url = haproxy
    assert get(url + "/") == "gpu-a"  # balance first: gpu-a takes the requests while it is up
    answers = {}
    started = time.monotonic()
    slow = threading.Thread(target=lambda: answers.setdefault("slow", get(url + "/slow")))
    slow.start()
    time.sleep(0.5)
    assert stat(sock, "gpu-a")["scur"] == "1", "the slow request is not on gpu-a"

    drained_in, out = run_hook(tmp_path, sock, "drain")
    finished = time.monotonic() - started
    slow.join(timeout=30)
    assert answers.get("slow") == "gpu-a", "the request in flight did not finish on gpu-a"
    assert finished >= SLOW_S - 0.2, "the drain returned %.1f s after the request began, before it could end" % finished
    state = stat(sock, "gpu-a")
    assert state["status"] == "MAINT" and state["scur"] == "0", state
    assert get(url + "/") == "gpu-b", "a new request went to the drained host"

    admitted_in, out = run_hook(tmp_path, sock, "admit")
    assert stat(sock, "gpu-a")["status"].startswith("UP")  # "UP 1/3": up, its checks still counting
    assert get(url + "/") == "gpu-a"
    print("haproxy %s: drain returned %.1f s after a %.0f s request began (took %.1f s); admit %.1f s" % (
        subprocess.run(["haproxy", "-v"], capture_output=True, text=True).stdout.split()[2], finished, SLOW_S,
        drained_in, admitted_in))
