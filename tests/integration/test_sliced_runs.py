"""Sliced runs (AWX/AAP job slicing) that share one truth: a real etcd, forty stand-in engines on this machine in one
pool, and a playbook run as four concurrent ansible-runner jobs, each over its slice of the inventory (slice i gets
hosts[i::4], as AWX slices). While the slices run, the test reads every engine every second as a load balancer would
(not drained, /health answering) and counts the hosts serving.

Heal (sliced/heal.yml: heal.yml's plays through the heal role's claim, release and record entry points), with
heal_min_serving 75% (30 of 40) and twelve hosts answering gibberish, three in each slice, healed three at a time
(heal_max_parallel): without the store each slice sees its own three and drains them, and together the slices take
the pool below 30; with the store (glm53_store_url) each drain is claimed within the whole pool's budget (10 out at
once), refused claims hold their hosts, the pool never goes below 30, and the next sliced run heals the held ones.

Prometheus, the read side: a slice of four hosts (one failing) in a pool of ten whose six other hosts are another
slice's, their last verdicts exported as the probes export them (verdict_metrics' textfile, read by node_exporter) and
scraped by a real Prometheus: five of the six failed. With glm53_prometheus_url, heal counts 1 + 3 hosts passing, below
heal_min_serving 6, and holds its failing host; without it, the six count as passing (as with --limit) and it heals.

Upgrade (sliced/upgrade.yml: the rolling play through the rollout role's canary, claim and release entry points),
with rollout_pool_max_down 4, as four slices with the store: one canary, whose turn ends before any other host is
drained, and never more than 4 hosts out (from each host's drain and admission times, and the sampler). Then a
release whose canary fails its proof: the canary rolls back, and every other host of every slice stops without being
drained, naming the canary's failure. hack/bench_sliced.sh runs the same upgrade unsliced first (one controller,
rollout_serial 4, no store) and prints both wall times.

GLM53_SLICED_HOSTS sets the pool's size (40; a multiple of 4, with at least 12 failing hosts' room) for a run on a
bigger machine."""
from __future__ import annotations

import json
import os
import shutil
import time
import urllib.request

import pytest

from testlib import REPO, run_module_here, start_node_exporter, start_prometheus
from slicedlib import Fleet, failures, heal_states, sliced_run

from ansible_collections.glm53.serving.plugins.module_utils._fleet_store import EtcdGateway, PoolClaims

if shutil.which("etcd") is None:  # pragma: no cover - hack/lib.sh installs etcd-server
    print("test_sliced_runs: skipped, no etcd binary (apt-get install etcd-server)")
    pytest.skip("no etcd binary (Debian's etcd-server; hack/lib.sh installs it)", allow_module_level=True)
pytest.importorskip("ansible_runner", reason="ansible-runner (hack/lib.sh's tool venv has it)")

HEAL = os.path.join(REPO, "tests", "integration", "sliced", "heal.yml")
UPGRADE = os.path.join(REPO, "tests", "integration", "sliced", "upgrade.yml")
HOSTS = int(os.environ.get("GLM53_SLICED_HOSTS", "40"))
SLICES, MIN_SERVING, PARALLEL, MAX_DOWN = 4, "75%", 3, 4
LEAST = HOSTS * 75 // 100
# three failing hosts in each slice (slice i: hosts[i::4]): the first twelve
FAILING = ["e%02d" % i for i in range(12)]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    f = Fleet(tmp_path_factory.mktemp("fleet"), HOSTS)
    yield f
    f.stop()


