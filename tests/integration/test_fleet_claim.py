"""fleet_claim against a real etcd (Debian's etcd-server): the pool's budget over every slice's claims, one winner
per race, a release, a host left down that keeps counting, check mode that writes nothing, and a claim whose holder
was killed expiring with its lease."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from testlib import COLLECTIONS_ROOT, run_module_here

from ansible_collections.glm53.serving.plugins.modules import fleet_claim
from ansible_collections.glm53.serving.plugins.module_utils._fleet_store import EtcdGateway, PoolClaims

if shutil.which("etcd") is None:  # pragma: no cover - hack/lib.sh installs etcd-server
    print("test_fleet_claim: skipped, no etcd binary (apt-get install etcd-server)")
    pytest.skip("no etcd binary (Debian's etcd-server; hack/lib.sh installs it)", allow_module_level=True)


def call(url, pool, host, **kw):
    check = kw.pop("_check", False)
    args = dict(store_url=url, pool=pool, host=host, **kw)
    if check:
        args["_ansible_check_mode"] = True
    return run_module_here(fleet_claim, args)


def test_claims_within_the_pools_budget_then_refused(etcd):
    # 6 hosts, at least 4 serving: 2 may be out at once, whoever claims them
    a = call(etcd, "p1", "h1", pool_size=6, min_serving=4, holder="slice-a")
    b = call(etcd, "p1", "h2", pool_size=6, min_serving=4, holder="slice-b")
    c = call(etcd, "p1", "h3", pool_size=6, min_serving=4, holder="slice-c")
    assert a["claimed"] and a["changed"] and b["claimed"], (a, b)
    assert not c["claimed"] and not c.get("failed") and not c["changed"], c
    assert "budget of 2" in c["reason"] and "min_serving=4" in c["reason"], c["reason"]
    assert c["holders"] == {"h1": "slice-a", "h2": "slice-b"} and c["budget"]["out"] == 2
    # the holder's own claim again: its lease renewed, nothing else changes
    again = call(etcd, "p1", "h1", pool_size=6, min_serving=4, holder="slice-a")
    assert again["claimed"] and not again["changed"], again
    # another holder cannot take it, nor release it
    other = call(etcd, "p1", "h1", pool_size=6, min_serving=4, holder="slice-b")
    assert not other["claimed"] and "claimed by slice-a" in other["reason"], other
    kept = call(etcd, "p1", "h1", state="released", holder="slice-b")
    assert not kept["changed"] and "kept" in kept["reason"], kept
    # released: the budget is free again for h3
    rel = call(etcd, "p1", "h1", state="released", holder="slice-a")
    assert rel["changed"] and rel["holders"] == {"h2": "slice-b"}, rel
    assert call(etcd, "p1", "h1", state="released", holder="slice-a")["changed"] is False
    assert call(etcd, "p1", "h3", pool_size=6, min_serving="60%", holder="slice-c")["claimed"]


def test_a_host_left_down_keeps_counting(etcd):
    assert call(etcd, "p2", "h1", pool_size=4, min_serving="50%", holder="s1")["claimed"]
    down = call(etcd, "p2", "h1", state="released", holder="s1", down=True)
    assert down["changed"] and down["down"] == ["h1"] and down["holders"] == {}, down
    assert call(etcd, "p2", "h2", pool_size=4, min_serving="50%", holder="s2")["claimed"]
    refused = call(etcd, "p2", "h3", pool_size=4, min_serving="50%", holder="s3")
    assert not refused["claimed"] and "left down h1" in refused["reason"], refused
    # h1 serves again (a later heal, or a person): released with down=false, it no longer counts
    back = call(etcd, "p2", "h1", state="released", down=False)
    assert back["changed"] and back["down"] == [], back
    assert call(etcd, "p2", "h3", pool_size=4, min_serving="50%", holder="s3")["claimed"]


def test_check_mode_reads_and_writes_nothing(etcd):
    would = call(etcd, "p3", "h1", pool_size=2, min_serving=1, holder="s1", _check=True)
    assert would["claimed"] and would["changed"], would
    assert PoolClaims(EtcdGateway(etcd), "/glm53/heal", "p3").read() == {"guard": 0, "claims": {}, "down": {}}


def test_bad_arguments_fail_clearly(etcd):
    assert "pool_size" in call(etcd, "p4", "h1", holder="s1")["msg"]
    assert "http" in call("etcd:2379", "p4", "h1", pool_size=3, holder="s1")["msg"]
    assert "min_serving" in call(etcd, "p4", "h1", pool_size=3, min_serving="lots", holder="s1")["msg"]
    gone = call("http://127.0.0.1:9", "p4", "h1", pool_size=3, holder="s1", timeout=2)
    assert gone["failed"] and "the store at" in gone["msg"], gone


def test_racing_slices_never_overspend_the_budget(etcd):
    # 12 claimers at once (threads, each its own read-compare-write) on a pool of 12 with a minimum of 9: 3 win
    results = {}

    def one(i):
        store = PoolClaims(EtcdGateway(etcd), "/glm53/heal", "race")
        p = dict(host="h%02d" % i, holder="slice-%d" % (i % 4), pool_size=12, min_serving=9, ttl=60, retries=200,
                 pool="race", wait=0)

        class M(object):
            check_mode = False

            def fail_json(self, **kw):
                raise AssertionError(kw)
        results[i] = fleet_claim.claim(M(), store, p)

    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    won = sorted(i for i, r in results.items() if r["claimed"])
    attempts = sum(r["attempts"] for r in results.values())
    print("race: 12 claimers, %d granted, %d rounds in all, %.2f s" % (len(won), attempts, time.monotonic() - t0))
    assert len(results) == 12 and len(won) == 3, results
    assert len(PoolClaims(EtcdGateway(etcd), "/glm53/heal", "race").read()["claims"]) == 3


def test_a_waiting_claim_gets_the_place_a_release_frees(etcd):
    # a rollout's slices queue for the pool's limit of hosts down: 1 of 3 may be out, h2 waits for h1's release
    assert call(etcd, "q1", "h1", pool_size=3, min_serving=2, holder="s1")["claimed"]
    refused = call(etcd, "q1", "h2", pool_size=3, min_serving=2, holder="s2")
    assert not refused["claimed"] and refused["waited"] == 0, refused
    got = {}

    class M(object):  # the module's own claim in a thread (run_module_here's module state is the process's)
        check_mode = False

        def fail_json(self, **kw):
            raise AssertionError(kw)
    store = PoolClaims(EtcdGateway(etcd), "/glm53/heal", "q1")
    p = dict(host="h2", holder="s2", pool_size=3, min_serving=2, ttl=60, retries=50, pool="q1", wait=30)
    waiter = threading.Thread(target=lambda: got.update(fleet_claim.claim(M(), store, p)))
    waiter.start()
    time.sleep(3)
    assert waiter.is_alive() and not got, "the claim should still wait for h1's place"
    assert call(etcd, "q1", "h1", state="released", holder="s1")["changed"]
    waiter.join(30)
    assert got["claimed"] and got["holders"] == {"h2": "s2"} and got["waited"] >= 2.5, got
    timed_out = call(etcd, "q1", "h3", pool_size=3, min_serving=2, holder="s3", wait=2)
    assert not timed_out["claimed"] and timed_out["waited"] >= 1.5 and "budget of 1" in timed_out["reason"], timed_out


def test_one_canary_per_pool_and_release_the_others_wait_for_its_outcome(etcd):
    # four slices' first hosts ask at once: one becomes the canary; the others wait until it records its outcome
    results = {}

    class M(object):
        check_mode = False

        def fail_json(self, **kw):
            raise AssertionError(kw)

    def ask(i):
        store = PoolClaims(EtcdGateway(etcd), "/glm53/heal", "c1")
        p = dict(host="h%d" % i, holder="slice-%d" % i, release="r2", ttl=60, wait=30, retries=50, outcome="",
                 reason="", pool="c1")
        results[i] = fleet_claim.canary(M(), store, p)
    threads = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    time.sleep(3)
    canaries = [i for i, r in results.items() if r["is_canary"]]
    assert len(canaries) == 1 and len(results) == 1, results
    c = canaries[0]
    assert results[c]["changed"] and results[c]["canary"]["state"] == "running", results[c]
    # only the canary records the outcome
    other = call(etcd, "c1", "h%d" % ((c + 1) % 4), state="canary", release="r2", holder="slice-x", outcome="passed")
    assert other["failed"] and "only the canary records" in other["msg"], other
    done = call(etcd, "c1", "h%d" % c, state="canary", release="r2", holder="slice-%d" % c, outcome="passed")
    assert done["changed"] and done["canary"]["state"] == "passed", done
    for t in threads:
        t.join(30)
    waiters = [r for i, r in results.items() if i != c]
    assert len(waiters) == 3 and all(not r["is_canary"] and r["canary"]["state"] == "passed"
                                     and r["canary"]["host"] == "h%d" % c and r["waited"] >= 2.5 for r in waiters), results
    # a second run of the same release elects no new canary; a failed canary's reason reaches every other host
    again = call(etcd, "c1", "h9", state="canary", release="r2", holder="slice-9", ttl=60)
    assert not again["is_canary"] and again["canary"]["state"] == "passed" and not again["changed"], again
    assert call(etcd, "c1", "h5", state="canary", release="r3", holder="s5", ttl=60)["is_canary"]
    call(etcd, "c1", "h5", state="canary", release="r3", holder="s5", outcome="failed", reason="slower by 30%")
    told = call(etcd, "c1", "h6", state="canary", release="r3", holder="s6", ttl=60, wait=5)
    assert told["canary"] == {"host": "h5", "holder": "s5", "state": "failed", "reason": "slower by 30%"}, told
    # check mode elects nothing
    would = call(etcd, "c1", "h7", state="canary", release="r4", holder="s7", ttl=60, _check=True)
    assert would["is_canary"] and EtcdGateway(etcd).get("/glm53/heal/c1/canary/r4") is None, would


def test_a_dead_canarys_place_is_taken_after_its_ttl(etcd):
    first = call(etcd, "c2", "h1", state="canary", release="r1", holder="dead", ttl=5)
    assert first["is_canary"]
    waited = call(etcd, "c2", "h2", state="canary", release="r1", holder="live", ttl=60, wait=20)
    assert waited["is_canary"] and waited["waited"] >= 3, waited  # the dead canary's lease expired: h2 took over


HOLDER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, %(root)r)
    from ansible_collections.glm53.serving.plugins.module_utils._fleet_store import EtcdGateway, PoolClaims, put_op
    store = PoolClaims(EtcdGateway(%(url)r), "/glm53/heal", "dies")
    lease = store.gw.grant(%(ttl)d)
    assert store.write(store.read()["guard"], [put_op(store.claim_key("h1"), '{"holder": "dead-slice"}', lease)])
    print("claimed", flush=True)
    while True:  # a slice mid-heal renews its claim; killed, it renews nothing
        store.gw.keepalive(lease)
        time.sleep(1)
""")


def test_a_killed_holders_claim_expires_after_its_ttl(etcd):
    ttl = 6
    proc = subprocess.Popen([sys.executable, "-c", HOLDER % {"root": COLLECTIONS_ROOT, "url": etcd, "ttl": ttl}],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "claimed"
    time.sleep(ttl + 1)  # renewed: still held past its ttl
    held = call(etcd, "dies", "h2", pool_size=2, min_serving=1, holder="live-slice")
    assert not held["claimed"] and held["holders"] == {"h1": "dead-slice"}, held
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = time.monotonic()
    while True:
        got = call(etcd, "dies", "h2", pool_size=2, min_serving=1, holder="live-slice")
        if got["claimed"]:
            break
        assert time.monotonic() - killed < ttl + 5, got
        time.sleep(0.5)
    waited = time.monotonic() - killed
    print("a killed holder's claim expired %.1f s after the kill (ttl %d s)" % (waited, ttl))
    assert ttl - 2 <= waited <= ttl + 5, waited
    assert got["holders"] == {"h2": "live-slice"}, got
    json.dumps(got)
