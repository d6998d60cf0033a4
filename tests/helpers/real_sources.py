"""The real FlashInfer and vLLM sources, as their projects publish them on PyPI (sdists), turned into git
repositories shaped like upstream's, for the build roles to build unchanged.

    python3 tests/helpers/real_sources.py flashinfer DEST    # DEST: a git repository, tag v0.6.16.post3
    python3 tests/helpers/real_sources.py vllm DEST          # DEST: vLLM 0.28.0 (tag v0.28.0) plus the card's
                                                             # fix commits on branch sm89-longctx-fix-v2

The sdists are fetched from files.pythonhosted.org (PyPI's file host) once, checked against their SHA-256,
and kept in $GLM53_SDIST_CACHE (default ~/.cache/glm53-sdists).
"""
from __future__ import annotations

import email.parser
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request

SDISTS = {
    # The FlashInfer vLLM 0.28.0 pins; 11 MB, carries its 3rdparty/ sources (cutlass, cccl, spdlog).
    "flashinfer": ("flashinfer_python-0.6.16.post3.tar.gz",
                   "https://files.pythonhosted.org/packages/c2/46/17045cb47b7b93fcb4e5303e398e6b129b86239930ac0875942a83d8b962/"
                   "flashinfer_python-0.6.16.post3.tar.gz",
                   "9b146cfcc1454c80f3f99444db48013b3eadaeb32f2a399bd76c9471ecb72f04"),
    # vLLM 0.28.0, the fork's base; 40 MB. Building it needs torch importable (setup.py imports it).
    "vllm": ("vllm-0.28.0.tar.gz",
             "https://files.pythonhosted.org/packages/22/39/096d88cfe34ee43a8b6e7c957d1ad6338fa5256474d6ff9a32008c6f8cd6/"
             "vllm-0.28.0.tar.gz",
             "ac96dd0ec5be9c13f2aa4bfb50498c4727110406f6e4980b58a4097e4d18634a"),
}

# The card's fork: these commits on top of the release, in this order (the fixture's are tiny stand-ins).
FORK_COMMITS = [
    ("cdc814dc4", "allow MLADimensions(256,0,256) in FA prefill"),
    ("dc5fcfd3b", "enable GLM-5.3 sparse indexer + sparse MLA decode on Ada"),
    ("mhc", "mHC fused-norm correctness fix"),
    ("longctx", "bound indexer MQA logits memory; fix long-context prefill crashes"),
    ("minimum", "skip indexer checkpoint tensors when index_topk=null"),
]

GIT = ["git", "-c", "user.name=glm53 fixture", "-c", "user.email=fixture@glm53.invalid", "-c", "init.defaultBranch=main",
       "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"]


