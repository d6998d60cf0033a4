"""Write the docs site's guide pages from the guides in docs/*.md (or check them).

    python3 hack/gen_docsite_guides.py [--check]

The Markdown guides stay the source: each docs/<name>.md becomes docs/docsite/rst/guide_<name>.rst, headed by the
label ansible_collections.glm53.serving.docsite.guide_<name>, and docs/docsite/extra-docs.yml lists them in the
sections below: antsibull-docs reads both from the installed collection and puts the guides into the docs site
beside the plugin and role pages. --check writes nothing and exits 1 naming each file that differs from what it
would write (tests/unit/test_docsite_guides.py runs it).

The Markdown understood is what the guides use: ATX headings (# to ####), paragraphs, bullet and numbered lists
(continuation lines, nesting, several paragraphs an item), fenced code blocks, pipe tables (written as
list-table), HTML comments (left out), and inline code, links, **strong** and *emphasis*. A link to another guide,
or to a heading of one (#anchor, GitHub's spelling), becomes a :ref: to its label; a link to any other file of the
repository becomes its text, naming the file; a web link stays a link. Anything else stops the run, naming the
file and line, rather than write a page that reads differently from the guide.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import unicodedata

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(REPO, "docs")
LABEL_PREFIX = "ansible_collections.glm53.serving.docsite."
# The docs site's sections and the guides in each, in the README's order within a section. A guide that is not
# listed here stops the run: each one is placed on purpose.
SECTIONS = (
    ("Using the collection", ("contents", "operations", "awx", "settings", "runbooks")),
    ("How it works", ("architecture", "verdicts", "benchmarks")),
    ("Testing and releasing", ("testing", "releasing")),
)
WIDTH = 116  # the column the pages' paragraphs are filled to
HEADING_CHARS = {1: "=", 2: "-", 3: "^", 4: "~"}
INDEX_HEADER = """---
# Written by hack/gen_docsite_guides.py from docs/*.md: run `python3 hack/gen_docsite_guides.py` after changing a guide.
"""


class MarkdownError(Exception):
    pass


def label(name, slug=None):
    return LABEL_PREFIX + "guide_" + name + ("." + slug if slug else "")


# ---------------------------------------------------------------- inline Markdown -> nodes

def _find_code_end(text, i, n):
    """The index of the closing run of exactly n backticks at or after i, or -1."""
    while True:
        j = text.find("`" * n, i)
        if j < 0:
            return -1
        k = j
        while k < len(text) and text[k] == "`":
            k += 1
        if k - j == n:
            return j
        i = k


def _backticks(text, i):
    """How many backticks open at i."""
    n = 0
    while i + n < len(text) and text[i + n] == "`":
        n += 1
    return n


def _find_closer(text, i, delim):
    """The index of a closing delimiter (** or *) at top level from i (code spans and links skipped), or -1."""
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            n = _backticks(text, i)
            end = _find_code_end(text, i + n, n)
            i = end + n if end >= 0 else i + n
            continue
        if text.startswith(delim, i) and i > 0 and not text[i - 1].isspace():
            if delim == "*" and (text.startswith("**", i) or (i > 0 and text[i - 1] == "*")):
                i += 2 if text.startswith("**", i) else 1
                continue
            return i
        i += 1
    return -1


def parse_inline(text):
    """Markdown inline text -> a list of nodes: (text, s), (code, s), (strong, nodes), (em, nodes),
    (link, nodes, url)."""
    nodes, buf, i = [], [], 0

    def flush():
        if buf:
            nodes.append(("text", "".join(buf)))
            buf.clear()

    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in "\\`*_{}[]()#+-.!|<>~\"'":
            buf.append(text[i + 1])
            i += 2
            continue
        if c == "`":
            n = _backticks(text, i)
            end = _find_code_end(text, i + n, n)
            if end < 0:
                buf.append("`" * n)
                i += n
                continue
            code = text[i + n:end]
            if code.startswith(" ") and code.endswith(" ") and code.strip():
                code = code[1:-1]
            flush()
            nodes.append(("code", code))
            i = end + n
            continue
        if c == "[":
            m = _match_link(text, i)
            if m:
                inner, url, end = m
                flush()
                nodes.append(("link", parse_inline(inner), url))
                i = end
                continue
        if c == "<":
            m = re.match(r"<(https?://[^>\s]+)>", text[i:])
            if m:
                flush()
                nodes.append(("link", [("text", m.group(1))], m.group(1)))
                i += m.end()
                continue
        if text.startswith("**", i) and i + 2 < len(text) and not text[i + 2].isspace():
            end = _find_closer(text, i + 2, "**")
            if end > i + 2:
                flush()
                nodes.append(("strong", parse_inline(text[i + 2:end])))
                i = end + 2
                continue
        if c == "*" and not text.startswith("**", i) and i + 1 < len(text) and not text[i + 1].isspace():
            end = _find_closer(text, i + 1, "*")
            if end > i + 1:
                flush()
                nodes.append(("em", parse_inline(text[i + 1:end])))
                i = end + 1
                continue
        buf.append(c)
        i += 1
    flush()
    return nodes


def _match_link(text, i):
    depth, j = 0, i
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == "`":
            n = 0
            while j + n < len(text) and text[j + n] == "`":
                n += 1
            end = _find_code_end(text, j + n, n)
            j = end + n if end >= 0 else j + n
            continue
        if text[j] == "[":
            depth += 1
        elif text[j] == "]":
            depth -= 1
            if depth == 0:
                break
        j += 1
    else:
        return None
    m = re.match(r"\(([^()\s]+)\)", text[j + 1:])
    if not m:
        return None
    return text[i + 1:j], m.group(1), j + 1 + m.end()


def plain(nodes):
    out = []
    for node in nodes:
        out.append(node[1] if node[0] in ("text", "code") else plain(node[1]))
    return "".join(out)


# ---------------------------------------------------------------- nodes -> RST

def _is_punct(c, opening):
    cat = unicodedata.category(c)
    if opening:
        return c in "-:/'\"<([{" or cat in ("Pd", "Ps", "Pi", "Pf", "Po")
    return c in "-.,:;!?\\/'\")]}>" or cat in ("Pd", "Pe", "Pi", "Pf", "Po")


def escape(text):
    """Plain text for RST: backslashes, *, `, | and a word's trailing underscores (a reference) escaped."""
    text = text.replace("\\", "\\\\")
    text = re.sub(r"([*`|])", r"\\\1", text)
    return re.sub(r"_+(?=[^\w]|$)", lambda m: "\\_" * len(m.group(0)), text)


