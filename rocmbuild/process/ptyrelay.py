"""The relay process: copies a running step's terminal output into the attempt's log.

Owns the one loop that reads a build's PTY, and the handle rocmbuild keeps on it.  The loop
runs in a small process of its own (``python -I -S ptyrelay.py``, stdlib only, like the
watchdog and the compile launcher), started once the step's process exists.  rocmbuild follows
the log as it grows (``runner._Sink.follow``) and does everything else there: the watcher's
classification, the display, the limits, the memory guard.  Nothing rocmbuild does with the
output sits between the build and its terminal: reading a PTY is a ping-pong of ~4 KiB reads
through the kernel's line discipline, and work done between two reads holds the build up.  With
the reads and the classification in one loop, relaying a 90 MB warning flood took ~1.6 s where
`script` takes ~1.0 s; with the reads here, ~0.6-0.9 s (``benchmarks/relay.py``).

What passes between the two (two pipes):

* **notes**, rocmbuild -> relay: rocmbuild's own lines (``==> rocmbuild: ...``) written while
  the relay runs, e.g. while a step is being stopped.  The relay puts each line of them,
  whole, on a fresh line of the log between two of the build's writes: the build's output never
  splits a note (a note that comes while the build is mid-line starts a new line, as before).
  Its end of file means "stop relaying": the relay copies what the PTY has ready, then exits.
* **wake**, relay -> rocmbuild: a ``.`` when the log grew and no ``.`` went in the last
  WAKE_S (rocmbuild sleeps on this pipe, so it sees new output within a few ms without
  being woken for every read); the line ``eof`` once the PTY has ended and all its output is
  in the log (the relay still writes notes until rocmbuild closes the notes pipe); the line
  ``E<errno>`` when the log could not be written; end of file when the relay has exited.

The relay ends at the end of the notes pipe, when the log cannot be written, or when rocmbuild
is gone (checked every PARENT_CHECK_S; the attempt's watchdog ends the build itself).  It runs in
a session of its own and ignores SIGINT, SIGTERM and SIGHUP: a Ctrl-C at the terminal is
rocmbuild's to act on, and the build's last words must still reach the log while rocmbuild stops
it.  A note longer than a pipe read goes to the log line by line, each line whole; anything that
fails but the log is said as ``F<errno>``, not taken for a full disk.
"""

from __future__ import annotations

# The relay process imports only C modules (it starts in ~10 ms; subprocess, contextlib and
# typing would double that): subprocess is imported where rocmbuild starts a relay.
import _signal as signal  # the C module: ``signal`` imports enum
import errno
import os
import select
import sys
import time

READ_SIZE = 1 << 16
MAX_BURST = 1 << 20  # at most this much is copied before the notes pipe is looked at again
WAKE_S = 0.005  # at most one wake-up byte this often while output flows
PARENT_CHECK_S = 1.0
NOTES_MAX = 1 << 16
FINAL_COPY = 1 << 22  # at most this much more is copied once rocmbuild has stopped the relay
EOF = "eof"  # the line the relay says once the PTY's end of file is reached (all output is in the log)


class RelayProcess:
    """rocmbuild's handle on a running relay: notes in, wake-ups and the end out."""

    def __init__(self, pty_fd: int, log_fd: int, *, at_line_start: bool) -> None:
        """Start the relay copying ``pty_fd`` into ``log_fd`` (opened O_APPEND); OSError if it can't start."""
        import subprocess

        notes_r, self._notes = os.pipe()
        self._wake, wake_w = os.pipe()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", __file__, str(pty_fd), str(log_fd), str(notes_r), str(wake_w),
                 "1" if at_line_start else "0", str(os.getpid())],
                pass_fds=(pty_fd, log_fd, notes_r, wake_w), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                start_new_session=True,  # no terminal's Ctrl-C reaches it, even before it ignores SIGINT
            )
        except BaseException:
            for fd in (self._notes, self._wake):
                os.close(fd)
            raise
        finally:
            os.close(notes_r)
            os.close(wake_w)
        os.set_blocking(self._wake, False)
        self.pid = self._proc.pid
        self.ended = False  # the wake pipe reached its end: the relay has exited (or is exiting)
        self._said = b""  # what the relay wrote on the wake pipe besides wake-up bytes
        self._closed = False

    # -- while it runs -------------------------------------------------------------------------

    def wait(self, timeout: float) -> None:
        """Sleep until the relay wakes us (the log grew, or it ended) or ``timeout`` passes."""
        if self.ended:
            return
        if select.select([self._wake], [], [], max(timeout, 0.0))[0]:
            self._read_wake()

    def _read_wake(self) -> None:
        while not self.ended:
            try:
                data = os.read(self._wake, 4096)
            except BlockingIOError:
                return
            if not data:
                self.ended = True
                return
            self._said += data.replace(b".", b"")

    def note(self, data: bytes) -> bool:
        """Have the relay write rocmbuild's line(s) into the log; False if it has ended."""
        if self.ended or self._closed:
            return False
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._notes, view) :]
        except OSError:  # EPIPE: it exited meanwhile
            return False
        return True

    @property
    def pty_closed(self) -> bool:
        """The PTY reached its end of file, and everything it gave is in the log."""
        return EOF in self._lines()

    @property
    def write_error(self) -> int | None:
        """The errno of the log write that failed (the relay has ended), or None."""
        return self._said_code("E")

    @property
    def failure(self) -> int | None:
        """The errno of what else made the relay fail (a PTY read, a pipe), or None."""
        return self._said_code("F")

    def _said_code(self, kind: str) -> int | None:
        for line in self._lines():
            if line.startswith(kind) and line[1:].isdigit():
                return int(line[1:])
        return None

    def _lines(self) -> list[str]:
        return self._said.decode("ascii", "replace").split()

    # -- the end ---------------------------------------------------------------------------------

    def stop(self, timeout: float = 2.0) -> None:
        """Have the relay copy what the PTY has ready and exit; wait for it (SIGKILL after ``timeout``)."""
        if not self._closed:
            self._closed = True
            os.close(self._notes)
        deadline = time.monotonic() + timeout
        while not self.ended:
            left = deadline - time.monotonic()
            if left <= 0:
                self._proc.kill()  # Popen ignores a process already gone
                break
            self.wait(left)
        try:  # noqa: SIM105 (contextlib is not imported here: see the imports)
            self._proc.wait(timeout=timeout)
        except Exception:  # subprocess.TimeoutExpired: SIGKILLed, yet not gone (uninterruptible sleep)
            pass

    def close(self) -> None:
        """Stop the relay (if it still runs) and release the pipes; harmless to call twice."""
        if self._wake < 0:
            return
        self.stop(timeout=1.0)
        os.close(self._wake)
        self._wake = -1

    @property
    def exit_status(self) -> int | None:
        return self._proc.returncode


