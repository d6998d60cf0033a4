"""A report of the whole fleet from sliced runs (AWX/AAP job slicing): six stand-in engines on this machine (two
answering gibberish), a real etcd, and the probes role run as three concurrent ansible-runner jobs, each over its
slice of the inventory (slice i gets hosts[i::3], as AWX slices) and each with its own controller folder, as
execution nodes have. Each slice keeps its hosts' evidence in the store (glm53_store_url); then playbooks/report.yml,
run from a fourth controller folder that probed nothing, makes the fleet's report from the store. It must equal,
host by host, the report of the same fleet probed unsliced (each host's verdict, causes, engine and reason; the
fleet's note on a differing answer is what its slice saw), and name the slice that probed each host."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from testlib import COLLECTIONS_ROOT, REPO, StandIn

from ansible_collections.glm53.serving.plugins.module_utils._fleet_store import EtcdGateway

if shutil.which("etcd") is None:  # pragma: no cover - hack/lib.sh installs etcd-server
    print("test_sliced_report: skipped, no etcd binary (apt-get install etcd-server)")
    pytest.skip("no etcd binary (Debian's etcd-server; hack/lib.sh installs it)", allow_module_level=True)
ansible_runner = pytest.importorskip("ansible_runner", reason="ansible-runner (hack/lib.sh's tool venv has it)")

PROBES = os.path.join(REPO, "tests", "integration", "probes", "playbook.yml")
REPORT = os.path.join(REPO, "playbooks", "report.yml")
# GLM53_SLICED_REPORT_HOSTS and _SLICES size the fleet for a run on a bigger machine (its wall times are the figures
# docs/awx.md gives); every job runs with the same forks, as an AWX job template gives each slice its own.
HOSTS = int(os.environ.get("GLM53_SLICED_REPORT_HOSTS", "6"))
SLICES = int(os.environ.get("GLM53_SLICED_REPORT_SLICES", "3"))
FORKS = "5"
GIBBERISH = {"s01", "s04"}
# quick probes: the chat smoke and the numerics (the needle and the benchmark are not what this test is about)
EXTRA = {"ansible_python_interpreter": sys.executable, "service_mode": "none", "probes_needle": False,
         "probes_bench_label": "current", "probes_textfile_dir": ""}
# what a host's line of the report says, less when it was probed and by whom
SAME = ("host", "passed", "causes", "engine_version", "engine_commit")
# the fleet's word on a differing answer ("it differs from N of M hosts of this release"), which each slice says from
# the hosts it probed and the evidence the store held when it probed (a slice does not wait for the others)
FLEET_NOTE = re.compile(r" \(it differs(?: from \d+ of \d+ hosts of this release, which answered «[^»]*»\)|[^(]*?…)")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, request):
    tmp = tmp_path_factory.mktemp("fleet")
    hosts = {}
    for i in range(HOSTS):
        name = "s%02d" % i
        (tmp / name).mkdir()
        env = {"VLLM_STANDIN_BEHAVIOUR": "gibberish"} if name in GIBBERISH else {}
        engine = StandIn(tmp / name, env=env).start().wait_ready()
        request.addfinalizer(engine.stop)
        # each host's own folders and ledger (the hosts are all this machine)
        hosts[name] = {"serve_url": engine.url, "probes_evidence_dir": str(tmp / name / "evidence"),
                       "__glm53_ledger_file": str(tmp / name / "ledger.json"), "ansible_connection": "local"}
    return tmp, hosts


def _extra(tmp, controller, **more):
    """A controller's own folders (its report and references), as each execution node has its own."""
    return dict(EXTRA, probes_report_dir=str(tmp / controller / "report"),
                probes_reference_store=str(tmp / controller / "references"), **more)


def _summary(tmp, controller):
    with open(tmp / controller / "report" / "summary.json") as fh:
        return json.load(fh)


def _lines(summary):
    return dict((h["host"], dict([(k, h[k]) for k in SAME] + [("reason", FLEET_NOTE.sub("", h["reason"]))]))
                for h in summary["hosts"])


