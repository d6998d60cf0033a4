# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The kinds of the collection's settings, and the checks each kind brings.

Every setting of every role is declared with a kind in its role's ``meta/rules.yml`` (the ``rule`` key; a test fails
for a setting without one). The shape rules (``port``, ``int_range``, ``abs_path``...) are kinds too; this module
holds the kinds that know about trust, references and names:

- ``root_path``: a path that root runs, sources or loads. Beside ``abs_path``'s checks, it lies in no folder that
  another user can write (``/tmp``, ``/var/tmp``, ``/dev/shm``, ``/run/user``, ``/home``, ``/var/crash``,
  ``/run/lock``), nor inside a folder that the engine's user owns (the rule's ``not_inside`` settings).
- ``url``: parsed, not matched: http or https, a host, an IPv6 host in brackets, a port from 1 to 65535, no
  ``user:password@`` (a URL is written to files and logs; a credential has a setting of its own). With
  ``token`` (a setting holding a third party's secret), https unless the host is loopback.
- ``host_port``: ``host:port`` as Prometheus takes a target (an IPv6 host in brackets).
- ``host_ref`` / ``hosts_ref`` / ``group_ref``: a host of the inventory (or ``localhost``), a pattern of hosts and
  groups that all exist and is not the whole inventory, a group of the inventory.
- ``unit_name``: a systemd unit's or cron file's name, without a suffix, that no other setting names.
- ``sha256``, ``silence_matchers``, ``one_of``.
- ``flag``, ``choice``, ``mapping``, ``list``, ``text``, ``internal``: kinds whose type or choices the argument
  spec checks; the rule says what the value is (``why``, required for the free kinds, says why it is free).
"""

from __future__ import annotations

import fnmatch
import ipaddress
import json
import posixpath
import re
from urllib.parse import parse_qsl, urlsplit

# Folders another user can write into (sticky or not): nothing root runs, sources or loads lives there.
UNTRUSTED_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/user", "/run/lock", "/var/lock", "/home", "/var/crash",
                  "/var/mail", "/var/spool")
# Kinds with no check of their own beyond the argument spec's type and choices.
PLAIN_KINDS = frozenset(["choice", "mapping", "list", "internal", "raw"])
# Kinds whose rule must say why the value is free (the argument spec alone checks it).
FREE_KINDS = frozenset(["text", "mapping", "list", "internal", "raw"])
_UNIT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9:_.@-]{0,200}")
_UNIT_SUFFIXES = (".service", ".timer", ".socket", ".target", ".mount", ".path", ".slice", ".scope", ".device",
                  ".swap", ".automount")
_LABEL = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_HOSTNAME = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]{0,252})")


def shown(check):
    return "(hidden)" if check.get("secret") else json.dumps(check.get("value"), default=str)


def normal_path(path):
    """The path as the kernel resolves its spelling ('//', '/./', a trailing '/' folded), or None when not absolute."""
    if not isinstance(path, str) or not path.startswith("/"):
        return None
    norm = posixpath.normpath(path)
    return "/" + norm.lstrip("/") if norm.startswith("//") else norm


# Characters a shell, cron or systemd reads as their own (a command separator, an expansion, a specifier, a quote):
# no path the collection writes or runs holds one. Quoting keeps such a value one word; refusing it keeps it out of
# every tool that reads the path after us.
_PATH_SPECIALS = set(";`$%&|<>'\"\\*?!")


def special_chars(path):
    """The characters of path that a shell, cron or systemd would read as their own ('' when none)."""
    return "".join(sorted(set(path) & _PATH_SPECIALS)) if isinstance(path, str) else ""


def unnormal(path):
    """A message part when an absolute path is not written in its one spelling, else None."""
    if path != "/" and normal_path(path) != path:
        return ("is not written in its one spelling (no '//', '/./' or trailing '/'): write %s, so that no other "
                "setting names the same file under another spelling" % json.dumps(normal_path(path)))
    return None


def inside(path, folder):
    path, folder = normal_path(path), normal_path(folder)
    if path is None or folder is None:
        return False
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _loopback(host):
    if host in ("localhost", "localhost.localdomain") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _url_credential(value):
    """What credential a URL's text carries (a user or password before its host, a secret in its query), or None."""
    if not isinstance(value, str):
        return None
    rest = value.split("://", 1)[-1]
    if "@" in rest.split("/", 1)[0].split("?", 1)[0]:
        return "a user or password before its host"
    query = rest.split("?", 1)[1].split("#", 1)[0] if "?" in rest else ""
    keys = sorted(set(k for k, _v in parse_qsl(query, keep_blank_values=True)
                      if re.search(r"(?i)token|key|secret|pass|auth|sig|credential|session", k)))
    return ("%s in its query" % ", ".join(keys)) if keys else None


def url_problem(check):
    name, value = check["name"], check.get("value")
    credential = _url_credential(value)
    if credential:  # before anything that would show the value
        return ("%s=(a URL with %s) carries a credential: a URL is written to files and shown in logs. Give the "
                "URL without it and the credential in its own setting (kept in a vault)." % (name, credential))
    what = "%s=%s" % (name, shown(check))
    if not isinstance(value, str) or value.strip() != value or re.search(r"\s", value):
        return "%s must be an http:// or https:// URL with a host (http://127.0.0.1:8000), no spaces in it." % what
    netloc = value.split("://", 1)[-1].split("/", 1)[0].split("@")[-1]
    if netloc.count(":") > 1 and not netloc.startswith("["):
        return "%s has an IPv6 host without brackets: write it http://[ADDRESS]:PORT/." % what
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        if "Port" in str(exc) or "port" in str(exc):
            return "%s has a port outside 1-65535: give the port the service listens on." % what
        return ("%s does not parse as a URL (%s): an IPv6 host goes in brackets, http://[fe80::1]:9093."
                % (what, exc))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "%s must be an http:// or https:// URL with a host (http://127.0.0.1:8000)." % what
    if port is not None and not 1 <= port <= 65535 or parts.netloc.endswith(":"):
        return "%s has a port outside 1-65535: give the port the service listens on." % what
    host = parts.hostname
    if ":" in host and not parts.netloc.split("@")[-1].startswith("["):
        return "%s has an IPv6 host without brackets: write it http://[%s]:PORT/." % (what, host)
    if ":" not in host and not _HOSTNAME.fullmatch(host):
        return "%s has a host name with characters no host name has (%s)." % (what, json.dumps(host))
    token = check.get("token")
    if token and parts.scheme != "https" and not _loopback(host):
        return ("%s is plain http to another machine while %s is set: the token would cross the network in clear. Use "
                "https (or a loopback address)." % (what, token))
    return None


def host_port_problem(check):
    name, value = check["name"], check.get("value")
    what = "%s=%s" % (name, shown(check))
    fix = "host:port, an IPv6 host in brackets ([fe80::1]:9093), the port from 1 to 65535"
    if not isinstance(value, str) or re.search(r"\s|/|@", value):
        return "%s must be %s." % (what, fix)
    m = re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+):([0-9]{1,5})", value)
    if not m:
        if value.count(":") > 1 and not value.startswith("["):
            return "%s has an IPv6 host without brackets: it must be %s." % (what, fix)
        return "%s must be %s." % (what, fix)
    host, port = m.group(1), int(m.group(2))
    if not 1 <= port <= 65535:
        return "%s has a port outside 1-65535: it must be %s." % (what, fix)
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return "%s has no IPv6 address in its brackets: it must be %s." % (what, fix)
    elif not _HOSTNAME.fullmatch(host):
        return "%s must be %s." % (what, fix)
    return None


