"""Verify the fleet scenario from what the side effect recorded on the controller: the /health poller's rounds
during the rolling restart and the rolling upgrade, the long request on the first host, the versions before
and after the upgrade, and the failed third rollout."""
import json
import os
import re
from datetime import datetime

import pytest

EPH = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
HOSTS = ["glm53-fleet1", "glm53-fleet2", "glm53-fleet3"]


def rounds():
    with open(os.path.join(EPH, "poll.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def upgrade():
    with open(os.path.join(EPH, "upgrade.json")) as f:
        return json.load(f)


def down_window(host, start=0.0, end=float("inf")):
    """(first, last) wall time at which the host was stopped (down_segments) between start and end."""
    down = down_segments(host, start, end)
    assert down, "%s never went down: it was not restarted" % host
    return down[0][0], down[-1][1]


@pytest.fixture(scope="module")
def rollback():
    with open(os.path.join(EPH, "rollback.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def broken():
    with open(os.path.join(EPH, "broken.json")) as f:
        return json.load(f)


def down_segments(host, start=0.0, end=float("inf")):
    """Each stretch of consecutive poller rounds in which the host did not answer /health: (first, last).

    A stop is a stretch in which the engine refused the connection (nothing listened: stopped or loading) and lasted
    more than one round (an engine that stops is out for its whole load, tens of rounds). A stretch of late answers
    only (the server took the connection and missed the poller's 1 s timeout: on the 2-core CI machine, while the
    controller validates or a long probe holds the stand-in's interpreter) is an engine that was up, and a single
    unanswered round is a blip: both are printed and left out."""
    segments, left_out = [], []
    for first, last, whys in _down_rounds(host, start, end):
        (segments if last > first and whys - {"timeout"} else left_out).append((first, last, sorted(whys)))
    if left_out:
        print("%s: %d stretch(es) of late answers or single rounds left out: %s" % (
            host, len(left_out), [("%.1f" % first, "%.1f s" % (last - first), whys) for first, last, whys in left_out]))
    return [(first, last) for first, last, _ in segments]


def _down_rounds(host, start, end):
    """(first, last, the reasons seen) for each stretch of unanswered rounds; rounds written before the poller said
    why count as refused."""
    segments, current = [], None
    for r in rounds():
        if not start <= r["wall"] < end:
            continue
        if not r["up"][host]:
            why = r.get("why", {}).get(host, "refused")
            current = (current[0], r["wall"], current[2] | {why}) if current else (r["wall"], r["wall"], {why})
        elif current:
            segments.append(current)
            current = None
    if current:
        segments.append(current)
    return segments


# profile_tasks' stamp under each TASK header (the nested rollouts run with it): the wall time the task started,
# to the second (truncated, so a stamp is never later than the moment it stands for).
_STAMP_RE = re.compile(r"^\w+ \d{2} \w+ \d{4}  \d{2}:\d{2}:\d{2} [+-]\d{4}", re.M)


def batches(output, play):
    """The output of each serial batch of the named play (one host each here), in order."""
    return [b.split("PLAY RECAP")[0] for b in output.split("PLAY [%s]" % play)[1:]]


def task_start(batch, name):
    """Wall time (s) at which the batch's task whose header contains name started, from its stamp."""
    for block in batch.split("\nTASK [")[1:]:
        if name in block.split("]", 1)[0]:
            stamp = _STAMP_RE.search(block)
            assert stamp, "no profile_tasks stamp under TASK [%s" % block[:200]
            return datetime.strptime(stamp.group(0), "%A %d %B %Y  %H:%M:%S %z").timestamp()
    raise AssertionError("no task %r in the batch:\n%s" % (name, batch[-2000:]))


def test_an_upgrade_is_down_no_longer_than_a_restart(upgrade):
    """The new release is built before the drain, while the engine still serves: each host answered /health until
    its build had ended (the drain task starts after the last build task), and went down once, for a restart.

    Structural, not timed: the windows are printed beside the restarts' as figures (on the 2-core CI machine they
    vary by a third from run to run; 0.1.0's build inside the window made it 1.9x a restart)."""
    restart = {h: [e - s for s, e in down_segments(h, 0.0, upgrade["start"])] for h in HOSTS}
    moved = {h: [e - s for s, e in down_segments(h, upgrade["start"], upgrade["end"])] for h in HOSTS}
    worst_restart = max(sum(w) for w in restart.values())
    print("rolling restart window per host (s): " + ", ".join("%s %.1f" % (h, sum(w)) for h, w in restart.items()))
    print("rolling upgrade window per host (s): " + ", ".join("%s %.1f" % (h, sum(w)) for h, w in moved.items())
          + " (%s the builder); worst upgrade/restart %.2fx" % (
              HOSTS[0], max(sum(w) for w in moved.values()) / worst_restart))
    turns = batches(upgrade["output"], "Rolling upgrade of GLM-5.3 serving hosts")
    assert len(turns) == len(HOSTS), "expected one batch per host, got %d" % len(turns)
    for h, turn in zip(HOSTS, turns):
        assert len(restart[h]) == 1 and len(moved[h]) == 1, (restart, moved)
        assert "[%s]" % h in turn, "batch order: %s is not in its turn" % h
        built = task_start(turn, "Take the host out of the load balancer")
        down = down_segments(h, upgrade["start"], upgrade["end"])[0][0]
        print("%s: build phase ended by %s, down from %s" % (
            h, datetime.fromtimestamp(built).time(), datetime.fromtimestamp(down).time()))
        assert built <= down, "%s went down %.1f s before its build ended: the build ran inside the window" % (
            h, built - down)
    assert "changed: [%s]" % HOSTS[0] in turns[0].split("Take the host out of the load balancer")[0]


def test_rollback_on_demand_swaps_current_and_previous(upgrade, rollback):
    """rollback.yml on the first host, twice (after the refused upgrades): back to the minimum commit's release, then
    forward again."""
    record = rollback
    back, forward = record["output"].split("PLAY RECAP")[1], record["output"].split("PLAY RECAP")[2]
    for recap in (back, forward):
        assert re.search(r"%s\s+: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=0" % HOSTS[0], recap), recap
    back, forward = record["versions"]
    assert "+g" + upgrade["minimum"][:9] in back and "+g" + upgrade["descendant"][:9] in forward, record["versions"]
    segments = down_segments(HOSTS[0], record["start"], record["end"])
    restart = max(e - s for h in HOSTS for s, e in down_segments(h, 0.0, upgrade["start"]))
    print("rollback on demand on %s: down %s s (restart %.1f s)" % (
        HOSTS[0], ", ".join("%.1f" % (e - s) for s, e in segments), restart))
    # a restart's window because nothing is built: the release it goes back to is on the host
    assert len(segments) == 2, (segments, restart)
    assert "TASK [glm53.serving._build" not in record["output"], "a rollback built something"
    for h in HOSTS[1:]:
        assert not down_segments(h, record["start"], record["end"]), "%s went down in a rollback of %s" % (h, HOSTS[0])


def test_a_broken_release_rolls_back_and_stops_the_upgrade(host, upgrade, broken):
    name = host.backend.get_hostname()
    assert broken["rc"] != 0
    assert "+g" + broken["descendant"][:9] in broken["version_after"][name], broken["version_after"]
    if name == HOSTS[0]:
        match = re.search(r"rolled back from (\S+) to (\S+) because (.*?)(?:\. It serves again|\\n|\n)",
                          broken["output"])
        assert match, broken["output"][-3000:]
        assert match.group(1).startswith(broken["broken"][:10]) and match.group(2).startswith(broken["descendant"][:10])
        assert "repeated_ngram" in match.group(3) or "Probes failed" in match.group(3), match.group(3)
        assert broken["pid_after"][name] != broken["pid_before"][name]
        current = host.file("/opt/glm53/releases/current").linked_to
        assert os.path.basename(current) == match.group(2), "current is not the release it rolled back to"
        report = json.load(open(os.path.join(EPH, "broken-report", name + ".json")))
        assert report["passed"] and any("rolled back from" in n for n in report["notes"]), report
        assert "+g" + broken["descendant"][:9] in report["engine_version"]
        segments = down_segments(name, broken["start"])
        assert segments, "the poller recorded no down round of %s in the broken upgrade" % name
        restart = max(e - s for h in HOSTS for s, e in down_segments(h, 0.0, upgrade["start"]))
        print("broken upgrade on %s: down %s s; the rollback's window %.1f s (restart %.1f s)" % (
            name, ", ".join("%.1f" % (e - s) for s, e in segments), segments[-1][1] - segments[-1][0], restart))
        # the way back is a restart's window: the release it returns to is started as it is, nothing built
        rescue = broken["output"].split("Note what failed, and where it would go back to")
        assert len(rescue) == 2, "the rescue ran %d times" % (len(rescue) - 1)
        assert "TASK [glm53.serving._build" not in rescue[1], "the way back built something"
        print("releases on %s after the rollback:\n%s" % (name, broken["releases"]))
        releases = [line.split()[-1] for line in broken["releases"].splitlines()[1:] if line.startswith("d")]
        # current, previous and the refused one: nothing is pruned before a release serves
        assert len(releases) == 3, "current, previous and the refused release: %s" % releases
        sizes = [int(line.split()[0]) for line in broken["releases"].splitlines() if re.match(r"\d+\s+/opt/", line)]
        print("disk per release (MiB, the stand-in's venv and checkouts): %s" % sizes)
        assert len(sizes) == 3
    else:
        assert broken["pid_after"][name] == broken["pid_before"][name], "the upgrade went on past the failed host"
        play = broken["output"].split("PLAY [Rolling upgrade of GLM-5.3 serving hosts]")[1].split("PLAY RECAP")[0]
        assert name not in play


def test_refused_upgrades_keep_current_and_previous_and_rollback_still_works():
    """After the garbage, slower and drifted upgrades were refused on the first host, its current and previous are
    the releases that served before them (nothing pruned), and rollback.yml goes to previous and back."""
    with open(os.path.join(EPH, "refused_rollback.json")) as f:
        r = json.load(f)
    current, previous, count = r["links_after_refused"]
    print("after three refused upgrades: current %s, previous %s, %s releases on the host; rollback.yml to %s, "
          "then forward to %s" % (os.path.basename(current), os.path.basename(previous), count, r["version_back"],
                                  r["forward"][0]))
    assert os.path.basename(current).startswith(r["descendant"][:10]), current
    assert os.path.basename(previous).startswith(r["minimum"][:10]), previous
    assert int(count) == 5  # the minimum's, the descendant's and the three refused releases
    assert r["rc"] == [0, 0]
    assert "+g" + r["minimum"][:9] in r["version_back"], r["version_back"]
    assert "+g" + r["descendant"][:9] in json.loads(r["forward"][0])["version"], r["forward"]
    assert r["forward"][1:] == [current, previous]


def test_at_every_moment_at_least_n_minus_1_hosts_answered():
    rs = rounds()
    assert len(rs) > 100, "the poller recorded only %d rounds" % len(rs)
    worst = min(sum(r["up"].values()) for r in rs)
    print("poller: %d rounds over %.0f s; fewest hosts up at once: %d of %d" % (
        len(rs), rs[-1]["t"], worst, len(HOSTS)))
    assert worst >= len(HOSTS) - 1
    assert all(rs[-1]["up"].values()), "not every host was back at the end"


@pytest.mark.parametrize("phase", ["rolling restart", "rolling upgrade"])
def test_hosts_went_down_one_at_a_time_in_order(upgrade, phase):
    span = (0.0, upgrade["start"]) if phase == "rolling restart" else (upgrade["start"], upgrade["end"])
    windows = [down_window(h, *span) for h in HOSTS]
    for before, after in zip(windows, windows[1:]):
        assert before[1] < after[0], windows
    print("%s, down windows (s): " % phase + ", ".join("%s %.1f" % (h, e - s) for h, (s, e) in zip(HOSTS, windows)))


def test_the_drain_waited_for_the_request_in_flight():
    with open(os.path.join(EPH, "long_request.json")) as f:
        record = json.load(f)
    assert record["status"] == 200 and record["completion_tokens"] == 6000, record
    assert record["ended"] - record["started"] >= 10, "the request was not long: the drain proved nothing"
    first_down = down_window(HOSTS[0])[0]
    print("long request: %.1f s, finished %.1f s before %s went down" % (
        record["ended"] - record["started"], first_down - record["ended"], HOSTS[0]))
    assert record["ended"] <= first_down


def test_the_first_rollout_readmitted_every_host():
    log = open(os.path.join(EPH, "rollout1.log")).read()
    for host in HOSTS:
        assert re.search(r"%s\s+: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=0" % host, log), host


def test_the_rollout_validated_each_role_once():
    """playbooks/validate.yml checks every role's settings, in one task, before the first turn; no turn validates a
    role again (the fingerprint it recorded for each role matches the role's own in the turn, and the release paths
    the venv role resolves in each turn are not settings to check again): no role's own settings_check task shows."""
    log = open(os.path.join(EPH, "rollout1.log")).read()
    assert log.count("TASK [Check each role's settings (no changes)]") == 1, "validate.yml's check did not run once"
    counts = {role: log.count("TASK [glm53.serving.%s : Refuse bad settings (types, shapes, ranges, combinations; no "
                              "changes)]" % role)
              for role in ("venv", "flashinfer", "vllm_fork", "model", "serve", "service", "preflight", "probes",
                           "rollout")}
    assert counts == dict.fromkeys(counts, 0), counts


def test_a_moved_branch_was_built_as_a_new_release_beside_the_old_one(host, upgrade):
    """The pins name the fork by branch; the branch moved and upgrade.yml ran with the pins unchanged. The release
    is named by the commit the branch named when the run started: a new release directory, beside the old one,
    which stays on the host (rollback.yml returned to it: test_rollback_on_demand_swaps_current_and_previous)."""
    name = host.backend.get_hostname()
    releases = {}
    for path in host.check_output("find /opt/glm53/releases -mindepth 2 -maxdepth 2 -name release.json").split():
        record = json.loads(host.file(path).content_string)
        releases[record["sources"]["vllm_fork"]["commit"]] = (os.path.dirname(path), record)
    print("%s releases by fork commit: %s" % (name, dict((c[:10], d) for c, (d, _r) in releases.items())))
    new_dir, new = releases[upgrade["descendant"]]
    assert new["sources"]["vllm_fork"]["ref"] == "sm89-longctx-fix-v2", new["sources"]
    assert os.path.basename(new_dir).startswith(upgrade["descendant"][:10]) and new["id"] == os.path.basename(new_dir)
    if name != HOSTS[0]:  # the first host's second release is now the broken one (it rolled back from it)
        old_dir, old = releases[upgrade["minimum"]]
        assert old["sources"]["vllm_fork"]["ref"] == "sm89-longctx-fix-v2" and old_dir != new_dir
        assert host.file("/opt/glm53/releases/previous").linked_to == old_dir
    assert host.file("/opt/glm53/releases/current").linked_to == new_dir


def test_the_upgrade_moved_every_host_to_the_new_commit_built_once(host, upgrade):
    name = host.backend.get_hostname()
    assert "+g" + upgrade["minimum"][:9] in upgrade["before"][name]
    assert "+g" + upgrade["descendant"][:9] in host.check_output("curl -sf http://127.0.0.1:8000/version")
    builds = [t for t in upgrade["output"].split("TASK [")
              if t.startswith("glm53.serving._build : Build the wheel") and "vLLM fork]" in t.split("\n", 1)[0]]
    assert len(builds) == 3 and sum("changed: [" in t for t in builds) == 1, builds  # one batch per host, one build


@pytest.fixture(scope="module")
def second():
    with open(os.path.join(EPH, "rollout2.json")) as f:
        return json.load(f)


def test_a_host_failing_its_probes_stops_the_rollout_and_stays_out(second):
    assert second["rc"] != 0
    assert re.search(r"Probes failed on glm53-fleet2: chat .*repeated_ngram", second["stdout"]), second["stdout"][-3000:]
    upstream = open(os.path.join(EPH, "lb", "upstream.conf")).read()
    assert re.search(r"server \S+:8000 down;  # glm53-fleet2\n", upstream), upstream
    assert re.search(r"server \S+:8000;  # glm53-fleet1\n", upstream), upstream
    assert re.search(r"server \S+:8000;  # glm53-fleet3\n", upstream), upstream


def test_the_hosts_after_the_failed_one_are_untouched(host, second, heal):
    name = host.backend.get_hostname()
    pid = heal["pid_before"][name]  # the pids the heal story read before it changed anything
    if name == "glm53-fleet3":
        assert pid == second["pid_before"][name], "the rollout went on past the failed host"
        # validate.yml checks every host's settings first; the rollout play itself never reached this host
        rollout = second["stdout"].split("PLAY [Rolling restart of GLM-5.3 serving hosts]")[1]
        assert "glm53-fleet3" not in rollout.split("PLAY RECAP")[0]
    elif name == "glm53-fleet1":
        assert pid != second["pid_before"][name], "the first host was not restarted by the second rollout"


def _when(stamp):
    """An Alertmanager time (RFC 3339, nanoseconds, Z) as a Unix time."""
    stamp = re.sub(r"(\.\d{6})\d*", r"\1", stamp.replace("Z", "+00:00"))
    return datetime.fromisoformat(stamp).timestamp()


@pytest.fixture(scope="module")
def slow():
    with open(os.path.join(EPH, "slow.json")) as f:
        return json.load(f)


def test_a_slower_release_is_rolled_back_by_the_performance_gate(host, slow):
    """An upgrade to a commit that answers well but decodes 25 % slower, with rollout_bench on: vLLM 0.28.0's own
    `vllm bench serve` on the canary before (the serving release) and after (the new one); the gate rolls it back
    with both figures in the message and stops the upgrade, the other hosts untouched."""
    name = host.backend.get_hostname()
    assert slow["rc"] != 0
    assert "+g" + slow["descendant"][:9] in slow["version_after"][name], slow["version_after"]
    if name == HOSTS[0]:
        match = re.search(r"rolled back from (\S+) to (\S+) because (output throughput ([\d.]+) -> ([\d.]+) tok/s "
                          r"\(([-+][\d.]+) %[^)]*\)[^\n\\]*?)(?:\. It serves again|\\n|\n)", slow["output"])
        assert match, slow["output"][-3000:]
        assert match.group(1).startswith(slow["slow"][:10]) and match.group(2).startswith(slow["descendant"][:10])
        old, new, pct = float(match.group(4)), float(match.group(5)), float(match.group(6))
        print("performance gate on %s: %s" % (name, match.group(3)))
        assert "the median of 1 vllm bench serve runs" in match.group(3), match.group(3)
        assert pct < -15, "25 %% slower by construction: %s" % match.group(3)
        assert slow["pid_after"][name] != slow["pid_before"][name]
        # the report of that run holds both releases' figures, side by side
        report = json.load(open(os.path.join(EPH, "slow-report", name + ".json")))
        assert any("rolled back from" in n for n in report["notes"]), report["notes"]
        html = open(os.path.join(EPH, "slow-report", "report.html")).read()
        assert "Benchmark (vllm bench serve)" in html
        rows = html.split('<tr class="bench" data-host="%s">' % name)
        assert len(rows) == 2 and "%.1f" % new in rows[1].split("</tr>")[0], "the new release's figures"
        base = html.split('<tr class="bench-baseline" data-host="%s">' % name)
        assert len(base) == 2 and "%.1f" % old in base[1].split("</tr>")[0], "the serving release's figures"
    else:
        assert slow["pid_after"][name] == slow["pid_before"][name], "the upgrade went on past the canary"
        play = slow["output"].split("PLAY [Rolling upgrade of GLM-5.3 serving hosts]")[1].split("PLAY RECAP")[0]
        assert name not in play


@pytest.fixture(scope="module")
def silences():
    with open(os.path.join(EPH, "silences.json")) as f:
        return sorted(json.load(f), key=lambda s: s["startsAt"])


def test_every_turn_of_every_rollout_was_silenced_and_the_silence_lifted(silences):
    """Each rollout ran with rollout_alertmanager_url (Debian's Alertmanager on the controller): one silence per host
    turn, on that host alone, made by the role, and expired when the turn ended, also for the turns that failed (the
    broken, the slower and the drifted upgrades' first host, the second restart's second host), and the two
    rollbacks on demand after them."""
    turns = [(s["comment"].split(" of ")[0], s["matchers"][0]["value"]) for s in silences]
    print("silenced turns: %s" % turns)
    assert turns == ([("restart", h) for h in HOSTS] + [("upgrade", h) for h in HOSTS]
                     + [("upgrade", HOSTS[0])] * 3 + [("rollback", HOSTS[0])] * 2 + [("restart", h) for h in HOSTS[:2]])
    for s in silences:
        assert s["createdBy"] == "glm53.serving.rollout" and s["status"]["state"] == "expired", s
        assert s["matchers"] == [{"name": "host", "value": s["matchers"][0]["value"], "isRegex": False,
                                  "isEqual": True}], s


def test_each_host_was_silenced_for_its_whole_down_window(silences, upgrade):
    """The first rolling restart: each host's silence began before it stopped answering /health (before its drain)
    and was lifted only after it answered again (after its probes and re-admission)."""
    for s, host in zip(silences[:3], HOSTS):
        (down, up), = down_segments(host, 0.0, upgrade["start"])
        start, end = _when(s["startsAt"]), _when(s["endsAt"])
        print("%s: silenced %.1f s before it went down, lifted %.1f s after it was up again" % (
            host, down - start, end - up))
        assert start <= down and up <= end, (host, s)


# 4) heal.yml: the first host wedged (recovers on restart), the second turned to garbage (a fault that survives
# restarts), the third healthy; one host at a time, while at least 1 host passes.
@pytest.fixture(scope="module")
def heal():
    with open(os.path.join(EPH, "heal.json")) as f:
        return json.load(f)


def heal_rounds():
    with open(os.path.join(EPH, "heal-poll.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_heal_relaunches_and_readmits_the_wedged_host_and_leaves_the_garbage_one_drained(heal):
    out = heal["output"][0]
    assert heal["rc"][0] != 0, out[-3000:]  # a host needs a person: the run fails
    assert heal["pid_after1"]["glm53-fleet1"] != heal["pid_before"]["glm53-fleet1"], "the wedged host was not relaunched"
    assert heal["pid_after1"]["glm53-fleet2"] != heal["pid_before"]["glm53-fleet2"], "the garbage host was not relaunched"
    assert heal["pid_after1"]["glm53-fleet3"] == heal["pid_before"]["glm53-fleet3"], "a healthy host was touched"
    assert re.search(r"server \S+:8000;  # glm53-fleet1\n", heal["lb_after1"]), heal["lb_after1"]
    assert re.search(r"server \S+:8000 down;  # glm53-fleet2\n", heal["lb_after1"]), heal["lb_after1"]
    assert re.search(r"server \S+:8000;  # glm53-fleet3\n", heal["lb_after1"]), heal["lb_after1"]
    assert re.search(r"glm53-fleet1: healed in [0-9.]+ s from detection to re-admission: .*chat completion failed", out), out[-4000:]
    assert re.search(r"glm53-fleet2: drained: failed again after its relaunch: ", out), out[-4000:]
    assert "heal.yml: 1 host(s) need a person: glm53-fleet2 (drained" in out, out[-3000:]
    for line in re.findall(r"glm53-fleet\d: (?:healed|drained|healthy).*", out):
        print(line[:300])
    record = heal["records"]["glm53-fleet2"]
    assert '"state": "drained"' in record and 'glm53_heal_state{state="drained"} 1' in record, record
    assert '"state": "healed"' in heal["records"]["glm53-fleet1"], heal["records"]["glm53-fleet1"]
    assert 'glm53_heal_state{state="serving"} 1' in heal["records"]["glm53-fleet3"], heal["records"]["glm53-fleet3"]


def test_heal_keeps_two_hosts_in_the_pool_at_every_poll():
    rows = heal_rounds()
    assert len(rows) > 50, "the poller hardly ran"
    serving = [len([h for h in r["admitted"] if r["up"][h]]) for r in rows]
    print("heal: %d polls, at least %d hosts admitted and answering /health at each" % (len(rows), min(serving)))
    assert min(serving) >= 2, [r for r in rows if len([h for h in r["admitted"] if r["up"][h]]) < 2][:3]
    # the drained windows: one host at a time
    assert max(len(HOSTS) - len(r["admitted"]) for r in rows) == 1


def test_a_second_heal_run_restarts_nothing_and_keeps_the_mark(heal):
    out = heal["output"][1]
    assert heal["rc"][1] != 0
    assert heal["pid_after2"] == heal["pid_after1"], "the second run restarted an engine"
    assert "glm53-fleet2: marked: left drained by heal.yml since" in out, out[-3000:]
    assert "PLAY [Heal the failing hosts, heal_max_parallel at a time]" in out
    assert "skipping: no hosts matched" in out.split("PLAY [Heal the failing hosts")[1].split("PLAY [")[0]


def test_heal_clear_heals_a_marked_host_again_in_the_same_run(heal):
    out = heal["output"][2]
    assert heal["rc"][2] != 0, out[-3000:]  # the fault survives the restart: drained and marked again
    assert "PLAY [Heal the failing hosts, heal_max_parallel at a time]" in out
    heal_play = out.split("PLAY [Heal the failing hosts")[1].split("PLAY [")[0]
    assert "glm53-fleet2" in heal_play and "no hosts matched" not in heal_play, heal_play[:2000]
    assert re.search(r"glm53-fleet2: drained: failed again after its relaunch: ", out), out[-3000:]


# 5) The watchdog on the third host (timer every 5 s, 2 failures, 3 s deadline, 1 restart an hour).
def test_the_watchdog_restarts_a_wedge_once_then_keeps_to_its_budget():
    with open(os.path.join(EPH, "watchdog.json")) as f:
        wd = json.load(f)
    journal = wd["journal"]
    stamps = {}
    for line in journal.splitlines():
        for key in ("wedged: check 1 of 2 failed", "systemctl restart vllm-glm53.service: queued", "restart budget is spent"):
            if key in line and key not in stamps:
                stamps[key] = float(line.split()[0])
    assert len(stamps) == 3, journal
    assert journal.count("restarting vllm-glm53.service through the relaunch gate") == 1, journal
    assert journal.count("restart budget is spent") == 1, journal
    detect = stamps["systemctl restart vllm-glm53.service: queued"] - stamps["wedged: check 1 of 2 failed"]
    print("watchdog: first failed check to the restart %.1f s (window: 2 checks 5 s apart); budget spent %.1f s after"
          " the restart" % (detect, stamps["restart budget is spent"] - stamps["systemctl restart vllm-glm53.service: queued"]))
    assert detect <= 5 + 3 + 5, journal  # the next check, its deadline, and the timer's slack
    pid, starts = wd["after"].splitlines()[:2]
    assert pid != wd["pid_before"] and int(starts) == 1, wd["after"]
    assert re.search(r'glm53_watchdog_restarts_total\{unit="vllm-glm53.service"\} 1\n', wd["after"]), wd["after"]
    assert re.search(r'glm53_watchdog_budget_exhausted\{unit="vllm-glm53.service"\} 1\n', wd["after"]), wd["after"]


@pytest.fixture(scope="module")
def drifted():
    with open(os.path.join(EPH, "drifted.json")) as f:
        return json.load(f)


def test_a_release_whose_numerics_moved_is_rolled_back_by_the_quality_gate(host, drifted):
    """An upgrade to a commit that writes fluent text but whose every token is 0.1 nats less likely: the canary's reference
    passages are scored before and after and held to the weights' reference (recorded on the controller at the
    fleet's first proof; the release it replaces where the run finds none), the gate rolls it back naming both
    figures and stops the upgrade, the other hosts untouched; the earlier upgrade to an equal release passed the
    same gate."""
    name = host.backend.get_hostname()
    assert drifted["rc"] != 0
    assert "+g" + drifted["descendant"][:9] in drifted["version_after"][name], drifted["version_after"]
    if name == HOSTS[0]:
        match = re.search(r"rolled back from (\S+) to (\S+) because [^\n]*?reference numerics_drift: (\w+): ([\d.]+) "
                          r"nats/token against ([\d.]+) for (the weights' reference \([^)]*\)|the release it replaces "
                          r"\(\S+\) on this host: the quality gate) \(([-+][\d.]+) nats, ([-+][\d.]+)%",
                          drifted["output"])
        assert match, drifted["output"][-3000:]
        assert match.group(1).startswith(drifted["drifted"][:10]) and match.group(2).startswith(drifted["descendant"][:10])
        print("quality gate on %s: %s %s -> %s nats/token (%s nats, %s %%), against %s" % (
            name, match.group(3), match.group(5), match.group(4), match.group(7), match.group(8), match.group(6)))
        assert abs(float(match.group(7)) - 0.1) < 0.005
        assert drifted["pid_after"][name] != drifted["pid_before"][name]
        with open(os.path.join(EPH, "upgrade.json")) as f:
            equal = json.load(f)["output"]
        assert "Score the release that serves, drained and still running" in equal  # the equal release passed it
    else:
        assert drifted["pid_after"][name] == drifted["pid_before"][name], "a host after the canary was touched"
