"""meta/runtime.yml: every old module name redirects to a module that exists, the endpoint action group lists the
modules that share the connection options, and both work in a real playbook (module_defaults set once for the
group reach a module, the old name runs the new module with a deprecation)."""
from __future__ import annotations

import http.server
import importlib
import json
import os
import subprocess
import sys
import threading

import yaml
from testlib import COLLECTIONS_ROOT, REPO

RUNTIME = yaml.safe_load(open(os.path.join(REPO, "meta", "runtime.yml")))
PLUGINS = "ansible_collections.glm53.serving.plugins."
MODULES = {f[:-3] for f in os.listdir(os.path.join(REPO, "plugins", "modules")) if f.endswith(".py")}


def options(module):
    """A module's option names, its doc fragments' included (read from the modules' own DOCUMENTATION)."""
    doc = yaml.safe_load(importlib.import_module(PLUGINS + "modules." + module).DOCUMENTATION)
    names = set(doc.get("options", {}))
    for fragment in doc.get("extends_documentation_fragment", []):
        frag = importlib.import_module(PLUGINS + "doc_fragments." + fragment.split(".")[-1]).ModuleDocFragment
        names |= set(yaml.safe_load(frag.DOCUMENTATION).get("options", {}))
    return names


def test_every_redirect_names_a_shipped_module_and_the_old_one_is_gone():
    routes = RUNTIME["plugin_routing"]["modules"]
    assert {"fs_space", "installed_build", "port_owner", "vllm_metrics", "gpu_facts"} <= set(routes)
    for old, route in routes.items():
        ns, coll, new = route["redirect"].split(".")
        assert (ns, coll) == ("glm53", "serving") and new in MODULES, old
        assert old not in MODULES, "%s is both a module and a redirect" % old
        assert route["deprecation"]["removal_version"] and new in route["deprecation"]["warning_text"]


def test_read_only_reporters_are_info_modules():
    """A module that only reads and reports is named *_info; the ones left without it judge (fail on a verdict)
    or change something (shm_clean)."""
    for name in ("gpu_info", "fs_space_info", "port_owner_info", "installed_build_info", "vllm_metrics_info"):
        assert name in MODULES


def test_the_endpoint_group_shares_the_connection_options():
    group = RUNTIME["action_groups"]["endpoint"]
    assert set(group) == {"vllm_health", "vllm_chat_probe", "vllm_needle", "vllm_reference_score", "vllm_metrics_info"}
    for module in group:
        assert {"base_url", "api_key", "validate_certs", "ca_path"} <= options(module), module
    # one option name for the served model in every module that takes one
    takes_model = [m for m in group if {"served_model_name", "model"} & options(m)]
    assert takes_model and all("served_model_name" in options(m) for m in takes_model)


class _Metrics(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        body = b'vllm:num_requests_running{engine="0"} 7\nvllm:num_requests_waiting{engine="0"} 2\n'
        self.send_response(200 if self.path == "/metrics" else 404)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


def test_module_defaults_for_the_group_and_the_old_name_in_a_playbook(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        play = [{"hosts": "localhost", "connection": "local", "gather_facts": False,
                 "module_defaults": {"group/glm53.serving.endpoint": {
                     "base_url": "http://127.0.0.1:%d" % server.server_address[1]}},
                 "tasks": [{"name": "new name", "glm53.serving.vllm_metrics_info": {}, "register": "new"},
                           {"name": "old name", "glm53.serving.vllm_metrics": {}, "register": "old"},
                           {"name": "keep", "ansible.builtin.copy": {
                               "content": "{{ {'new': new.metrics, 'old': old.metrics} | to_json }}",
                               "dest": str(tmp_path / "out.json"), "mode": "0644"}}]}]
        (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
        env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_LOCALHOST_WARNING": "false"}
        proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-e", "ansible_python_interpreter=%s" % sys.executable,
                               str(tmp_path / "play.yml")], capture_output=True, text=True, env=env, timeout=120, check=False)
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    shown = json.loads((tmp_path / "out.json").read_text())
    want = {"vllm:num_requests_running": 7.0, "vllm:num_requests_waiting": 2.0}
    assert shown == {"new": want, "old": want}
    assert "glm53.serving.vllm_metrics has been deprecated" in proc.stdout + proc.stderr
