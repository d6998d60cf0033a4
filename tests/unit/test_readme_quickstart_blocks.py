"""The quick-start test's reading of README.md (tests/helpers/readme_quickstart.py): every block it runs is found, each
substituted line is in the README once, and an edit that drops, renames, moves or changes a block fails here, loudly,
instead of the container test skipping a step. The container test itself is tests/quickstart (hack/test.sh's
quickstart stage)."""
from __future__ import annotations

import os

import pytest

from readme_quickstart import (QUICKSTART_BLOCKS, SUBSTITUTIONS, TARBALL_MUST, VAULT_PASSWORD_ENV, ReadmeError,
                               fenced_blocks, quickstart_blocks, section, substitute)
from testlib import REPO

README = open(os.path.join(REPO, "README.md")).read()
NAMES = [name for name, _, _ in QUICKSTART_BLOCKS] + ["tarball"]


def test_every_block_is_found():
    blocks = quickstart_blocks(README)
    assert list(blocks) == NAMES
    for name, _, must in QUICKSTART_BLOCKS:
        assert all(line in blocks[name] for line in must), name
    assert all(line in blocks["tarball"] for line in TARBALL_MUST)
    assert blocks["inventory"].startswith("[glm53_serving]\n")
    assert not blocks["tarball"].startswith(" "), "the tarball block is read dedented, as a user copies it"


@pytest.mark.parametrize("block, old, new, why", SUBSTITUTIONS, ids=["%s:%s" % (s[0], s[1][:30]) for s in SUBSTITUTIONS])
def test_each_substitution_targets_one_readme_line(block, old, new, why):
    blocks = quickstart_blocks(README)
    text = blocks["inventory" if block == "demo-inventory" else block]
    assert text.count(old) == 1 and why
    assert new in substitute(block, text) and old not in substitute(block, text).replace(new, "")


def test_the_readme_says_how_the_playbooks_get_the_vault_password():
    """The container test answers the vault's prompts through this variable: it must be the README's own advice."""
    quick = section(README, "## Quick start on real hosts")
    assert VAULT_PASSWORD_ENV in quick and "--ask-vault-pass" in quick


def test_the_controller_block_updates_apt_before_installing():
    """A fresh Debian 12 (or one whose lists are stale) has no list to install git from until `apt-get update`."""
    lines = quickstart_blocks(README)["controller"].splitlines()
    install = next(i for i, line in enumerate(lines) if "apt-get install" in line)
    assert "apt-get update" in lines[install].split("apt-get install")[0] or any(
        "apt-get update" in line for line in lines[:install])


def _broken(old, new):
    assert old in README, old
    return README.replace(old, new, 1)


@pytest.mark.parametrize("readme, says", [
    pytest.param(_broken("## Quick start on real hosts", "## Quickstart"), "no section", id="section-renamed"),
    pytest.param(_broken("```ini\n[glm53_serving]", "```\n[glm53_serving]"), "inventory block is ```", id="ini-unlabelled"),
    pytest.param(_broken("```bash\nansible-vault create", "```text\nansible-vault create"), "vault block is ```",
                 id="vault-as-text"),
    pytest.param(_broken("```bash\nansible-vault create group_vars/glm53_serving/vault.yml\n```\n", ""), "fenced blocks",
                 id="vault-block-dropped"),
    pytest.param(_broken("python3 -m venv ~/ansible", "python3 -m virtualenv ~/ansible"), "lacks", id="venv-line-changed"),
    pytest.param(_broken("- **A tarball (Galaxy-style).**", "- **Galaxy-style.**"), "tarball", id="tarball-renamed"),
    pytest.param(_broken("cd ..\n", ""), "lacks", id="tarball-cd-dropped"),
])
def test_a_changed_readme_is_an_error(readme, says):
    with pytest.raises(ReadmeError, match=says):
        quickstart_blocks(readme)


def test_a_changed_substituted_line_is_an_error():
    readme = _broken("gpu-02 ansible_host=10.0.1.12", "gpu-02 ansible_host=10.0.1.13")
    blocks = quickstart_blocks(readme)
    with pytest.raises(ReadmeError, match="expected once"):
        substitute("demo-inventory", blocks["inventory"])


def test_fenced_blocks_reads_a_list_items_block_dedented():
    text = "- a route:\n  ```bash\n  cd ..\n  ls\n  ```\n"
    assert fenced_blocks(text) == [("bash", "cd ..\nls\n")]


def test_a_comment_line_in_a_block_does_not_end_its_section():
    text = "## One\n```ini\n# set: a value\nx=1\n```\n## Two\n"
    assert section(text, "## One") == "```ini\n# set: a value\nx=1\n```\n"
