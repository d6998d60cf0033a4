#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_claim
short_description: Claim a host of a pool in the fleet's store before taking it out, within the pool's budget
version_added: "0.4.0"
description:
  - Sliced runs (AWX or Automation Platform job slicing) run one playbook as several jobs, each over a slice of the
    inventory. A decision about a whole pool (how many hosts may be out of it at once) must then be taken from one
    truth that every slice reads, not from what one play sees. This module keeps that truth in etcd (v3.4 or later,
    through its JSON gateway, with the standard library only).
  - With O(state=claimed) it claims O(host) for O(holder) (the slice's run) in one etcd transaction. It reads the
    pool's claims and the hosts left down, and adds the claim only while the hosts out of the pool (claimed, or left
    down by an earlier heal, and this one) stay within O(pool_size) minus the minimum that O(min_serving) asks. The
    transaction compares the pool's guard key, which every write moves, with the revision read; a slice that lost
    the race reads again (up to O(retries) times). When the budget is spent it refuses, without failing
    (RV(claimed) false, RV(reason) naming the budget).
  - A claim lives on an etcd lease of O(ttl) seconds, so a claim held by a slice that died expires. Claiming a host
    this holder holds already renews its lease.
  - With O(state=released) it removes O(holder)'s claim (another holder's is kept, as that holder's to release,
    or expires with its lease). With O(down=true) the host stays counted as out of the pool, with no lease (a host
    a heal left drained), until a later release with O(down=false) (the host serves again), whoever releases it.
  - With O(wait) above 0, a claim the budget refuses is tried again every second for up to O(wait) seconds (a
    rollout's slices queue for the pool's limit of hosts down; heal does not wait, it holds the host).
  - With O(state=canary) it elects the pool's canary for O(release); the first host to ask becomes it (RV(is_canary)
    true), in one transaction that creates the pool's C(canary/<release>) key on a lease of O(ttl) seconds (a canary
    whose slice died loses it after that, and the next host to ask takes over). A host that is not the canary waits,
    up to O(wait) seconds, until the canary's outcome is recorded, and returns it (RV(canary)). The canary's own
    run records it with O(outcome) (C(passed) or C(failed)), which keeps it with no lease.
  - Run it on the controller (C(delegate_to) localhost); the hosts themselves never talk to the store.
author:
  - glm53.serving contributors (@glm53)
