"""One owner per shared value: the other roles' defaults refer to it, nobody sets both, and every entry point
that is reached from outside a role is specced."""
from __future__ import annotations

import glob
import json
import os
import re

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A role reads another role's value by its owner's name; a default of its own that takes another role's value is
# a value of its own derived from it (a URL, a file under a folder), never a second name for the same value.
# owner: the variables of other roles whose defaults derive from it
OWNERS = {
    "serve_max_model_len": ["probes_bench_long_input_len"],
    "venv_service_home": ["service_writable_paths", "heal_state_file"],
    "venv_path": ["flashinfer_src_dir", "probes_bench_vllm", "probes_bench_label"],
    "venv_releases_dir": ["flashinfer_src_dir", "probes_bench_vllm", "probes_bench_label"],
    "venv_releases_keep": ["preflight_disk_requirements"],
    "model_path": ["probes_reference_weights"],
    "vllm_fork_build_mode": ["serve_fork_on_pythonpath", "venv_release_pins"],
    "flashinfer_build_mode": ["venv_release_pins"],
    "vllm_fork_cuda_arch_list": ["venv_release_pins"],
    "flashinfer_cuda_arch_list": ["venv_release_pins"],
}
# The names removed for their owner's (unknown_settings refuses each, naming the owner): the filter's table, held to a
# few pairs written here and to its size.
from ansible_collections.glm53.serving.plugins.filter.unknown_settings import RENAMED as REMOVED_ALIASES  # noqa: E402


def test_the_removed_names_are_the_second_names_of_shared_values():
    assert len(REMOVED_ALIASES) == 46
    # one engine URL and one CA path, whichever role reads them
    assert {REMOVED_ALIASES[k] for k in ("probes_base_url", "service_health_url", "rollout_metrics_url")} == {"serve_url"}
    assert {REMOVED_ALIASES[k] for k in ("probes_ca_path", "service_ca_path")} == {"serve_ca_path"}
    assert {REMOVED_ALIASES[k] for k in ("service_port", "preflight_serve_port")} == {"serve_port"}
    assert {REMOVED_ALIASES[k] for k in ("service_api_key", "probes_api_key")} == {"serve_api_key"}
    assert {REMOVED_ALIASES[k] for k in ("serve_model_path", "probes_bench_tokenizer")} == {"model_path"}
    assert REMOVED_ALIASES["rollout_releases_dir"] == "venv_releases_dir"
    # one builder host, one wheel cache and one relay for both builds; one evidence folder on a host
    assert {REMOVED_ALIASES["flashinfer_" + k] for k in ("builder_host", "wheelhouse", "controller_wheelhouse")} == {
        "vllm_fork_builder_host", "vllm_fork_wheelhouse", "vllm_fork_controller_wheelhouse"}
    assert REMOVED_ALIASES["preflight_evidence_dir"] == "probes_evidence_dir"
    # the venv, its runtime environment and the fork's checkout under the one name every role reads
    assert {REMOVED_ALIASES[r + "_venv_path"] for r in ("flashinfer", "vllm_fork", "serve")} == {"venv_path"}
    assert {REMOVED_ALIASES[r + "_runtime_env"] for r in ("flashinfer", "vllm_fork", "serve")} == {"venv_runtime_env"}
    assert REMOVED_ALIASES["serve_fork_src_dir"] == "vllm_fork_src_dir"
    assert all(new in OWNERS or new in SHARED or new == "venv_runtime_env" for new in REMOVED_ALIASES.values())
# Settings that look alike but are separate on purpose: each build has its own mode (FlashInfer built on every host
# while the fork comes from the index) and its own architecture list (FlashInfer's JIT list may add one).
INDEPENDENT = {("flashinfer_build_mode", "vllm_fork_build_mode"), ("flashinfer_cuda_arch_list", "vllm_fork_cuda_arch_list")}


def defaults():
    out = {}
    for path in glob.glob(os.path.join(REPO, "roles", "*", "defaults", "main.yml")):
        with open(path) as fh:
            out.update(yaml.safe_load(fh) or {})
    return out


DEFAULTS = defaults()
with open(os.path.join(REPO, "roles", "_defaults", "defaults", "main.yml")) as _fh:
    SHARED = yaml.safe_load(_fh)
# Owners that stay in their role: derived from that role's own settings (the release's venv), or a mapping a task
# sets (venv_runtime_env, from the serving release).
IN_ROLE = {"venv_path", "venv_runtime_env"}


def _expanded(text):
    """A default's text with the shared derived values it goes through (__glm53_*, at any depth) appended."""
    seen = set()
    while True:
        new = set(re.findall(r"\b__glm53_\w+", text)) - seen
        if not new:
            return text
        seen |= new
        text += " " + " ".join(str(SHARED.get(shared, "")) for shared in sorted(new))


