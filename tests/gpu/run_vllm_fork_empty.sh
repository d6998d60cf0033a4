#!/bin/bash
# On a host with torch and git, no network (the device machine): the vllm_fork role, unchanged, on vLLM 0.28.0's
# real source (the PyPI sdist as the fork: tag v0.28.0 and the card's five fix commits), built with vLLM's own
# no-kernel target (VLLM_TARGET_DEVICE=empty: no CMake, no FetchContent, no CUDA compile), proved by
# vllm_fork_commit, then the card's flags through the installed vLLM's parser. vLLM's setup.py imports torch,
# so CI (no torch on PyPI without CUDA) cannot run this.
#   WHEELS=dir (ansible-core and its needs, setuptools<81, setuptools-scm, vcs-versioning, setuptools-rust,
#   semantic-version)  SDISTS=dir (vllm-0.28.0.tar.gz)  OUT=dir (logs)
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${WHEELS:?}" "${SDISTS:?}" "${OUT:=/tmp/glm53-gpu-out}"
export OUT
mkdir -p "$OUT"
rm -rf /tmp/glm53-venv /tmp/src/vllm-glm53 /tmp/vllm-glm53.git  # a fresh run each time
t0=$(date +%s)
# shellcheck source=tests/gpu/lib.sh
. tests/gpu/lib.sh
setup_ansible
make_venv /tmp/glm53-venv "setuptools>=77.0.3,<81" "setuptools-scm>=8" vcs-versioning "setuptools-rust>=1.9" semantic-version
GLM53_SDIST_CACHE="$SDISTS" python3 tests/helpers/real_sources.py vllm /tmp/vllm-glm53.git > "$OUT/commits.json"
cat "$OUT/commits.json"
echo "setup: $(( $(date +%s) - t0 )) s"
extra=$(python3 -c '
import json, os, sys
c = json.load(open(os.environ["OUT"] + "/commits.json"))
print(json.dumps({"ansible_python_interpreter": sys.executable, "venv_path": "/tmp/glm53-venv",
  "vllm_fork_src_dir": "/tmp/src/vllm-glm53", "vllm_fork_repo_url": "/tmp/vllm-glm53.git",
  "vllm_fork_version": "sm89-longctx-fix-v2", "vllm_fork_minimum_commit": c["minimum"][:10],
  "vllm_fork_required_commits": [{"commit": c["mhc"][:9], "name": "mHC fused-norm fix"},
                                 {"commit": c["longctx"][:9], "name": "long-context graph fix"}],
  "vllm_fork_build_log": os.environ["OUT"] + "/vllm-fork-build.log", "vllm_fork_max_jobs": 8,
  "venv_runtime_env": {}, "vllm_fork_extra_build_env": {"VLLM_TARGET_DEVICE": "empty"},
  "glm53_output_dir": "/tmp/glm53-output"}))')
t1=$(date +%s)
run_playbook tests/gpu/vllm_fork.yml "$extra" > "$OUT/role.log" || { tail -40 "$OUT/role.log"; tail -30 "$OUT/vllm-fork-build.log"; exit 1; }
grep -A1 "PLAY RECAP" "$OUT/role.log"
echo "vllm_fork role, +empty build (clone, proof, editable no-isolation install, proof): $(( $(date +%s) - t1 )) s"
grep -o '"installed_version": "[^"]*"\|"head": "[^"]*"\|"installed_matches_head": [a-z]*' "$OUT/role.log" | sort -u
grep -A12 '"glm53_serve_args"' "$OUT/role.log" | head -14
du -sh /tmp/src/vllm-glm53 /tmp/glm53-venv
t1=$(date +%s)
run_playbook tests/gpu/vllm_fork.yml "$extra" > "$OUT/role-rerun.log"
grep -A1 "PLAY RECAP" "$OUT/role-rerun.log"
echo "rerun: $(( $(date +%s) - t1 )) s, builds in the log: $(grep -c '^=== build of' "$OUT/vllm-fork-build.log")"