def test_the_report_from_the_store_is_the_unsliced_fleets(fleet, etcd):
    tmp, hosts = fleet
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORKS": FORKS}
    inventory = tmp / "hosts.json"
    inventory.write_text(json.dumps({"glm53_serving": {"hosts": hosts}}))

    # 1. unsliced, one controller, no store
    t0 = time.monotonic()
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), PROBES, "-e", json.dumps(_extra(tmp, "one"))],
                          capture_output=True, text=True, env=env, timeout=900, check=False)
    unsliced_s = time.monotonic() - t0
    assert "PLAY RECAP" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-2000:]
    one = _summary(tmp, "one")
    print("\nsliced report: unsliced probes of %d hosts in %.1f s: %d pass" % (HOSTS, unsliced_s, one["passed"]))
    assert one["total"] == HOSTS and one["passed"] == HOSTS - len(GIBBERISH), one["hosts"]

    # 2. the same probes as concurrent jobs over AWX's slices, each on its own controller folder, with the store
    names = sorted(hosts)

    def probe_sliced(label):
        jobs = {}
        for i in range(SLICES):
            pdd = tmp / ("%s%d" % (label, i))
            (pdd / "project").mkdir(parents=True)
            shutil.copy(PROBES, pdd / "project" / "probes.yml")
            (pdd / "inventory").mkdir()
            (pdd / "inventory" / "hosts.json").write_text(json.dumps(
                {"glm53_serving": {"hosts": dict((n, hosts[n]) for n in names[i::SLICES])}}))
            extravars = _extra(tmp, "node%d" % i, glm53_store_url=etcd, awx_job_id="slice-%d" % i)
            jobs[i] = ansible_runner.run_async(
                private_data_dir=str(pdd), playbook="probes.yml", extravars=extravars, quiet=True,
                envvars={"ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORKS": FORKS,
                         "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")})
        for i, (thread, runner) in jobs.items():
            thread.join(900)
            assert not thread.is_alive(), "slice %d ran past 900 s" % i
            # a slice with a gibberish host fails it, as the probes do; each still kept its evidence
            mine = set(names[i::SLICES])
            assert runner.status == ("failed" if mine & GIBBERISH else "successful"), (i, runner.status)

    t0 = time.monotonic()
    probe_sliced("slice")
    sliced_s = time.monotonic() - t0
    # each slice's own report holds its hosts and the store's others it saw: not relied on; the store has them all
    _rev, kvs = EtcdGateway(etcd).range_prefix("/glm53/evidence/")
    assert sorted(json.loads(v["value"])["host"] for v in kvs.values()) == names

    # 3. any controller: the report made from the store, on a folder that probed nothing
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), REPORT, "-e",
                           json.dumps(_extra(tmp, "any", glm53_store_url=etcd))],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    merged = _summary(tmp, "any")
    print("sliced report: %d slices in %.1f s (unsliced %.1f s); the report from the store: %d of %d hosts pass, "
          "each named by its slice" % (SLICES, sliced_s, unsliced_s, merged["passed"], merged["total"]))
    print("sliced probes: %d hosts, %d slices %.1f s against one controller %.1f s: %.2fx (forks %s a job, this machine, "
          "%d cores)" % (HOSTS, SLICES, sliced_s, unsliced_s, sliced_s / unsliced_s, FORKS, os.cpu_count()))
    differ = dict((h, (_lines(merged)[h], line)) for h, line in _lines(one).items() if _lines(merged).get(h) != line)
    assert not differ and sorted(_lines(merged)) == names, json.dumps(differ, indent=1, ensure_ascii=False)[:3000]
    for line in merged["hosts"]:
        i = names.index(line["host"]) % SLICES
        assert line["slice"]["job"] == "slice-%d" % i and line["slice"]["run"], line
    assert merged["run"]["probed"] == [] and sorted(merged["run"]["kept"]) == names

    # 4. the fleet's reference median is the whole release's: a slice reads every other host's last figures from the
    # store, so once every slice has probed, each host's median is the unsliced run's (a slice alone has too few)
    t0 = time.monotonic()
    probe_sliced("again")
    _rev, kvs = EtcdGateway(etcd).range_prefix("/glm53/evidence/")
    again = dict((e["host"], e) for e in (json.loads(v["value"]) for v in kvs.values()))
    unsliced = {}
    for n in names:
        with open(tmp / "one" / "report" / (n + ".json")) as fh:
            unsliced[n] = json.load(fh)
    whole = unsliced[names[0]]["reference"]["fleet_median"]
    differ = sorted(n for n in names if again[n]["chat"]["agreement"] != unsliced[n]["chat"]["agreement"])
    print("sliced report: over the whole fleet in every slice (%.1f s): the reference median %s; the answers' "
          "agreement as unsliced on %d of %d hosts (%d named as differing)"
          % (time.monotonic() - t0, whole, len(names) - len(differ), len(names),
             sum(1 for n in names if unsliced[n]["chat"]["agreement"])))
    assert whole and all(again[n]["reference"]["fleet_median"] == whole for n in names), again
    assert not differ and any(unsliced[n]["chat"]["agreement"] for n in names), differ


def test_the_store_refuses_what_is_not_evidence(etcd, run_module):
    """A host name with '/' (a key outside the host's) is refused, and nothing is written."""
    from ansible_collections.glm53.serving.plugins.modules import evidence_store
    out = run_module(evidence_store, {"store_url": etcd, "prefix": "/glm53/test-refuse",
                                      "evidence": [{"host": "../x", "passed": True}]})
    assert out.failed and "needs its host" in out["msg"], out
    out = run_module(evidence_store, {"store_url": etcd, "prefix": "/glm53/test-refuse"})
    assert not out.failed and out["evidence"] == [] and out["written"] == [], out
    out = run_module(evidence_store, {"store_url": "etcd:2379"})
    assert out.failed and "not an http or https URL" in out["msg"], out
