# Test double: the `vllm` console script of the fake vLLM engine.
from __future__ import annotations

import sys
from importlib import metadata

from vllm.entrypoints.openai.cli_args import make_arg_parser, validate_parsed_serve_args
from vllm.utils.argparse_utils import FlexibleArgumentParser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
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