options:
  store_url:
    description:
      - The etcd client URL (http or https), for example C(http://etcd.example:2379). Over https the server's
        certificate is verified against O(ca_path) or the system's trust store.
    type: str
    required: true
  prefix:
    description: Where the pools' keys live in etcd (C(<prefix>/<pool>/claims/<host>), C(.../down/<host>), C(.../guard)).
    type: str
    default: /glm53/heal
  pool:
    description: The pool's name (its hosts share one budget); letters, digits, C(.), C(_) and C(-).
    type: str
    required: true
  host:
    description: The host to claim or release.
    type: str
    required: true
  state:
    description:
      - C(claimed) to take the host out of the pool, C(released) to give it back, C(canary) to elect the pool's
        canary for O(release) (or record its O(outcome)).
    type: str
    choices: [claimed, released, canary]
    default: claimed
  release:
    description: For O(state=canary), the release the canary proves (one canary per pool and release).
    type: str
    default: ""
  outcome:
    description:
      - For O(state=canary), empty to elect the canary (or wait for its outcome); C(passed) or C(failed) to record the
        outcome, by the canary's host and O(holder) only.
    type: str
    choices: ["", passed, failed]
    default: ""
  reason:
    description: For O(state=canary) with O(outcome=failed), why (the other slices' hosts fail naming it).
    type: str
    default: ""
  wait:
    description:
      - Seconds to wait, reading the store again every second, for a free place in the budget (O(state=claimed)) or
        for the canary's outcome (O(state=canary)). 0 answers at once.
    type: int
    default: 0
  pool_size:
    description: How many hosts the whole pool has (all slices'), for O(state=claimed).
    type: int
    default: 0
  min_serving:
    description:
      - The fewest hosts of the pool that must stay in it, for O(state=claimed); a count, or a percentage of
        O(pool_size) rounded down (heal_min_serving's meaning).
    type: raw
    default: "50%"
  ttl:
    description: Seconds a claim lives without being renewed (longer than a heal's turn; a dead holder's claim expires).
    type: int
    default: 900
  holder:
    description:
      - Who claims (the slice's run, for example an AWX job id); for O(state=claimed), required.
      - For O(state=released), only this holder's claim is removed.
    type: str
    default: ""
  down:
    description:
      - For O(state=released), whether the host stays out of the pool (left drained) and keeps counting against
        the budget, with no lease, until it is released with O(down=false).
    type: bool
    default: false
  retries:
    description: How many times a claim lost to a racing writer is read and tried again.
    type: int
    default: 50
  timeout:
    description: Seconds each request to the store may take.
    type: int
    default: 10
  ca_path:
    description: A CA bundle for an https O(store_url).
    type: path
  validate_certs:
    description: Whether to verify an https O(store_url)'s certificate.
    type: bool
    default: true
attributes:
  check_mode:
    description: Reads the store and says what it would do (RV(claimed) as it would be), and writes nothing.
    support: full
  diff_mode:
    description: Does not return a diff.
    support: none
  idempotent:
    description: Claiming a host this holder holds renews its lease and changes nothing else; a second release changes nothing.
    support: full
notes:
  - The store is one etcd, or a cluster (give one member's URL, or a balancer in front of them). etcd's authentication
    (a user and password) is not supported yet; keep the store on a network only the controllers reach, or use TLS.
"""

EXAMPLES = r"""
- name: Claim the host before draining it (the whole pool's budget)
  glm53.serving.fleet_claim:
    store_url: http://etcd.example:2379
    pool: glm53_serving
    host: "{{ inventory_hostname }}"
    pool_size: 12
    min_serving: "75%"
    ttl: 900
    holder: "{{ tower_job_id | default('manual') }}"
  delegate_to: localhost
  register: claim

- name: Elect the pool's canary for the release, or wait for its outcome
  glm53.serving.fleet_claim:
    store_url: http://etcd.example:2379
    pool: glm53_serving
    host: "{{ inventory_hostname }}"
    state: canary
    release: "{{ venv_release_id }}"
    holder: "{{ tower_job_id | default('manual') }}"
    ttl: 7200
    wait: 7200
  delegate_to: localhost
  register: canary

- name: Give the host back once it is re-admitted
  glm53.serving.fleet_claim:
    store_url: http://etcd.example:2379
    pool: glm53_serving
    host: "{{ inventory_hostname }}"
    state: released
    holder: "{{ tower_job_id | default('manual') }}"
  delegate_to: localhost
"""

RETURN = r"""
claimed:
  description: Whether O(holder) holds the claim on O(host) now (in check mode, whether it would).
  returned: when O(state) is C(claimed) or C(released)
  type: bool
reason:
  description: Why the claim was refused, or what a release did; empty when a claim was granted.
  returned: when O(state) is C(claimed) or C(released)
  type: str
  sample: "refused: 3 of 12 hosts would be out of the pool, over its budget of 2 (pool_size=12, min_serving=75% is 9)"
holders:
  description: The pool's claims after this call, host to holder.
  returned: when O(state) is C(claimed) or C(released)
  type: dict
  sample: {gpu-03: awx-1811, gpu-07: awx-1812}
down:
  description: The hosts of the pool left down (out of it with no lease) after this call.
  returned: when O(state) is C(claimed) or C(released)
  type: list
  elements: str
budget:
  description: The pool's budget as this call counted it (O(state=claimed)); C(out) counts the hosts out of the pool.
  returned: when O(state) is C(claimed) or C(released)
  type: dict
  sample: {pool_size: 12, minimum: 9, allowed: 3, out: 2}
attempts:
  description: How many read-compare-write rounds it took (more than one when another slice raced it).
  returned: always
  type: int
waited:
  description: Seconds spent waiting (O(wait)) for a place in the budget or for the canary's outcome.
  returned: always
  type: float
is_canary:
  description: For O(state=canary), whether O(host) is the pool's canary for O(release).
  returned: when O(state=canary)
  type: bool
canary:
  description: For O(state=canary), the canary's host, holder, state (C(running), C(passed), C(failed)) and reason.
  returned: when O(state=canary)
  type: dict
  sample: {host: gpu-03, holder: awx-1811-1, state: passed, reason: ""}
"""

import json
import re
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._fleet_store import (
    EtcdGateway, PoolClaims, StoreError, delete_op, mod_is, put_op, retry_pause)
from ansible_collections.glm53.serving.plugins.module_utils._heal_budget import minimum

_POOL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")


def _result(view, **kw):
    holders = dict((h, c.get("holder", "")) for h, c in sorted(view["claims"].items()))
    return dict(kw, holders=holders, down=sorted(view["down"]))


def claim(module, store, p):
    host, holder = p["host"], p["holder"]
    least = minimum(p["min_serving"], p["pool_size"])
    allowed = p["pool_size"] - least
    started, attempt, races = time.monotonic(), 0, 0
    while True:
        attempt += 1
        waited = round(time.monotonic() - started, 1)
        view = store.read()
        mine = view["claims"].get(host)
        out = set(view["claims"]) | set(view["down"])
        budget = {"pool_size": p["pool_size"], "minimum": least, "allowed": allowed, "out": len(out)}
        if mine and mine.get("holder") == holder:
            if module.check_mode or store.gw.keepalive(mine["lease"]) > 0:
                return _result(view, changed=False, claimed=True, budget=budget, attempts=attempt, waited=waited,
                               reason="already held by %s (lease renewed)" % holder)
            continue  # it expired between the read and the renewal: claim it anew
        after = len(out | set([host]))
        if mine or after > allowed:
            if not module.check_mode and time.monotonic() - started < p["wait"]:
                time.sleep(1)  # a place in the budget may free up (a rollout's slices queue for it)
                continue
            if mine:
                return _result(view, changed=False, claimed=False, budget=budget, attempts=attempt, waited=waited,
                               reason="refused: %s is claimed by %s already" % (host, mine.get("holder", "?")))
            return _result(view, changed=False, claimed=False, budget=budget, attempts=attempt, waited=waited, reason=(
                "refused: %d of %d hosts would be out of the pool (claimed %s, left down %s, and %s), over its budget of "
                "%d (pool_size=%d, min_serving=%s is %d)" % (
                    after, p["pool_size"], ", ".join(sorted(view["claims"])) or "none",
                    ", ".join(sorted(view["down"])) or "none", host, allowed, p["pool_size"], p["min_serving"], least)))
        if module.check_mode:
            return _result(view, changed=True, claimed=True, budget=dict(budget, out=after), attempts=attempt,
                           waited=waited, reason="")
        lease = store.gw.grant(p["ttl"])
        value = json.dumps({"holder": holder, "since": round(time.time(), 3), "ttl": p["ttl"]})
        if store.write(view["guard"], [put_op(store.claim_key(host), value, lease)]):
            view = store.read()
            return _result(view, changed=True, claimed=True, budget=dict(budget, out=after), attempts=attempt,
                           waited=waited, reason="")
        store.gw.revoke(lease)  # another slice wrote first: read again
        races += 1
        if races >= p["retries"]:
            module.fail_json(msg="fleet_claim: the claim of %s in pool %s lost the race %d times; the store is too "
                                 "busy, or a writer loops" % (host, p["pool"], p["retries"]))
        retry_pause(races)


def _canary_view(kv):
    try:
        value = json.loads(kv["value"])
    except ValueError:
        value = {}
    return dict((k, value.get(k, "")) for k in ("host", "holder", "state", "reason"))


def canary(module, store, p):
    """Elect the pool's canary for the release (or wait for its outcome), or record the outcome."""
    key = store.canary_key(p["release"])
    host, holder = p["host"], p["holder"]
    started, attempt = time.monotonic(), 0
    while attempt < p["retries"] + int(p["wait"]) + 1:
        attempt += 1
        waited = round(time.monotonic() - started, 1)
        kv = store.gw.get(key)
        now = _canary_view(kv) if kv else None
        ours = bool(now) and now["host"] == host and now["holder"] == holder
        if p["outcome"]:
            if now and not ours:
                module.fail_json(msg="fleet_claim: the canary of release %s in pool %s is %s (holder %s), not %s (%s): "
                                     "only the canary records its outcome" % (p["release"], p["pool"], now["host"],
                                                                              now["holder"], host, holder))
            record = {"host": host, "holder": holder, "state": p["outcome"], "reason": p["reason"],
                      "at": round(time.time(), 3)}
            if now and now["state"] == p["outcome"] and now["reason"] == p["reason"]:
                return dict(changed=False, is_canary=True, canary=now, attempts=attempt, waited=waited)
            if module.check_mode:
                return dict(changed=True, is_canary=True, canary=_canary_view({"value": json.dumps(record)}),
                            attempts=attempt, waited=waited)
            # kept with no lease: the outcome outlives the canary's run
            if store.gw.txn([mod_is(key, kv["mod_revision"] if kv else 0)], [put_op(key, json.dumps(record))]):
                if kv and kv["lease"]:
                    store.gw.revoke(kv["lease"])
                return dict(changed=True, is_canary=True, canary=_canary_view({"value": json.dumps(record)}),
                            attempts=attempt, waited=waited)
            retry_pause(attempt)
            continue
        if now is None:
            record = {"host": host, "holder": holder, "state": "running", "reason": "", "at": round(time.time(), 3)}
            if module.check_mode:
                return dict(changed=True, is_canary=True, canary=_canary_view({"value": json.dumps(record)}),
                            attempts=attempt, waited=waited)
            lease = store.gw.grant(p["ttl"])
            if store.gw.txn([mod_is(key, 0)], [put_op(key, json.dumps(record), lease)]):
                return dict(changed=True, is_canary=True, canary=_canary_view({"value": json.dumps(record)}),
                            attempts=attempt, waited=waited)
            store.gw.revoke(lease)  # another slice's host became the canary first: read it
            retry_pause(attempt)
            continue
        if ours:
            if now["state"] == "running" and kv["lease"] and not module.check_mode:
                store.gw.keepalive(kv["lease"])
            return dict(changed=False, is_canary=True, canary=now, attempts=attempt, waited=waited)
        if now["state"] != "running" or module.check_mode or time.monotonic() - started >= p["wait"]:
            return dict(changed=False, is_canary=False, canary=now, attempts=attempt, waited=waited)
        time.sleep(1)  # the canary runs: its outcome decides for every other host of the pool
    module.fail_json(msg="fleet_claim: the canary of release %s in pool %s could not be read or written in %d tries"
                         % (p["release"], p["pool"], attempt))


def release(module, store, p):
    host, holder = p["host"], p["holder"]
    for attempt in range(1, p["retries"] + 1):
        view = store.read()
        mine = view["claims"].get(host)
        ops, did = [], []
        if mine and mine.get("holder") != holder:
            # another holder's claim is its own to release (or to expire with its lease)
            did.append("claim kept: %s is claimed by %s, not %s" % (host, mine.get("holder", "?"), holder or "this call"))
            mine = None
        elif mine:
            ops.append(delete_op(store.claim_key(host)))
            did.append("claim released")
        if p["down"] and host not in view["down"]:
            value = json.dumps({"holder": holder, "since": round(time.time(), 3)})
            ops.append(put_op(store.down_key(host), value))
            did.append("left down (counts against the budget until released with down=false)")
        elif not p["down"] and host in view["down"]:
            ops.append(delete_op(store.down_key(host)))
            did.append("back in the pool")
        if not ops:
            return _result(view, changed=False, claimed=False, budget={}, attempts=attempt, waited=0.0,
                           reason="; ".join(did) or "nothing held")
        if module.check_mode:
            return _result(view, changed=True, claimed=False, budget={}, attempts=attempt, waited=0.0,
                           reason="; ".join(did))
        if store.write(view["guard"], ops):
            if mine and mine.get("lease"):
                store.gw.revoke(mine["lease"])
            return _result(store.read(), changed=True, claimed=False, budget={}, attempts=attempt, waited=0.0,
                           reason="; ".join(did))
        retry_pause(attempt)
    module.fail_json(msg="fleet_claim: the release of %s in pool %s lost the race %d times" % (host, p["pool"], p["retries"]))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            store_url=dict(type="str", required=True),
            prefix=dict(type="str", default="/glm53/heal"),
            pool=dict(type="str", required=True),
            host=dict(type="str", required=True),
            state=dict(type="str", choices=["claimed", "released", "canary"], default="claimed"),
            release=dict(type="str", default=""),
            outcome=dict(type="str", choices=["", "passed", "failed"], default=""),
            reason=dict(type="str", default=""),
            wait=dict(type="int", default=0),
            pool_size=dict(type="int", default=0),
            min_serving=dict(type="raw", default="50%"),
            ttl=dict(type="int", default=900),
            holder=dict(type="str", default=""),
            down=dict(type="bool", default=False),
            retries=dict(type="int", default=50),
            timeout=dict(type="int", default=10),
            ca_path=dict(type="path"),
            validate_certs=dict(type="bool", default=True),
        ),
        required_if=[("state", "claimed", ("holder",)), ("state", "canary", ("holder", "release"))],
        supports_check_mode=True,
    )
    p = module.params
    if not re.match(r"https?://[^/\s]+", p["store_url"] or ""):
        module.fail_json(msg="fleet_claim: store_url=%r must be an http or https URL of etcd (http://etcd:2379)" % p["store_url"])
    if not _POOL.fullmatch(p["pool"]):
        module.fail_json(msg="fleet_claim: pool=%r must be letters, digits, '.', '_' and '-'" % p["pool"])
    if not p["host"] or "/" in p["host"]:
        module.fail_json(msg="fleet_claim: host=%r must be a host name with no '/'" % p["host"])
    if p["retries"] < 1 or p["timeout"] < 1:
        module.fail_json(msg="fleet_claim: retries and timeout must be 1 or more")
    if p["wait"] < 0 or p["wait"] > 86400:
        module.fail_json(msg="fleet_claim: wait=%d must be 0 to 86400 seconds" % p["wait"])
    if p["state"] == "canary":
        if not _POOL.fullmatch(p["release"] or ""):
            module.fail_json(msg="fleet_claim: release=%r must be a release id (letters, digits, '.', '_' and '-')"
                                 % p["release"])
        if p["ttl"] < 5:
            module.fail_json(msg="fleet_claim: ttl=%d: the canary's lease must live 5 seconds or more" % p["ttl"])
    if p["state"] == "claimed":
        if not p["holder"]:
            module.fail_json(msg="fleet_claim: a claim needs its holder (the slice's run id)")
        if p["pool_size"] < 1:
            module.fail_json(msg="fleet_claim: pool_size=%d: a claim needs the whole pool's size (1 or more)" % p["pool_size"])
        if p["ttl"] < 5:
            module.fail_json(msg="fleet_claim: ttl=%d: a claim's lease must live 5 seconds or more" % p["ttl"])
        try:
            least = minimum(p["min_serving"], p["pool_size"])
        except (TypeError, ValueError):
            module.fail_json(msg="fleet_claim: min_serving=%r must be a count or a percentage (75%%)" % p["min_serving"])
        if least < 0 or least > p["pool_size"]:
            module.fail_json(msg="fleet_claim: min_serving=%r is %d, outside 0..pool_size=%d" % (p["min_serving"], least, p["pool_size"]))
    store = PoolClaims(EtcdGateway(p["store_url"], timeout=p["timeout"], ca_path=p["ca_path"],
                                   validate_certs=p["validate_certs"]), p["prefix"], p["pool"])
    try:
        out = {"claimed": claim, "released": release, "canary": canary}[p["state"]](module, store, p)
    except StoreError as err:
        module.fail_json(msg="fleet_claim: the store at %s: %s" % (p["store_url"], err))
    module.exit_json(**out)


if __name__ == "__main__":
    main()
