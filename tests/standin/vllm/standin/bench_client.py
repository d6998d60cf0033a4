"""Test double's client: `vllm bench serve` of the real vLLM 0.28.0, run by that venv's Python (not the stand-in's).
The stand-in's `vllm bench ...` (vllm/entrypoints/cli/main.py) runs this file with `python -I`, so the real vllm is
imported, not the stand-in's package beside it. It is what vllm/entrypoints/cli/benchmark/serve.py runs (vLLM's own
parser, vllm.benchmarks.serve's add_cli_args and main), without the `vllm` dispatcher, which imports the whole
engine (llguidance, uvicorn, the compiled ops) that the contract venv leaves out on purpose."""
import sys

from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser

if sys.argv[1:3] != ["bench", "serve"]:
    sys.exit("usage: vllm bench serve [options] (only the benchmark is here)")
parser = FlexibleArgumentParser(prog="vllm bench serve")
add_cli_args(parser)
main(parser.parse_args(sys.argv[3:]))
