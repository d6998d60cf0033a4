"""The docs site that `make test` builds (the `shipped` stage): every core role has a page, the serve role's page
holds its options table, one row per option of its main entry point, as the argument specs list them, and every
guide in docs/*.md has its page (docs/docsite/rst/guide_<name>.rst, written by hack/gen_docsite_guides.py), headed by
the guide's title and listed on the collection's index page.

    python3 hack/check_docsite.py build/docsite/build/html
"""
from __future__ import annotations

import glob
import html as htmllib
import os
import re
import sys
import unicodedata

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = ("venv", "preflight", "flashinfer", "vllm_fork", "model", "serve", "service", "probes")


def guide_pages(pages):
    """Each guide's page: there, with the guide's title as its heading, and linked from the collection's index."""
    with open(os.path.join(pages, "index.html"), encoding="utf-8") as fh:
        index = fh.read()
    guides = sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
    for md in guides:
        name = os.path.basename(md)[:-3]
        with open(md, encoding="utf-8") as fh:
            title = re.sub(r"[`*]", "", re.search(r"^# (.+)$", fh.read(), re.M).group(1).strip())
        page = os.path.join(pages, "docsite", "guide_%s.html" % name)
        assert os.path.isfile(page), "no page for the guide docs/%s.md" % name
        with open(page, encoding="utf-8") as fh:
            h1 = re.search(r"<h1[^>]*>(.*?)</h1>", fh.read(), re.S)
        # the heading's text, less its permalink sign (the theme's icon) and with Sphinx's typographic quotes undone
        heading = htmllib.unescape(re.sub(r"<[^>]+>", "", h1.group(1) if h1 else ""))
        heading = "".join(c for c in heading if unicodedata.category(c) != "Co" and c != "\u00b6")
        heading = heading.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"').strip()
        assert heading == title, "the page of docs/%s.md is headed %r, not %r" % (name, heading, title)
        assert 'href="docsite/guide_%s.html"' % name in index, "the index page does not list docs/%s.md" % name
    return len(guides)


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
    guides = guide_pages(pages)
    print("docs site: %d pages; serve_role.html holds the options table, %d rows = the %d options of its main entry "
          "point; %d guide pages (docs/*.md), each headed by its guide's title and listed on the index"
          % (len(glob.glob(os.path.join(html_root, "**", "*.html"), recursive=True)), len(rows), len(specced), guides))


if __name__ == "__main__":
    main(sys.argv[1])
