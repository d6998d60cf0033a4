# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Print JSON about an installed distribution without importing it: version, editable or wheel, build commit.

Usage: python installed_build.py DIST PACKAGE   (e.g. flashinfer-python flashinfer)
The build commit comes from PACKAGE/_build_meta.py (__git_version__ / __git_commit__), as FlashInfer writes it.
"""
import importlib.util
import json
import os
import re
import sys
from importlib import metadata

dist_name, package = sys.argv[1], sys.argv[2]
out = {"installed": False, "version": None, "editable": False, "commit": None, "location": None}
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
    try:
        text = open(os.path.join(loc, "_build_meta.py")).read()
        m = re.search(r"__git_(?:version|commit)__\s*=\s*['\"]([0-9a-f]{7,40})['\"]", text)
        out["commit"] = m.group(1) if m else None
    except OSError:
        pass
print(json.dumps(out))
