"""vllm_fork_dependency_src_dirs (air-gapped builds) as the vllm_fork role turns it into build environment: vLLM
0.28's own variables for the dependencies it knows (read from its CMakeLists.txt and cmake/external_projects/*.cmake
in the 0.28.0 sdist), -DFETCHCONTENT_SOURCE_DIR_<NAME> in CMAKE_ARGS for any other, after the user's CMAKE_ARGS.
The molecule build scenario shows the result reaching a real pip build, and a missing directory refused."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from testlib import REPO

ROLE = os.path.join(REPO, "roles", "vllm_fork")


def build_env(tmp_path, extra):
    playbook = tmp_path / "p.yml"
    playbook.write_text(json.dumps([{
        "hosts": "localhost", "gather_facts": False,
        "vars_files": [os.path.join(REPO, "roles", "_defaults", "defaults", "main.yml"),
                       os.path.join(ROLE, "defaults", "main.yml"), os.path.join(ROLE, "vars", "main.yml")],
        "tasks": [{"ansible.builtin.copy": {"dest": str(tmp_path / "env.json"), "mode": "0600",
                                            "content": "{{ __vllm_fork_build_env | to_json }}"}}]}]))
    extra = dict(extra, vllm_fork_max_jobs=2, ansible_python_interpreter=sys.executable)
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", str(playbook), "-e", json.dumps(extra)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((tmp_path / "env.json").read_text())


def test_known_dependencies_get_vllms_variables_and_others_cmake_cache_entries(tmp_path):
    env = build_env(tmp_path, {
        "vllm_fork_dependency_src_dirs": {
            "cutlass": "/s/cutlass", "vllm-flash-attn": "/s/fa", "flashmla": "/s/mla", "flashkda": "/s/kda",
            "qutlass": "/s/qutlass", "deepgemm": "/s/deepgemm", "triton_kernels": "/s/tk", "fmha_sm100": "/s/fmha",
            "tml_fa4": "/s/tml", "oneDNN": "/s/onednn", "mydep": "/s/mydep", "Other.Dep": "/s/other"},
        "vllm_fork_extra_build_env": {"CMAKE_ARGS": "-DVLLM_GPU_LANG=CUDA", "FOO": "bar"}})
    assert {k: v for k, v in env.items() if k.endswith("_SRC_DIR") or k.startswith("FETCHCONTENT_")} == {
        "VLLM_CUTLASS_SRC_DIR": "/s/cutlass", "VLLM_FLASH_ATTN_SRC_DIR": "/s/fa", "FLASH_MLA_SRC_DIR": "/s/mla",
        "FLASH_KDA_SRC_DIR": "/s/kda", "QUTLASS_SRC_DIR": "/s/qutlass", "DEEPGEMM_SRC_DIR": "/s/deepgemm",
        "TRITON_KERNELS_SRC_DIR": "/s/tk", "FMHA_SM100_SRC_DIR": "/s/fmha", "TML_FA4_SRC_DIR": "/s/tml",
        "FETCHCONTENT_SOURCE_DIR_ONEDNN": "/s/onednn"}
    assert env["CMAKE_ARGS"] == ("-DVLLM_GPU_LANG=CUDA -DFETCHCONTENT_SOURCE_DIR_MYDEP=/s/mydep "
                                 "-DFETCHCONTENT_SOURCE_DIR_OTHER.DEP=/s/other")
    assert env["FOO"] == "bar" and env["TORCH_CUDA_ARCH_LIST"] == "8.9"


def test_no_dependency_sources_leave_the_build_environment_as_it_was(tmp_path):
    env = build_env(tmp_path, {})
    assert env == {"TORCH_CUDA_ARCH_LIST": "8.9", "MAX_JOBS": "2", "CCACHE_NOHASHDIR": "true"}
