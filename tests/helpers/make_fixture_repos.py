# Test helper: builds the fixture git repositories that stand in for the vLLM fork and FlashInfer.
"""python3 make_fixture_repos.py STANDIN_DIR DEST

DEST/vllm-glm53.git  bare "fork": the vLLM stand-in (tests/standin) with a realistic commit chain on
                     branch sm89-longctx-fix-v2 (base tagged v0.28.1rc1, then the fork's five patches:
                     cdc814dc4-like, dc5fcfd3b-like, the mHC fix, the long-context fix, the minimum commit,
                     then a later descendant) and a side branch side-experiment off the base that is not a
                     descendant of the minimum commit.
DEST/flashinfer.git  bare "FlashInfer": a tiny flashinfer-python package with a submodule (3rdparty/spdlog)
                     whose build writes flashinfer/_build_meta.py (__git_version__) as the real one does.
DEST/spdlog.git      the submodule.
DEST/commits.json    the hashes: base, mhc, longctx, minimum, descendant, broken (a descendant on the branch
                     broken-release whose engine answers garbage), slow (a descendant on the branch slow-release
                     whose engine answers well but decodes 25 % slower), side, flashinfer.
Standard library and the git CLI only, so it runs inside the test containers too.
"""
import json
import os
import shutil
import subprocess
import sys

ENV = dict(os.environ, GIT_AUTHOR_NAME="fixture", GIT_AUTHOR_EMAIL="fixture@example.invalid",
           GIT_COMMITTER_NAME="fixture", GIT_COMMITTER_EMAIL="fixture@example.invalid",
           GIT_AUTHOR_DATE="2026-08-29T12:00:00Z", GIT_COMMITTER_DATE="2026-08-29T12:00:00Z")

FLASHINFER_SETUP = '''# Test double: build script of the fixture FlashInfer; writes flashinfer/_build_meta.py like the real one.
import os
import subprocess
import sys

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
if not os.path.exists(os.path.join(HERE, "3rdparty", "spdlog", "include", "spdlog.h")):
    sys.exit("3rdparty/spdlog is empty: clone FlashInfer with its submodules (git clone --recursive)")
sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True, check=True).stdout.strip()
version = open(os.path.join(HERE, "version.txt")).read().strip()
with open(os.path.join(HERE, "flashinfer", "_build_meta.py"), "w") as f:
    f.write("__version__ = %r\\n__git_version__ = %r\\n" % (version, sha))
print("glm53-fixture: compiling flashinfer %s %s (FLASHINFER_CUDA_ARCH_LIST=%s)" % (
    version, sha[:10], os.environ.get("FLASHINFER_CUDA_ARCH_LIST", "")), file=sys.stderr)
setup(name="flashinfer-python", version=version, packages=["flashinfer"])
'''
FLASHINFER_INIT = '''# Test double: the fixture FlashInfer package.
from flashinfer._build_meta import __git_version__, __version__

__all__ = ["__version__", "__git_version__"]
'''
FLASHINFER_AOT = '''# Test double: `python -m flashinfer.aot` pre-warms the JIT cache in $HOME like the real one.
import os
import sys

from flashinfer import __version__

archs = os.environ.get("FLASHINFER_CUDA_ARCH_LIST")
if not archs:
    sys.exit("Please explicitly set env var FLASHINFER_CUDA_ARCH_LIST.")
base = os.environ.get("FLASHINFER_WORKSPACE_BASE", os.path.expanduser("~"))
out = os.path.join(base, ".cache", "flashinfer", __version__, archs.replace(".", "").replace(" ", "_"), "cached_ops")
os.makedirs(out, exist_ok=True)
open(os.path.join(out, "prewarmed.txt"), "w").write("aot\\n")
print("pre-warmed", out)
'''


def git(cwd, *args):
    return subprocess.run(["git", "-c", "protocol.file.allow=always", *args], cwd=cwd, env=ENV, check=True,
                          capture_output=True, text=True).stdout.strip()


def commit(cwd, message, change):
    with open(os.path.join(cwd, "CHANGES.md"), "a") as f:
        f.write("- %s\n" % change)
    git(cwd, "add", "-A")
    git(cwd, "commit", "-q", "-m", message)
    return git(cwd, "rev-parse", "HEAD")


def bare(work, dest):
    if os.path.exists(dest):
        shutil.rmtree(dest)
    git(os.path.dirname(dest), "clone", "-q", "--bare", work, dest)


