"""The probe report as a reader meets it, in headless Chromium with 1, 3 and 50 hosts (synthetic evidence of the
shape the probes role writes): the fleet line first, failing hosts first, the run's metadata, latencies on the
page (not only in tooltips), a dead engine labelled as such, and text colours at WCAG AA contrast."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from testlib import COLLECTIONS_ROOT, REPO
from test_probes_role import CHROMIUM, CHROMIUM_FLAGS

PLAYBOOK = os.path.join(os.path.dirname(__file__), "report", "playbook.yml")
TEMPLATE = os.path.join(REPO, "roles", "probes", "templates", "report.html.j2")


def evidence(host, kind):
    """kind: pass, chat (the chat probe failed on a repetition), dead (the engine never answered)."""
    if kind == "dead":
        return {"host": host, "served_model_name": "glm53-flash-awq", "engine_version": None, "engine_commit": None,
                "load_time_s": 1800.2, "passed": False, "chat": None, "needle": None,
                "health": {"ready": False, "layers": {"health": "no answer"}, "max_model_len": None,
                           "msg": "connection refused: http://127.0.0.1:8000/health"},
                "failures": ["health: connection refused: http://127.0.0.1:8000/health"]}
    chat_ok = kind != "chat"
    probes = [{"name": "greeting", "passed": True, "findings": [], "latency_s": 2.13, "content_excerpt": "Hello!"},
              {"name": "chinese", "passed": True, "findings": [], "latency_s": 3.4, "content_excerpt": "我是助手"},
              {"name": "math", "passed": chat_ok, "latency_s": 5.06, "content_excerpt": "the the the",
               "findings": [] if chat_ok else [{"signal": "repeated_ngram", "excerpt": "the the the"}]}]
    depths = [{"depth": d, "verdict": "retrieved", "latency_s": 290.0 + d} for d in (10, 30, 50, 70, 90)]
    return {"host": host, "served_model_name": "glm53-flash-awq", "engine_version": "0.28.1.dev7+gf2935ce32",
            "engine_commit": "f2935ce32", "load_time_s": 412.5, "passed": chat_ok,
            "health": {"ready": True, "layers": {"health": "ok", "models": "ok", "chat": "ok"}, "max_model_len": 524288,
                       "msg": ""},
            "chat": {"passed": chat_ok, "probes": probes, "msg": ""},
            "needle": {"passed": True, "key": "calm-heron", "value": "4729103", "seed": 7,
                       "results": [{"target": 450000, "tokens": 449871, "depths": depths}] + ([] if chat_ok else [
                           {"target": 600000, "tokens": None, "verdict": "cannot_test", "depths": [],
                            "detail": "cannot test 600000 tokens: max_model_len 524288 allows at most 520192"}])},
            "failures": [] if chat_ok else ["chat math: repeated_ngram"]}


def fleet(n):
    kinds = {1: ["pass"], 3: ["pass", "dead", "chat"]}.get(n) or [
        "dead" if i % 17 == 5 else "chat" if i % 7 == 3 else "pass" for i in range(n)]
    return {"gpu-%02d" % i: kind for i, kind in enumerate(kinds)}


@pytest.fixture(scope="module", params=[1, 3, 50], ids=lambda n: "%d-hosts" % n)
def rendered(request, tmp_path_factory):
    n = request.param
    tmp = tmp_path_factory.mktemp("report-%d" % n)
    hosts = fleet(n)
    (tmp / "evidence").mkdir()
    for host, kind in hosts.items():
        (tmp / "evidence" / ("%s.json" % host)).write_text(json.dumps(evidence(host, kind)))
    (tmp / "hosts.yml").write_text(json.dumps({"all": {"hosts": {h: {} for h in hosts}}}))
    extra = {"ansible_python_interpreter": sys.executable, "report_evidence_dir": str(tmp / "evidence"),
             "probes_report_dir": str(tmp / "report")}
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp / "hosts.yml"), "-f", "10", PLAYBOOK,
                           "-e", json.dumps(extra)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    if CHROMIUM is None:
        pytest.fail("chromium is not installed (make test installs Debian's chromium package)")
    html = tmp / "report" / "report.html"
    profile = tmp / "chromium-profile"
    dom = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, "--user-data-dir=%s" % profile, "--dump-dom", html.as_uri()],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    shot = tmp / "report" / ("report-%d-hosts.png" % n)
    subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, "--user-data-dir=%s" % profile, "--window-size=1400,1000",
                    "--screenshot=%s" % shot, html.as_uri()], capture_output=True, timeout=120, check=True)
    print("report screenshot (%d hosts): %s (%d bytes)" % (n, shot, shot.stat().st_size))
    return hosts, dom, shot, (tmp / "report" / "summary.md").read_text()


def text(html):
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_fleet_line_comes_first(rendered):
    hosts, dom, shot, md = rendered
    passing = [h for h, k in hosts.items() if k == "pass"]
    failing = [h for h, k in hosts.items() if k != "pass"]
    want = "%d of %d host%s pass%s" % (len(passing), len(hosts), "" if len(hosts) == 1 else "s",
                                       "es" if len(hosts) == 1 else "")
    fleet = re.search(r'<p id="fleet"[^>]*>(.*?)</p>', dom, re.S).group(1)
    assert fleet.startswith(want), fleet
    assert ("failing: " + ", ".join(failing)) in fleet if failing else "failing" not in fleet
    assert dom.index('id="fleet"') < dom.index('id="hosts"')
    assert [line for line in md.splitlines() if line.startswith("**")][0].startswith("**%s**" % want), md
    assert shot.stat().st_size > 10000


def test_failing_hosts_first(rendered):
    hosts, dom, _, md = rendered
    rows = re.findall(r'class="host-row" data-host="([^"]+)" data-passed="(true|false)"', dom)
    assert sorted(h for h, _ in rows) == sorted(hosts)
    flags = [p == "true" for _, p in rows]
    assert flags == sorted(flags), "a passing host is listed before a failing one"
    assert [h for h, p in rows if p == "false"] == [h for h, k in hosts.items() if k != "pass"]
    md_hosts = re.findall(r"^\| (gpu-\d+) \|", md, re.M)
    assert md_hosts == [h for h, _ in rows]


def test_run_metadata(rendered):
    hosts, dom, _, _ = rendered
    run = text(re.search(r'<table id="run">(.*?)</table>', dom, re.S).group(1))
    version = re.search(r"^version: (\S+)", open(os.path.join(REPO, "galaxy.yml")).read(), re.M).group(1)
    assert "collection glm53.serving %s" % version in run
    assert "served model name glm53-flash-awq" in run
    assert "verified max_model_len 524288" in run
    assert "engine versions 0.28.1.dev7+gf2935ce32" in run
    assert "needle tokens sent 449871" in run


def test_latencies_are_on_the_page(rendered):
    hosts, dom, _, _ = rendered
    body = text(dom)
    assert "greeting 2.13 s" in body
    assert "(slowest 380.0 s)" in body
    cells = re.findall(r'<td class="cell retrieved"[^>]*>✓<small>([0-9.]+) s</small></td>', dom)
    assert len(cells) == 5 * sum(1 for k in hosts.values() if k != "dead")


def test_a_dead_engine_is_labelled(rendered):
    hosts, dom, _, md = rendered
    dead = [h for h, k in hosts.items() if k == "dead"]
    for host in dead:
        row = text(re.search(r'data-host="%s" data-passed="false">(.*?)</tr>' % host, dom, re.S).group(1))
        assert "no answer" in row and "not ready; gave up after 1800.2 s" in row and "None" not in row
        assert re.search(r"^\| %s \| FAIL \| no answer \| not ready, gave up after 1800.2 \|" % host, md, re.M)
    assert ">None<" not in dom and "| None |" not in md


def luminance(hexcolour):
    rgb = [int(hexcolour[i:i + 2], 16) / 255 for i in (1, 3, 5)] if len(hexcolour) == 7 else \
        [int(c * 2, 16) / 255 for c in hexcolour[1:]]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a, b):
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_colour_pairs_meet_wcag_aa():
    """Every rule that sets a background sets its text colour, at 4.5:1 or more; text on the page's white too."""
    css = re.search(r"<style>(.*?)</style>", open(TEMPLATE).read(), re.S).group(1)
    rules = re.findall(r"([^{}]+)\{([^}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.S))
    checked = []
    for selector, body in rules:
        props = dict(re.findall(r"([a-z-]+)\s*:\s*([^;]+);", body))
        bg, fg = props.get("background"), props.get("color")
        if bg and bg.startswith("#") and selector.strip() not in ("th", ".fleet.pass", ".fleet.fail"):
            assert fg, "%s sets a background but no text colour" % selector.strip()
        pair = (fg or "#222", bg if bg and bg.startswith("#") else "#fff")
        ratio = contrast(*pair)
        checked.append((selector.strip(), ratio))
        assert ratio >= 4.5, "%s: %s on %s is %.2f:1" % (selector.strip(), pair[0], pair[1], ratio)
    for bg in ("#f2f2f2", "#e8f5e9", "#ffebee"):  # th, the fleet line's backgrounds, with the body text
        assert contrast("#222", bg) >= 4.5 and contrast("#b71c1c", bg) >= 4.5
    print("contrast: " + ", ".join("%s %.1f" % c for c in checked))
    assert len([s for s, _ in checked if s in (".retrieved", ".partial", ".ambiguous", ".cannot_test")]) == 4