def _role_text(text):
    """Text inside a role's or a hyperlink's explicit title: no backticks, < and > escaped."""
    return re.sub(r"([<>\\])", r"\\\1", text.replace("`", ""))


class Renderer:
    """Inline nodes of one guide as RST; links are resolved against the guides' names and headings."""

    def __init__(self, name, src_path, slugs):
        self.name, self.src_path, self.slugs = name, src_path, slugs
        self.docs = os.path.dirname(src_path)

    def ref(self, url):
        """(label, None) for a link into the guides, (None, text) for another file of the repository, (None, None)
        for a web link."""
        if re.match(r"[a-z][a-z0-9+.-]*:", url):
            return None, None
        path, _, anchor = url.partition("#")
        if not path:
            target = self.name
        else:
            full = os.path.normpath(os.path.join(os.path.dirname(self.src_path), path))
            rel = os.path.relpath(full, self.docs)
            if os.path.dirname(rel) or not rel.endswith(".md") or rel[:-3] not in self.slugs:
                return None, os.path.relpath(full, os.path.dirname(self.docs)).replace(os.sep, "/")
            target = rel[:-3]
        if not anchor:
            return label(target), None
        slugs = self.slugs[target]
        if anchor not in slugs:
            raise MarkdownError("%s: a link to %s: no heading of docs/%s.md has the anchor #%s"
                                % (self.src_path, url, target, anchor))
        return slugs[anchor], None

    def pieces(self, nodes, strong=None):
        """(markup?, rst) pieces: markup pieces are joined to their neighbours with the escapes RST needs."""
        out = []
        for node in nodes:
            kind = node[0]
            if kind == "text":
                text = node[1]
                if strong and text.strip():
                    lead = text[:len(text) - len(text.lstrip())]
                    trail = text[len(text.rstrip()):]
                    out += [(False, escape(lead)), (True, strong + escape(text.strip()) + strong),
                            (False, escape(trail))]
                else:
                    out.append((False, escape(text)))
            elif kind == "code":
                code = node[1].strip()
                if "``" in code or code.startswith("`") or code.endswith("`") or not code:
                    raise MarkdownError("%s: inline code that RST cannot hold as a literal: %r"
                                        % (self.src_path, node[1]))
                out.append((True, "``%s``" % code))
            elif kind in ("strong", "em"):
                mark = "**" if kind == "strong" else "*"
                # RST does not nest inline markup: the plain parts carry it, code and links stay as they are
                out += self.pieces(node[1], mark)
            elif kind == "link":
                text = plain(node[1]).strip()
                target, path = self.ref(node[2])
                if target:
                    out.append((True, ":ref:`%s <%s>`" % (_role_text(text), target)))
                elif path:
                    out += self.pieces(node[1], strong)
                    if path not in text:
                        out += [(False, " ("), (True, "``%s``" % path), (False, ")")]
                else:
                    out.append((True, "`%s <%s>`__" % (_role_text(text), node[2])))
        return out

    def inline(self, text):
        pieces = [p for p in self.pieces(parse_inline(text)) if p[1]]
        out = ""
        for idx, (markup, rst) in enumerate(pieces):
            if markup:
                if out and not out[-1].isspace() and not _is_punct(out[-1], True):
                    out += "\\ "
                out += rst
                nxt = pieces[idx + 1][1] if idx + 1 < len(pieces) else ""
                # an escaped character after an end-string reads as punctuation (docutils' \x00)
                if nxt and not (nxt[0].isspace() or nxt[0] == "\\" or _is_punct(nxt[0], False)):
                    out += "\\ "
            else:
                out += rst
        return out

    def block_text(self, text):
        """Inline text that starts a block: a start RST would read as a list, a field, a comment or a
        doctest is escaped, and a closing :: (a literal block) too."""
        out = self.inline(text)
        if BLOCK_START_RE.match(out):
            out = "\\" + out
        if out.endswith("::"):
            out = out[:-1] + "\\:"
        return out