def cache_dir():
    return os.environ.get("GLM53_SDIST_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "glm53-sdists")


def fetch(name):
    """The sdist's path in the cache, downloaded and checked once."""
    filename, url, sha256 = SDISTS[name]
    path = os.path.join(cache_dir(), filename)
    if os.path.exists(path) and _sha256(path) == sha256:
        return path
    os.makedirs(cache_dir(), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache_dir(), suffix=".part")
    os.close(fd)
    for attempt in range(3):  # a dropped connection or a passing TLS fault on the way to PyPI: try again
        try:
            with open(tmp, "wb") as out, urllib.request.urlopen(url, timeout=300) as resp:  # noqa: S310
                shutil.copyfileobj(resp, out)
            break
        except OSError:
            if attempt == 2:
                os.unlink(tmp)
                raise
            time.sleep(5 * (attempt + 1))
    got = _sha256(tmp)
    if got != sha256:
        os.unlink(tmp)
        raise RuntimeError("%s: SHA-256 %s, expected %s" % (url, got, sha256))
    os.replace(tmp, path)
    return path


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def git(repo, *args):
    return subprocess.run(GIT + list(args), cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def make_flashinfer_repo(dest):
    """DEST as upstream's repository at the release: the sdist's files plus the two upstream files an sdist leaves
    out and a source build needs (version.txt, which build_backend.py reads for the version, else 0.0.0+unknown;
    .gitignore, so the files the build writes into the checkout do not make it dirty), tagged v<version>, then
    one later commit. Returns {"version", "tag", "tagged", "head"}."""
    version = _unpack("flashinfer", dest)
    shutil.rmtree(os.path.join(dest, "flashinfer_python.egg-info"), ignore_errors=True)
    with open(os.path.join(dest, "version.txt"), "w") as f:
        f.write(version + "\n")
    with open(os.path.join(dest, ".gitignore"), "w") as f:
        f.write("# written by the build (upstream ignores them too)\nflashinfer/_build_meta.py\nflashinfer/data/\n"
                "build/\n*.egg-info/\n__pycache__/\n")
    git(dest, "init", "-q")
    git(dest, "rm", "-q", "--cached", "--ignore-unmatch", "flashinfer/_build_meta.py")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "FlashInfer %s (the PyPI sdist)" % version)
    tag = "v" + version
    git(dest, "tag", "-a", tag, "-m", "FlashInfer " + version)
    tagged = git(dest, "rev-parse", "HEAD")
    add_commit(dest, "docs: a later commit on top of the release")
    return {"version": version, "tag": tag, "tagged": tagged, "head": git(dest, "rev-parse", "HEAD")}


def _unpack(name, dest):
    with tarfile.open(fetch(name)) as tar:
        top = tar.getnames()[0].split("/")[0]
        with tempfile.TemporaryDirectory() as tmp:
            tar.extractall(tmp, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(tmp)  # noqa: S202
            shutil.copytree(os.path.join(tmp, top), dest)
    with open(os.path.join(dest, "PKG-INFO"), encoding="utf-8") as f:
        version = email.parser.Parser().parse(f)["Version"]
    os.unlink(os.path.join(dest, "PKG-INFO"))
    return version


def make_vllm_fork_repo(dest):
    """DEST as the fork: the vLLM sdist (it carries upstream's .gitignore) committed and tagged v<version> on main,
    then branch sm89-longctx-fix-v2 with the card's five fix commits. Returns their hashes by name."""
    version = _unpack("vllm", dest)
    shutil.rmtree(os.path.join(dest, "vllm.egg-info"), ignore_errors=True)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "vLLM %s (the PyPI sdist)" % version)
    git(dest, "tag", "-a", "v" + version, "-m", "vLLM " + version)
    hashes = {"version": version, "base": git(dest, "rev-parse", "HEAD")}
    git(dest, "checkout", "-q", "-b", "sm89-longctx-fix-v2")
    for name, message in FORK_COMMITS:
        with open(os.path.join(dest, "GLM53_FORK.md"), "a") as f:
            f.write("- %s (%s)\n" % (message, name))
        git(dest, "add", "GLM53_FORK.md")
        git(dest, "commit", "-q", "-m", message)
        hashes[name] = git(dest, "rev-parse", "HEAD")
    return hashes


def install_build_packages(venv):
    """Into VENV, what the venv role installs for a no-isolation build: its venv_base_packages, then its
    venv_build_packages, read from the role's defaults (so the tests prove the role's own lists suffice)."""
    import yaml  # noqa: PLC0415 - the test venv has it; the CLI above does not need it

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(repo, "roles", "venv", "defaults", "main.yml")) as f:
        defaults = yaml.safe_load(f)
    for packages in (defaults["venv_base_packages"], defaults["venv_build_packages"]):
        subprocess.run([os.path.join(str(venv), "bin", "pip"), "install", "-q", "--disable-pip-version-check"] + packages,
                       check=True, timeout=900)


def add_commit(repo, message):
    with open(os.path.join(repo, "README.md"), "a") as f:
        f.write("\n<!-- %s -->\n" % message)
    git(repo, "commit", "-q", "-am", message)
    return git(repo, "rev-parse", "HEAD")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("flashinfer", "vllm"):
        sys.exit(__doc__)
    make = make_flashinfer_repo if sys.argv[1] == "flashinfer" else make_vllm_fork_repo
    print(json.dumps(make(sys.argv[2])))
