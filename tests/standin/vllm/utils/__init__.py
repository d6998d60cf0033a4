# Test double: vllm.utils of the fake vLLM engine (only what the collection touches).
from vllm.utils.argparse_utils import FlexibleArgumentParser

__all__ = ["FlexibleArgumentParser"]
