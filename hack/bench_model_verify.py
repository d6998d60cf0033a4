"""Benchmark: first vs cached verification of a safetensors checkpoint (glm53.serving.model_verify's logic).

    python hack/bench_model_verify.py [--shards 8] [--shard-mib 128] [--workers 4]

Makes a checkpoint with tests/helpers/make_model.py in a temporary directory, verifies it twice with
the module's own code (sizes, headers, SHA-256 against the manifest, digest cache) and prints the
figures. A benchmark, not a test: it asserts nothing about speed.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "helpers"))
sys.path.insert(0, os.path.join(REPO, "collections"))  # this checkout as ansible_collections.glm53.serving
from make_model import make_model  # noqa: E402
from ansible_collections.glm53.serving.plugins.module_utils._model_files import parse_manifest_text, verify  # noqa: E402


def drop_page_cache():
    """Read from disk, not memory, where allowed (root)."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--shard-mib", type=float, default=128)
    ap.add_argument("--workers", type=int, default=4)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-model-", dir="/var/tmp")
    try:
        model = os.path.join(tmp, "GLM")
        t0 = time.monotonic()
        make_model(model, a.shards, a.shard_mib)
        made = time.monotonic() - t0
        manifest = parse_manifest_text(open(model + ".sha256").read())
        cache = os.path.join(tmp, "cache.json")
        cold = drop_page_cache()
        first = verify(model, manifest, cache, a.workers, architecture="Glm5NextForCausalLM")
        second = verify(model, manifest, cache, a.workers, architecture="Glm5NextForCausalLM")
        gib = first["total_bytes"] / 2**30
        print("model: %d shards, %.2f GiB (made in %.1f s), %d hashing workers, %d cores"
              % (a.shards, gib, made, a.workers, os.cpu_count()))
        print("first verification : %7.3f s  (%d hashed, %.0f MiB/s, %s), ok=%s"
              % (first["elapsed_s"], first["hashed"], gib * 1024 / max(first["elapsed_s"], 1e-9),
                 "page cache dropped first" if cold else "files still in the page cache", first["ok"]))
        print("cached verification: %7.3f s  (%d hashed, %d from the cache), ok=%s"
              % (second["elapsed_s"], second["hashed"], second["cache_hits"], second["ok"]))
        print("extrapolated to a 200 GiB, 46-shard model: first ~%.0f s, cached ~%.2f s"
              % (first["elapsed_s"] / gib * 200, second["elapsed_s"] / a.shards * 46))
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
