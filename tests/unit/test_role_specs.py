"""Every role's meta/argument_specs.yml, defaults/main.yml and README list the same variables."""
from __future__ import annotations

import os
import re

import jinja2
import jinja2.nodes
import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = sorted(d for d in os.listdir(os.path.join(REPO, "roles")) if not d.startswith((".", "_")))
# Internal roles (prometheus.prometheus's _common pattern): no defaults, only specced entry points. _defaults is
# the other kind: no tasks, only the values more than one role reads (kubespray's kubespray_defaults).
INTERNAL = sorted(d for d in os.listdir(os.path.join(REPO, "roles")) if d.startswith("_") and d != "_defaults")


def _load(role, *parts):
    with open(os.path.join(REPO, "roles", role, *parts)) as f:
        return yaml.safe_load(f) or {}


def _defaults(role):
    """A role's default values: its own defaults/main.yml, and its settings that roles/_defaults holds."""
    out = dict((k, v) for k, v in _load("_defaults", "defaults", "main.yml").items() if k.startswith(role + "_"))
    out.update(_load(role, "defaults", "main.yml"))
    return out


def _referenced(expr):
    """The variables a Jinja expression reads (not lookup and friends), through roles/_defaults' shared derived values
    (__glm53_*): a user reads what they are made from."""
    names = {n.name for n in jinja2.Environment().parse(expr).find_all(jinja2.nodes.Name)} - {"lookup", "query", "omit"}
    for shared in sorted(n for n in names if n.startswith("__glm53_")):
        names = (names - {shared}) | _referenced(str(_load("_defaults", "defaults", "main.yml")[shared]))
    return names