@pytest.mark.parametrize("owner", sorted(OWNERS))
def test_derived_defaults_refer_to_their_owner(owner):
    for name in OWNERS[owner]:
        value = _expanded(str(DEFAULTS[name]))  # through shared derived values
        assert "{{" in value and re.search(r"\b%s\b" % owner, value), "%s does not take %s: %r" % (name, owner, value)


def _role_defaults():
    out = {}
    for path in glob.glob(os.path.join(REPO, "roles", "*", "defaults", "main.yml")):
        role = path.split(os.sep)[-3]
        with open(path) as fh:
            for name, value in (yaml.safe_load(fh) or {}).items():
                out[name] = (role, value)
    return out


ROLE_PREFIXES = ("venv", "flashinfer", "vllm_fork", "model", "serve", "service", "preflight", "probes", "rollout",
                 "heal", "monitoring")


def _owner_role(name):
    return next((r for r in sorted(ROLE_PREFIXES, key=len, reverse=True) if name.startswith(r + "_")), None)


def test_every_default_that_reads_another_role_is_a_declared_derivation():
    """Found, not listed: every role default that refers to another role's value (directly or through a shared
    derived value) is one of OWNERS' derivations, so a new alias fails here."""
    known = set(DEFAULTS) | set(SHARED) | {"venv_path", "venv_runtime_env"}
    found = {}
    for name, (role, value) in _role_defaults().items():
        if role == "_defaults":
            continue
        text = _expanded(str(value))
        for used in set(re.findall(r"(?<![.\w])([a-z][a-z0-9]*_[a-z0-9_]+)\b", text)) & known:
            owner_role = _owner_role(used)
            if owner_role and owner_role != _owner_role(name):
                found.setdefault(used, set()).add(name)
    declared = {o: set(n) for o, n in OWNERS.items()}
    assert {o: sorted(n) for o, n in found.items()} == {o: sorted(n) for o, n in declared.items() if n & set(DEFAULTS)}


def _normal(value):
    """A default as an expression, whitespace normalised: `{{x}}`, `{{ x }}` and a folded `>-` block compare equal."""
    text = re.sub(r"\s+", " ", str(value)).strip()
    return re.sub(r"\s*\}\}", " }}", re.sub(r"\{\{\s*", "{{ ", text))


def _alias_of(value):
    """The variable a default only renames (`{{ x }}`, `{{ x | default(...) }}`), or None."""
    m = re.fullmatch(r"\{\{ ([a-z_]\w*)(?: \| default\([^()]*(?:\([^()]*\))?[^()]*\))? \}\}", _normal(value))
    return m.group(1) if m else None


def test_no_default_is_another_name_for_a_value():
    """`service_port: "{{ serve_port }}"` (or `{{ serve_port | default(8000) }}`, or `{{ __glm53_x }}`, a shared
    value) is one value under two names: roles read the owner's name. A role's default may rename only its own."""
    aliases = ["%s: %s" % (name, _normal(value)) for name, (role, value) in _role_defaults().items()
               if role != "_defaults" and _alias_of(value)
               and _owner_role(_alias_of(value)) != _owner_role(name)]
    assert aliases == []
    # the check reaches what it is about: each of these forms is found
    for form in ("{{ serve_port }}", "{{serve_port}}", "{{ __glm53_venv_path }}", "{{ venv_runtime_env | default({}) }}",
                 "{{ serve_port\n  | default(8000) }}"):
        assert _alias_of(form), form


@pytest.mark.parametrize("old", sorted(REMOVED_ALIASES))
def test_removed_aliases_are_refused_naming_the_owner(old):
    import importlib
    mod = importlib.import_module("ansible_collections.glm53.serving.plugins.filter.unknown_settings")
    out = mod.unknown_settings([old])
    assert len(out) == 1 and REMOVED_ALIASES[old] in out[0] and old in out[0], out
    # no role reads it any more
    for path in _role_files():
        assert not re.search(r"(?<![\w])%s(?![\w])" % old, open(path).read()), "%s still names %s" % (path, old)


def test_shared_owners_live_in_the_shared_defaults():
    """A value other roles read is set once, in roles/_defaults, which every public role depends on: the other
    roles read it with no fallback, whatever roles the play holds."""
    for owner in sorted(set(OWNERS) - IN_ROLE):
        assert owner in SHARED, "%s is read by other roles: set it in roles/_defaults" % owner
    for owner in IN_ROLE:
        assert owner not in SHARED


