# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Write a file so that no reader ever sees half of it: a temporary file in the same folder, renamed over the old
one. Standard library only (modules run on any host)."""

from __future__ import annotations

import os
import tempfile


def write_text(path, text, mode=0o644):
    """Write text to path by rename; the temporary file is removed if anything fails (the error is raised)."""
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".tmp", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
