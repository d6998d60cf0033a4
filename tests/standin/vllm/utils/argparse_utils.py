# Test double: FlexibleArgumentParser of the fake vLLM engine.
from __future__ import annotations

import argparse


class FlexibleArgumentParser(argparse.ArgumentParser):
    """Like vLLM's: accepts ``--flag_name`` as ``--flag-name`` and ``--flag=value``."""

    def parse_args(self, args=None, namespace=None):  # noqa: D401
        if args is not None:
            fixed = []
            for arg in args:
                if arg.startswith("--") and "_" in arg.split("=", 1)[0]:
                    key, sep, val = arg.partition("=")
                    arg = key.replace("_", "-") + sep + val
                fixed.append(arg)
            args = fixed
        return super().parse_args(args, namespace)