def test_owners_are_set_from_literals_not_from_other_roles():
    """An owner is a literal, or derived from its own role's variables only (venv_path from the release)."""
    for owner in OWNERS:
        if owner in DEFAULTS and owner != "venv_runtime_env":
            role = owner.split("_")[0]
            used = set(re.findall(r"\b([a-z]+_[a-z0-9_]+)\b", str(DEFAULTS[owner]))) & set(DEFAULTS)
            assert all(name.startswith(role + "_") for name in used), \
                "%s, an owner, is derived from another role: %r" % (owner, DEFAULTS[owner])


def _role_files():
    for top, dirs, files in os.walk(os.path.join(REPO, "roles")):
        for name in files:
            if name.endswith((".yml", ".j2")):
                yield os.path.join(top, name)


def test_no_role_falls_back_on_a_shared_value():
    """`serve_port | default(8000)` in a role repeats the owner's default, and drifts from it. A role reads a
    shared value as it is; only another host's (hostvars[h], which holds no role defaults) needs a fallback."""
    names = "|".join(sorted(SHARED))
    pattern = re.compile(r"(?<![.\w])(%s) *\| *default\((?!omit)" % names)
    found = []
    for path in _role_files():
        for n, line in enumerate(open(path).read().splitlines(), 1):
            if pattern.search(line):
                found.append("%s:%d: %s" % (os.path.relpath(path, REPO), n, line.strip()))
    assert found == []
    # the check reaches the files it is about: the other hosts' ports in the monitoring config keep theirs
    text = open(os.path.join(REPO, "roles", "monitoring", "templates", "prometheus.yml.j2")).read()
    assert "hostvars[h].serve_port | default(8000)" in text


def _suffix(name):
    """A setting's name without its role's prefix (vllm_fork_wheelhouse: wheelhouse, as flashinfer_wheelhouse)."""
    role = _owner_role(name)
    return name[len(role) + 1:] if role else name


def _doubles(defaults):
    by_suffix = {}
    for name, value in defaults.items():
        if value in ("", [], {}, None, True, False):
            continue
        by_suffix.setdefault((_suffix(name), _normal(value)), []).append(name)
    return [tuple(sorted(v)) for v in by_suffix.values()
            if len(set(map(_owner_role, v))) > 1 and tuple(sorted(v)) not in INDEPENDENT]


def test_no_two_roles_set_the_same_setting():
    """Two roles' variables with the same name but for the role's prefix (whatever the prefix: vllm_fork_ as much as
    serve_) and the same default, a literal or an expression compared whitespace-normalised, are one value set twice."""
    assert _doubles(DEFAULTS) == [], "set in two places"
    # it finds the pairs it is about: across prefixes, and expressions written differently
    assert _doubles({"vllm_fork_wheelhouse": "/var/cache/w", "flashinfer_wheelhouse": "/var/cache/w"})
    assert _doubles({"serve_venv_path": "{{ __glm53_venv_path }}", "vllm_fork_venv_path": "{{__glm53_venv_path}}"})


def test_test_inventories_set_no_value_twice():
    derived = set(n for names in OWNERS.values() for n in names)
    for path in glob.glob(os.path.join(REPO, "molecule", "inventory", "group_vars", "*.yml")) + \
            [os.path.join(REPO, "inventory.example")]:
        text = open(path).read()
        for name in derived:
            owner = next(o for o, names in OWNERS.items() if name in names)
            if re.search(r"^\s*%s:" % name, text, re.M):
                assert not re.search(r"^\s*%s:" % owner, text, re.M), "%s sets both %s and %s" % (path, owner, name)


def _repo_yaml_files():
    """Every .yml file of the checkout. os.walk does not follow links: glob's ** does, and the committed link
    collections/ansible_collections/glm53/serving -> ../../.. is a loop it walks until ELOOP."""
    for top, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            if name.endswith(".yml"):
                yield os.path.join(top, name)


def test_every_entry_point_used_from_outside_is_specced():
    used = set()
    for path in _repo_yaml_files():
        text = open(path).read()
        for m in re.finditer(r"name: \"?(?:glm53\.serving\.)?([\w{} .]+?)\"?\n\s+tasks_from: (\S+)", text):
            role, entry = m.group(1).strip(), m.group(2).replace(".yml", "")
            # a templated name: the role names quoted in that file
            roles = sorted(set(re.findall(r"'(\w+)'", text)) & set(os.listdir(os.path.join(REPO, "roles")))) \
                if "{{" in role else [role]
            for r in roles:
                used.add((r, entry))
    assert ("service", "stop") in used and ("rollout", "bench_client") in used
    # validate is the settings' check itself (one settings_check task over the role's specs, rules and checks): a spec
    # of its own would check every type a second time
    used.discard(("_settings", "check"))
    for role, entry in sorted(used):
        if entry == "validate":
            specs = yaml.safe_load(open(os.path.join(REPO, "roles", role, "meta", "argument_specs.yml")))["argument_specs"]
            assert entry not in specs, "roles/%s: validate needs no spec of its own" % role
            continue
        specs = yaml.safe_load(open(os.path.join(REPO, "roles", role, "meta", "argument_specs.yml")))["argument_specs"]
        assert entry in specs, "roles/%s: entry point %s is used from outside but has no argument spec" % (role, entry)
        assert os.path.exists(os.path.join(REPO, "roles", role, "tasks", entry + ".yml"))


