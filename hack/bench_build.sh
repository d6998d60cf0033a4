#!/usr/bin/env bash
# Benchmark (prints figures, asserts nothing): wall time of the build roles' first converge and of a
# re-run on the converged host, in the molecule `build` scenario (fixture fork and FlashInfer).
#   bash hack/bench_build.sh
set -uo pipefail
# shellcheck source=hack/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO" || exit 1
trap 'molecule destroy -s build >/dev/null 2>&1; stop_dockerd' EXIT
ensure_apt && ensure_venv && ensure_collections && start_dockerd && ensure_images || exit 1
molecule destroy -s build >/dev/null 2>&1
molecule create -s build >/dev/null && molecule prepare -s build >/dev/null || exit 1
t() { local s e; s=$(date +%s.%N); molecule converge -s build >"$WORK/bench-$1.log" 2>&1 || { tail -20 "$WORK/bench-$1.log"; exit 1; }
      e=$(date +%s.%N); python3 -c "print('%s %.1f' % ('$1', $e - $s))"; }
first=$(t first) && rerun=$(t rerun) || exit 1
changed=$(grep -Eo 'changed=[0-9]+' "$WORK/bench-rerun.log" | tail -1)
echo "build roles (venv, flashinfer, vllm_fork), one host, fixture repositories:"
echo "  first converge: ${first#first } s (includes molecule's ~3 s start-up)"
echo "  re-run:         ${rerun#rerun } s, $changed, nothing rebuilt"
