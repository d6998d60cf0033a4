"""hack/gen_docsite_guides.py: the docs site's guide pages (docs/docsite/rst/guide_*.rst) and their index
(docs/docsite/extra-docs.yml) are what the Markdown guides in docs/*.md give; the Markdown the guides use converts to
the RST expected; a guide changed after its page was written makes --check fail, naming the page."""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "hack", "gen_docsite_guides.py")
spec = importlib.util.spec_from_file_location("gen_docsite_guides", SCRIPT)
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)

# Every construct the guides use, in two guides (their names are placed in the script's SECTIONS).
SAMPLE = {
    "contents.md": textwrap.dedent("""\
    # Sample *guide*

    A paragraph with `code`, **bold**, *emphasis*, a [web link](https://example.org/a_b), a link to
    [the other guide](operations.md), to [its heading](operations.md#step-two-and-more) and to
    [this page's](#a-table), and to [a role's README](../roles/serve/README.md). Special: a * b, a|b,
    name_, C:\\path, `a | b`, `x`s and y`z`.

    - a bullet
      continued
    - a bullet with `code`

      and a second paragraph
      - nested, **`strong code`:** after

    0. first
    1. second
       continued

    ```yaml
    key: value  # comment
    ```

    ## A table

    <!-- a comment, left out -->

    | kind | what |
    |---|---|
    | `a \\| b` | one \\| two |
    | 1. not a list | |

    ### Deeper `heading`

    A wrapped line
    that continues.
    """),
    "operations.md": textwrap.dedent("""\
    # Other

    ## Step two, and more

    ```
    plain
    ```
    """),
}
WANT = {
    "guide_contents.rst": textwrap.dedent("""\
    .. Written by hack/gen_docsite_guides.py from docs/contents.md: edit that file, then run
       python3 hack/gen_docsite_guides.py

    .. _ansible_collections.glm53.serving.docsite.guide_contents:

    Sample *guide*
    ==============

    A paragraph with ``code``, **bold**, *emphasis*, a `web link <https://example.org/a_b>`__, a link to :ref:`the other
    guide <ansible_collections.glm53.serving.docsite.guide_operations>`, to :ref:`its heading
    <ansible_collections.glm53.serving.docsite.guide_operations.step-two-and-more>` and to :ref:`this page's
    <ansible_collections.glm53.serving.docsite.guide_contents.a-table>`, and to a role's README
    (``roles/serve/README.md``). Special: a \\* b, a\\|b, name\\_, C:\\\\path, ``a | b``, ``x``\\ s and y\\ ``z``.

    - a bullet continued

    - a bullet with ``code``

      and a second paragraph

      - nested, ``strong code``\\ **:** after

    0. first

    1. second continued

    .. code-block:: yaml

       key: value  # comment

    .. _ansible_collections.glm53.serving.docsite.guide_contents.a-table:

    A table
    -------

    .. list-table::
       :header-rows: 1
       :widths: auto

       * - kind
         - what
       * - ``a | b``
         - one \\| two
       * - \\1. not a list
         -

    .. _ansible_collections.glm53.serving.docsite.guide_contents.deeper-heading:

    Deeper ``heading``
    ^^^^^^^^^^^^^^^^^^

    A wrapped line that continues.
    """),
    "guide_operations.rst": textwrap.dedent("""\
    .. Written by hack/gen_docsite_guides.py from docs/operations.md: edit that file, then run
       python3 hack/gen_docsite_guides.py

    .. _ansible_collections.glm53.serving.docsite.guide_operations:

    Other
    =====

    .. _ansible_collections.glm53.serving.docsite.guide_operations.step-two-and-more:

    Step two, and more
    ------------------

    .. code-block:: text

       plain
    """),
}


def _check(docs):
    return subprocess.run([sys.executable, SCRIPT, "--check", "--docs", docs], capture_output=True, text=True,
                          check=False)


def _sample(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in SAMPLE.items():
        (docs / name).write_text(text, encoding="utf-8")
    return str(docs)


def test_the_committed_pages_are_what_the_guides_give():
    res = _check(os.path.join(REPO, "docs"))
    assert res.returncode == 0, res.stdout + res.stderr
    pages = sorted(os.listdir(os.path.join(REPO, "docs", "docsite", "rst")))
    guides = sorted(f[:-3] for f in os.listdir(os.path.join(REPO, "docs")) if f.endswith(".md"))
    assert len(guides) == 10 and pages == ["guide_%s.rst" % g for g in guides], pages


def test_each_construct_converts_to_the_rst_expected(tmp_path):
    files = gen.outputs(_sample(tmp_path))
    for name, want in WANT.items():
        assert files[os.path.join("docsite", "rst", name)] == want, name
    assert files[os.path.join("docsite", "extra-docs.yml")].endswith(
        "sections:\n  - title: Using the collection\n    toctree:\n      - guide_contents\n      - guide_operations\n")


def test_a_changed_guide_makes_check_fail_naming_its_page(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(os.path.join(REPO, "docs"), docs)
    assert _check(str(docs)).returncode == 0
    with open(docs / "runbooks.md", "a", encoding="utf-8") as fh:
        fh.write("\nOne more paragraph.\n")
    res = _check(str(docs))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "guide_runbooks.rst is stale" in res.stdout and "guide_settings.rst" not in res.stdout, res.stdout
    # a page that no guide gives any more is named too
    (docs / "docsite" / "rst" / "guide_gone.rst").write_text("x\n", encoding="utf-8")
    res = _check(str(docs))
    assert res.returncode == 1 and "guide_gone.rst comes from no guide" in res.stdout, res.stdout


@pytest.mark.parametrize("text, error", [
    ("# T\n\n[x](operations.md#no-such-heading)\n", "no heading of docs/operations.md has the anchor #no-such-heading"),
    ("# T\n\n<div>raw</div>\n", "raw HTML is not converted"),
    ("# T\n\n#### Too deep\n", "heading level 4 under level 1"),
    ("Text before the title\n", "no title"),
])
def test_what_it_cannot_convert_stops_the_run(tmp_path, text, error):
    docs = _sample(tmp_path)
    with open(os.path.join(docs, "contents.md"), "w", encoding="utf-8") as fh:
        fh.write(text)
    with pytest.raises(gen.MarkdownError, match=re.escape(error)):
        gen.outputs(docs)


def test_a_guide_placed_in_no_section_stops_the_run(tmp_path):
    docs = _sample(tmp_path)
    with open(os.path.join(docs, "new.md"), "w", encoding="utf-8") as fh:
        fh.write("# New\n")
    res = _check(docs)
    assert res.returncode == 2 and "SECTIONS: new" in res.stderr, res.stderr
