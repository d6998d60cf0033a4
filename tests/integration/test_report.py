"""The probe report as a reader meets it, in headless Chromium with 1, 3, 100 and 500 hosts (synthetic evidence of
the shape the probes role writes): the fleet line and the failures grouped by cause in the first screen, failing
hosts first with their reason, the run's metadata, latencies on the page (not only in tooltips), a dead engine
labelled as such, text colours at WCAG AA contrast, at most three screens at 100 and 500 hosts (over 20 failing hosts,
grouped under their cause; over 100, the heatmap summed per group); summary.json and the run
folders; a run limited with -l merged into the fleet's last state, and the report remade by playbooks/report.yml."""
from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time

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


SCREEN = (1400, 1000)  # the window of the screenshots: one screen
# After the page has laid out: its height, and where the fleet line and the causes table end.
MEASURE = ("<script>var b = document.body, c = document.getElementById('causes');"
           "b.setAttribute('data-height', document.documentElement.scrollHeight);"
           "b.setAttribute('data-fleet-bottom', document.getElementById('fleet').getBoundingClientRect().bottom);"
           "b.setAttribute('data-causes-bottom', c ? c.getBoundingClientRect().bottom : 0);</script></body>")


def playbook(inventory, extra, *args, play=PLAYBOOK):
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), "-f", "10", play, "-e", json.dumps(extra), *args],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc


@pytest.fixture(scope="module", params=[1, 3, 100, 500], ids=lambda n: "%d-hosts" % n)
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
    t0 = time.monotonic()
    playbook(tmp / "hosts.yml", extra)
    print("report of %d hosts made in %.1f s" % (n, time.monotonic() - t0))
    if CHROMIUM is None:
        pytest.fail("chromium is not installed (make test installs Debian's chromium package)")
    html = tmp / "report" / "report.html"
    profile = tmp / "chromium-profile"
    dom = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, "--user-data-dir=%s" % profile, "--dump-dom", html.as_uri()],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    shot = tmp / "report" / ("report-%d-hosts.png" % n)
    subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, "--user-data-dir=%s" % profile, "--window-size=%d,%d" % SCREEN,
                    "--screenshot=%s" % shot, html.as_uri()], capture_output=True, timeout=120, check=True)
    print("report screenshot (%d hosts): %s (%d bytes)" % (n, shot, shot.stat().st_size))
    measured = tmp / "report" / "latest" / "measured.html"
    measured.write_text(html.read_text().replace("</body>", MEASURE))
    laid = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, "--user-data-dir=%s" % profile, "--window-size=%d,%d" % SCREEN,
                           "--dump-dom", measured.as_uri()], capture_output=True, text=True, timeout=120, check=True).stdout
    layout = dict((k, float(v)) for k, v in re.findall(r'data-(height|fleet-bottom|causes-bottom)="([0-9.]+)"', laid))
    return hosts, dom, shot, (tmp / "report" / "summary.md").read_text(), tmp, layout


def text(html):
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_fleet_line_comes_first(rendered):
    hosts, dom, shot, md = rendered[:4]
    passing = [h for h, k in hosts.items() if k == "pass"]
    failing = [h for h, k in hosts.items() if k != "pass"]
    want = "%d of %d host%s pass%s" % (len(passing), len(hosts), "" if len(hosts) == 1 else "s",
                                       "es" if len(hosts) == 1 else "")
    fleet = re.search(r'<p id="fleet"[^>]*>(.*?)</p>', dom, re.S).group(1)
    assert fleet.startswith(want), fleet
    named = "failing: " + ", ".join(failing[:12]) + (" and %d more" % (len(failing) - 12) if len(failing) > 12 else "")
    assert named in fleet if failing else "failing" not in fleet
    assert dom.index('id="fleet"') < dom.index('id="hosts"')
    assert [line for line in md.splitlines() if line.startswith("**")][0].startswith("**%s**" % want), md
    assert shot.stat().st_size > 10000