def _texts(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "default":
                continue  # a list or mapping default may hold a template (antsibull-docs takes those)
            yield from _texts(value)
    elif isinstance(node, list):
        for value in node:
            yield from _texts(value)
    elif isinstance(node, str):
        yield node


@pytest.mark.parametrize("role", ROLES + INTERNAL)
def test_no_template_outside_defaults(role):
    """Ansible templates a role's argument spec (descriptions included) when it validates an entry point: a
    description with a template breaks the validation, or worse, is evaluated."""
    for text in _texts(_load(role, "meta", "argument_specs.yml")):
        assert "{{" not in text and "{%" not in text, text


def test_there_are_roles():
    assert ROLES


@pytest.mark.parametrize("role", ROLES)
def test_defaults_match_argument_specs(role):
    defaults = _defaults(role)
    options = _load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert sorted(defaults) == sorted(options), "defaults/main.yml and meta/argument_specs.yml list different variables"
    for name, spec in options.items():
        assert name.startswith(role + "_"), f"{name} lacks the {role}_ prefix"
        assert spec.get("description"), f"{name} has no description"
        if isinstance(defaults[name], str) and "{{" in defaults[name] and not spec.get("no_log"):
            # a derived default: no template where a type is declared (antsibull-docs refuses the spec); the
            # description names what it is derived from, every variable of the expression in defaults/main.yml
            assert "default" not in spec, f"{name}: a templated default in the spec; say it in the description"
            said = [d for d in spec["description"] if d.startswith("Default: ")]
            assert len(said) == 1, f"{name}: no 'Default: ...' line in its description"
            assert set(re.findall(r"C\(([a-z_0-9]+)\)", said[0])) == _referenced(defaults[name]), name
        elif "default" in spec:
            assert spec["default"] == defaults[name], f"{name}: spec default {spec['default']!r} != {defaults[name]!r}"
        elif spec.get("no_log") and "{{" in str(defaults[name]):
            # a secret derived from another variable: a spec default would be templated into the failure
            # output of Ansible's argument validation (argument_spec_data), so it stays in defaults/main.yml
            assert "defaults/main.yml" in spec["description"], f"{name}: say where its default lives"
        else:
            assert spec.get("required") or defaults[name] is None, f"{name}: no default in the spec"


@pytest.mark.parametrize("role", ROLES)
def test_readme_lists_every_variable(role):
    readme = open(os.path.join(REPO, "roles", role, "README.md")).read()
    documented = set(re.findall(r"^\| `(%s_\w+)`" % role, readme, re.M))
    assert documented == set(_defaults(role))


@pytest.mark.parametrize("role", ROLES)
def test_every_default_has_a_comment(role):
    lines = open(os.path.join(REPO, "roles", role, "defaults", "main.yml")).read().splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^%s_\w+:" % role, line):
            j = i - 1
            while j >= 0 and re.match(r"^%s_\w+:" % role, lines[j]):
                j -= 1  # a group of related variables shares one comment
            assert j >= 0 and lines[j].startswith("#"), f"{line.split(':')[0]} has no comment"


@pytest.mark.parametrize("role", INTERNAL)
def test_internal_roles_are_only_specced_entry_points(role):
    specs = _load(role, "meta", "argument_specs.yml")["argument_specs"]
    assert "main" not in specs
    defaults = _load(role, "defaults", "main.yml")
    readme = open(os.path.join(REPO, "roles", role, "README.md")).read()
    optional = {}
    for entry, spec in specs.items():
        assert os.path.exists(os.path.join(REPO, "roles", role, "tasks", entry + ".yml"))
        assert "`%s`" % entry in readme
        for name, option in spec["options"].items():
            assert name.startswith(role + "_") and option.get("description")
            assert option.get("required") or "default" in option, name
            if not option.get("required"):
                optional[name] = option["default"]
    # argument specs only validate: every optional option needs its value in defaults/main.yml
    assert defaults == optional


def test_shared_defaults_are_only_other_roles_settings():
    """roles/_defaults: no tasks and no entry points; each value is a public role's setting (or internal), and no
    role sets it again; every public role depends on it."""
    assert not os.path.exists(os.path.join(REPO, "roles", "_defaults", "tasks"))
    shared = _load("_defaults", "defaults", "main.yml")
    assert len(shared) >= 20
    for name in shared:
        role = next((r for r in ROLES if name.startswith(r + "_")), None)
        assert role or name.startswith(("__glm53_", "glm53_")), name
        if role:
            assert name not in _load(role, "defaults", "main.yml"), "%s is set in roles/%s too" % (name, role)
    for role in ROLES:
        deps = _load(role, "meta", "main.yml").get("dependencies") or []
        assert {"role": "glm53.serving._defaults"} in deps, "roles/%s does not depend on _defaults" % role


def test_the_report_names_the_collections_version():
    with open(os.path.join(REPO, "galaxy.yml")) as f:
        version = yaml.safe_load(f)["version"]
    with open(os.path.join(REPO, "roles", "probes", "vars", "main.yml")) as f:
        assert yaml.safe_load(f)["__probes_collection_version"] == version, "bump roles/probes/vars/main.yml too"


def test_no_role_reaches_out_of_its_folder():
    """Files a role ships come from its files/ or templates/ (a link there for a file kept elsewhere in the
    collection), never from a role_path/.. path, which breaks when the role is installed on its own."""
    import glob
    for path in glob.glob(os.path.join(REPO, "roles", "*", "tasks", "*.yml")):
        text = open(path).read()
        assert not re.search(r"role_path\s*}}\s*/\.\.", text), path
    for link in glob.glob(os.path.join(REPO, "roles", "*", "files", "*")):
        if os.path.islink(link):
            target = os.path.realpath(link)
            assert target.startswith(os.path.realpath(REPO) + os.sep) and os.path.isfile(target), link


def test_role_names():
    """ansible-lint's role-name rule, skipped in .ansible-lint for the internal roles' leading underscore only."""
    for role in os.listdir(os.path.join(REPO, "roles")):
        assert re.match(r"^_?[a-z][a-z0-9_]*\Z", role), "role name %r" % role
        assert not role.startswith("_") or role in INTERNAL + ["_defaults"], role
