# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The fleet's one truth for sliced runs: etcd v3 through its JSON gateway (standard library only).

Sliced runs (AWX job slicing) decide about one pool from several controllers. What one decides must be seen by the
others before they decide, so the write side of a decision is an atomic claim in etcd: a key per claimed host,
attached to a lease (a claim whose holder dies expires with its lease), written in one transaction that also moves
the pool's guard key, and only if the guard has not moved since the claims were read. Two slices that read the
same claims cannot both write: the second's transaction fails its compare, and it reads again.

Keys under <prefix>/<pool>/: ``guard`` (moved by every write; its mod_revision is what a writer compares),
``claims/<host>`` (a host taken out of the pool now, on a lease of ttl seconds) and ``down/<host>`` (a host left
out of the pool by a heal, no lease: it counts until a later heal or a person brings it back).

The gateway's JSON is the gRPC messages' JSON mapping: keys and values base64, int64 fields as strings, fields at
their zero value left out (``succeeded`` is absent when a transaction's compare failed).
"""

from __future__ import annotations

import base64
import json
import random
import time

from urllib.error import HTTPError, URLError

from ansible.module_utils.urls import open_url


class StoreError(Exception):
    """The store could not be read or written (unreachable, refused, or an answer that is not etcd's)."""


def _b64(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def _unb64(text):
    return base64.b64decode(text or "").decode("utf-8")


def prefix_end(key):
    """The range_end (bytes) that makes a range over every key starting with key: etcd's rule, the key's bytes with
    the last one that is not 0xff increased by one and the rest dropped (b"\\0", every key, when all are 0xff)."""
    raw = bytearray(key.encode("utf-8"))
    for i in range(len(raw) - 1, -1, -1):
        if raw[i] < 0xFF:
            raw[i] += 1
            return bytes(raw[:i + 1])
    return b"\0"


class EtcdGateway(object):
    """etcd v3's JSON gateway at url (http or https): POST /v3/<service>/<method> with a JSON body."""

    def __init__(self, url, timeout=10, ca_path=None, validate_certs=True):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.ca_path = ca_path
        self.validate_certs = validate_certs

    def call(self, path, body):
        try:
            resp = open_url(self.url + path, method="POST", data=json.dumps(body),
                            headers={"Content-Type": "application/json"}, timeout=self.timeout,
                            ca_path=self.ca_path, validate_certs=self.validate_certs, follow_redirects="none")
            raw = resp.read()
        except HTTPError as err:
            detail = err.read().decode("utf-8", "replace").strip()
            raise StoreError("%s%s answered %s: %s" % (self.url, path, err.code, detail[:300]))
        except (URLError, OSError, ValueError) as err:
            raise StoreError("%s%s: %s" % (self.url, path, getattr(err, "reason", err)))
        try:
            out = json.loads(raw.decode("utf-8"))
        except ValueError:
            raise StoreError("%s%s did not answer JSON (is it etcd v3.4 or later?): %r" % (self.url, path, raw[:200]))
        if not isinstance(out, dict) or "error" in out:
            raise StoreError("%s%s: %s" % (self.url, path, out.get("error") if isinstance(out, dict) else out))
        return out

    # ---- kv
    def range_prefix(self, key):
        """(the store's revision, {key: {'value', 'mod_revision', 'create_revision', 'lease'}}) under the prefix."""
        end = base64.b64encode(prefix_end(key)).decode("ascii")
        out = self.call("/v3/kv/range", {"key": _b64(key), "range_end": end})
        kvs = {}
        for kv in out.get("kvs") or []:
            kvs[_unb64(kv["key"])] = {"value": _unb64(kv.get("value")), "mod_revision": int(kv.get("mod_revision", 0)),
                                      "create_revision": int(kv.get("create_revision", 0)),
                                      "lease": int(kv.get("lease", 0))}
        return int(out.get("header", {}).get("revision", 0)), kvs

    def get(self, key):
        """The one key's {'value', 'mod_revision', 'create_revision', 'lease'}, or None when it does not exist."""
        out = self.call("/v3/kv/range", {"key": _b64(key)})
        for kv in out.get("kvs") or []:
            return {"value": _unb64(kv.get("value")), "mod_revision": int(kv.get("mod_revision", 0)),
                    "create_revision": int(kv.get("create_revision", 0)), "lease": int(kv.get("lease", 0))}
        return None

    def txn(self, compare, success, failure=None):
        """Whether the compares held (and success ran; else failure ran)."""
        out = self.call("/v3/kv/txn", {"compare": compare, "success": success, "failure": failure or []})
        return bool(out.get("succeeded", False))

    # ---- leases
    def grant(self, ttl):
        out = self.call("/v3/lease/grant", {"TTL": int(ttl), "ID": 0})
        if not out.get("ID"):
            raise StoreError("the store granted no lease: %s" % (out.get("error") or out))
        return int(out["ID"])

    def revoke(self, lease):
        """Revoke the lease (the keys attached to it go with it); a lease already gone is no error."""
        try:
            self.call("/v3/lease/revoke", {"ID": int(lease)})
        except StoreError as err:
            if "not found" not in str(err):
                raise

    def keepalive(self, lease):
        """The lease's TTL after a keep-alive, 0 when it is gone (the gateway answers a stream of results)."""
        out = self.call("/v3/lease/keepalive", {"ID": int(lease)})
        result = out.get("result", out)
        return int(result.get("TTL", 0))


def put_op(key, value, lease=0):
    req = {"key": _b64(key), "value": _b64(value)}
    if lease:
        req["lease"] = str(lease)
    return {"request_put": req}


def delete_op(key):
    return {"request_delete_range": {"key": _b64(key)}}


def mod_is(key, revision):
    """Compare: key's mod_revision is revision (0: the key does not exist)."""
    return {"key": _b64(key), "target": "MOD", "result": "EQUAL", "mod_revision": str(int(revision))}


class PoolClaims(object):
    """The claims of one pool: who is taken out of it now (claims), who was left out (down), and the guard."""

    def __init__(self, gateway, prefix, pool):
        self.gw = gateway
        self.base = "%s/%s/" % (prefix.rstrip("/"), pool)
        self.guard = self.base + "guard"

    def read(self):
        """{'guard': mod_revision (0: never written), 'claims': {host: value}, 'down': {host: value}}."""
        _rev, kvs = self.gw.range_prefix(self.base)
        out = {"guard": 0, "claims": {}, "down": {}}
        for key, kv in kvs.items():
            rest = key[len(self.base):]
            if rest == "guard":
                out["guard"] = kv["mod_revision"]
                continue
            kind, _sep, host = rest.partition("/")
            if kind in ("claims", "down") and host:
                try:
                    value = json.loads(kv["value"])
                except ValueError:
                    value = {"raw": kv["value"]}
                value["lease"] = kv["lease"]
                out[kind][host] = value
        return out

    def write(self, seen_guard, ops):
        """The ops and a moved guard, in one transaction, only if the guard is still at seen_guard."""
        stamp = json.dumps({"at": round(time.time(), 3)})
        return self.gw.txn([mod_is(self.guard, seen_guard)], list(ops) + [put_op(self.guard, stamp)])

    def canary_key(self, release):
        return self.base + "canary/" + release

    def claim_key(self, host):
        return self.base + "claims/" + host

    def down_key(self, host):
        return self.base + "down/" + host


def retry_pause(attempt):
    """A short random pause before reading again after a lost race (so racing slices spread out)."""
    time.sleep(random.uniform(0.01, 0.05) * min(attempt + 1, 8))