def _inventory_names(check):
    groups = check.get("inventory") or {}
    hosts = set(groups.get("all", []) if isinstance(groups, dict) else [])
    return hosts, set(groups) if isinstance(groups, dict) else set()


def ref_problem(check):
    name, value, rule = check["name"], check.get("value"), check["rule"]
    what = "%s=%s" % (name, shown(check))
    hosts, groups = _inventory_names(check)
    if not hosts and not groups:
        return None  # no inventory in this context (a role used on its own): nothing to resolve against
    if rule == "host_ref":
        if not isinstance(value, str) or value not in hosts | {"localhost"}:
            return ("%s names no host of the inventory: give one of its hosts (or localhost), such as %s."
                    % (what, ", ".join(sorted(hosts)[:3]) or "localhost"))
        return None
    if rule == "group_ref":
        if not isinstance(value, str) or value not in groups - {"all", "ungrouped"}:
            return ("%s is not an inventory group: give one of %s."
                    % (what, ", ".join(sorted(groups - {"all", "ungrouped"})) or "its groups"))
        return None
    # hosts_ref: an Ansible pattern of hosts and groups (a:b, a,b, !a, &a), each of them in the inventory
    if not isinstance(value, str) or not value.strip():
        return "%s must be a pattern of the inventory's hosts or groups (glm53_serving, gpu-01:gpu-02)." % what
    words = [w.strip() for w in re.split(r"[:,]", value) if w.strip()]
    for word in words:
        bare = word.lstrip("!&")
        matched = fnmatch.filter(sorted(hosts | groups), bare) if "*" in bare or "?" in bare else None
        if not word.startswith("!") and (bare in ("all", "*") or (matched is not None and hosts and
                                                                  set(fnmatch.filter(sorted(hosts), bare)) == hosts)):
            return ("%s takes in every host of the inventory (%s): the monitoring and load-balancer hosts too, which "
                    "are not engines. Name the serving group or its hosts (glm53_serving)." % (what, word))
        if bare.startswith("~") or "[" in bare:
            continue  # a regex or a slice: left to Ansible, which says when it matches nothing
        if matched is not None:
            if not matched:
                return ("%s names %s, which matches no host or group of the inventory: Ansible would skip it "
                        "silently. Fix the pattern." % (what, json.dumps(bare)))
            continue
        if bare not in hosts and bare not in groups:
            return ("%s names %s, which is no host or group of the inventory: Ansible would skip it silently. Fix "
                    "the name." % (what, json.dumps(bare)))
    return None


