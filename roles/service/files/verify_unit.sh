#!/bin/sh
# Validate a rendered unit before it goes live: systemd-analyze verify wants the file under its unit name.
# Usage: verify_unit.sh RENDERED_FILE UNIT_NAME
set -eu
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp "$1" "$dir/$2"
systemd-analyze verify --recursive-errors=no "$dir/$2"