# ---------------------------------------------------------------- block Markdown -> RST

def fill(text, width):
    """A paragraph's RST filled to width at single spaces (never at an escaped one, never leaving a line that RST
    would read as a title's underline); a word longer than the width keeps its own line."""
    words = re.split(r"(?<=[^\s\\]) (?=\S)", text)
    lines = [words[0]]
    for word in words[1:]:
        if len(lines[-1]) + 1 + len(word) <= width or re.fullmatch(r"([!-/:-@\[-`{-~])\1*", word):
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


# what RST reads as the start of another block: an enumerator, a bullet, a comment, a field, a doctest
BLOCK_START_RE = re.compile(r"(\d+|[A-Za-z]{1,4}|#)[.)](\s|$)|\(\w+\)(\s|$)|[-+•‣⁃](\s|$)|\.\.(\s|$)"
                            r"|:[^:\s`]+:(\s|$)|>>>")
LIST_RE = re.compile(r"( *)([-*+]|\d{1,9}[.)])( +|$)")
FENCE_RE = re.compile(r"( *)(```+|~~~+)\s*([\w+-]*)\s*$")
HEADING_RE = re.compile(r"(#{1,6})\s+(.*?)\s*#*\s*$")
TABLE_SEP_RE = re.compile(r"\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def _indent(line):
    return len(line) - len(line.lstrip(" "))


def _is_block_start(line, in_paragraph):
    """Whether a line ends a paragraph: a heading, a fence, a comment, a table, or a list item (in a paragraph
    only a bullet or a list that starts at 1, as CommonMark has it)."""
    s = line.lstrip(" ")
    if HEADING_RE.match(s) or FENCE_RE.match(line) or s.startswith("<!--"):
        return True
    m = LIST_RE.match(line)
    if m and line[m.end():].strip():
        return not in_paragraph or m.group(2) in "-*+" or m.group(2)[:-1] == "1"
    return False


def _split_row(line):
    cells, cur, i, s = [], [], 0, line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] == "|":
            cur.append("|")  # GFM: an escaped pipe is a pipe, inside code spans too
            i += 2
            continue
        if s[i] == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(s[i])
        i += 1
    cells.append("".join(cur).strip())
    return cells


