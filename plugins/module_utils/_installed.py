# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a venv has installed of a distribution, read without importing it (no CUDA needed). Standard library.

One probe for every build the collection proves (FlashInfer, the vLLM fork): it runs in the venv's own
interpreter and reports the distribution's version, whether it is an editable install, where the package is,
and the commit it was built from (FlashInfer's _build_meta.py, or the +g<commit> of a setuptools-scm version
in the distribution metadata or in the package's _version.py).
"""

from __future__ import annotations

import json
import os

PROBE = r"""
import importlib.util, json, os, re, sys
from importlib import metadata

dist_name, package = sys.argv[1], sys.argv[2]
out = {"installed": False, "version": None, "editable": False, "commit": None, "location": None,
       "file_version": None, "versions": {}}
for other in sys.argv[3:]:  # other distributions whose versions the caller wants in the same run
    try:
        out["versions"][other] = metadata.version(other)
    except metadata.PackageNotFoundError:
        out["versions"][other] = None
try:
    dist = metadata.distribution(dist_name)
    out.update(installed=True, version=dist.version)
    direct = dist.read_text("direct_url.json")
    if direct:
        out["editable"] = bool(json.loads(direct).get("dir_info", {}).get("editable"))
except metadata.PackageNotFoundError:
    pass
spec = importlib.util.find_spec(package)
if spec is not None and spec.submodule_search_locations:
    loc = list(spec.submodule_search_locations)[0]
    out["location"] = loc
    for name, pattern, key in (
            ("_build_meta.py", r"__git_(?:version|commit)__\s*=\s*['\"]([0-9a-f]{7,40})['\"]", "commit"),
            ("_version.py", r"__version__\s*=\s*(?:version\s*=\s*)?['\"]([^'\"]+)['\"]", "file_version")):
        try:
            m = re.search(pattern, open(os.path.join(loc, name)).read())
        except OSError:
            continue
        if m:
            out[key] = m.group(1)
if out["commit"] is None:
    m = re.search(r"\+g([0-9a-f]{7,40})", out["file_version"] or out["version"] or "")
    out["commit"] = m.group(1) if m else None
print(json.dumps(out))
"""


def installed_build(module, venv, distribution, package, versions_of=()):
    """The probe's answer for a venv, or a dict with an ``error`` when the venv cannot be read; ``versions`` maps each
    distribution of ``versions_of`` to its installed version (None when it is not installed or cannot be read)."""
    python = os.path.join(venv, "bin", "python")
    empty = {"installed": False, "version": None, "editable": False, "commit": None, "location": None,
             "file_version": None, "versions": dict((name, None) for name in versions_of)}
    if not os.path.exists(python):
        return dict(empty, error="%s does not exist (no venv at %s)" % (python, venv))
    rc, out, err = module.run_command([python, "-c", PROBE, distribution, package] + list(versions_of))
    if rc != 0:
        return dict(empty, error="cannot run %s: %s" % (python, err.strip()))
    return json.loads(out)
