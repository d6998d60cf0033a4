# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Download a pinned revision of a Hugging Face repository into a shared cache, link it, and write the
hub's SHA-256 per file as a manifest. Prints one JSON line: {"changed": bool, "path": ..., "manifest": ...}.

Run by the glm53.serving.model role in its own venv (huggingface_hub pinned); the token comes from HF_TOKEN.
"""
import argparse
import json
import os
import sys

from huggingface_hub import HfApi, snapshot_download


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--revision", required=True)
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--link", required=True)
    ap.add_argument("--manifest-out", required=True)
    a = ap.parse_args()
    changed = False
    try:  # already complete in the cache: nothing to fetch
        path = snapshot_download(a.repo, revision=a.revision, cache_dir=a.cache_dir, local_files_only=True)
    # Any miss in the local cache means: download.
    except Exception:  # pylint: disable=broad-exception-caught
        path = snapshot_download(a.repo, revision=a.revision, cache_dir=a.cache_dir)
        changed = True
    if not os.path.exists(a.manifest_out):  # a pinned revision's checksums never change
        info = HfApi().model_info(a.repo, revision=a.revision, files_metadata=True)
        manifest = dict((s.rfilename, s.lfs.sha256) for s in info.siblings
                        if getattr(s, "lfs", None) and s.rfilename.endswith(".safetensors"))
        os.makedirs(os.path.dirname(a.manifest_out), exist_ok=True)
        with open(a.manifest_out + ".tmp", "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
        os.replace(a.manifest_out + ".tmp", a.manifest_out)
        changed = True
    if os.path.realpath(a.link) != os.path.realpath(path):
        if os.path.lexists(a.link):
            if not os.path.islink(a.link):
                sys.exit("%s exists and is not a symlink; move it away or set model_path elsewhere" % a.link)
            os.unlink(a.link)
        os.makedirs(os.path.dirname(os.path.abspath(a.link)), exist_ok=True)
        os.symlink(path, a.link)
        changed = True
    print(json.dumps({"changed": changed, "path": path, "manifest": a.manifest_out}))


if __name__ == "__main__":
    main()
