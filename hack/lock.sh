#!/usr/bin/env bash
# `make lock`: re-resolve the controller toolchain's ranges (CORE_PIN and TOOL_PINS in hack/lib.sh) in a fresh
# venv and write every resolved version to hack/constraints.txt, which ensure_venv installs with. Review the
# diff, run `make test`, commit both. The contract venv's list (tests/contract/requirements-vllm-0.28.0.txt)
# is already a lock: every distribution pinned and installed --no-deps; this checks that it still installs.
set -euo pipefail
# shellcheck source=hack/lib.sh
. "$(dirname "$0")/lib.sh"
out=$REPO/hack/constraints.txt tmp=$WORK/lock-venv
py=$(find_python 12 99) || { echo "no Python >= 3.12 found" >&2; exit 1; }
rm -rf "$tmp" && "$py" -m venv "$tmp"
"$tmp/bin/pip" install -q --upgrade pip
"$tmp/bin/pip" install -q "$CORE_PIN" "${TOOL_PINS[@]}"
{
  echo "# Resolved by 'make lock' (hack/lock.sh) on $(date -u +%Y-%m-%d) with $("$tmp/bin/python" -V) from the ranges"
  echo "# in hack/lib.sh; ensure_venv installs the tool venv with -c this file. Do not edit by hand."
  "$tmp/bin/pip" freeze --exclude-editable | LC_ALL=C sort -f
} >"$out"
rm -rf "$tmp"
echo "wrote $out ($(grep -c '==' "$out") pins)"
ship=$REPO/hack/constraints-ship.txt
rm -rf "$tmp" && "$py" -m venv "$tmp"
"$tmp/bin/pip" install -q --upgrade pip
"$tmp/bin/pip" install -q "${SHIP_PINS[@]}"
{
  echo "# Resolved by 'make lock' (hack/lock.sh) on $(date -u +%Y-%m-%d) from SHIP_PINS in hack/lib.sh; ensure_ship_venv installs"
  echo "# the shipping checks' venv with -c this file. Do not edit by hand."
  "$tmp/bin/pip" freeze --exclude-editable | LC_ALL=C sort -f
} >"$ship"
rm -rf "$tmp"
echo "wrote $ship ($(grep -c '==' "$ship") pins)"
low=$REPO/hack/constraints-low.txt
py=$(find_python 11 11) || { echo "no Python 3.11: the lowest controller's lock not made" >&2; exit 1; }
rm -rf "$tmp" && "$py" -m venv "$tmp"
"$tmp/bin/pip" install -q --upgrade pip
"$tmp/bin/pip" install -q "${LOW_PINS[@]}"
{
  echo "# Resolved by 'make lock' (hack/lock.sh) on $(date -u +%Y-%m-%d) with $("$tmp/bin/python" -V) from LOW_PINS in hack/lib.sh;"
  echo "# ensure_low_venv installs the lowest supported controller's venv with -c this file. Do not edit by hand."
  "$tmp/bin/pip" freeze --exclude-editable | LC_ALL=C sort -f
} >"$low"
rm -rf "$tmp"
echo "wrote $low ($(grep -c '==' "$low") pins)"
req=$REPO/tests/contract/requirements-vllm-0.28.0.txt
py=$(find_python 11 11) || { echo "no Python 3.11: contract lock not checked" >&2; exit 0; }
"$py" -m venv "$tmp"
"$tmp/bin/pip" install -q --dry-run --no-deps -r "$req" && echo "contract lock $(basename "$req"): every pin resolves"
rm -rf "$tmp"
