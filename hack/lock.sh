#!/usr/bin/env bash
# `make lock`: re-resolve the controller toolchain's ranges (CORE_PIN and TOOL_PINS in hack/lib.sh) in a fresh
# venv and write every resolved version to hack/constraints.txt, which ensure_venv installs with. Review the
# diff, run `make test`, commit both. The contract venv's list (tests/contract/requirements-vllm-0.28.0.txt)
# is already a lock: every distribution pinned and installed --no-deps; this checks that it still installs.
set -euo pipefail
# shellcheck source=hack/lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$WORK/lock-venv

# lock PYTHON OUT WHAT PINS...: resolve PINS in a fresh venv of PYTHON and write every resolved version to OUT,
# headed by what installs with it (WHAT).
lock() {
  local py=$1 out=$2 what=$3
  shift 3
  rm -rf "$tmp" && "$py" -m venv "$tmp"
  "$tmp/bin/pip" install -q --upgrade pip
  "$tmp/bin/pip" install -q "$@"
  {
    echo "# Resolved by 'make lock' (hack/lock.sh) on $(date -u +%Y-%m-%d) with $("$tmp/bin/python" -V) from the ranges"
    echo "# in hack/lib.sh; $what installs with -c this file. Do not edit by hand."
    "$tmp/bin/pip" freeze --exclude-editable | LC_ALL=C sort -f
  } >"$out"
  rm -rf "$tmp"
  echo "wrote $out ($(grep -c '==' "$out") pins)"
}

py=$(find_python 12 99) || { echo "no Python >= 3.12 found" >&2; exit 1; }
lock "$py" "$REPO/hack/constraints.txt" "ensure_venv (the tool venv)" "$CORE_PIN" "${TOOL_PINS[@]}"
lock "$py" "$REPO/hack/constraints-ship.txt" "ensure_ship_venv (the shipping checks' venv)" "${SHIP_PINS[@]}"
py=$(find_python 11 11) || { echo "no Python 3.11: the lowest controller's lock not made" >&2; exit 1; }
lock "$py" "$REPO/hack/constraints-low.txt" "ensure_low_venv (the lowest supported controller's venv)" "${LOW_PINS[@]}"
req=$REPO/tests/contract/requirements-vllm-0.28.0.txt
py=$(find_python 11 11) || { echo "no Python 3.11: contract lock not checked" >&2; exit 0; }
"$py" -m venv "$tmp"
"$tmp/bin/pip" install -q --dry-run --no-deps -r "$req" && echo "contract lock $(basename "$req"): every pin resolves"
rm -rf "$tmp"
