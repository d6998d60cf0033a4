#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: vllm_serve_args
short_description: Check a C(vllm serve) command with the installed vLLM's own argument parser
version_added: "0.1.0"
description:
  - Runs, in the venv's interpreter, vLLM's C(make_arg_parser(FlexibleArgumentParser())) on the argv and then
    C(validate_parsed_serve_args), and looks the reasoning and tool-call parser names up in vLLM's registries
    (vLLM 0.28 accepts an unknown C(--reasoning-parser) at parse time and fails only at start-up, after minutes
    of loading).
  - Fails in seconds, before any restart, on an unknown flag, bad JSON, an invalid value or an unknown parser,
    and when an extra word sets a managed flag (compared by meaning, the parsed namespaces with and without
    the extra words); reports the parsed values otherwise.
  - An exception other than argparse's own (a C(KeyError) from an unknown C(cudagraph_mode), say) is reported
    as vLLM's refusal, with the value and the flag that carries it.
author:
  - glm53.serving contributors (@glm53)
options:
  venv:
    description: The virtualenv vLLM is installed in.
    type: path
    required: true
  argv:
    description: The words after C(vllm serve) (the model first).
    type: list
    elements: str
    required: true
  extra_argv:
    description:
      - Extra words appended after O(argv) (a role's escape hatch for flags it does not manage).
      - The command checked is O(argv) followed by these words.
    type: list
    elements: str
    default: []
  managed:
    description:
      - Argparse destinations the caller manages, each mapped to the variable that sets it.
      - When O(extra_argv) changes the parsed value of one of them (a repeated flag, a prefix such as
        C(--max-model), C(--flag=value), a short form), the module fails and names the variable to use instead.
    type: dict
    default: {}
  environment:
    description: Extra environment for the check (for example C(VLLM_TARGET_DEVICE=cpu) on a host without GPUs).
    type: dict
    default: {}
extends_documentation_fragment:
  - glm53.serving.info_module
notes:
  - Changes nothing. Imports vLLM's argument code, not the engine.
"""

EXAMPLES = r"""
- name: Prove the serve command before restarting
  glm53.serving.vllm_serve_args:
    venv: /opt/glm53/venv
    argv: [/srv/models/GLM-5.3-Flash-AWQ-INT4, --served-model-name, glm53-flash-awq, --reasoning-parser, glm47]
"""

RETURN = r"""
parsed:
  description: The parsed values of the flags that were given, as vLLM understood them.
  returned: success
  type: dict
  sample: {served_model_name: [glm53-flash-awq], max_model_len: 524288, reasoning_parser: glm47}
managed_conflict:
  description: The managed destinations the extra words would change (on failure).
  returned: failure
  type: list
  elements: str
  sample: [max_model_len]
vllm_version:
  description: The installed vLLM's version.
  returned: always
  type: str
  sample: 0.28.1rc1.dev6+gf2935ce32
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

_MARK = "GLM53-SERVE-ARGS "

# Runs in the venv's Python. vLLM logs to stdout, so the result is the last line that starts with _MARK.
_CHECK = r"""
import contextlib, io, json, sys


def parse(parser, argv, out):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(argv)
    except SystemExit:
        lines = [line.strip() for line in err.getvalue().strip().splitlines()] or ["unknown"]
        first = max([i for i, line in enumerate(lines) if ": error: " in line] or [len(lines) - 1])
        out["error"] = " ".join(lines[first:])[:2000]  # argparse's message; pydantic's spans several lines
    except Exception as exc:  # vLLM's own code raising while it converts a value (KeyError for a bad enum)
        out["error"] = refusal(exc, argv)
    return None


def refusal(exc, argv):
    value = exc.args[0] if exc.args else ""
    where = ""
    if isinstance(value, str) and value:
        for i, word in enumerate(argv):
            if value in word:
                flag = word.split("=", 1)[0] if word.startswith("-") else (argv[i - 1] if i else word)
                where = " in %s %s" % (flag, word if not word.startswith("-") else "")
                break
    return "it raised %s(%r) while reading the command: %r is not a value it knows%s" % (
        type(exc).__name__, value, value, where.rstrip())


def comparable(value):
    return json.dumps(value, sort_keys=True, default=str)


def check(argv, extra, managed, out):
    sys.argv = ["vllm serve"]  # the program name in argparse's messages
    import vllm
    out["version"] = getattr(vllm, "__version__", None)
    from vllm.entrypoints.openai.cli_args import make_arg_parser, validate_parsed_serve_args
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    parser = make_arg_parser(FlexibleArgumentParser())
    args = parse(parser, argv + extra, out)
    if args is None:
        return
    if extra:
        base = parse(make_arg_parser(FlexibleArgumentParser()), argv, out)
        if base is None:
            return
        changed = sorted(k for k in managed
                         if comparable(getattr(base, k, None)) != comparable(getattr(args, k, None)))
        if changed:
            out["error"] = "; ".join(
                "the extra arguments %s set %s (%s instead of %s), which is managed: set %s instead" % (
                    " ".join(extra), k, comparable(getattr(args, k, None)), comparable(getattr(base, k, None)),
                    managed[k]) for k in changed)
            out["managed_conflict"] = changed
            return
    try:
        validate_parsed_serve_args(args)
    except Exception as exc:
        out["error"] = "%s: %s" % (type(exc).__name__, exc)
        return
    problems = []
    for attr, modules, manager, getter in (
            ("reasoning_parser", ["vllm.reasoning"], "ReasoningParserManager", "get_reasoning_parser"),
            ("tool_call_parser", ["vllm.tool_parsers", "vllm.entrypoints.openai.tool_parsers"],
             "ToolParserManager", "get_tool_parser")):
        name = getattr(args, attr, None)
        if not name:
            continue
        mgr = None
        for mod in modules:
            try:
                mgr = getattr(__import__(mod, fromlist=[manager]), manager)
                break
            except (ImportError, AttributeError):
                continue
        if mgr is None:
            problems.append("cannot find vLLM's %s to check --%s" % (manager, attr.replace("_", "-")))
            continue
        try:
            getattr(mgr, getter)(name)
        except KeyError as exc:
            problems.append("--%s %s is unknown to this vLLM (%s)" % (attr.replace("_", "-"), name, exc))
        except Exception as exc:  # the parser is registered but its module does not import here
            problems.append("--%s %s is registered but cannot be loaded (%s: %s)" % (
                attr.replace("_", "-"), name, type(exc).__name__, exc))
    if problems:
        out["error"] = "; ".join(problems)
        return
    given = set(a.split("=", 1)[0].lstrip("-").replace("-", "_") for a in argv + extra if a.startswith("--"))
    given.add("model_tag")
    out["parsed"] = dict((k, v) for k, v in vars(args).items()
                         if k in given or k.replace("enable_", "") in given or "no_" + k in given)
    out["ok"] = True


result = {"ok": False, "error": None, "parsed": {}, "version": None}
try:
    request = json.loads(sys.argv[1])
    check(request["argv"], request["extra"], request["managed"], result)
except (TypeError, ValueError) as exc:
    result["error"] = "%s: %s" % (type(exc).__name__, exc)
print("GLM53-SERVE-ARGS " + json.dumps(result, default=str))
"""


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venv=dict(type="path", required=True),
            argv=dict(type="list", elements="str", required=True),
            extra_argv=dict(type="list", elements="str", default=[]),
            managed=dict(type="dict", default={}),
            environment=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    p = module.params
    python = os.path.join(p["venv"], "bin", "python")
    if not os.path.exists(python):
        module.fail_json(msg="no venv at %s (build it with the venv and vllm_fork roles)" % p["venv"])
    env = dict(os.environ)
    env.update(dict((k, str(v)) for k, v in p["environment"].items()))
    request = {"argv": p["argv"], "extra": p["extra_argv"], "managed": p["managed"]}
    rc, out, err = module.run_command([python, "-c", _CHECK, json.dumps(request)], environ_update=env)
    lines = [line[len(_MARK):] for line in out.splitlines() if line.startswith(_MARK)]
    try:
        result = json.loads(lines[-1])
    except (ValueError, IndexError):
        module.fail_json(msg="could not run vLLM's argument parser in %s (exit %d): %s" % (
            p["venv"], rc, (err or out).strip()[-2000:]))
    if not result["ok"]:
        module.fail_json(msg="vLLM (%s) refuses this serve command: %s" % (result.get("version"), result["error"]),
                         vllm_version=result.get("version"), managed_conflict=result.get("managed_conflict", []))
    module.exit_json(changed=False, parsed=result["parsed"], vllm_version=result.get("version"))


if __name__ == "__main__":
    main()