def main(standin, dest):
    os.makedirs(dest, exist_ok=True)
    work = os.path.join(dest, "work")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    hashes = {}

    # ---- the fork
    fork = os.path.join(work, "vllm-glm53")
    shutil.copytree(standin, fork, ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__", "_version.py"))
    with open(os.path.join(fork, ".gitignore"), "w") as f:
        f.write("vllm/_version.py\nbuild/\n*.egg-info/\n__pycache__/\n.glm53-build\n")
    # As in vLLM 0.28.0: use_existing_torch.py rewrites tracked requirement files in place, dropping the torch pins
    # (a build after it is of a dirty tree, so the vllm_fork role must not run it).
    os.makedirs(os.path.join(fork, "requirements"), exist_ok=True)
    with open(os.path.join(fork, "requirements", "cuda.txt"), "w") as f:
        f.write("# the fork's CUDA requirements\ntorch==2.13.0\ntransformers>=5\n")
    with open(os.path.join(fork, "use_existing_torch.py"), "w") as f:
        f.write("import glob\n"
                "for path in glob.glob('requirements/*.txt'):\n"
                "    lines = open(path).read().splitlines(True)\n"
                "    open(path, 'w').writelines(l for l in lines if not l.startswith('torch'))\n"
                "    print('>>> cleaned', path)\n")
    git(fork, "init", "-q", "-b", "main")
    hashes["base"] = commit(fork, "vLLM 0.28.1rc1.dev base", "base")
    git(fork, "tag", "v0.28.1rc1")
    git(fork, "checkout", "-q", "-b", "sm89-longctx-fix-v2")
    commit(fork, "allow MLADimensions(256,0,256) in FA prefill", "cdc814dc4")
    commit(fork, "enable GLM-5.3 sparse indexer + sparse MLA decode on Ada", "dc5fcfd3b")
    hashes["mhc"] = commit(fork, "mHC fused-norm correctness fix", "1358bbd8c")
    hashes["longctx"] = commit(fork, "bound indexer MQA logits memory; fix long-context prefill crashes", "005c57e0d")
    hashes["minimum"] = commit(fork, "skip indexer checkpoint tensors when index_topk=null", "f2935ce32")
    hashes["descendant"] = commit(fork, "later fix on the same branch", "descendant")
    # A later commit whose engine is broken: it starts, but answers garbage (as a bad real build would).
    git(fork, "checkout", "-q", "-b", "broken-release")
    with open(os.path.join(fork, "vllm", "standin", "release_defaults.py"), "a") as f:
        f.write('BEHAVIOUR = "gibberish"  # the broken build\n')
    hashes["broken"] = commit(fork, "a later change that breaks generation", "broken")
    # A later commit that is correct but slower: each token takes 4/3 of the time, 25 % less output throughput (a
    # kernel fallback, a missed CUDA-graph capture); only a benchmark tells it from a good build.
    git(fork, "checkout", "-q", "-b", "slow-release", hashes["descendant"])
    with open(os.path.join(fork, "vllm", "standin", "release_defaults.py"), "a") as f:
        f.write("DECODE_SCALE = 4 / 3  # the slow build\n")
    hashes["slow"] = commit(fork, "a later change that decodes 25 % slower", "slow")
    # A later commit that writes fluent text but whose numerics moved: every token 0.1 nats less likely (a subtle
    # kernel or quantisation change); only the quality gate's reference scores tell it from a good build.
    git(fork, "checkout", "-q", "-b", "drifted-release", hashes["descendant"])
    with open(os.path.join(fork, "vllm", "standin", "release_defaults.py"), "a") as f:
        f.write('NUMERICS = "shift:0.1"  # the drifted build\n')
    hashes["drifted"] = commit(fork, "a later change that moves the numerics by 0.1 nats a token", "drifted")
    git(fork, "checkout", "-q", "sm89-longctx-fix-v2")
    git(fork, "checkout", "-q", "-b", "side-experiment", hashes["base"])
    hashes["side"] = commit(fork, "an experiment that is not on the fixed branch", "side")
    git(fork, "checkout", "-q", "sm89-longctx-fix-v2")
    bare(fork, os.path.join(dest, "vllm-glm53.git"))

    # ---- FlashInfer with a submodule
    spdlog = os.path.join(work, "spdlog")
    os.makedirs(os.path.join(spdlog, "include"))
    open(os.path.join(spdlog, "include", "spdlog.h"), "w").write("/* fixture */\n")
    git(spdlog, "init", "-q", "-b", "main")
    commit(spdlog, "spdlog fixture", "spdlog")
    bare(spdlog, os.path.join(dest, "spdlog.git"))
    fi = os.path.join(work, "flashinfer")
    os.makedirs(os.path.join(fi, "flashinfer"))
    open(os.path.join(fi, "setup.py"), "w").write(FLASHINFER_SETUP)
    open(os.path.join(fi, "version.txt"), "w").write("0.6.18\n")
    open(os.path.join(fi, "flashinfer", "__init__.py"), "w").write(FLASHINFER_INIT)
    open(os.path.join(fi, "flashinfer", "aot.py"), "w").write(FLASHINFER_AOT)
    open(os.path.join(fi, ".gitignore"), "w").write("flashinfer/_build_meta.py\nbuild/\n*.egg-info/\n__pycache__/\n")
    git(fi, "init", "-q", "-b", "main")
    git(fi, "submodule", "add", "-q", os.path.join(dest, "spdlog.git"), "3rdparty/spdlog")
    hashes["flashinfer"] = commit(fi, "flashinfer fixture 0.6.18", "flashinfer")
    git(fi, "tag", "v0.6.18")
    bare(fi, os.path.join(dest, "flashinfer.git"))

    shutil.rmtree(work)
    with open(os.path.join(dest, "commits.json"), "w") as f:
        json.dump(hashes, f, indent=1)
    print(json.dumps(hashes))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