# -- the relay process itself ------------------------------------------------------------------------


class LogWriteFailed(Exception):
    """The log could not be written (a full or read-only run dir): said to rocmbuild as ``E<errno>``."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def relay(pty_fd: int, log_fd: int, notes_fd: int, wake_fd: int, at_line_start: bool, parent: int) -> None:
    """Copy the PTY into the log, with rocmbuild's notes between writes, until one of the ends (module doc)."""
    os.set_blocking(pty_fd, False)
    os.set_blocking(wake_fd, False)
    last_wake = 0.0
    pty_open = True
    note_part = b""  # the start of a note line not all read yet: it goes to the log whole, or not yet

    def write(data: bytes) -> None:
        nonlocal at_line_start
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(log_fd, view) :]
        except OSError as exc:
            raise LogWriteFailed(exc.errno or errno.EIO) from None
        at_line_start = data.endswith(b"\n")

    def write_note(data: bytes) -> None:
        """Whole lines of rocmbuild's notes, on a fresh line; a line's start waits for its end."""
        nonlocal note_part
        data = note_part + data
        cut = data.rfind(b"\n") + 1
        note_part = data[cut:]
        if cut:
            write(data[:cut] if at_line_start else b"\n" + data[:cut])

    def copy(limit: int) -> int:
        """What the PTY has ready (up to about ``limit`` bytes) into the log."""
        nonlocal pty_open
        copied = 0
        while pty_open and copied < limit:
            try:
                data = os.read(pty_fd, READ_SIZE)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno != errno.EIO:  # EIO: every holder of the PTY's other end closed it
                    raise
                data = b""
            if not data:
                pty_open = False
                say(EOF)  # after the last of the output is in the log
                break
            write(data)
            copied += len(data)
        return copied

    def say(line: str) -> None:
        nonlocal last_wake
        os.set_blocking(wake_fd, True)  # a line must arrive whole; rocmbuild reads the pipe at every wait
        os.write(wake_fd, f"{line}\n".encode())
        os.set_blocking(wake_fd, False)
        last_wake = time.monotonic()

    while True:
        ready = select.select([pty_fd, notes_fd] if pty_open else [notes_fd], [], [], PARENT_CHECK_S)[0]
        if not ready:
            if os.getppid() != parent:
                return
            continue
        copied = copy(MAX_BURST)
        if notes_fd in ready:
            note = os.read(notes_fd, NOTES_MAX)
            if not note:  # rocmbuild stops the relay: what is ready still goes into the log
                copy(FINAL_COPY)
                if note_part:
                    write_note(b"\n")
                return
            write_note(note)
            copied += len(note)
        if copied:
            now = time.monotonic()
            if now - last_wake >= WAKE_S:
                last_wake = now
                try:  # noqa: SIM105 (contextlib is not imported here: see the imports)
                    os.write(wake_fd, b".")
                except BlockingIOError:  # a full pipe wakes rocmbuild as well
                    pass


def main(argv: list[str]) -> int:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    pty_fd, log_fd, notes_fd, wake_fd = (int(a) for a in argv[:4])
    try:
        relay(pty_fd, log_fd, notes_fd, wake_fd, argv[4] == "1", int(argv[5]))
    except LogWriteFailed as exc:
        said = f"E{exc.code}"
    except OSError as exc:  # anything else (the PTY, a pipe): the relay failed, the log did not
        said = f"F{exc.errno or 0}"
    else:
        return 0
    try:
        os.set_blocking(wake_fd, True)
        os.write(wake_fd, f"\n{said}\n".encode())
    except OSError:  # rocmbuild is gone
        pass
    return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
