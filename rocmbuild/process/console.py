"""The console may go away; the build goes on.

A reader that stops reading (``rocmbuild ... | head -2``: EPIPE) or a terminal
that closes (ssh dropped: EIO after SIGHUP) must not stop an unattended build or
change its exit code.  ``guard_console`` puts forgiving wrappers in front of
stdout and stderr: the first failing write points the descriptor at
``/dev/null`` (so buffered text and later writes, ours or a library's, vanish
quietly) and the run carries on; the records are the place to read it.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import TYPE_CHECKING, BinaryIO, TextIO

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer


def _silence(fd: int | None) -> None:
    """Point ``fd`` at /dev/null: whatever is still buffered for it is written nowhere, without error."""
    if fd is None:
        return
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)


class _ForgivingBinary(io.RawIOBase):
    def __init__(self, inner: BinaryIO, owner: ForgivingText) -> None:
        self._inner = inner
        self._owner = owner

    def writable(self) -> bool:
        return True

    def write(self, b: ReadableBuffer) -> int:
        size = len(memoryview(b))
        if not self._owner.gone:
            try:
                self._inner.write(b)
            except (OSError, ValueError):
                self._owner.give_up()
        return size

    def flush(self) -> None:
        if not self._owner.gone:
            try:
                self._inner.flush()
            except (OSError, ValueError):
                self._owner.give_up()

    def fileno(self) -> int:
        return self._inner.fileno()

    def isatty(self) -> bool:
        return self._owner.isatty()


class ForgivingText(io.TextIOBase):
    """A text stream (with a ``buffer``) whose writes never raise once its reader is gone."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner
        self.gone = False
        self._fd: int | None = None
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            self._fd = inner.fileno()
        self.buffer = _ForgivingBinary(inner.buffer, self) if hasattr(inner, "buffer") else None

    def give_up(self) -> None:
        self.gone = True
        _silence(self._fd)

    def write(self, s: str) -> int:
        if not self.gone:
            try:
                self._inner.write(s)
            except (OSError, ValueError):
                self.give_up()
        return len(s)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._inner.flush()
            except (OSError, ValueError):
                self.give_up()

    def isatty(self) -> bool:
        if self.gone:
            return False
        try:
            return self._inner.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        return self._inner.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._inner.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self._inner.errors


def _ensure_std_fds() -> None:
    """Descriptors 0-2 open (on /dev/null when the caller closed them: ``rocmbuild ... >&- 2>&-``).

    Otherwise the next file rocmbuild opens (events.jsonl, a log) would get descriptor 1 or 2
    and receive the console's output, and sys.stdout would be None.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    for name, fd in (("stdin", 0), ("stdout", 1), ("stderr", 2)):
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", encoding="utf-8", closefd=False))  # noqa: SIM115


def guard_console() -> None:
    """Make sys.stdout and sys.stderr forgiving (idempotent)."""
    _ensure_std_fds()
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, ForgivingText):
            setattr(sys, name, ForgivingText(stream))
