# Test double: the `vllm` console script of the fake vLLM engine.
from __future__ import annotations

import os
import sys
from importlib import metadata

from vllm.entrypoints.openai.cli_args import make_arg_parser, validate_parsed_serve_args
from vllm.utils.argparse_utils import FlexibleArgumentParser


# The benchmark client: vLLM 0.28.0's own `vllm bench serve`, from a venv that has the real vLLM (the stand-in is a
# server only). The fleet scenario's containers have the contract venv mounted at this default.
BENCH_PYTHON = "/opt/vllm-0.28.0/bin/python"


def bench(argv) -> int:
    python = os.environ.get("VLLM_STANDIN_BENCH_PYTHON") or BENCH_PYTHON
    if not os.access(python, os.X_OK):
        print("vllm bench: this vllm is the glm53.serving test stand-in, whose benchmark client is the real vLLM "
              "0.28.0's, run by %s (VLLM_STANDIN_BENCH_PYTHON); it is not there" % python, file=sys.stderr)
        return 2
    client = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "standin", "bench_client.py")
    os.execv(python, [python, "-I", client] + argv)
    return 2  # not reached


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        return bench(argv)
    parser = FlexibleArgumentParser(prog="vllm", description="vLLM CLI (glm53.serving test stand-in)")
    parser.add_argument("-v", "--version", action="version", version=metadata.version("vllm"))
    sub = parser.add_subparsers(dest="subparser", required=True)
    serve = sub.add_parser("serve", help="Start the OpenAI-compatible API server")
    make_arg_parser(serve)
    args = parser.parse_args(argv)
    if args.subparser == "serve":
        try:
            validate_parsed_serve_args(args)
        except TypeError as exc:
            print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
        from vllm.standin.server import run_server
        return run_server(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
