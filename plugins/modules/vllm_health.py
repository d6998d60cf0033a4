#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: vllm_health
short_description: Wait for a vLLM server to load, then check it in layers
version_added: "0.1.0"
description:
  - Waits through the load. vLLM binds its port at once but listens only when the engine is ready, so
    "connection refused" means "still loading", not failure. Polls every O(interval) seconds up to
    O(timeout) (tens of minutes; about 46 shards load in several minutes).
  - With no O(service_manager), a server that dies while waited on (its O(pid) exits, or C(/health) answers
    503) fails the wait at once, with the last log lines, instead of waiting out the timeout.
  - Under a supervisor (O(service_manager) C(systemd) or C(tmux)) an engine that dies is relaunched, and the
    wait goes on through the relaunches (auto-restart, the pane title "died", a 503 before the exit); it fails
    within a poll of the supervisor giving up (the unit failed or inactive, the pane title "gave up", the
    session gone), with the journal's or the pane's last lines, instead of waiting out the timeout.
  - Tells loading from frozen. A connection that C(/health) accepts and does not answer within
    O(frozen_deadline) seconds, on an engine that was ready (the unit C(active) and C(running), which it is only
    after its ready check; the supervisor's pane titled ready under tmux; with no supervisor, a port
    that listens, since vLLM listens only once ready), is a frozen engine (stopped, or a hung event loop), and the
    wait fails at once with RV(frozen), instead of waiting out O(timeout) as for a load.
  - Under a supervisor, a connection that is not even accepted within O(frozen_deadline) seconds, on an engine that
    was ready and still runs, is frozen too. A stopped engine that other clients keep connecting to fills its listen
    queue, and the kernel then takes no new connection (while it loads, vLLM refuses them instead).
  - Once C(/health) answers 200, checks in layers; the served name is in C(/v1/models) and its
    C(max_model_len) equals O(max_model_len); with O(api_key) set, the key is enforced (C(/v1/models) without a key
    and with a wrong one must answer 401, and an engine that serves without its key fails the C(auth) layer); optionally
    a 1-token chat completion.
author:
  - glm53.serving contributors (@glm53)
options:
  served_model_name:
    description: The name the model is served under.
    type: str
    required: true
  max_model_len:
    description: The context the server must report in C(/v1/models); 0 to skip that check.
    type: int
    default: 0
  chat_check:
    description: Also send a 1-token chat completion.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the load.
    type: int
    default: 1800
  frozen_deadline:
    description:
      - Seconds an accepted C(/health) request may go unanswered before an engine that was ready counts as frozen.
      - Keep it above C(/health)'s worst answer time under full load (a few seconds on a busy engine).
    type: int
    default: 30
  interval:
    description: Seconds between polls while loading.
    type: float
    default: 0.5
  request_timeout:
    description: Seconds for each request once the server listens.
    type: int
    default: 120
  service_manager:
    description: How to see whether the server process is still alive while waiting, and where its log is.
    type: str
    choices: [none, systemd, tmux]
    default: none
  service_name:
    description: The systemd unit or tmux session name (required unless O(service_manager=none)).
    type: str
  pid:
    description: A server process to watch while waiting (for servers run neither by systemd nor tmux).
    type: int
  log_file:
    description: A log file to quote on failure (when neither journal nor tmux pane has it).
    type: path
  log_lines:
    description: How many log lines to quote on failure.
    type: int
    default: 30
extends_documentation_fragment:
  - glm53.serving.openai_endpoint
  - glm53.serving.info_module
"""

EXAMPLES = r"""
- name: Wait for the engine and check it
  glm53.serving.vllm_health:
    base_url: http://127.0.0.1:8000
    served_model_name: glm53-flash-awq
    max_model_len: 524288
    service_manager: systemd
    service_name: vllm-glm53
  register: health
"""

RETURN = r"""
ready:
  description: Whether every layer passed.
  returned: always
  type: bool
  sample: true
