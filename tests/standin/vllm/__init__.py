# Test double: the fake vLLM engine used by glm53.serving's tests (no GPU, no model).
"""A stand-in for vLLM 0.28 that serves the OpenAI-compatible API from a tiny rule-based 'model'."""
from vllm.version import __version__, __version_tuple__

__all__ = ["__version__", "__version_tuple__"]
