# Test double: vllm.version of the fake vLLM engine (same fallback as vLLM's).
import warnings

try:
    from vllm._version import __version__, __version_tuple__
except ImportError as exc:
    warnings.warn(f"Failed to read commit hash:\n{exc}", RuntimeWarning, stacklevel=2)
    __version__ = "dev"
    __version_tuple__ = (0, 0, __version__)

__all__ = ["__version__", "__version_tuple__"]