load_time_s:
  description: Seconds from the start of the wait until C(/health) answered 200.
  returned: always
  type: float
  sample: 312.4
version:
  description: The server's C(/version).
  returned: success
  type: str
  sample: 0.28.1rc1.dev5+gf2935ce32
max_model_len:
  description: The context C(/v1/models) reports for the served name.
  returned: success
  type: int
  sample: 524288
models:
  description: The served model ids.
  returned: success
  type: list
  elements: str
  sample: [glm53-flash-awq]
layers:
  description: Each layer's verdict.
  returned: always
  type: dict
  sample: {health: passed, models: passed, auth: passed, chat: passed}
frozen:
  description: Whether the wait failed on a frozen engine (an accepted C(/health) request unanswered past
    O(frozen_deadline), or under a supervisor a connection not accepted in that time, on an engine that was ready).
  returned: always
  type: bool
  sample: false
log_tail:
  description: The last log lines, when the wait failed.
  returned: failure
  type: list
  elements: str
  sample: ["ERROR ... EngineCore encountered a fatal error."]
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._openai_client import (
    OpenAIClient,
    ProbeConnectTimeout,
    ProbeConnectionRefused,
    ProbeHTTPError,
    ProbeNoAnswer,
    ProbeTimeout,
    ProbeTLSError,
    client_from_params,
    endpoint_argument_spec,
    error_message,
)


def process_state(module):
    """Return None while the server may still come up, or a reason it will not."""
    manager, name = module.params["service_manager"], module.params["service_name"]
    pid = module.params["pid"]
    if pid:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return "process %d exited" % pid
        except OSError:
            return "process %d is gone" % pid
    if manager == "systemd":
        rc, out, _err = module.run_command(["systemctl", "show", name, "-p", "ActiveState", "-p", "SubState",
                                            "-p", "Result", "-p", "NRestarts"])
        props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        active, sub = props.get("ActiveState"), props.get("SubState")
        if active == "failed":
            return "systemd gave up on unit %s (result %s, after %s automatic restarts)" % (
                name, props.get("Result"), props.get("NRestarts"))
        if active == "inactive":
            return "unit %s is %s" % (name, active)
    elif manager == "tmux":
        rc, out, _err = module.run_command(["tmux", "list-panes", "-s", "-t", "=" + name, "-F",
                                            "#{pane_dead} #{pane_title}"])
        if rc != 0:
            return "tmux session %s is gone" % name
        panes = [line.split(" ", 1) + [""] for line in out.splitlines() if line.strip()]
        if panes and all(p[0] == "1" for p in panes):
            return "every pane of tmux session %s is dead" % name
        # the service role's supervisor titles its pane "glm53: died rc=N" while it waits to relaunch, and
        # "glm53: gave up ..." or "glm53: stopped" when it will not relaunch any more
        done = [p[1] for p in panes if p[1].startswith(("glm53: gave up", "glm53: stopped"))]
        if done:
            return "the supervisor in tmux session %s stopped relaunching the engine (%s)" % (name, done[0])
    return None


def was_ready(module):
    """Whether the engine under watch was ready (so an accepted request that is not answered is a frozen engine,
    not a load): the unit active and running (systemd: the ready check of ExecStartPost has passed), a pane titled
    ready by the supervisor (tmux), or with no supervisor the listening port itself (vLLM listens only once ready)."""
    manager, name = module.params["service_manager"], module.params["service_name"]
    if manager == "systemd":
        _rc, out, _err = module.run_command(["systemctl", "show", name, "-p", "ActiveState", "-p", "SubState"])
        props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        return props.get("ActiveState") == "active" and props.get("SubState") == "running"
    if manager == "tmux":
        rc, out, _err = module.run_command(["tmux", "list-panes", "-s", "-t", "=" + name, "-F", "#{pane_title}"])
        return rc == 0 and any(line.startswith("glm53: ready") for line in out.splitlines())
    return True