class Converter:
    def __init__(self, name, src_path, slugs):
        self.name, self.src_path = name, src_path
        self.render = Renderer(name, src_path, slugs)
        self.heading_slugs = iter(slugs[name].values())
        self.levels = []

    def fail(self, lineno, msg):
        raise MarkdownError("%s:%d: %s" % (os.path.relpath(self.src_path, REPO), lineno, msg))

    def blocks(self, lines, base=0, col=0):
        """lines: (lineno, text) already out-dented to this container, which starts at column col. Returns RST
        blocks (lists of lines)."""
        out, i = [], 0
        while i < len(lines):
            lineno, line = lines[i]
            if not line.strip():
                i += 1
                continue
            s = line.lstrip(" ")
            if s.startswith("<!--"):
                while "-->" not in lines[i][1]:
                    i += 1
                    if i >= len(lines):
                        self.fail(lineno, "an HTML comment that does not end")
                i += 1
                continue
            if s.startswith("<"):
                self.fail(lineno, "raw HTML is not converted")
            m = FENCE_RE.match(line)
            if m:
                fence, lang, body = m.group(2), m.group(3) or "text", []
                i += 1
                while i < len(lines) and not lines[i][1].strip().startswith(fence[0] * len(fence)):
                    body.append(lines[i][1][min(_indent(lines[i][1]), len(m.group(1))):])
                    i += 1
                if i >= len(lines):
                    self.fail(lineno, "a code block that does not end")
                i += 1
                out.append([".. code-block:: %s" % lang, ""] + [("   " + b).rstrip() for b in body])
                continue
            m = HEADING_RE.match(s)
            if m:
                if base:
                    self.fail(lineno, "a heading inside a list")
                out.append(self.heading(lineno, len(m.group(1)), m.group(2)))
                i += 1
                continue
            if s.startswith("|") and i + 1 < len(lines) and TABLE_SEP_RE.match(lines[i + 1][1]):
                rows = [_split_row(line)]
                i += 2
                while i < len(lines) and lines[i][1].strip().startswith("|"):
                    rows.append(_split_row(lines[i][1]))
                    i += 1
                out.append(self.table(lineno, rows, col))
                continue
            m = LIST_RE.match(line)
            if m and line[m.end():].strip():
                block, i = self.list_block(lines, i, col)
                out.append(block)
                continue
            if _indent(line) >= 4:
                self.fail(lineno, "an indented code block: use a fenced one")
            para = [s.strip()]
            i += 1
            while i < len(lines) and lines[i][1].strip() and not _is_block_start(lines[i][1], True) \
                    and not (lines[i][1].lstrip().startswith("|") and i + 1 < len(lines)
                             and TABLE_SEP_RE.match(lines[i + 1][1])):
                para.append(lines[i][1].strip())
                i += 1
            out.append(fill(self.render.block_text(" ".join(para)), WIDTH - col))
        return out

    def heading(self, lineno, level, text):
        if not self.levels and level != 1:
            self.fail(lineno, "the first heading is not the title (#)")
        if self.levels and level == 1:
            self.fail(lineno, "a second title (#)")
        if level > 4 or (self.levels and level > max(self.levels) + 1):
            self.fail(lineno, "heading level %d under level %d" % (level, max(self.levels)))
        self.levels.append(level)
        slug_label = next(self.heading_slugs)
        title = self.render.inline(text)
        width = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in title)
        return [".. _%s:" % slug_label, "", title, HEADING_CHARS[level] * width]

    def table(self, lineno, rows, col):
        ncols = len(rows[0])
        block = [".. list-table::", "   :header-rows: 1", "   :widths: auto", ""]
        for row in rows:
            if len(row) > ncols:
                self.fail(lineno, "a table row with more cells than the header")
            row = row + [""] * (ncols - len(row))
            for col, cell in enumerate(row):
                lead = "   * - " if col == 0 else "     - "
                text = fill(self.render.block_text(cell), WIDTH - col - len(lead)) if cell else [""]
                block.append((lead + text[0]).rstrip())
                block += [" " * len(lead) + t for t in text[1:]]
        return block

    def list_block(self, lines, i, col):
        """A list from lines[i]: its items, each a container of blocks. Returns (RST lines, next index)."""
        first = LIST_RE.match(lines[i][1])
        indent, bullet = len(first.group(1)), first.group(2)
        ordered = bullet[0].isdigit()
        number = int(bullet[:-1]) if ordered else None
        block = []
        while i < len(lines):
            lineno, line = lines[i]
            m = LIST_RE.match(line)
            if not m or len(m.group(1)) != indent or m.group(2)[0].isdigit() != ordered \
                    or (not ordered and m.group(2) != bullet):
                break
            content = len(m.group(0)) if m.group(3) else len(m.group(1)) + len(m.group(2)) + 1
            item = [(lineno, line[content:])]
            i += 1
            lazy = True  # a line after a paragraph line continues it, even unindented
            while i < len(lines):
                ln, text = lines[i]
                if not text.strip():
                    item.append((ln, ""))
                    lazy = False
                    i += 1
                    continue
                if _indent(text) >= content:
                    item.append((ln, text[content:]))
                    lazy = True
                    i += 1
                    continue
                if LIST_RE.match(text) and text[LIST_RE.match(text).end():].strip():
                    break  # a further item of this list, or of one around it
                if lazy and not _is_block_start(text, True):
                    item.append((ln, text.strip()))
                    i += 1
                    continue
                break
            while item and not item[-1][1].strip():
                item.pop()
            # a blank line followed by something not in this item ends it; a further item of the list may follow
            marker = "%d. " % number if ordered else "- "
            sub = self.blocks(item, base=1, col=col + len(marker))
            body = []
            for n, b in enumerate(sub):
                if n:
                    body.append("")
                body += b
            pad = " " * len(marker)
            block += [(marker + body[0]) if body else marker.rstrip()]
            block += [(pad + b).rstrip() if b else "" for b in body[1:]]
            block.append("")
            if ordered:
                number += 1
            while i < len(lines) and not lines[i][1].strip():
                i += 1
        while block and not block[-1]:
            block.pop()
        return block, i


