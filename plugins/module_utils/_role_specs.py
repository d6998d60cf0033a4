# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The collection's role argument specs, read once per process, for the controller-side setting filters
(setting_types, unknown_settings, setting_rules). Not for modules: it reads files of the installed collection."""

from __future__ import annotations

import os
import re

try:
    import yaml
except ImportError:  # pragma: no cover - ansible-core needs PyYAML
    yaml = None

ROLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")
_CACHE = {}


class SpecError(Exception):
    pass


def load_yaml(path):
    """A YAML file, parsed by libyaml where PyYAML has it: Ansible runs each task in a fresh worker process, so the
    cache above lasts one task, and the pure-Python parser took about 190 ms for the collection's specs, defaults and
    rules (libyaml: about 25 ms) in every validation task of every host."""
    if yaml is None:  # pragma: no cover
        raise SpecError("reading %s needs PyYAML" % path)
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}  # noqa: S506 - a safe loader
    except (OSError, yaml.YAMLError) as exc:
        raise SpecError("cannot read %s: %s" % (path, exc))


def role_names():
    """The roles of this collection that have argument specs."""
    return sorted(r for r in os.listdir(ROLES_DIR) if os.path.exists(os.path.join(ROLES_DIR, r, "meta", "argument_specs.yml")))


def role_dir(role):
    """A role's folder in this collection (SpecError for a name that is not one of its roles)."""
    if not isinstance(role, str) or not re.match(r"^[a-z_][a-z0-9_]*\Z", role):
        raise SpecError("%r is not a role name of this collection" % (role,))
    path = os.path.join(ROLES_DIR, role)
    if not os.path.isdir(path):
        raise SpecError("%r is not a role of this collection" % (role,))
    return path


def role_options(role):
    """{name: option} of a role's options over all its entry points (the first entry point's wins)."""
    if role not in _CACHE:
        path = os.path.join(role_dir(role), "meta", "argument_specs.yml")
        if not os.path.exists(path):
            raise SpecError("%r is not a role of this collection (no %s)" % (role, path))
        specs = load_yaml(path).get("argument_specs")
        if not isinstance(specs, dict):
            raise SpecError("%s has no argument_specs mapping" % path)
        found = {}
        for entry in specs.values():
            for name, option in ((entry or {}).get("options") or {}).items():
                found.setdefault(name, option or {})
        _CACHE[role] = found
    return _CACHE[role]


def collection_variables():
    """The names every role of this collection defines (defaults, vars and argument specs): a setting that uses one
    of them resolves only in that role's context, where the roles' own checks see it."""
    if "__variables__" not in _CACHE:
        names = set()
        for role in os.listdir(ROLES_DIR):
            for rel in (("defaults", "main.yml"), ("vars", "main.yml")):
                path = os.path.join(ROLES_DIR, role, *rel)
                if os.path.exists(path):
                    names.update(load_yaml(path))
        for role in role_names():
            names.update(role_options(role))
        _CACHE["__variables__"] = frozenset(names)
    return _CACHE["__variables__"]
