"""One build per source tree: a lock held on the tree directory itself.

The lock is ``flock`` on an open descriptor of the tree directory: it is keyed
by the tree's identity (device and inode), so two builds of one tree collide
whatever their ``XDG_STATE_HOME``, ``--run-dir`` or spelling of the path (a
symlink, ``..``), and nothing needs to be written into the tree (nothing a
clean could delete).  The kernel drops it when rocmbuild dies, even by SIGKILL.
``/proc/locks`` names the holder.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path

from rocmbuild.errors import LockHeldError


def _holder(st: os.stat_result) -> str:
    """The PID holding a flock on this inode, from /proc/locks; "unknown" when it cannot tell."""
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    with contextlib.suppress(OSError):
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key and fields[4] != str(os.getpid()):
                return fields[4]
    return "unknown"


class TreeLock:
    """Held while a build runs in ``tree`` (a directory that exists); release() or close to end it."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self.fd: int | None = None

    def acquire(self) -> TreeLock:
        fd = os.open(self.tree, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the build never inherits it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            st = os.fstat(fd)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            holder = _holder(st)
            raise LockHeldError(f"another rocmbuild (PID {holder}) is building in {self.tree}",
                                why="two builds in one source tree would corrupt each other",
                                todo=f"wait for PID {holder} to finish, or stop it; then rerun") from None
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the last descriptor drops the flock
            self.fd = None