def unit_name_problem(check):
    name, value = check["name"], check.get("value")
    what = "%s=%s" % (name, shown(check))
    if isinstance(value, str) and len(value) > 200:
        return "%s is longer than a unit name may be: at most 200 characters." % what
    if not isinstance(value, str) or not _UNIT.fullmatch(value) or ".." in value:
        return ("%s is not a unit name: letters, digits and :_.@- only, no '/', no '..', not starting with '-' or '.' "
                "(glm53-heal)." % what)
    if value.endswith(_UNIT_SUFFIXES):
        return "%s carries a unit suffix: give the name without it (the collection adds .service and .timer)." % what
    return None


def distinct_problem(check):
    """A path or name that another setting also names (check['others']: [[name, value], ...])."""
    value = check.get("value")
    if not isinstance(value, str) or not value:
        return None
    mine = normal_path(value) or value
    for other, theirs in check.get("others") or []:
        if isinstance(theirs, str) and theirs and (normal_path(theirs) or theirs) == mine:
            return ("%s=%s names what %s names too: the two would write over each other. Give each its own."
                    % (check["name"], shown(check), other))
    return None


def root_path_problem(check):
    value = check.get("value")
    for folder in UNTRUSTED_DIRS:
        if inside(value, folder):
            return ("%s=%s is inside %s, which other users can write: root runs, sources or loads this path, so "
                    "another user could put their own file there. Give a path in a folder only root can write "
                    "(the default's shape)." % (check["name"], shown(check), folder))
    for other, folder in check.get("untrusted") or []:
        if isinstance(folder, str) and folder.startswith("/") and normal_path(folder) != "/" and inside(value, folder):
            return ("%s=%s is inside %s=%s, a folder the engine's user owns: root runs, sources or loads this path, so "
                    "that user could become root. Give a path outside it."
                    % (check["name"], shown(check), other, json.dumps(folder)))
    return None


