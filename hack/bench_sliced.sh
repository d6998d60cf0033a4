#!/usr/bin/env bash
# Sliced runs against one controller, on this machine: tests/integration/test_sliced_runs.py's upgrade (one canary,
# the pool's limit of hosts down) run unsliced first (one controller, rollout_serial 4, no store) and then as four
# concurrent ansible-runner slices with the store, and test_sliced_report.py's probes of the fleet, unsliced and
# sliced, each with the same forks a job. Prints each run's wall time and the ratio, sliced against unsliced, with
# this machine's cores: the ratio depends on the cores (the slices share them here; on AWX each slice has an
# execution node of its own).
#   bash hack/bench_sliced.sh [HOSTS] [REPORT_HOSTS]   (default 40 and 40: four slices each)
set -uo pipefail
# shellcheck source=hack/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO" || exit 1
ensure_venv >/dev/null && ensure_collections >/dev/null || exit 1
export GLM53_SLICED_BASELINE=1 GLM53_SLICED_HOSTS="${1:-40}" GLM53_SLICED_REPORT_HOSTS="${2:-40}" \
  GLM53_SLICED_REPORT_SLICES=4
"$VENV/bin/python" -m pytest -p no:cacheprovider -q -s tests/integration/test_sliced_runs.py \
  tests/integration/test_sliced_report.py -k "upgrade or report_from_the_store" 2>&1 \
  | grep -E "^(sliced|stage|  up-)|passed|failed"
