#!/usr/bin/env bash
# The cost of a second run: playbooks/site.yml again on the converged demo host (`make demo` first), with molecule's
# inventory and ansible.cfg (pipelining, profile_tasks). The demo's converge pins the fixture fork's commits in a play
# of its own (test scaffolding, a remote read); here they are read once before the runs and given as extra vars, so
# what is timed is site.yml alone, as an operator runs it. Prints the wall time, the controller's CPU time, the tasks
# run, ok/changed/skipped, the times the controller reached into the host (each a `docker exec` of the docker
# connection: a module run, or a file put, counted by a docker command earlier on PATH that notes each exec and
# runs the real one), and the slowest tasks. A converged host must report changed=0. First, playbooks/validate.yml
# alone on the same inventory (every role's settings checked, nothing changed): its tasks and time.
#   bash hack/bench_rerun.sh [RUNS]   (default 1)
set -uo pipefail
# shellcheck source=hack/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO" || exit 1
runs=${1:-1}
# The newest default scenario's folder that molecule converged into (another scenario's run may leave an empty one).
eph=$(find "$HOME/.ansible/tmp" -maxdepth 2 -path '*/molecule.*.default/ansible.cfg' -printf '%T@ %h\n' 2>/dev/null | sort -rn | head -1 | cut -d' ' -f2)
if [ -z "$eph" ] || ! docker exec glm53-node1 true 2>/dev/null; then
  echo "bench_rerun: no converged demo host; run make demo first" >&2
  exit 2
fi
ensure_venv >/dev/null || exit 1
export ANSIBLE_CONFIG=$eph/ansible.cfg MOLECULE_EPHEMERAL_DIRECTORY=$eph MOLECULE_FILE=$eph/molecule.yml \
  MOLECULE_SCENARIO_DIRECTORY=$REPO/molecule/default ANSIBLE_COLLECTIONS_PATH=$WORK/collections
# The same values molecule/build/tasks/pins.yml sets, from the same file on the host.
pins=$(mktemp --suffix=.json)
trap 'rm -f "$pins"' EXIT
docker exec glm53-node1 cat /srv/mirrors/commits.json | python3 -c '
import json, sys
c = json.load(sys.stdin)
json.dump({"fixture_commits": c, "flashinfer_version": "v0.6.18", "vllm_fork_minimum_commit": c["minimum"][:10],
           "vllm_fork_required_commits": [{"commit": c["mhc"][:9], "name": "mHC fused-norm fix"},
                                          {"commit": c["longctx"][:9], "name": "long-context graph fix"}]}, sys.stdout)
' >"$pins" || { echo "bench_rerun: cannot read the fixture's commits on the demo host" >&2; exit 2; }
# The counting docker: every `docker exec` on the host's container, one line each.
shim=$(mktemp -d)
trap 'rm -f "$pins"; rm -rf "$shim"' EXIT
real_docker=$(command -v docker)
cat >"$shim/docker" <<SH
#!/bin/sh
[ "\$1" = exec ] && echo "\$*" | cut -c1-160 >>"$shim/execs"
exec "$real_docker" "\$@"
SH
chmod +x "$shim/docker"
export PATH="$shim:$PATH"
for i in validate $(seq "$runs"); do
  : >"$shim/execs"
  book=playbooks/site.yml
  [ "$i" = validate ] && book=playbooks/validate.yml
  log=$(mktemp)
  t0=$(date +%s.%N)
  /usr/bin/time -f '%U %S' -o "$log.cpu" ansible-playbook -i "$eph/inventory" "$book" -e "@$pins" >"$log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  python3 - "$log" "$rc" "$(cat "$log.cpu")" "$t0" "$t1" "$i" "$(grep -vc 'echo FOUND' "$shim/execs")" "$(grep -c 'echo FOUND' "$shim/execs")" <<'PY'
import re, sys
log, rc, cpu, t0, t1, run, execs, discovery = sys.argv[1:]
lines = open(log, errors="replace").read().splitlines()
recap = next((l for l in lines if re.match(r"^glm53-node1\s+: ok=", l)), "no recap")
times, prev = [], None
for i, line in enumerate(lines):
    m = re.match(r"^(?:TASK|RUNNING HANDLER) \[(.*)\] \*+", line) or re.match(r"^(PLAY RECAP)", line)
    if not m:
        continue
    d = next((re.search(r"\((\d+):(\d+):(\d+\.\d+)\)", l) for l in lines[i + 1:i + 3] if re.search(r"\(\d+:\d+:\d+\.\d+\)", l)), None)
    if d and prev:
        times.append((int(d.group(2)) * 60 + float(d.group(3)), prev))
    prev = m.group(1)
user, system = (float(x) for x in cpu.split()[-2:])
print("%s: rc=%s wall %.1f s, controller CPU %.1f s, %d tasks, %s remote module runs (+%s interpreter discovery); %s" % (
    "validate.yml" if run == "validate" else "site.yml run %s" % run, rc, float(t1) - float(t0), user + system, len(times),
    execs.strip(), discovery.strip(), " ".join(recap.split()[2:6])))
slow = sorted(times, reverse=True)
print("  tasks over 0.25 s (remote module runs, mostly): %d, %.1f s; the rest: %d, %.1f s" % (
    sum(1 for t, _ in times if t >= 0.25), sum(t for t, _ in times if t >= 0.25),
    sum(1 for t, _ in times if t < 0.25), sum(t for t, _ in times if t < 0.25)))
for t, name in slow[:int(__import__("os").environ.get("BENCH_TOP", "8"))]:
    print("  %5.2f s  %s" % (t, name))
PY
  [ -n "${BENCH_KEEP_LOG:-}" ] && cp "$log" "$BENCH_KEEP_LOG.$i"
  [ -n "${BENCH_KEEP_LOG:-}" ] && cp "$shim/execs" "$BENCH_KEEP_LOG.$i.execs"
  rm -f "$log" "$log.cpu"
done