def test_failing_hosts_first(rendered):
    hosts, dom, _, md = rendered[:4]
    rows = re.findall(r'class="host-row" data-host="([^"]+)" data-passed="(true|false)"', dom)
    assert sorted(h for h, _ in rows) == sorted(hosts)
    flags = [p == "true" for _, p in rows]
    assert flags == sorted(flags), "a passing host is listed before a failing one"
    failing = [h for h, k in hosts.items() if k != "pass"]
    if len(failing) <= 20:
        assert [h for h, p in rows if p == "false"] == failing
    else:
        # many: under their cause (the commonest first), each one click away, in inventory order within it
        want = [h for _c, _n, names in expected_causes(hosts) for h in names]
        assert [h for h, p in rows if p == "false"] == want
        groups = re.findall(r'<details class="cause-group" data-cause="[^"]*"><summary>([^<]*)</summary>', dom)
        assert [html.unescape(g) for g in groups] == [
            "%s: %d hosts (%s%s)" % (c, n, ", ".join(names[:5]), " and %d more" % (n - 5) if n > 5 else "")
            for c, n, names in expected_causes(hosts)]
    md_hosts = re.findall(r"^\| (gpu-\d+) \|", md, re.M)
    assert md_hosts == failing + [h for h, k in hosts.items() if k == "pass"]


def test_run_metadata(rendered):
    hosts, dom, _, _ = rendered[:4]
    run = text(re.search(r'<table id="run">(.*?)</table>', dom, re.S).group(1))
    version = re.search(r"^version: (\S+)", open(os.path.join(REPO, "galaxy.yml")).read(), re.M).group(1)
    assert "collection glm53.serving %s" % version in run
    assert "served model name glm53-flash-awq" in run
    assert "verified max_model_len 524288" in run
    assert "engine versions 0.28.1.dev7+gf2935ce32" in run
    assert "needle tokens sent 449871" in run


def test_latencies_are_on_the_page(rendered):
    hosts, dom, _, _ = rendered[:4]
    body = text(dom)
    assert "greeting 2.13 s" in body
    assert "(slowest 380.0 s)" in body
    cells = re.findall(r'<td class="cell retrieved"[^>]*>✓<small>([0-9.]+) s</small></td>', dom)
    assert len(cells) == 5 * sum(1 for k in hosts.values() if k != "dead")


def test_a_dead_engine_is_labelled(rendered):
    hosts, dom, _, md = rendered[:4]
    dead = [h for h, k in hosts.items() if k == "dead"]
    for host in dead:
        row = text(re.search(r'data-host="%s" data-passed="false">(.*?)</tr>' % host, dom, re.S).group(1))
        assert "no answer" in row and "not ready; gave up after 1800.2 s" in row and "None" not in row
        assert re.search(r"^\| %s \| FAIL \| no answer \| not ready, gave up after 1800.2 \|" % host, md, re.M)
    assert ">None<" not in dom and "| None |" not in md


def expected_causes(hosts):
    causes = {}
    for host, kind in hosts.items():
        if kind != "pass":
            cause = "chat: repeated_ngram" if kind == "chat" else "engine not ready: connection refused: <url>"
            causes.setdefault(cause, []).append(host)
    return sorted(((c, len(h), h) for c, h in causes.items()), key=lambda c: (-c[1], c[0]))


@pytest.mark.figures
def test_the_first_screen_holds_the_summary_and_every_cause(rendered):
    hosts, dom, _, _, _, layout = rendered
    rows = [tuple(map(html.unescape, r)) for r in
            re.findall(r'<tr class="cause"><td>([^<]+)</td><td>(\d+)</td><td>([^<]*)</td></tr>', dom)]
    want = expected_causes(hosts)
    assert [(c, int(n)) for c, n, _ in rows] == [(c, n) for c, n, _ in want]
    for (_c, n, which), (_, _, names) in zip(rows, want):
        assert which.startswith(", ".join(names[:8])) and (("and %d more" % (int(n) - 8)) in which) == (int(n) > 8)
    print("%d hosts: page %d px high (%.1f screens of %d px); fleet line ends at %d px, causes at %d px" % (
        len(hosts), layout["height"], layout["height"] / SCREEN[1], SCREEN[1], layout["fleet-bottom"],
        layout["causes-bottom"]))
    assert 0 < layout["fleet-bottom"] <= SCREEN[1] and layout["causes-bottom"] <= SCREEN[1]
    assert (layout["causes-bottom"] > 0) == bool(want)
    if len(hosts) >= 100:
        assert layout["height"] <= 3 * SCREEN[1], "the report of %d hosts is more than three screens" % len(hosts)