def slugs_of(path, name):
    """GitHub's anchors for the headings of one guide, in order -> their labels (the title's is the page's)."""
    slugs, seen, fence = {}, {}, None
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            m = FENCE_RE.match(line.rstrip("\n"))
            if m:
                fence = None if fence and m.group(2).startswith(fence) else (fence or m.group(2))
                continue
            m = HEADING_RE.match(line.rstrip("\n")) if fence is None else None
            if not m:
                continue
            slug = re.sub(r"[^\w\- ]", "", plain(parse_inline(m.group(2))).strip().lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchor = slug if not count else "%s-%d" % (slug, count)
            slugs[anchor] = label(name) if len(m.group(1)) == 1 and not slugs else label(name, anchor)
    return slugs


def convert(name, path, slugs):
    with open(path, encoding="utf-8") as fh:
        lines = [(n + 1, line.rstrip("\n").rstrip()) for n, line in enumerate(fh)]
    conv = Converter(name, path, slugs)
    blocks = conv.blocks(lines)
    if not conv.levels:
        raise MarkdownError("%s: no title (#)" % path)
    head = [".. Written by hack/gen_docsite_guides.py from docs/%s.md: edit that file, then run" % name,
            "   python3 hack/gen_docsite_guides.py", ""]
    out = head
    for n, b in enumerate(blocks):
        if n:
            out.append("")
        out += b
    return "\n".join(out) + "\n"


def guides(docs=DOCS):
    return sorted(f[:-3] for f in os.listdir(docs) if f.endswith(".md"))


def outputs(docs=DOCS):
    """{path relative to docs/: content} for every file this script writes."""
    names = guides(docs)
    placed = [g for _, gs in SECTIONS for g in gs]
    missing = sorted(set(names) - set(placed))
    if missing:
        raise MarkdownError("guides not placed in a section of hack/gen_docsite_guides.py's SECTIONS: %s"
                            % ", ".join(missing))
    slugs = {n: slugs_of(os.path.join(docs, n + ".md"), n) for n in names}
    files = {}
    for n in names:
        files[os.path.join("docsite", "rst", "guide_%s.rst" % n)] = convert(n, os.path.join(docs, n + ".md"), slugs)
    index = [INDEX_HEADER.rstrip("\n"), "sections:"]
    for title, gs in SECTIONS:
        present = [g for g in gs if g in names]
        if present:
            index.append("  - title: %s" % title)
            index.append("    toctree:")
            index += ["      - guide_%s" % g for g in present]
    files[os.path.join("docsite", "extra-docs.yml")] = "\n".join(index) + "\n"
    return files


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file differs")
    parser.add_argument("--docs", default=DOCS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        files = outputs(args.docs)
    except MarkdownError as exc:
        print("gen_docsite_guides: %s" % exc, file=sys.stderr)
        return 2
    rst_dir = os.path.join(args.docs, "docsite", "rst")
    stale = [os.path.join(rst_dir, f) for f in sorted(os.listdir(rst_dir))
             if f.endswith(".rst") and os.path.join("docsite", "rst", f) not in files] if os.path.isdir(rst_dir) else []
    bad = []
    for rel, content in sorted(files.items()):
        path = os.path.join(args.docs, rel)
        try:
            with open(path, encoding="utf-8") as fh:
                same = fh.read() == content
        except FileNotFoundError:
            same = False
        if same:
            continue
        bad.append(path)
        if not args.check:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(content)
    if args.check:
        for path in bad:
            print("%s is stale: run python3 hack/gen_docsite_guides.py" % os.path.relpath(path, REPO))
        for path in stale:
            print("%s comes from no guide: remove it" % os.path.relpath(path, REPO))
        return 1 if bad or stale else 0
    for path in stale:
        os.remove(path)
    print("gen_docsite_guides: %d guides, %d files written, %d removed" % (len(files) - 1, len(bad), len(stale)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
