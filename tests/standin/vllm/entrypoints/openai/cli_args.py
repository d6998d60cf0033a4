# Test double: `vllm serve` argument parsing of the fake vLLM engine (vLLM 0.28 names and rules).
"""The subset of ``vllm serve`` flags the collection renders, with vLLM 0.28.0's parsing rules.

Unknown flags are refused (argparse's "unrecognized arguments"), JSON flags are parsed with
``json.loads``, ``--max-model-len`` is human readable (``512K`` = 524288, ``512k`` = 512000).
Parser *names* are not checked here: like vLLM 0.28, an unknown ``--reasoning-parser`` is only
refused at start-up, after the load.
"""
from __future__ import annotations

import argparse
import json
import re

KV_CACHE_DTYPES = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla")
CUDAGRAPH_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")


def human_readable_int_or_auto(value: str) -> int:
    """524288, 512K (binary), 512k (decimal), 1M, 1m, auto or -1 (= -1, derive from config)."""
    text = str(value).strip()
    if text.lower() == "auto" or text == "-1":
        return -1
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgG]?)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"Invalid value {value!r}: expected an integer, e.g. 524288 or 512K")
    number, suffix = float(m.group(1)), m.group(2)
    scale = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "K": 1024, "M": 1024**2, "G": 1024**3}[suffix]
    result = number * scale
    if result != int(result):
        raise argparse.ArgumentTypeError(f"Invalid value {value!r}: not a whole number of tokens")
    return int(result)


def json_object(value: str) -> dict:
    try:
        obj = json.loads(value)
    except json.JSONDecodeError as exc:  # vLLM 0.28's parse_type(json.loads) words it this way
        raise argparse.ArgumentTypeError(f"Value {value} cannot be converted to {json.loads}.") from exc
    if not isinstance(obj, dict):
        raise argparse.ArgumentTypeError(f"Expected a JSON object, got {value!r}")
    return obj


def compilation_config(value: str) -> dict:
    obj = json_object(value)
    mode = obj.get("cudagraph_mode")
    if mode is not None and str(mode).upper() not in CUDAGRAPH_MODES:
        # vLLM 0.28 looks the name up in its CUDAGraphMode enum: a KeyError escapes argparse
        raise KeyError(str(mode).upper())
    return obj


def gpu_memory_utilization(value: str) -> float:
    f = float(value)
    if not 0 < f <= 1:
        raise argparse.ArgumentTypeError(f"gpu_memory_utilization must be in (0, 1], got {value}")
    return f


def make_arg_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("model_tag", nargs="?", default=None, help="model path or name")
    parser.add_argument("--model", default=None)
    parser.add_argument("--served-model-name", nargs="+", default=None)
    parser.add_argument("--host", default=None)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--ssl-keyfile", default=None)
    parser.add_argument("--ssl-certfile", default=None)
    parser.add_argument("--ssl-ca-certs", default=None)
    parser.add_argument("--ssl-cert-reqs", type=int, default=0)
    parser.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    parser.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    parser.add_argument("--max-model-len", type=human_readable_int_or_auto, default=None)
    parser.add_argument("--max-num-batched-tokens", type=human_readable_int_or_auto, default=None)
    parser.add_argument("--max-num-seqs", type=int, default=None)
    parser.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--hf-overrides", type=json_object, default=None)
    parser.add_argument("--compilation-config", "-cc", type=compilation_config, default=None)
    parser.add_argument("--gpu-memory-utilization", type=gpu_memory_utilization, default=0.92)
    parser.add_argument("--kv-cache-dtype", choices=KV_CACHE_DTYPES, default="auto")
    parser.add_argument("--reasoning-parser", default=None)
    parser.add_argument("--tool-call-parser", default=None)
    parser.add_argument("--enable-auto-tool-choice", action="store_true", default=False)
    parser.add_argument("--enforce-eager", action="store_true", default=False)
    parser.add_argument("--trust-remote-code", action="store_true", default=False)
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--quantization", "-q", default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--chat-template", default=None)
    parser.add_argument("--generation-config", default="auto")
    parser.add_argument("--uvicorn-log-level", default="info")
    parser.add_argument("--disable-log-stats", action="store_true", default=False)
    parser.add_argument("--enable-log-requests", action="store_true", default=False)
    parser.add_argument("--enable-log-outputs", action="store_true", default=False)
    parser.add_argument("--disable-uvicorn-access-log", action="store_true", default=False)
    parser.add_argument("--enable-force-include-usage", action="store_true", default=False)
    parser.add_argument("--swap-space", type=float, default=None)
    parser.add_argument("--download-dir", default=None)
    parser.add_argument("--load-format", default="auto")
    return parser


def validate_parsed_serve_args(args: argparse.Namespace) -> None:
    """Quick checks that vLLM 0.28 makes before loading anything."""
    if args.enable_auto_tool_choice and not args.tool_call_parser:
        raise TypeError("Error: --enable-auto-tool-choice requires --tool-call-parser")
    if args.enable_log_outputs and not args.enable_log_requests:
        raise TypeError("Error: --enable-log-outputs requires --enable-log-requests")
