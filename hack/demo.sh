#!/usr/bin/env bash
# `make demo`: converge site.yml (whatever it composes so far) onto a local Debian 12 container
# with systemd as PID 1 and the vLLM stand-in as the engine, then show what answers there.
# `make demo-clean` removes the container and stops the docker daemon the demo started.
set -uo pipefail
T0=$(date +%s)
# shellcheck source=hack/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO" || exit 1
OUT=$REPO/build/demo
HOST=glm53-node1

if [ "${1:-}" = --clean ]; then
  ensure_venv >/dev/null && ensure_collections >/dev/null
  if docker info >/dev/null 2>&1; then molecule destroy -s default; fi
  if [ -f "$WORK/dockerd.pid" ]; then DOCKERD_STARTED=1 stop_dockerd; fi
  rm -rf "$OUT"
  exit 0
fi

ensure_apt
ensure_venv || exit 1
ensure_collections || exit 1
start_dockerd || exit 1
ensure_images || exit 1
step "molecule converge -s default (create, prepare, converge site.yml)"
molecule converge -s default || { echo "demo: converge failed"; exit 1; }

step "probes (playbooks/verify.yml): health, chat smoke, 450K-token needle"
mkdir -p "$OUT"
inventory=$(find "$HOME/.ansible/tmp" -maxdepth 2 -path '*/molecule.*.default/inventory' -printf '%T@ %p\n' 2>/dev/null \
  | sort -rn | head -1 | cut -d' ' -f2)
ansible-playbook -i "$inventory" playbooks/verify.yml -e probes_report_dir="$OUT/report" \
  || echo "demo: the probes failed; see $OUT/report/summary.md"

step "what the host serves"
body='{"model":"glm53-flash-awq","messages":[{"role":"user","content":"用一句話介紹自己"}],"max_tokens":2048}'
{
  echo "# glm53.serving demo ($(date -u +%FT%TZ))"
  echo
  echo "Host: docker container \`$HOST\` (Debian 12, systemd as PID 1). site.yml ran preflight, venv, flashinfer,"
  echo "vllm_fork (the \"fork\" is a fixture mirror of the vLLM stand-in, tests/standin), model, serve and service:"
  echo "the rendered serve script runs as vllm-glm53.service behind the relaunch gate; site.yml ended with the probes."
  echo
  echo "## systemctl status vllm-glm53"
  echo '```'; docker exec "$HOST" systemctl --no-pager status vllm-glm53 | head -5; echo '```'
  echo "## GET /v1/models"
  echo '```json'; docker exec "$HOST" curl -sf -H 'Authorization: Bearer molecule-test-key' http://127.0.0.1:8000/v1/models; echo; echo '```'
  echo "## POST /v1/chat/completions (用一句話介紹自己)"
  echo '```json'; docker exec "$HOST" curl -sf -H 'Authorization: Bearer molecule-test-key' http://127.0.0.1:8000/v1/chat/completions \
    -H 'Content-Type: application/json' -d "$body"; echo; echo '```'
} >"$OUT/summary.md"
cat "$OUT/summary.md"
DOCKERD_STARTED=0  # keep the daemon: the demo host lives on until `make demo-clean`
step "done in $(( $(date +%s) - T0 )) s"
cat <<MSG

Result: $OUT/summary.md
Probe report: $OUT/report/report.html  (summary: $OUT/report/summary.md)
Demo host: docker container '$HOST'  (shell: docker exec -it $HOST bash)
Endpoint inside it: http://127.0.0.1:8000, API key molecule-test-key
  (docker exec $HOST curl -s -H 'Authorization: Bearer molecule-test-key' localhost:8000/v1/models)
Remove it and stop the docker daemon: make demo-clean
MSG
