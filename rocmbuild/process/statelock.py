"""The per-source lock file in the state dir (``locks/<digest>.lock``): one ``flock``, never waited for.

Why not the ``filelock`` package: it imports asyncio (~15 ms), paid by every build before its
first attempt for one non-blocking ``flock``.  This is the same lock on the same file (an
exclusive ``flock`` on the file opened read-write, created 0644, never deleted), so it excludes
and is excluded by an older rocmbuild that took it through ``filelock``.  The kernel drops it
when the process dies, even by SIGKILL.
"""

from __future__ import annotations

import errno
import fcntl
import os


class Held(Exception):
    """Another process holds the lock."""


class StateLock:
    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self) -> None:
        """Take the lock now or raise :class:`Held`; OSError when the file cannot be opened."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)  # the build never inherits it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise Held(self.path) from None
            raise
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the flock
            self.fd = None