def log_tail(module):
    n = module.params["log_lines"]
    manager, name = module.params["service_manager"], module.params["service_name"]
    lines = []
    if manager == "systemd":
        rc, out, _err = module.run_command(["journalctl", "-u", name, "-n", str(n), "--no-pager", "-o", "cat"])
        lines = out.splitlines() if rc == 0 else []
    elif manager == "tmux":
        rc, out, _err = module.run_command(["tmux", "capture-pane", "-p", "-J", "-t", "=%s:" % name, "-S", "-%d" % n])
        lines = [line for line in out.splitlines() if line.strip()][-n:] if rc == 0 else []
    if not lines and module.params["log_file"]:
        try:
            with open(module.params["log_file"], "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()[-n:]
        except OSError:
            pass
    return lines


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **endpoint_argument_spec(),
            served_model_name=dict(type="str", required=True),
            max_model_len=dict(type="int", default=0),
            chat_check=dict(type="bool", default=True),
            timeout=dict(type="int", default=1800),
            interval=dict(type="float", default=0.5),
            frozen_deadline=dict(type="int", default=30),
            request_timeout=dict(type="int", default=120),
            service_manager=dict(type="str", choices=["none", "systemd", "tmux"], default="none"),
            service_name=dict(type="str"),
            pid=dict(type="int"),
            log_file=dict(type="path"),
            log_lines=dict(type="int", default=30),
        ),
        required_if=[("service_manager", "systemd", ["service_name"]),
                     ("service_manager", "tmux", ["service_name"])],
        supports_check_mode=True,
    )
    p = module.params
    for name in ("timeout", "frozen_deadline", "request_timeout"):
        if p[name] < 1:
            module.fail_json(msg="%s=%s: give a number of seconds of at least 1" % (name, p[name]))
    client = client_from_params(p, p["request_timeout"])
    layers = {"health": "waiting", "models": "not run", "auth": "not run" if p["api_key"] else "skipped",
              "chat": "not run" if p["chat_check"] else "skipped"}
    t0 = time.monotonic()
    deadline = t0 + p["timeout"]

    def fail(msg, **extra):
        extra.setdefault("frozen", False)
        module.fail_json(msg=msg, ready=False, layers=layers, load_time_s=round(time.monotonic() - t0, 2),
                         log_tail=log_tail(module), **extra)

    # 1. wait for /health
    while True:
        why = None
        try:
            status, _body, _elapsed = client.get("/health", timeout=p["frozen_deadline"])
            if status == 200:
                break
            why = "HTTP %s" % status
        except ProbeConnectionRefused:
            why = "connection refused (still loading)"
        except ProbeHTTPError as exc:
            if exc.status == 503 and p["service_manager"] != "none":
                why = "HTTP 503: the engine is dead; its supervisor relaunches it"
            elif exc.status == 503:
                layers["health"] = "failed"
                fail("/health answered 503: the engine is dead (EngineDeadError); vLLM exits shortly after. "
                     "See log_tail.")
            why = "HTTP %s" % exc.status
        except ProbeTLSError as exc:
            layers["health"] = "failed"
            fail(str(exc))
        except ProbeNoAnswer:
            why = "an accepted /health request unanswered for %d s" % p["frozen_deadline"]
            if not process_state(module) and was_ready(module):
                layers["health"] = "failed"
                fail("The engine is frozen: it was ready, and /health accepted the connection but gave no answer in "
                     "%d s (frozen_deadline): a stopped process or a hung event loop. A relaunch is needed; "
                     "waiting for a load would not end it." % p["frozen_deadline"], frozen=True)
        except ProbeConnectTimeout:
            why = "the connection not accepted within %d s" % p["frozen_deadline"]
            if p["service_manager"] != "none" and not process_state(module) and was_ready(module):
                layers["health"] = "failed"
                fail("The engine is frozen: it was ready, and /health's connection was not even accepted in %d s "
                     "(frozen_deadline): its listen queue is full of other clients' connections that a stopped process "
                     "or a hung event loop never takes. A relaunch is needed; waiting for a load would not end it."
                     % p["frozen_deadline"], frozen=True)
        except ProbeTimeout:
            why = "no answer"
        dead = process_state(module)
        if dead:
            layers["health"] = "failed"
            fail("The server died while loading: %s. Last log lines are in log_tail." % dead)
        if time.monotonic() >= deadline:
            layers["health"] = "failed"
            fail("No healthy server at %s after %d s (last: %s). Loading ~46 shards takes minutes; raise timeout "
                 "if the log shows steady progress." % (p["base_url"], p["timeout"], why))
        time.sleep(p["interval"])
    load_time = round(time.monotonic() - t0, 2)
    layers["health"] = "passed"

    # 2. /v1/models
    try:
        _status, version, _e = client.get("/version")
        _status, models, _e = client.get("/v1/models")
    except (ProbeHTTPError, ProbeTimeout, ProbeConnectionRefused) as exc:
        layers["models"] = "failed"
        fail("/v1/models failed after /health passed: %s" % exc)
    ids = [m.get("id") for m in (models or {}).get("data", [])]
    card = next((m for m in models.get("data", []) if m.get("id") == p["served_model_name"]), None)
    if card is None:
        layers["models"] = "failed"
        fail("The server serves %s, not %s (check --served-model-name)." % (ids, p["served_model_name"]), models=ids)
    served_len = card.get("max_model_len")
    if p["max_model_len"] and served_len != p["max_model_len"]:
        layers["models"] = "failed"
        fail("%s reports max_model_len %s, configured %s: the server is not running the intended config "
             "(stale unit or script?)." % (p["served_model_name"], served_len, p["max_model_len"]), models=ids)
    layers["models"] = "passed"

    # 3. the key is enforced: without it, and with a wrong one, /v1 answers 401
    if p["api_key"]:
        for label, key in (("no key", None), ("a wrong key", p["api_key"] + "-wrong")):
            bare = OpenAIClient(p["base_url"], key, timeout=p["request_timeout"], validate_certs=p["validate_certs"],
                                ca_path=p["ca_path"])
            try:
                bare.get("/v1/models")
            except ProbeHTTPError as exc:
                if exc.status in (401, 403):  # vLLM answers 401; a proxy in front of it may say 403
                    continue
                layers["auth"] = "failed"
                fail("key_not_enforced: /v1/models with %s answered HTTP %s, not 401." % (label, exc.status))
            except (ProbeTimeout, ProbeConnectionRefused) as exc:
                layers["auth"] = "failed"
                fail("/v1/models with %s failed: %s" % (label, exc))
            else:
                layers["auth"] = "failed"
                fail("key_not_enforced: /v1/models answered with %s: the engine serves without its API key (is "
                     "VLLM_API_KEY in its environment, or --api-key on its command line?)." % label)
        layers["auth"] = "passed"

    # 4. a 1-token chat completion
    if p["chat_check"]:
        try:
            _status, resp, _e = client.chat(p["served_model_name"], [{"role": "user", "content": "Hi"}], 1)
            got = (resp.get("usage") or {}).get("completion_tokens")
            if got != 1:
                layers["chat"] = "failed"
                fail("A 1-token chat completion returned %r completion tokens." % got)
        except ProbeHTTPError as exc:
            layers["chat"] = "failed"
            fail("A 1-token chat completion failed: HTTP %s %s" % (exc.status, error_message(exc.body)))
        except (ProbeTimeout, ProbeConnectionRefused) as exc:
            layers["chat"] = "failed"
            fail("A 1-token chat completion failed: %s" % exc)
        layers["chat"] = "passed"

    module.exit_json(changed=False, ready=True, frozen=False, load_time_s=load_time, layers=layers,
                     version=(version or {}).get("version") if isinstance(version, dict) else None,
                     max_model_len=served_len, models=ids)


if __name__ == "__main__":
    main()
