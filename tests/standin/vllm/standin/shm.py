# Test double: the shared-memory blocks a vLLM/PyTorch/multiprocessing process tree holds.
"""Create /dev/shm blocks named as the real ones are (see tests/fixtures/dev-shm-*.txt).

``psm_<8 hex>``: ``multiprocessing.shared_memory`` (vLLM's MessageQueue ring buffers), 1 MiB;
``sem.mp-<8 chars>``: POSIX named semaphores from ``multiprocessing`` (32 bytes);
``torch_<pid>_<n>_0``: PyTorch's ``file_system`` sharing strategy (4064 bytes).
They are opened and mapped like the real ones (so they show in /proc/<pid>/fd and maps), removed
on a clean shutdown, and left behind on SIGKILL or after an engine death, as in vLLM.
"""
from __future__ import annotations

import mmap
import os
import random
import secrets
import string


class ShmBlocks:
    def __init__(self, directory: str, required_mb: int, ranks: int = 1) -> None:
        st = os.statvfs(directory)
        free_mb = st.f_bavail * st.f_frsize // (1024 * 1024)
        if free_mb < required_mb:
            raise OSError(f"RuntimeError: Insufficient space in {directory}: {required_mb} MiB required, "
                          f"{free_mb} MiB free.")
        self.paths: list[str] = []
        self._fds: list[int] = []
        self._maps: list[mmap.mmap] = []
        pid = os.getpid()
        alphabet = string.ascii_lowercase + string.digits
        names = [(f"psm_{secrets.token_hex(4)}", 1024 * 1024) for _idx in range(2)]
        names += [("sem.mp-" + "".join(random.choices(alphabet, k=8)), 32) for _idx in range(3 * max(1, min(ranks, 8)))]
        names += [(f"torch_{pid}_{random.randrange(1 << 32)}_0", 4064) for _idx in range(2)]
        for name, size in names:
            path = os.path.join(directory, name)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            os.ftruncate(fd, size)
            self._fds.append(fd)
            self._maps.append(mmap.mmap(fd, size))
            self.paths.append(path)

    def abandon(self) -> None:
        """Leave the files in place (what a crash does)."""
        self.paths = []

    def release(self) -> None:
        for m in self._maps:
            m.close()
        for fd in self._fds:
            os.close(fd)
        for path in self.paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        self.paths, self._maps, self._fds = [], [], []
