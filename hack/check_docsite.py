"""The docs site that `make test` builds (the `shipped` stage): every core role has a page, and the serve role's
page holds its options table, one row per option of its main entry point, as the argument specs list them.

    python3 hack/check_docsite.py build/docsite/build/html
"""
from __future__ import annotations

import glob
import os
import re
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = ("venv", "preflight", "flashinfer", "vllm_fork", "model", "serve", "service", "probes")


def main(html_root):
    pages = os.path.join(html_root, "collections", "glm53", "serving")
    for role in CORE:
        assert os.path.isfile(os.path.join(pages, "%s_role.html" % role)), "no page for the %s role" % role
    with open(os.path.join(pages, "serve_role.html"), encoding="utf-8") as fh:
        html = fh.read()
    rows = set(re.findall(r'id="parameter-main--(serve_[a-z0-9_]+)"', html))
    with open(os.path.join(REPO, "roles", "serve", "meta", "argument_specs.yml"), encoding="utf-8") as fh:
        specced = set(yaml.safe_load(fh)["argument_specs"]["main"]["options"])
    assert "malformed" not in html.lower(), "the serve role's page says its documentation is malformed"
    assert rows == specced, "options table rows differ from the spec: missing %s, extra %s" % (
        sorted(specced - rows)[:5], sorted(rows - specced)[:5])
    print("docs site: %d pages; serve_role.html holds the options table, %d rows = the %d options of its main entry "
          "point" % (len(glob.glob(os.path.join(html_root, "**", "*.html"), recursive=True)), len(rows), len(specced)))


if __name__ == "__main__":
    main(sys.argv[1])