def test_sliced_heal_keeps_the_pool_above_its_minimum_only_with_the_store(tmp_path, etcd, fleet):
    print("\nsliced heal: %d hosts (%d failing, %d in each slice), %d slices, heal_min_serving=%s (%d), "
          "heal_max_parallel=%d" % (HOSTS, len(FAILING), len(FAILING) // SLICES, SLICES, MIN_SERVING, LEAST, PARALLEL))
    t0 = time.monotonic()
    fleet.start(FAILING)
    print("stage: fleet up in %.1f s" % (time.monotonic() - t0))
    common = {"heal_min_serving": MIN_SERVING, "heal_max_parallel": PARALLEL, "glm53_pool_size": HOSTS,
              "standin_drain_wait": 8}

    # 1. no store: every slice believes it may drain its own three, and together they go below the minimum
    least, runners, seconds, samples = sliced_run(tmp_path, fleet, HEAL, "nostore", SLICES, glm53_store_url="", **common)
    found = dict((h, s) for h, (s, _r) in heal_states(runners).items())
    print("stage: sliced heal without the store: %.1f s, %d samples, fewest serving %d (minimum %d)"
          % (seconds, samples, least, LEAST))
    assert all(found.get(h) == "healed" for h in FAILING), found
    nostore_least = least
    assert least < LEAST, "without the store the slices should have gone below the minimum (%d)" % least

    # 2. the same sliced run with the store: never below the minimum; refused claims hold hosts for the next run
    t0 = time.monotonic()
    fleet.start(FAILING)
    print("stage: fleet failing again in %.1f s" % (time.monotonic() - t0))
    store = dict(common, glm53_store_url=etcd, glm53_pool="heal")
    healed, held_seen, lowest, rounds = set(), set(), HOSTS, 0
    while set(FAILING) - healed:
        rounds += 1
        assert rounds <= 4, "not every failing host was healed in 4 sliced runs: %s" % (set(FAILING) - healed)
        least, runners, seconds, samples = sliced_run(tmp_path, fleet, HEAL, "store%d" % rounds, SLICES, **store)
        found = heal_states(runners)
        lowest = min(lowest, least)
        held = set(h for h, (s, _r) in found.items() if s == "held")
        for h in held:
            assert found[h][1].startswith("not healed: the pool's budget in the store (sliced runs) is spent, refused"), found[h]
        held_seen |= held
        healed |= set(h for h, (s, _r) in found.items() if s == "healed")
        print("stage: sliced heal %d with the store: %.1f s, %d samples, fewest serving %d (minimum %d), healed %d, "
              "held %s" % (rounds, seconds, samples, least, LEAST, len(healed), sorted(held)))
        assert least >= LEAST, "with the store the pool went below its minimum: %d" % least
        # a slice with a held host fails (a person is paged, as heal.yml's record does); one without it succeeds
        for i, r in runners.items():
            mine = set(fleet.names()[i::SLICES])
            assert r.status == ("failed" if mine & held else "successful"), (i, r.status, mine, held)
    print("sliced heal: fewest serving without the store %d, with it %d (minimum %d); %d sliced run(s) with the store "
          "healed all %d; claims refused (held) for %s" % (nostore_least, lowest, LEAST, rounds, len(FAILING),
                                                           sorted(held_seen)))
    assert held_seen, "the budget should have refused some claims (12 drains at once, 10 may be out)"
    assert all(fleet.answers_well(h) for h in FAILING)
    view = PoolClaims(EtcdGateway(etcd), "/glm53/heal", "heal").read()
    assert view["claims"] == {} and view["down"] == {}, view


def most_out_at_once(fleet, names):
    """The most hosts between their drain and their admission at any moment, from their events."""
    edges = []
    for n in names:
        for what, t in fleet.events(n):
            edges.append((t, 1 if what == "drain" else -1))
    out = most = 0
    for _t, step in sorted(edges, key=lambda e: (e[0], e[1])):
        out += step
        most = max(most, out)
    return most


def test_sliced_upgrade_runs_one_canary_and_keeps_the_pools_limit_of_hosts_down(tmp_path, etcd, fleet):
    print("\nsliced upgrade: %d hosts, rollout_pool_max_down=%d, %d slices" % (HOSTS, MAX_DOWN, SLICES))
    t0 = time.monotonic()
    fleet.start(release="r1")
    print("stage: fleet up on r1 in %.1f s" % (time.monotonic() - t0))
    names = fleet.names()

    # 1. unsliced, as one controller runs it today: rollout_serial hosts at a time, no store. The wall-time baseline
    # of hack/bench_sliced.sh (GLM53_SLICED_BASELINE=1); the tests' run leaves it out (the ratio is a figure, not a
    # check, and its run is the longest here)
    unsliced = None
    if os.environ.get("GLM53_SLICED_BASELINE") == "1":
        least, runners, unsliced, _n = sliced_run(tmp_path, fleet, UPGRADE, "up-one", 1, forks=MAX_DOWN,
                                                  venv_release_id="r2", rollout_serial=MAX_DOWN, glm53_store_url="")
        assert runners[0].status == "successful", failures(runners)
        assert all(fleet.release(n) == "r2" for n in names)
        print("stage: unsliced upgrade to r2: %.1f s, fewest serving %d, most out at once %d"
              % (unsliced, least, most_out_at_once(fleet, names)))
    else:
        print("stage: the unsliced baseline is hack/bench_sliced.sh's (GLM53_SLICED_BASELINE=1), not run here")

    # 2. sliced, with the store: one canary for the pool, then every slice under one limit of hosts down
    for n in names:
        (fleet.hosts[n]["dir"] / "events").unlink(missing_ok=True)
    store = {"glm53_store_url": etcd, "glm53_pool": "upgrade", "glm53_pool_size": HOSTS,
             "rollout_pool_max_down": MAX_DOWN}
    least, runners, sliced, samples = sliced_run(tmp_path, fleet, UPGRADE, "up-sliced", SLICES, venv_release_id="r3",
                                                 **store)
    assert all(r.status == "successful" for r in runners.values()), failures(runners)
    assert all(fleet.release(n) == "r3" for n in names), dict((n, fleet.release(n)) for n in names)
    canary = PoolClaims(EtcdGateway(etcd), "/glm53/heal", "upgrade").gw.get("/glm53/heal/upgrade/canary/r3")
    assert canary, "no canary was recorded for r3"
    record = json.loads(canary["value"])
    assert record["state"] == "passed" and canary["lease"] == 0, record
    admitted = max(t for w, t in fleet.events(record["host"]) if w == "admit")
    first_other = min(t for n in names if n != record["host"] for w, t in fleet.events(n) if w == "drain")
    most = most_out_at_once(fleet, names)
    print("stage: sliced upgrade to r3: %.1f s, %d samples, fewest serving %d, most out at once %d (limit %d); "
          "canary %s (%s), admitted %.1f s before the first other host's drain"
          % (sliced, samples, least, most, MAX_DOWN, record["host"], record["holder"], first_other - admitted))
    assert admitted < first_other, "a host was drained before the canary's turn ended"
    assert most <= MAX_DOWN and least >= HOSTS - MAX_DOWN, (most, least)
    assert most > 1, "the slices never overlapped: the test shows nothing of the pool-wide limit"
    view = PoolClaims(EtcdGateway(etcd), "/glm53/heal", "upgrade").read()
    assert view["claims"] == {} and view["down"] == {}, view
    if unsliced:
        print("sliced upgrade: %d hosts, 4 slices %.1f s against one controller %.1f s: %.2fx (this machine, %d cores)"
              % (HOSTS, sliced, unsliced, sliced / unsliced, os.cpu_count()))

    # 3. a release whose canary fails its proof: it rolls back; no other host of any slice is drained
    for n in names:
        (fleet.hosts[n]["dir"] / "events").unlink(missing_ok=True)
    (fleet.tmp / "bad_releases").write_text("r4\n")
    least, runners, seconds, _n = sliced_run(tmp_path, fleet, UPGRADE, "up-bad", SLICES, venv_release_id="r4", **store)
    failed = failures(runners)
    bad = json.loads(EtcdGateway(etcd).get("/glm53/heal/upgrade/canary/r4")["value"])
    drained = sorted(n for n in names if fleet.events(n))
    print("stage: sliced upgrade to a bad r4: %.1f s; canary %s %s (%s); drained %s; %d hosts failed"
          % (seconds, bad["host"], bad["state"], bad["reason"], drained, len(failed)))
    assert bad["state"] == "failed" and "gibberish" in bad["reason"], bad
    assert drained == [bad["host"]], drained
    assert "rolled back from r4 to r3" in failed[bad["host"]], failed
    # every slice's first host stops on the canary's outcome (the slice's later hosts never start: max_fail 0)
    stopped = dict((h, m) for h, m in failed.items() if h != bad["host"])
    assert len(stopped) == SLICES - 1, stopped
    assert all("not upgraded: the pool's canary for r4, %s" % bad["host"] in m and "failed: " in m
               for m in stopped.values()), stopped
    assert all(fleet.release(n) == "r3" for n in names) and fleet.serving() == names


def test_heal_counts_the_other_slices_hosts_from_prometheus(tmp_path, tmp_path_factory):
    from ansible_collections.glm53.serving.plugins.modules import prometheus_query, verdict_metrics
    procs = []
    small = Fleet(tmp_path_factory.mktemp("slice"), 4, prefix="p")
    try:
        # the other slice's six hosts: each a node_exporter reading its verdict, as the probes write it
        targets = {}
        for i in range(6):
            d = tmp_path / ("q%02d" % i)
            d.mkdir()
            (d / "glm53_probes.prom").write_text(verdict_metrics.render(
                {"passed": i == 0, "engine_version": "0.28.1", "engine_commit": "f2935ce322", "health": {"ready": True},
                 "chat": {"passed": i == 0}}, "r1", int(time.time()), {}))
            proc, port = start_node_exporter(d)
            procs.append(proc)
            targets["q%02d" % i] = "127.0.0.1:%d" % port
        prom, url = start_prometheus(tmp_path, targets)
        procs.append(prom)
        deadline = time.monotonic() + 60
        query = url + "/api/v1/query?query=glm53_probe_verdict%7Bprobe%3D%22all%22%7D"
        while True:
            with urllib.request.urlopen(query, timeout=5) as resp:
                seen = json.load(resp)["data"]["result"]
            if len(seen) == 6:
                break
            assert time.monotonic() < deadline, "Prometheus did not scrape the six hosts: %s" % seen
            time.sleep(0.5)
        # the module: the samples with their labels; a query Prometheus refuses, or no vector, fails naming why
        got = run_module_here(prometheus_query, {"url": url, "query": 'glm53_probe_verdict{probe="all"}'})
        assert sorted((x["labels"]["host"], x["value"]) for x in got["samples"]) == [
            ("q00", 1.0)] + [("q%02d" % i, 0.0) for i in range(1, 6)], got
        bad = run_module_here(prometheus_query, {"url": url, "query": "glm53_probe_verdict{"})
        assert bad["failed"] and "Prometheus refused the query" in bad["msg"], bad
        scalar = run_module_here(prometheus_query, {"url": url, "query": "scalar(vector(1))"})
        assert scalar["failed"] and "not an instant vector" in scalar["msg"], scalar
        gone = run_module_here(prometheus_query, {"url": "http://127.0.0.1:9", "query": "up", "timeout": 2})
        assert gone["failed"] and "127.0.0.1:9" in gone["msg"], gone
        small.start(failing=["p00"])
        common = {"heal_min_serving": 6, "glm53_pool_size": 10, "glm53_store_url": ""}
        _least, runners, seconds, _n = sliced_run(tmp_path, small, HEAL, "prom", 1, glm53_prometheus_url=url, **common)
        state, reason = heal_states(runners)["p00"]
        print("\nheal with Prometheus (%.1f s): p00 %s: %s" % (seconds, state, reason[:160]))
        assert state == "held" and reason.startswith("not healed: 4 of 10 hosts pass, below heal_min_serving=6"), reason
        assert not small.answers_well("p00"), "a held host is not restarted"
        _least, runners, seconds, _n = sliced_run(tmp_path, small, HEAL, "noprom", 1, **common)
        state, reason = heal_states(runners)["p00"]
        print("heal without Prometheus (%.1f s): p00 %s (the six other hosts counted as passing)" % (seconds, state))
        assert state == "healed" and small.answers_well("p00"), (state, reason)
    finally:
        small.stop()
        for p in procs:
            p.terminate()
