"""Offline-friendly replacement for ansible-test's get-pip bootstrap script.

ansible-test downloads get-pip.py from ci-files.testing.ansible.com, which this machine cannot
reach. This script does the same job: it runs the pip wheel bundled with the standard library's
ensurepip to install the pip release ansible-test asks for (from PyPI, which is reachable).
It is copied to ~/.ansible/test/cache/get_pip_<version>.py by hack/test.sh.
"""
import glob
import os
import sys

import ensurepip

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
wheel = sorted(glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "pip-*.whl")))[-1]
sys.path.insert(0, wheel)
from pip._internal.cli.main import main  # noqa: E402  (import from the wheel just put on the path)

sys.exit(main(["install", *args]))
