"""Every number setting is read through `| int` or `| float` wherever an expression computes or compares with it.

`-e serve_tensor_parallel_size=8` on the command line gives the *string* "8". Argument specs accept it (it
converts) but leave the variable a string, so `gpu_count >= serve_tensor_parallel_size` raises "'>=' not
supported between int and str" (a good value refused with an internal error) and `serve_port == 8000` is false.
So an expression that compares or computes with a number setting reads it through `| int` or `| float`: this
test reads every expression in roles/, playbooks/ and site.yml (as test_bool_settings does) and fails on a
number setting beside an operator, in a range() or a min/max, or as a filter's input other than a
conversion. Rendering one as text (`{{ serve_port }}`), passing it whole to a module option or to the
`setting_problems` rules (which read strings) is fine.
"""
from __future__ import annotations

import glob
import os
import re

import yaml

from test_bool_settings import REPO, sources

OPERATOR = r"(<=|>=|==|!=|<|>|\+|-(?!\w)|\*|//|/|%(?!\}))"
CONVERSIONS = ("int", "float", "string", "to_json", "to_nice_json", "quote", "regex_replace", "default")


def number_settings():
    names = set()
    for path in glob.glob(os.path.join(REPO, "roles", "*", "meta", "argument_specs.yml")):
        with open(path, encoding="utf-8") as fh:
            for spec in yaml.safe_load(fh)["argument_specs"].values():
                names.update(n for n, o in spec.get("options", {}).items() if o.get("type") in ("int", "float"))
    return names


def unconverted_uses(text, names):
    found = []
    for name in names:
        for m in re.finditer(r"(?<![\w.'\"])%s(?![\w'\"])" % re.escape(name), text):
            rest, before = text[m.end():], text[:m.start()]
            if re.match(r"\s*[:=](?!=)", rest):
                continue  # a key being set, not read
            pipe = re.match(r"\s*\|\s*(\w+)", rest)
            if pipe:
                if pipe.group(1) in ("int", "float"):
                    continue
                if pipe.group(1) == "default":  # name | default(x) | int
                    chain = re.match(r"\s*\|\s*default\([^()]*(\([^()]*\)[^()]*)*\)\s*\|\s*(\w+)", rest)
                    if chain and chain.group(2) in ("int", "float"):
                        continue
                if pipe.group(1) in CONVERSIONS:
                    continue  # read as text
                found.append(name)
                continue
            if re.match(r"\s*" + OPERATOR, rest) or re.search(OPERATOR + r"\s*$", before) \
                    or re.search(r"\b(range|min|max|sum)\(\s*\[?\s*$", before):
                found.append(name)
    return found


def test_there_are_number_settings_and_expressions_to_check():
    names = number_settings()
    assert {"serve_port", "serve_tensor_parallel_size", "service_timeout_stop_sec", "rollout_drain_timeout"} <= names


def test_no_expression_computes_with_a_number_setting_unconverted():
    names = number_settings()
    bad = []
    for path, exprs in sources():
        for expr in exprs:
            for name in unconverted_uses(expr, names):
                bad.append("%s: %s in %r" % (os.path.relpath(path, REPO), name, expr.strip()[:140]))
    assert not bad, "read these through `| int` or `| float` (-e gives the string '8'):\n" + "\n".join(sorted(set(bad)))


def test_the_scanner_sees_an_unconverted_use():
    names = {"serve_tensor_parallel_size"}
    assert unconverted_uses("__gpu.gpu_count >= serve_tensor_parallel_size", names) == list(names)
    assert unconverted_uses("serve_tensor_parallel_size * 2", names)
    assert unconverted_uses("range(serve_tensor_parallel_size)", names)
    assert not unconverted_uses("__gpu.gpu_count >= serve_tensor_parallel_size | int", names)
    assert not unconverted_uses("GPUs: {{ serve_tensor_parallel_size }}", names)
    assert not unconverted_uses("{'name': 'x', 'value': serve_tensor_parallel_size, 'rule': 'int_min'}", names)
