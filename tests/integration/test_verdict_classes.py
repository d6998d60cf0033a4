"""Each verdict class end to end: playbooks/verify.yml against one stand-in per behaviour, in one run.

Every host gets its own stand-in engine with a scripted answer style (VLLM_STANDIN_BEHAVIOUR); the play
must pass or fail each host with the expected signal, and the evidence, summary and report must show the
tokens actually sent.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from testlib import COLLECTIONS_ROOT, REFERENCE_FLAGS, REPO, StandIn


VERIFY = os.path.join(REPO, "playbooks", "verify.yml")
SHORT = 40960

# host: (behaviour, expected pass, part that fails, signal or verdict the failure names)
CLASSES = {
    "good": ("good", True, None, None),
    "all-values": ("needle_all_values", False, "needle", "ambiguous"),
    "hedge": ("needle_hedge", False, "needle", "ambiguous"),
    "reasoning-only": ("needle_reasoning_only", False, "needle", "missed"),
    "distractor": ("needle_distractor", False, "needle", "distractor"),
    "control-answers": ("needle_control_answers", False, "control", "a key that is not in the text"),
    "lists-found": ("needle_lists_found", True, None, None),
    "math-restates": ("math_restates", True, None, None),
    "math-separators": ("math_separators", True, None, None),
    "math-conflict": ("math_conflict", False, "chat", "conflicting_answer"),
    "simplified": ("simplified", False, "chat", "simplified_chinese"),
    "salad": ("salad", False, "chat", "token_salad"),
    # an engine serving a shorter context is needled at its own scale (a target that could not fit with its answer
    # is refused before any probe: tests/integration/test_bad_settings.py, needle-and-answer-past-context)
    "short-context": ("good", True, None, None),
    # the second round: relevance, notation, attribution, layout
    "refusal": ("refusal", False, "chat", "refusal"),
    "echo": ("echo", False, "chat", "prompt_echo"),
    "enumeration-loop": ("enumeration_loop", False, "chat", "enumeration_loop"),
    "emoji-flood": ("emoji_flood", False, "chat", "symbol_flood"),
    "mixed-script": ("mixed_script", False, "chat", "simplified_chinese"),
    "needle-dots": ("needle_dots", True, None, None),
    "needle-keyed-others": ("needle_keyed_others", True, None, None),
    "math-long": ("math_long", True, None, None),
    "control-substitute": ("control_substitute", False, "control", "a key that is not in the text"),
    "layout-table": ("layout_table", True, None, None),
    "reasoning-proxy": ("reasoning_proxy", True, None, None),
    "needle-disown": ("needle_disown", True, None, None),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory, request):
    tmp = tmp_path_factory.mktemp("classes")
    hosts = {}
    for name, (behaviour, _ok, _part, _signal) in CLASSES.items():
        (tmp / name).mkdir()
        flags = list(REFERENCE_FLAGS)
        host = {"probes_evidence_dir": str(tmp / name / "evidence")}
        if name == "short-context":  # holds a 12000-token needle with its answer budget
            flags[flags.index("--max-model-len") + 1] = str(SHORT)
            host.update(serve_max_model_len=SHORT, probes_needle_targets=[12000])
        s = StandIn(tmp / name, env={"VLLM_STANDIN_BEHAVIOUR": behaviour}, flags=flags).start().wait_ready()
        request.addfinalizer(s.stop)
        host["serve_url"] = s.url
        hosts[name] = host
    inventory = tmp / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"children": {"glm53_serving": {
        "hosts": hosts, "vars": {"ansible_connection": "local", "probes_needle_targets": [12000]}}}}}))
    extra = {"ansible_python_interpreter": sys.executable, "service_mode": "none",
             "probes_needle_depths": [10, 90],
             "probes_report_dir": str(tmp / "report"), "probes_textfile_dir": "",  # no machine-wide metrics file
             "__glm53_ledger_file": str(tmp / "ledger.json")}  # the host's ledger, here this machine's: kept in tmp
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_FORKS": "8"}
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), VERIFY, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    return proc, tmp


@pytest.mark.parametrize("host", sorted(CLASSES))
def test_class_verdict(run, host):
    proc, tmp = run
    _behaviour, ok, part, signal = CLASSES[host]
    assert (tmp / "report" / ("%s.json" % host)).is_file(), proc.stdout[-4000:]
    ev = json.loads((tmp / "report" / ("%s.json" % host)).read_text())
    assert ev["passed"] is ok, (host, ev["failures"])
    failed_line = "Probes failed on %s:" % host
    assert (failed_line in proc.stdout) is not ok, proc.stdout[-3000:]
    if ok:
        assert ev["failures"] == []
        return
    text = " | ".join(ev["failures"])
    assert signal in text, (host, text)
    if part == "chat":
        assert any(signal == f["signal"] for p in ev["chat"]["probes"] for f in p["findings"])
    elif part == "needle":
        assert all(d["verdict"] == signal for d in ev["needle"]["results"][0]["depths"]), ev["needle"]
    elif part == "control":
        assert ev["needle"]["results"][0]["control"]["verdict"] == "failed"
        assert all(d["verdict"] == "retrieved" for d in ev["needle"]["results"][0]["depths"])


def test_every_row_shows_the_tokens_sent(run):
    _proc, tmp = run
    md = (tmp / "report" / "summary.md").read_text()
    html = (tmp / "report" / "report.html").read_text()
    ev = json.loads((tmp / "report" / "good.json").read_text())
    (res,) = ev["needle"]["results"]
    assert all(d["prompt_tokens"] == res["tokens"] for d in res["depths"])
    assert "12000 (%d sent): 2/2" % res["tokens"] in md and "12000-token target, %d sent" % res["tokens"] in html
    short = json.loads((tmp / "report" / "short-context.json").read_text())
    assert short["passed"] and short["health"]["max_model_len"] == SHORT, short["failures"]
    assert re.search(r"\| salad \| FAIL \|", md)