def test_failing_hosts_say_why_in_the_verdict_column(rendered):
    hosts, dom, _, _, _, _ = rendered
    for host, kind in hosts.items():
        row = re.search(r'data-host="%s" data-passed="(?:true|false)">(.*?)</tr>' % host, dom, re.S).group(1)
        verdict = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[1]
        reason = {"pass": None, "chat": "chat math: repeated_ngram",
                  "dead": "health: connection refused: http://127.0.0.1:8000/health"}[kind]
        assert (reason is None and "reason" not in verdict) or ('<div class="reason">%s</div>' % reason) in verdict


def test_summary_json_and_the_run_folder(rendered):
    hosts, _, _, _, tmp, _ = rendered
    report = tmp / "report"
    summary = json.loads((report / "summary.json").read_text())
    failing = [h for h, k in hosts.items() if k != "pass"]
    assert (summary["total"], summary["failed"]) == (len(hosts), len(failing))
    assert [h["host"] for h in summary["hosts"]][:len(failing)] == failing
    assert [(c["cause"], c["count"], c["hosts"]) for c in summary["causes"]] == expected_causes(hosts)
    run = summary["run"]["id"]
    assert re.match(r"^\d{8}T\d{6}Z$", run) and os.readlink(report / "latest") == "runs/" + run
    assert sorted(os.listdir(report / "runs")) == [run]
    for name in ("report.html", "summary.md", "summary.json"):
        assert os.readlink(report / name) == "latest/" + name and (report / "runs" / run / name).is_file()
    page = (report / "report.html").read_text()
    for host in hosts:  # each host's name links to its evidence, in the run's folder and in the report folder
        assert '<td><a href="%s.json">%s</a></td>' % (host, host) in page
        assert json.loads((report / "runs" / run / ("%s.json" % host)).read_text())["host"] == host
        assert (report / ("%s.json" % host)).is_file()
    assert summary["changes"]["since"] is None and summary["run"]["kept"] == []


def test_a_limited_run_merges_and_report_yml_remakes_it(tmp_path):
    """The kept evidence of three hosts; playbooks/report.yml remakes the report from it alone; a run limited to one
    host that now fails keeps the other two from their files and names the change; runs beyond the limit go."""
    hosts = fleet(3)
    report = tmp_path / "report"
    report.mkdir()
    for host, kind in hosts.items():
        (report / ("%s.json" % host)).write_text(json.dumps(evidence(host, kind)))
    (tmp_path / "hosts.yml").write_text(json.dumps({"all": {"children": {"glm53_serving": {"hosts": {
        h: {} for h in hosts}}}}}))
    extra = {"ansible_python_interpreter": sys.executable, "probes_report_dir": str(report)}
    playbook(tmp_path / "hosts.yml", extra, play=os.path.join(REPO, "playbooks", "report.yml"))
    first = json.loads((report / "summary.json").read_text())
    assert first["total"] == 3 and first["run"]["probed"] == [] and first["run"]["kept"] == sorted(hosts)
    time.sleep(1.1)  # run folders are named to the second
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / "gpu-00.json").write_text(json.dumps(evidence("gpu-00", "dead")))
    playbook(tmp_path / "hosts.yml", dict(extra, report_evidence_dir=str(tmp_path / "evidence")), "-l", "gpu-00")
    second = json.loads((report / "summary.json").read_text())
    assert [h["host"] for h in second["hosts"]] == ["gpu-00", "gpu-01", "gpu-02"]
    assert second["run"]["probed"] == ["gpu-00"] and second["run"]["kept"] == ["gpu-01", "gpu-02"]
    assert second["changes"]["since"] == first["run"]["id"] and second["changes"]["stopped_passing"] == ["gpu-00"]
    assert second["changes"]["started_passing"] == []
    page = (report / "report.html").read_text()
    assert page.count('class="host-row"') == 3 and page.count('<div class="kept">kept from') == 2
    assert "stopped passing: gpu-00" in page
    assert sorted(os.listdir(report / "runs")) == sorted([first["run"]["id"], second["run"]["id"]])
    time.sleep(1.1)
    playbook(tmp_path / "hosts.yml", dict(extra, probes_report_keep_runs=1),
             play=os.path.join(REPO, "playbooks", "report.yml"))
    third = json.loads((report / "summary.json").read_text())
    assert os.listdir(report / "runs") == [third["run"]["id"]]
    assert third["failed"] == 3 and third["run"]["kept"] == ["gpu-00", "gpu-01", "gpu-02"]
    assert third["changes"]["since"] == second["run"]["id"] and not third["changes"]["stopped_passing"]
    assert json.loads((report / "gpu-00.json").read_text())["health"]["ready"] is False  # the limited run kept it


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