def silence_problem(check):
    name, value = check["name"], check.get("value")
    if not isinstance(value, list) or not value:
        return ("%s must be a non-empty list of matchers: an empty silence would match every alert of the "
                "fleet." % name)
    for i, item in enumerate(value):
        label = "%s[%d]" % (name, i)
        if not isinstance(item, dict) or not str(item.get("name", "")).strip() or not str(item.get("value", "")).strip():
            return "%s must be a matcher with a name and a non-empty value ({name: host, value: gpu-01})." % label
        if item.get("isEqual") is False or str(item.get("isEqual", "true")).lower() in ("false", "no", "0"):
            return ("%s is negated (isEqual: false): it silences every host but one, during a rollout of one host. "
                    "Match the host being restarted." % label)
        if str(item.get("isRegex", "false")).lower() in ("true", "yes", "1"):
            try:
                pattern = re.compile(str(item["value"]))
            except re.error as exc:
                return "%s is not a regular expression Alertmanager takes (%s)." % (label, exc)
            if pattern.fullmatch("") or pattern.fullmatch("zz-no-such-host-9"):
                return ("%s matches any host (%s): the silence would hide every host's alerts during a rollout of "
                        "one host. Match the host being restarted." % (label, json.dumps(item["value"])))
    host, hosts = check.get("host"), set((check.get("inventory") or {}).get("all", []))
    if host:
        def holds(item):
            regex = str(item.get("isRegex", "false")).lower() in ("true", "yes", "1")
            if not regex:
                return str(item["value"]) == host
            pattern = str(item["value"])
            return bool(re.fullmatch(pattern, host)) and not any(re.fullmatch(pattern, h) for h in hosts - {host})
        if not any(holds(item) for item in value):
            return ("%s matches no label that is this host's alone (%s): the silence of one host's turn would hide the "
                    "alerts of every host it matches. Keep a matcher on the host label, {name: host, value: "
                    "\"{{ inventory_hostname }}\"}, as the default does." % (name, host))
    return None


# Variables that make a process load code from a path: in a build's or a root step's environment, each folder they
# name is one root trusts.
LOADER_VARIABLES = frozenset(["PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX",
                              "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "PATH", "CUDA_HOME",
                              "CC", "CXX", "NVCC", "CUDACXX", "CMAKE_PREFIX_PATH"])
# Variables no environment that reaches a root step may set at all (the dynamic loader reads them in every program).
PRELOAD_VARIABLES = frozenset(["LD_PRELOAD", "LD_AUDIT"])
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_map_problem(check):
    """An environment mapping (the builds', the engine's): names, one-line values, and no loader variable that
    points into a folder another user can write."""
    name, value = check["name"], check.get("value")
    if not isinstance(value, dict):
        return None  # the argument spec says it is not a mapping
    for key, item in value.items():
        if not isinstance(key, str) or not _ENV_NAME.fullmatch(key):
            return ("a key of %s, %s, is not an environment variable name: a letter or _, then letters, digits or _."
                    % (name, json.dumps(key, default=str)))
        text = "" if item is None else str(item)
        if re.search(r"[\x00-\x1f\x7f]", text):
            return "%s[%s] must be one line (no line break or control character)." % (name, json.dumps(key))
        if key.upper() in PRELOAD_VARIABLES and check.get("root"):
            return ("%s sets %s: the unit gives its environment to the steps root runs beside the engine (the relaunch "
                    "gate, the watchdog), and %s makes every program load the code it names. Leave it out."
                    % (name, key, key))
        if key.upper() in LOADER_VARIABLES:
            for part in [p for p in re.split(r"[: ]", text) if p]:
                if key.upper() in ("CC", "CXX", "NVCC", "CUDACXX") and "/" not in part:
                    continue  # a compiler by name, found on root's PATH
                sub = dict(check, name="%s[%s]" % (name, json.dumps(key)), value=part)
                if not part.startswith("/") or ".." in part.split("/") or special_chars(part):
                    return ("%s=%s: each folder of %s must be an absolute path, with no '..' and no character a shell "
                            "reads as its own: a relative one is read from whatever folder the step runs in."
                            % (sub["name"], json.dumps(part), key))
                problem = root_path_problem(sub)
                if problem:
                    return problem
    return None


