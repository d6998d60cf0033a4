"""The README's quick start as a new user pastes it: its fenced blocks, found by section and order, and the few lines a
test machine must run differently (SUBSTITUTIONS, each with its reason). Used by tests/quickstart (the steps run in a
fresh Debian 12 container) and tests/unit/test_readme_quickstart_blocks.py (every block is found; an edit that drops or
renames one fails there, loudly)."""
from __future__ import annotations

import re
import textwrap

QUICKSTART = "## Quick start on real hosts"
INSTALL = "## Install"
TARBALL = "**A tarball"

# The quick start's blocks in order: (name, language, lines each must hold). A block that is gone, renamed, moved or
# of another language is an error, never a skipped step.
QUICKSTART_BLOCKS = [
    ("controller", "bash", ["apt-get install -y git python3-venv", "python3 -m venv ~/ansible",
                            "pip install 'ansible-core>=2.18,<2.19'", "export PATH=~/ansible/bin:$PATH",
                            "git clone https://github.com/glm53/serving.git glm53-serving && cd glm53-serving"]),
    ("inventory", "ini", ["[glm53_serving]", "[glm53_serving:vars]", "model_path=", "venv_python_source=uv"]),
    ("vault", "bash", ["ansible-vault create group_vars/glm53_serving/vault.yml"]),
    ("playbooks", "bash", ["ansible-playbook playbooks/validate.yml -i hosts", "ansible-playbook site.yml -i hosts",
                           "ansible-playbook playbooks/verify.yml -i hosts"]),
]
TARBALL_MUST = ["ansible-galaxy collection build --output-path ..", "cd ..", "ansible-galaxy collection install",
                "ansible-playbook glm53.serving.site -i glm53-serving/hosts"]

# Every line the test runs differently from the README, in this one place: (block, the README's text, the test's text,
# why). Each README text must occur exactly once in its block (substitute() refuses otherwise), so an edit that changes
# one of these lines fails the test instead of slipping past it. Everything else runs as written.
SOURCE_IN_CONTAINER = "/srv/glm53-source"
SUBSTITUTIONS = [
    ("controller", "git clone https://github.com/glm53/serving.git glm53-serving",
     "git clone %s glm53-serving" % SOURCE_IN_CONTAINER,
     "GitHub is not reachable from the test machine: the clone is of this checkout (its working tree, committed in a "
     "scratch copy), under the same folder name"),
    ("demo-inventory", "gpu-01 ansible_host=10.0.1.11\ngpu-02 ansible_host=10.0.1.12\n",
     "gpu-01 ansible_connection=local\n",
     "site.yml's dry run needs a host to reach: the container itself stands in for the two example hosts (validate.yml "
     "runs on the inventory as written, which it checks without connecting)"),
    ("playbooks", "ansible-playbook site.yml -i hosts", "ansible-playbook site.yml -i hosts --check || glm53_refused $?",
     "a dry run on the demo host, which has no GPUs: its refusal is expected, recorded and asserted"),
    ("playbooks", "ansible-playbook playbooks/verify.yml -i hosts", ": verify.yml not run",
     "not run: the demo host has no engine for the probes to prove"),
    ("tarball", "ansible-playbook glm53.serving.site -i glm53-serving/hosts",
     "ansible-playbook glm53.serving.site -i glm53-serving/hosts --check || glm53_refused $?",
     "the same dry run, from the installed collection"),
]
# How the README tells the playbooks the vault's password without a prompt (the test gives it that way).
VAULT_PASSWORD_ENV = "ANSIBLE_VAULT_PASSWORD_FILE"


class ReadmeError(AssertionError):
    """The README does not hold the quick start the test expects: a block gone, renamed, moved or changed."""


def section(readme: str, title: str) -> str:
    """The text of the README's section that starts with the line `title`, up to the next section of its level."""
    m = re.search(r"^%s *$" % re.escape(title), readme, re.M)
    if not m:
        raise ReadmeError("README.md has no section %r" % title)
    heading = re.compile(r"#{1,%d} " % len(title.split(" ")[0]))
    lines, fenced = readme[m.end() + 1:].splitlines(keepends=True), False
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and heading.match(line):  # a comment line in a block is no heading
            return "".join(lines[:i])
    return "".join(lines)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Each fenced block of `text` as (language, body), the body dedented as a user copies it (a block under a list item
    is indented with it)."""
    blocks = []
    for m in re.finditer(r"^( *)```(\w*)\n(.*?)^\1```[ \t]*$", text, re.M | re.S):
        blocks.append((m.group(2), textwrap.dedent(m.group(3))))
    return blocks


def _check(name: str, lang: str, want_lang: str, body: str, must: list[str]):
    if lang != want_lang:
        raise ReadmeError("the quick start's %s block is ```%s, expected ```%s" % (name, lang, want_lang))
    missing = [line for line in must if line not in body]
    if missing:
        raise ReadmeError("the quick start's %s block lacks %s:\n%s" % (name, missing, body))


def quickstart_blocks(readme: str) -> dict[str, str]:
    """The blocks a new user pastes, by name: controller, inventory, vault, playbooks (the quick start's, in order) and
    tarball (the Install section's tarball route)."""
    found = fenced_blocks(section(readme, QUICKSTART))
    if len(found) != len(QUICKSTART_BLOCKS):
        raise ReadmeError("the quick start holds %d fenced blocks, expected %d (%s): %s" % (
            len(found), len(QUICKSTART_BLOCKS), ", ".join(n for n, _, _ in QUICKSTART_BLOCKS),
            [lang for lang, _ in found]))
    blocks = {}
    for (name, want_lang, must), (lang, body) in zip(QUICKSTART_BLOCKS, found):
        _check(name, lang, want_lang, body, must)
        blocks[name] = body
    install = section(readme, INSTALL)
    at = install.find(TARBALL)
    if at < 0:
        raise ReadmeError("the Install section has no %r route" % TARBALL)
    tarball = fenced_blocks(install[at:])
    if not tarball:
        raise ReadmeError("the Install section's tarball route has no fenced block")
    _check("tarball", tarball[0][0], "bash", tarball[0][1], TARBALL_MUST)
    blocks["tarball"] = tarball[0][1]
    return blocks


def substitute(name: str, body: str) -> str:
    """`body` (the block `name`) with this test's substitutions for it; each README text must occur exactly once."""
    for block, old, new, _ in SUBSTITUTIONS:
        if block == name:
            if body.count(old) != 1:
                raise ReadmeError("the %s block holds %r %d times, expected once: SUBSTITUTIONS in %s must follow "
                                  "the README" % (name, old, body.count(old), __name__))
            body = body.replace(old, new)
    return body
