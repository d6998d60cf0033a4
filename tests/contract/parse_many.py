"""Run in the contract venv: read a JSON list of argv lists (after `vllm serve MODEL`) on stdin and print, for each,
whether vLLM's own parser accepts it ("ok") or its refusal, on the last stdout line as JSON. Unknown reasoning and
tool-call parser names count as refused (vLLM accepts them at parse time and fails at start-up)."""
import contextlib
import io
import json
import sys

sys.argv = ["vllm serve"]
from vllm.entrypoints.openai.cli_args import make_arg_parser  # noqa: E402
from vllm.reasoning import ReasoningParserManager  # noqa: E402
from vllm.tool_parsers import ToolParserManager  # noqa: E402
from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: E402


def verdict(argv):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = make_arg_parser(FlexibleArgumentParser()).parse_args(["/models/glm"] + argv)
    except SystemExit:
        return (err.getvalue().strip().splitlines() or ["refused"])[-1][:300]
    except Exception as exc:  # vLLM's own conversion (a KeyError for an unknown cudagraph_mode)
        return "%s: %s" % (type(exc).__name__, exc)
    for attr, mgr, get in (("reasoning_parser", ReasoningParserManager, "get_reasoning_parser"),
                           ("tool_call_parser", ToolParserManager, "get_tool_parser")):
        name = getattr(args, attr, None)
        if name:
            try:
                getattr(mgr, get)(name)
            except KeyError as exc:
                return "unknown %s %s" % (attr, exc)
    return "ok"


print(json.dumps([verdict(argv) for argv in json.load(sys.stdin)]))