def test_no_block_is_copied():
    """hack/task_copies.py finds no copy: no run of same-shaped tasks between roles' task files, and no run of six or
    more lines in the roles' tasks/main.yml, the playbooks, site.yml and the molecule files (the scenarios'
    containers share their settings through molecule/resources/create.yml)."""
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, os.path.join(REPO, "hack", "task_copies.py")], capture_output=True, text=True)
    out = proc.stdout
    assert "over %d task files" % len([p for p in glob.glob(
        os.path.join(REPO, "roles", "*", "tasks", "*.yml")) if not p.endswith("/main.yml")]) in out, out
    assert "0 copied task blocks of 2 or more tasks" in out, out
    assert re.findall(r"^\d+ lines: .*$", out, re.M) == [], "copied blocks:\n" + out
    assert "0 copied blocks of 6 or more lines" in out, out
    assert proc.returncode == 0, out


def test_task_copies_fails_on_a_copy(tmp_path):
    """The check can fail: a playbook with a block of six lines twice is reported, and the script exits 1."""
    import subprocess
    import sys
    (tmp_path / "playbooks").mkdir()
    task = ("- name: Say it\n  ansible.builtin.debug:\n    msg: one\n  vars:\n    a: 1\n    b: 2\n  when: true\n")
    (tmp_path / "playbooks" / "a.yml").write_text("---\n" + task + "\n" + task)
    proc = subprocess.run([sys.executable, os.path.join(REPO, "hack", "task_copies.py"), "--repo", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout
    assert "7 lines: playbooks/a.yml:2-8 ~ playbooks/a.yml:10-16" in proc.stdout, proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("1 copied blocks of 6 or more lines"), proc.stdout


def test_no_private_name_is_read_outside_its_role():
    """A role's `__<role>_` names (its registers, its facts, its derived values) are its own: another role or a
    playbook reads what the role publishes under a public name (probes_result, probes_bench_result,
    probes_reference_result, rollout_steps, service_ready...), documented in its README."""
    roles = [r for r in os.listdir(os.path.join(REPO, "roles")) if not r.startswith("_")]
    private = re.compile(r"\b__(%s)_\w+" % "|".join(sorted(roles, key=len, reverse=True)))
    found = []
    for top in ("roles", "playbooks"):
        for base, _dirs, files in os.walk(os.path.join(REPO, top)):
            rel = os.path.relpath(base, REPO).split(os.sep)
            own = rel[1] if rel[0] == "roles" and len(rel) > 1 else None
            for name in files:
                path = os.path.join(base, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in private.finditer(text):
                    if m.group(1) != own:
                        found.append("%s: %s" % (os.path.relpath(path, REPO), m.group(0)))
    assert not found, "private names read outside their role:\n" + "\n".join(sorted(set(found)))


def test_the_release_links_are_spelled_once():
    """`<venv_releases_dir>/current` (and /previous) is spelled in one place, roles/_defaults' __glm53_release_links:
    the venv role reads it into venv_serving; a reader without venv_serving takes the link by that name."""
    spelled = re.compile(r"venv_releases_dir *(?:~ *'|\}\})/(?:current|previous)")
    found = []
    for top in ("roles", "playbooks"):
        for base, _dirs, files in os.walk(os.path.join(REPO, top)):
            for name in files:
                if name.endswith((".yml", ".j2")) and name != "argument_specs.yml":
                    path = os.path.join(base, name)
                    for n, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1):
                        if spelled.search(line) and not line.lstrip().startswith("#"):
                            found.append("%s:%d" % (os.path.relpath(path, REPO), n))
    assert found == ["roles/_defaults/defaults/main.yml:%d" % _line_of("__glm53_release_links:")], found
    assert spelled.search("release_link: \"{{ venv_releases_dir }}/current\"")  # the form it looks for


def _line_of(text):
    with open(os.path.join(REPO, "roles", "_defaults", "defaults", "main.yml")) as fh:
        return next(n for n, line in enumerate(fh, 1) if line.startswith(text))