def command_problem(check):
    """A command root runs: a bare name found on root's PATH, or an absolute path in folders only root writes."""
    name, value = check["name"], check.get("value")
    if isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._+-]*", value):
        return None
    if not isinstance(value, str) or not value.startswith("/") or re.search(r"\s", value) or ".." in value.split("/"):
        return ("%s=%s must be a command name (python3) or an absolute path to one, with no spaces or '..'."
                % (name, shown(check)))
    if special_chars(value):
        return ("%s=%s holds %s, which a shell, cron or systemd reads as its own: give a path of letters, digits and "
                ". _ - + @ = , : / only." % (name, shown(check), " ".join(special_chars(value))))
    if unnormal(value):
        return "%s=%s %s." % (name, shown(check), unnormal(value))
    return root_path_problem(check)


def location_problem(check):
    """An https:// (or http://) URL, a file:// URL or an absolute path: where one file comes from."""
    value = check.get("value")
    fix = ("%s=%s must be an https://, http:// or file:// URL%s (no spaces, no '..', no control character)"
           % (check["name"], shown(check), "" if check.get("url_only") else ", or an absolute path"))
    if isinstance(value, str) and (value.startswith("/") or value.startswith("file://")):
        path = value[len("file://"):] if value.startswith("file://") else value
        if (not path.startswith("/") or (value.startswith("/") and check.get("url_only")) or ".." in path.split("/")
                or re.search(r"[\s\x00-\x1f\x7f]", path) or special_chars(path)):
            return fix + "."
        return None
    if not isinstance(value, str) or not re.match(r"https?://", value):
        return fix + "."
    problem = url_problem(check)
    return (fix + ": " + problem) if problem and "must be an http" in problem else problem


# Every kind a rules file may name: the shape rules of the setting_problems filter and this module's kinds.
KINDS = frozenset(["port", "positive", "fraction", "number_range", "int_min", "int_range", "abs_path", "own_dir",
                   "abs_path_no_space", "root_path", "path", "hex_commit", "nonblank", "single_line", "text",
                   "secret", "unix_name", "env_name", "url", "duration", "serial", "count_or_pct", "host_port",
                   "host_ref", "hosts_ref", "group_ref", "unit_name", "sha256", "silence_matchers", "one_of",
                   "env_map", "command", "location", "flag", "label"]) | PLAIN_KINDS


def kind_problem(check):
    """The message for one of this module's kinds, None when the value keeps it, NotImplemented for another rule."""
    rule, name, value = check["rule"], check["name"], check.get("value")
    if rule in PLAIN_KINDS:
        return None
    if rule == "url":
        return url_problem(check) or distinct_problem(check)
    if rule == "host_port":
        return host_port_problem(check)
    if rule in ("host_ref", "hosts_ref", "group_ref"):
        return ref_problem(check)
    if rule == "unit_name":
        return unit_name_problem(check) or distinct_problem(check)
    if rule == "flag":
        # a spec's bool is checked by its type; a playbook's own flag (no spec) is checked here
        if isinstance(value, bool) or str(value).strip().lower() in ("true", "false", "yes", "no", "1", "0", "on", "off"):
            return None
        return "%s=%s must be true or false." % (name, shown(check))
    if rule == "location":
        return location_problem(check)
    if rule == "env_map":
        return env_map_problem(check)
    if rule == "command":
        return command_problem(check)
    if rule == "label":
        if not isinstance(value, str) or not _LABEL.fullmatch(value):
            return ("%s=%s must be a name of letters, digits, '.', '_' and '-' (at most 128, not starting with '.'): "
                    "it names a file and a folder." % (name, shown(check)))
        return None
    if rule == "sha256":
        if not isinstance(value, str) or not _HEX64.fullmatch(value):
            return "%s=%s must be a sha256: 64 hex digits (sha256sum FILE)." % (name, shown(check))
        return None
    if rule == "silence_matchers":
        return silence_problem(check)
    if rule == "one_of":
        choices = check.get("choices") or []
        if value not in choices:
            return "%s=%s must be one of %s." % (name, shown(check), ", ".join(str(c) for c in choices))
        return None
    return NotImplemented
