#!/bin/sh
# The unit's ExecStart: refuse with status 76 (RestartPreventExitStatus) when the relaunch gate gave up on a
# crash loop, else become the serve script (same pid, so MainPID is the engine).
#   start_engine.sh GAVE_UP_FILE SERVE_SCRIPT
if [ -e "$1" ]; then
  cat "$1" >&2
  exit 76
fi
exec "$2"
