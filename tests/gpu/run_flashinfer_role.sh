#!/bin/bash
# On a GPU host with nvcc, torch and git, no network: the flashinfer role, unchanged, on FlashInfer's real source
# (the PyPI sdist as an upstream-shaped git repository), built for this GPU's architecture, then one JIT kernel
# compiled by nvcc and compared with torch (tests/gpu/flashinfer_op_check.py).
#   WHEELS=dir (ansible-core and its needs, setuptools>=77, apache-tvm-ffi)  SDISTS=dir (the FlashInfer sdist)
#   ARCH=9.0 (the GPU's compute capability)  OUT=dir (logs)
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${WHEELS:?}" "${SDISTS:?}" "${ARCH:?}" "${OUT:=/tmp/glm53-gpu-out}"
export OUT ARCH
mkdir -p "$OUT"
rm -rf /tmp/glm53-venv /tmp/src/flashinfer /tmp/flashinfer.git "$HOME/.cache/flashinfer"  # a fresh run each time
t0=$(date +%s)
# shellcheck source=tests/gpu/lib.sh
. tests/gpu/lib.sh
setup_ansible
venv=/tmp/glm53-venv
make_venv "$venv" "setuptools>=77.0.3,<81" "apache-tvm-ffi>=0.1.6,!=0.1.8,!=0.1.8.post0,<0.2"
GLM53_SDIST_CACHE="$SDISTS" python3 tests/helpers/real_sources.py flashinfer /tmp/flashinfer.git
echo "setup: $(( $(date +%s) - t0 )) s"
run_role() {
  run_playbook tests/integration/flashinfer/playbook.yml "$(python3 -c '
import json, os, sys
print(json.dumps({"ansible_python_interpreter": sys.executable, "venv_path": "/tmp/glm53-venv",
  "flashinfer_src_dir": "/tmp/src/flashinfer", "flashinfer_repo_url": "/tmp/flashinfer.git",
  "flashinfer_version": "v0.6.16.post3", "flashinfer_build_log": os.environ["OUT"] + "/flashinfer-build.log",
  "flashinfer_cuda_arch_list": os.environ["ARCH"], "flashinfer_allow_other_arch": True,
  "venv_runtime_env": {"FLASHINFER_DISABLE_VERSION_CHECK": "1"}, "glm53_output_dir": "/tmp/glm53-output"}))')"
}
t1=$(date +%s)
run_role > "$OUT/role.log"
grep -A1 "PLAY RECAP" "$OUT/role.log"
echo "flashinfer role (clone, editable no-isolation install, proof): $(( $(date +%s) - t1 )) s"
t1=$(date +%s)
run_role > "$OUT/role-rerun.log"
grep -A1 "PLAY RECAP" "$OUT/role-rerun.log"
echo "rerun: $(( $(date +%s) - t1 )) s, builds in the log: $(grep -c '^=== build of' "$OUT/flashinfer-build.log")"
FLASHINFER_CUDA_ARCH_LIST="$ARCH" FLASHINFER_DISABLE_VERSION_CHECK=1 "$venv/bin/python" tests/gpu/flashinfer_op_check.py \
  | tee "$OUT/op_check.json"
