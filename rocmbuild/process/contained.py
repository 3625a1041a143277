"""Running a short helper command (the ``--notify`` command, the notification sender) contained like a step.

Owns one thing: start a child in its own session and, where cgroup v2 is writable, its own cgroup;
feed it bytes on stdin; keep only the tail of its output (a command that floods stdout costs a
pipe's read loop, never memory); and end it, *all* of it, when

* it exits: what it left behind (a daemon holding the pipe, a ``sleep &``) is killed, not waited for;
* its time limit passes (the whole group and cgroup are killed, ``timed_out``);
* rocmbuild gets SIGINT, SIGTERM or SIGHUP meanwhile (killed, ``interrupted``; the signal is
  swallowed here, so the caller decides what it means: for notify, nothing about the build).

The result is a frozen value; nothing here raises for what the child does.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from rocmbuild.process import containment
from rocmbuild.process.containment import AttemptGroup

TAIL_BYTES = 8192        # output kept (the end of it): enough for the record of a failure
READ_CHUNK = 65536
DRAIN_AFTER_EXIT_S = 0.2  # output still in flight when the child exits is read this long, no longer
MAX_TIMEOUT_S = 24 * 3600.0  # a longer limit is no limit: callers refuse it before the build (options)


@dataclass(frozen=True)
class Contained:
    """How a contained command went."""

    exit_code: int | None      # None: it did not exit on its own (timed out, interrupted, could not start)
    timed_out: bool
    interrupted: bool
    duration_s: float
    output: str                # the last TAIL_BYTES of stdout+stderr, decoded
    output_dropped: int        # bytes of output not kept
    leftovers: int             # processes still running after it exited (stopped by rocmbuild)
    error: str | None          # could not start


class _Signals:
    """SIGINT/SIGTERM/SIGHUP set a flag while the child runs (main thread only; elsewhere: untouched)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.caught: int | None = None
        self.previous: dict[int, object] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.caught = signum

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]


def _feed(stdin: int, data: bytes) -> None:
    """Write ``data`` to the child's stdin in a thread: a child that never reads must not block us."""
    def write() -> None:
        with contextlib.suppress(OSError):
            view = memoryview(data)
            while view:
                written = os.write(stdin, view[:READ_CHUNK])
                view = view[written:]
        with contextlib.suppress(OSError):
            os.close(stdin)
    threading.Thread(target=write, name="contained-stdin", daemon=True).start()


@dataclass(frozen=True, kw_only=True)
class Tuning:
    """What callers seldom change: the key of the command's cgroup (default its ``cwd``), how much of
    its output is kept, and the clock its timeout is measured on."""

    group_key: Path | None = None
    tail: int = TAIL_BYTES
    clock: Callable[[], float] = time.monotonic


def run_contained(argv: Sequence[str], *, stdin: bytes, env: Mapping[str, str], cwd: Path, timeout_s: float,
                  tuning: Tuning = Tuning()) -> Contained:
    """Run ``argv`` contained (see the module doc); ``tuning.group_key`` keys its cgroup (default ``cwd``)."""
    group_key, tail, clock = tuning.group_key, tuning.tail, tuning.clock
    timeout_s = min(max(timeout_s, 0.0), MAX_TIMEOUT_S)
    group = containment.AttemptGroup.create(group_key or cwd)
    procs_file = group.procs_file if group is not None else None

    def into_group() -> None:  # in the child, before exec: nothing it forks escapes the cgroup
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        if procs_file is not None:
            fd = os.open(procs_file, os.O_WRONLY)
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)

    started = clock()
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=dict(env), cwd=cwd, start_new_session=True, preexec_fn=into_group,
                                close_fds=True)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        if group is not None:
            group.remove()
        return Contained(None, False, False, 0.0, "", 0, 0, f"could not start {argv[0]}: {exc}")
    assert proc.stdin is not None and proc.stdout is not None
    _feed(os.dup(proc.stdin.fileno()), stdin)
    proc.stdin.close()
    out = bytearray()
    dropped = 0
    timed_out = interrupted = False
    code: int | None = None
    out_fd = proc.stdout.fileno()
    os.set_blocking(out_fd, False)
    with _Signals() as signals, selectors.DefaultSelector() as selector:
        selector.register(out_fd, selectors.EVENT_READ)
        deadline = started + timeout_s
        exited_at: float | None = None
        open_pipe = True
        while True:
            now = clock()
            if code is None:
                code = proc.poll()
                if code is not None:
                    exited_at = now
            if exited_at is not None and (not open_pipe or now - exited_at >= DRAIN_AFTER_EXIT_S):
                break
            if signals.caught is not None:
                interrupted = code is None  # after its exit, a signal only cuts the drain short
                break
            if now >= deadline:
                timed_out = code is None
                break
            if not open_pipe:
                time.sleep(min(0.05, max(deadline - now, 0.0)))
                continue
            for _ in selector.select(timeout=min(0.05, max(deadline - now, 0.0))):
                try:
                    chunk = os.read(out_fd, READ_CHUNK)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    open_pipe = False
                    selector.unregister(out_fd)
                    break
                out += chunk
                if len(out) > 2 * tail:  # keep the end only: memory stays bounded whatever it prints
                    dropped += len(out) - tail
                    del out[:-tail]
        leftovers = _end_all(proc, group, exited=code is not None)
    proc.stdout.close()
    if len(out) > tail:
        dropped += len(out) - tail
        del out[:-tail]
    return Contained(code, timed_out, interrupted, round(clock() - started, 3), out.decode("utf-8", "replace"),
                     dropped, leftovers, None)


def _end_all(proc: subprocess.Popen[bytes], group: AttemptGroup | None, exited: bool) -> int:
    """Kill the child's session and cgroup; how many processes were left after it exited."""
    left = 0
    if isinstance(group, AttemptGroup):
        left = len([p for p in group.pids() if p != proc.pid]) if exited else 0
    else:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, 0)
            left = 1 if exited else 0  # something of its group is still there (the count is unknown)
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    if isinstance(group, AttemptGroup):
        group.kill(timeout=2.0)
        group.remove()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=2.0)
    return left
