"""Paths shared by the tests, and this checkout importable as ansible_collections.glm53.serving."""
from __future__ import annotations

import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
FAKES = os.path.join(REPO, "tests", "fakes")
HELPERS = os.path.join(REPO, "tests", "helpers")

COLLECTIONS_ROOT = tempfile.mkdtemp(prefix="glm53-collections-")
os.makedirs(os.path.join(COLLECTIONS_ROOT, "ansible_collections", "glm53"))
os.symlink(REPO, os.path.join(COLLECTIONS_ROOT, "ansible_collections", "glm53", "serving"))
sys.path.insert(0, COLLECTIONS_ROOT)
sys.path.insert(0, HELPERS)
