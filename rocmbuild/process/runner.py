"""The PTY attempt engine: runs a build step's shell command and relays its output.

Build steps run under a pseudo-terminal (pexpect) so that tools keep
line-buffered, coloured, terminal-shaped output; short helper commands
(version probes, ldconfig, git, pip) go through :func:`rocmbuild.process.command.capture`,
and the bookkeeping of a step's process tree lives in :mod:`rocmbuild.process.proctree`.

Decisions, and why:

* **Shell**: a step is a shell command string run as ``/bin/bash -o pipefail -c
  COMMAND`` (``/bin/sh -c`` only where bash is missing).  Recipes pipe (``...
  2>&1 | tee build.log``); without ``pipefail`` a failing build piped into
  ``tee`` would count as a success.
* **Terminal**: the child gets a 40x250 window (pexpect's default 24x80 makes
  tools wrap or elide at 80 columns) and its own session and process group
  (pexpect's fork does ``setsid``), so it never sees the user's Ctrl-C and can
  be signalled as a group.
* **ONLCR**: output post-processing (``OPOST``) is switched off on the child's
  terminal before the command starts, so a ``\\n`` the build writes arrives as
  ``\\n``, not ``\\r\\n``.  The raw log ``attempt-N.log`` therefore holds the
  program's own bytes, exactly as written (a ``\\r`` in it is one the program
  wrote: a progress redraw), and the watcher, the log and a later ``diagnose``
  of the log all see the same lines.  It is also cheaper: the kernel copies
  output without translating it.
* **Environment**: passed as given; the caller composes it (no TERM or
  PIP_PROGRESS_BAR is added here).
* **Relay**: output is read straight from the PTY (``select`` + ``os.read``
  of up to 64 KiB; pexpect's expect machinery is not used), reads are
  coalesced into batches (out after 2 ms without more output, 20 ms at most,
  or at 128 KiB), and each batch is written to the log (unbuffered
  ``os.write``: on disk as soon as it is relayed), to the display and to the
  watcher.  The log starts each step with
  ``==> rocmbuild step NAME: COMMAND``; rocmbuild's own notes (a stall's
  process tree, processes stopped) are lines starting with ``==> rocmbuild``.
  Everything written to the log is also fed to the watcher, so the watcher's
  line numbers are the log's line numbers.  A newline is inserted before a
  header or note, and at the end of the attempt, only when the output before
  it did not end with one.
* **Stopping**: stall, budget, interrupt and fail-fast stop the whole process
  tree: SIGINT, then SIGTERM, then SIGKILL, each followed by up to
  ``Limits.grace_s`` seconds of waiting (output keeps being relayed meanwhile).
  The tree is every process that was ever seen below the step (descendants are
  snapshot every 0.5 s with psutil, and again at stop time), every process in
  the step's session, and every orphan re-parented to rocmbuild (rocmbuild is
  a child subreaper while an attempt runs, so a double-forked daemon comes
  back to it instead of to init).  Processes a step leaves behind when it exits
  normally are stopped the same way, and the log says so; so is the tree when
  an exception (a failing hook, KeyboardInterrupt) escapes, before it
  propagates.  While an attempt runs, the calling process should start no
  other children: they would be taken for the build's.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import termios
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

import pexpect

from rocmbuild.errors import DiskFullError
from rocmbuild.process import containment, proctree
from rocmbuild.process.watcher import Progress, Watcher

if TYPE_CHECKING:
    from rocmbuild.process.display import Display

WINDOW = (40, 250)  # rows, columns of the build's terminal
READ_SIZE = 1 << 16
BATCH = 1 << 17  # most bytes relayed in one go
COALESCE_S = 0.002  # a batch goes out when no more output arrives within this long...
COALESCE_MAX_S = 0.02  # ...or when its first bytes are this old
TICK = 0.1  # longest wait between checks of limits, interrupts and the child
EOF_POLL_S = 0.005  # first wait for the child's exit once its PTY is closed (then doubled up to TICK)
TRACK_EVERY = 0.5  # how often the process tree is snapshot
QUIET_AFTER_EXIT = 0.2  # output drained this long after the step exited while a daemon holds the PTY
HEADER = "==> rocmbuild step {name}: {command}\n"
NOTE = "==> rocmbuild: "


# -- values --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One shell command of a recipe; name is "checkout", "prepare", "build", "verify", ..."""

    name: str
    command: str


@dataclass(frozen=True)
class Limits:
    """When an attempt is stopped: no output for stall_timeout_s, or past deadline (time.monotonic())."""

    stall_timeout_s: float | None = None
    deadline: float | None = None
    grace_s: float = 3.0
    monitor: TreeMonitor | None = None  # polled every tick with the step's PID (the memory guard, memguard.py)


class TreeMonitor(Protocol):
    """Something that watches a running step's process tree: polled every tick, released when it ends."""

    def poll(self, root_pid: int) -> None: ...

    def release(self) -> None: ...


@dataclass(frozen=True)
class AttemptOutcome:
    """How one attempt ended (a value, not an exception)."""

    ended: str  # "exited" | "stalled" | "budget" | "interrupted"
    exit_code: int | None  # of the failing / last step; None if killed by a signal (or never started)
    signal: int | None
    step: Step | None  # the step that failed or was running when stopped; None on success
    started: datetime
    duration_s: float
    progress: Progress  # furthest progress seen
    lines_seen: int
    log: Path
    stopped_early: str | None = None  # stop_check's reason, e.g. "fail-fast: unsupported_arch"

    @property
    def succeeded(self) -> bool:
        return self.ended == "exited" and self.exit_code == 0 and self.stopped_early is None


class InterruptFlag:
    """Context manager: SIGINT/SIGTERM/SIGHUP set a flag instead of raising; call the object to read it.

    SIGHUP is the terminal (or ssh session) closing under a "type it and go home" build: it
    stops the build and finishes the records like the other two.
    """

    def __init__(self, signals: Sequence[int] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)) -> None:
        self.signals = tuple(signals)
        self.received: int | None = None  # the first signal received
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum

    def __call__(self) -> bool:
        return self.received is not None

    def __enter__(self) -> InterruptFlag:
        for sig in self.signals:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()


# -- running an attempt --------------------------------------------------------------------------


def _shell() -> tuple[str, ...]:
    if os.access("/bin/bash", os.X_OK):
        return ("/bin/bash", "-o", "pipefail", "-c")
    return ("/bin/sh", "-c")


def _raw_output() -> None:
    """In the child, before exec: no output post-processing (no \\n -> \\r\\n) on its terminal."""
    attrs = termios.tcgetattr(0)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(0, termios.TCSANOW, attrs)


def _unstartable(command: str, env: Mapping[str, str]) -> str | None:
    """Why execve would refuse this step (checked before forking), or None."""
    if "\0" in command:
        return "the command holds a NUL character"
    for name, value in env.items():
        if not name or "=" in name or "\0" in name:
            return f"the environment variable name {name!r} is invalid"
        if "\0" in value:
            return f"the value of {name} holds a NUL character"
    return None


def _exec_child(argv: list[str], env: dict[str, str], cgroup_procs: str | None) -> None:
    """In the forked child: set up its terminal and exec the step; never return into rocmbuild's code.

    ptyprocess would run its own exec after this, and an exception there (a ValueError from
    a bad environment, anything) would unwind through rocmbuild's stack in the child: its
    error handler, its records.  Here every failure ends the child at once, exit 127.
    """
    try:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # Python ignores it; a build's `yes | head` must not
        if cgroup_procs is not None:  # into the attempt's cgroup before anything can fork
            fd = os.open(cgroup_procs, os.O_WRONLY)
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
        _raw_output()
        os.execve(argv[0], argv, env)
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            os.write(1, f"{NOTE}could not start: {type(exc).__name__}: {exc}\n".encode("utf-8", "replace"))
    os._exit(127)


class _Sink:
    """Where output goes: the raw log, the display and the watcher, in that order."""

    def __init__(self, log_path: Path, watcher: Watcher, display: Display | None) -> None:
        try:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise DiskFullError(f"cannot create the build log {log_path}", why=exc.strerror or str(exc),
                                todo="free space on (or remount read-write) the run directory's filesystem, "
                                     "or pass --run-dir elsewhere; then rerun") from None
        self.path = log_path
        self.broken: OSError | None = None  # the log could not be written: nothing more goes there
        self.watcher = watcher
        self.display = display
        self.log_only = False
        self.at_line_start = os.fstat(self.fd).st_size == 0 or self._log_ends_with_newline(log_path)

    @staticmethod
    def _log_ends_with_newline(path: Path) -> bool:
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"

    def emit(self, data: bytes) -> None:
        view = memoryview(data)
        while view and self.broken is None:
            try:
                view = view[os.write(self.fd, view) :]
            except OSError as exc:  # a full or read-only run dir: the build is stopped, then rocmbuild answers
                self.broken = exc
                raise DiskFullError(f"cannot write the build log {self.path}", why=exc.strerror or str(exc),
                                    todo="free space on (or remount read-write) the run directory's "
                                         "filesystem, or pass --run-dir elsewhere; then rerun") from None
        self.at_line_start = data.endswith(b"\n")
        if self.log_only:
            return
        if self.display is not None:
            self.display.relay(data)
        self.watcher.feed(data)

    def lines(self, text: str) -> None:
        """rocmbuild's own lines, starting on a fresh line."""
        data = text.encode("utf-8", "replace")
        self.emit(data if self.at_line_start else b"\n" + data)

    def note(self, *lines: str) -> None:
        self.lines("".join(f"{NOTE}{line}\n" for line in lines))

    def update_display(self) -> None:
        if self.display is not None and not self.log_only:
            self.display.update(self.watcher)

    def close(self) -> None:
        os.close(self.fd)


def run_attempt(
    steps: Sequence[Step],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log_path: Path,
    watcher: Watcher,
    limits: Limits,
    display: Display | None = None,
    stop_check: Callable[[], str | None] | None = None,
    interrupted: Callable[[], bool] = lambda: False,
    tree: Path | None = None,
    on_start: Callable[[], None] | None = None,
) -> AttemptOutcome:
    """Run the steps in order under a PTY; the first failing (or stopped) step ends the attempt.

    ``tree`` (default ``cwd``) keys the attempt's cgroup, so that the next run on the same tree
    finds what a killed run left behind.  ``on_start`` is called once each step's process exists
    (the recorder writes the events it held until then: app.py).
    """
    started = datetime.now(UTC)
    t0 = time.monotonic()
    sink = _Sink(log_path, watcher, display)
    result = _StepResult("exited", 0, None, None)
    failed: Step | None = None
    group = containment.AttemptGroup.create(tree or cwd)
    watchdog = containment.Watchdog(group)
    try:
        with proctree.subreaper():
            for step in steps:
                if display is not None:
                    display.step(step.name)
                sink.lines(HEADER.format(name=step.name, command=step.command))
                result = _StepRun(step, cwd, env, sink, limits, stop_check, interrupted, group, watchdog,
                                  on_start).run()
                if not result.ok:
                    failed = step
                    break
    finally:
        if group is not None:
            if not group.kill():
                with contextlib.suppress(DiskFullError):
                    sink.note(f"processes still in {group.path} after SIGKILL: {group.pids()}")
            group.remove()
        watchdog.close()
        proctree.reap_orphans()
        if not sink.at_line_start:
            sink.emit(b"\n")  # the log (and the watcher) end on a line boundary; the next header starts fresh
        sink.close()
        sink.update_display()
    return AttemptOutcome(
        ended=result.ended,
        exit_code=result.exit_code,
        signal=result.signal,
        step=failed,
        started=started,
        duration_s=time.monotonic() - t0,
        progress=watcher.furthest,
        lines_seen=watcher.lines_seen,
        log=log_path,
        stopped_early=result.stopped_early,
    )


@dataclass(frozen=True)
class _StepResult:
    ended: str
    exit_code: int | None
    signal: int | None
    stopped_early: str | None

    @property
    def ok(self) -> bool:
        return (
            self.ended == "exited" and self.exit_code == 0 and self.signal is None
            and self.stopped_early is None
        )


@dataclass
class _StepRun:
    step: Step
    cwd: Path
    env: Mapping[str, str]
    sink: _Sink
    limits: Limits
    stop_check: Callable[[], str | None] | None
    interrupted: Callable[[], bool]
    group: containment.AttemptGroup | None = None
    watchdog: containment.Watchdog | None = None
    on_start: Callable[[], None] | None = None
    tree: proctree.Tree | None = field(default=None, init=False)

    def _limit_reached(self, now: float, last_output: float) -> str | None:
        if self.interrupted():
            return "interrupted"
        if self.limits.deadline is not None and now >= self.limits.deadline:
            return "budget"
        stall = self.limits.stall_timeout_s
        if stall is not None and now - last_output >= stall:
            return "stalled"
        return None

    def run(self) -> _StepResult:
        now = time.monotonic()
        reason = self._limit_reached(now, now)
        if reason is not None:  # out of time (or interrupted) before the step could start
            self.sink.note(f"step {self.step.name} not started: {reason}")
            return _StepResult(reason, None, None, None)
        if not Path(self.cwd).is_dir():
            self.sink.note(f"step {self.step.name} could not start: no directory {self.cwd}")
            return _StepResult("exited", 127, None, None)
        problem = _unstartable(self.step.command, self.env)
        if problem is not None:
            self.sink.note(f"step {self.step.name} could not start: {problem}")
            return _StepResult("exited", 127, None, None)
        shell = _shell()
        argv = [*shell, self.step.command]
        env = dict(self.env)
        join = self.group.procs_file if self.group is not None else None
        try:
            child = pexpect.spawn(
                shell[0], argv[1:], cwd=str(self.cwd), env=env,
                dimensions=WINDOW, preexec_fn=lambda: _exec_child(argv, env, join),
            )
        except (pexpect.ExceptionPexpect, OSError) as exc:
            self.sink.note(f"step {self.step.name} could not start: {exc}")
            return _StepResult("exited", 127, None, None)
        child.ptyproc.delayafterclose = 0  # the child is dead by the time we close
        if self.group is None and self.watchdog is not None:
            self.watchdog.watch_session(child.pid)  # without a cgroup, the watchdog ends this session
        self.tree = proctree.Tree(child.pid, self.group)
        try:
            if self.on_start is not None:
                self.on_start()
            return self._watch(child)
        except BaseException as exc:  # a failing hook, a KeyboardInterrupt: never leave the build running
            self.sink.log_only = True  # the watcher or display may be what failed
            with contextlib.suppress(Exception):
                self._stop(child, child.child_fd, f"rocmbuild failed: {type(exc).__name__}: {exc}")
            raise
        finally:
            if self.limits.monitor is not None:  # nothing stays SIGSTOPped after its step
                with contextlib.suppress(Exception):
                    self.limits.monitor.release()
            with contextlib.suppress(Exception):
                child.close(force=True)

    def _watch(self, child: pexpect.spawn) -> _StepResult:
        tree = self.tree
        assert tree is not None
        fd = child.child_fd
        os.set_blocking(fd, False)
        sink = self.sink
        last_output = next_check = time.monotonic()
        next_track = next_check + TRACK_EVERY
        eof = False
        eof_wait = EOF_POLL_S
        exited_at: float | None = None
        reason: str | None = None
        stopped: str | None = None
        # Reads (a PTY gives at most ~4 KiB each) are coalesced into batches: the log, the display
        # and the watcher then work per batch, not per read.  A batch goes out when it is big, when
        # it is COALESCE_MAX_S old, or when no more output comes within COALESCE_S.
        pending: list[bytes] = []
        pending_size = 0
        pending_since = 0.0

        def flush() -> str | None:
            nonlocal pending_size
            data = pending[0] if len(pending) == 1 else b"".join(pending)
            pending.clear()
            pending_size = 0
            sink.emit(data)
            sink.update_display()
            return self.stop_check() if self.stop_check is not None else None

        while True:
            now = time.monotonic()
            if now >= next_check:  # limits, child and tree: every TICK, not every read
                next_check = now + TICK
                reason = self._limit_reached(now, last_output)
                if reason is not None:
                    break
                if now >= next_track:
                    next_track = now + TRACK_EVERY
                    tree.snapshot()
                if self.limits.monitor is not None:
                    self.limits.monitor.poll(child.pid)
                if exited_at is None and not child.isalive():
                    exited_at = now
                # After the exit, output still in flight is drained; a daemon holding the PTY is not
                # waited for (its output stops being relayed once things are quiet).
                if exited_at is not None and (
                    eof or (now - exited_at >= QUIET_AFTER_EXIT and now - last_output >= QUIET_AFTER_EXIT)
                ):
                    break
                sink.update_display()
            if eof:
                # The PTY is closed: the step has nearly always exited.  Look again after EOF_POLL_S,
                # doubling up to a TICK, rather than a whole TICK after its last output.
                next_check = min(next_check, now + eof_wait)
                eof_wait = min(eof_wait * 2, TICK)
                time.sleep(max(next_check - now, 0.0))
                continue
            wait = max(min(next_check - now, TICK), 0.0)
            if not select.select([fd], [], [], min(wait, COALESCE_S) if pending else wait)[0]:
                if pending and (stopped := flush()) is not None:
                    break
                continue
            # Read everything that is ready before selecting again: one select per burst, not per
            # ~4 KiB read, which is what keeps the relay close to `script`'s speed.
            data, eof = _read_batch(fd)
            if data:
                last_output = time.monotonic()
                if not pending:
                    pending_since = last_output
                pending.append(data)
                pending_size += len(data)
            if eof:
                if pending and (stopped := flush()) is not None:
                    break
                continue
            if (pending_size >= BATCH or last_output - pending_since >= COALESCE_MAX_S) and (
                stopped := flush()
            ) is not None:
                break
        if pending:
            flush()
        if reason == "stalled":
            tree.snapshot()
            stall = self.limits.stall_timeout_s
            sink.note(f"stalled: no output for {stall:g}s; process tree:", *tree.describe())
        if reason is not None or stopped is not None:
            why = reason if reason is not None else f"stopped early ({stopped})"
            self._stop(child, fd, why)
        else:
            leftovers = tree.leftovers()
            if leftovers:
                sink.note(
                    f"step {self.step.name} exited leaving {len(leftovers)} process(es) running;"
                    " stopping them:",
                    *(f"  {proctree.describe_short(p)}" for p in leftovers),
                )
                self._stop(child, fd, None)
        if child.isalive():  # only if SIGKILL did not work (uninterruptible sleep)
            sink.note(f"process {child.pid} survived SIGKILL")
        code, sig = child.exitstatus, child.signalstatus
        return _StepResult(reason or "exited", code, sig, stopped)

    def _stop(self, child: pexpect.spawn, fd: int, why: str | None) -> None:
        """SIGINT, SIGTERM, SIGKILL to the whole tree, relaying output while waiting."""
        import psutil  # imported after the step started (proctree.Tree), not on the way to it

        tree = self.tree
        assert tree is not None
        grace = max(self.limits.grace_s, 0.0)
        if self.limits.monitor is not None:  # a paused job would sit on SIGINT/SIGTERM until SIGKILL
            self.limits.monitor.release()
        if why is not None:
            self.sink.note(f"stopping step {self.step.name}: {why}")
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            procs = tree.collect()
            root_alive = child.isalive()
            if not procs and not root_alive:
                break
            with contextlib.suppress(OSError):
                os.killpg(child.pid, sig)  # the step's process group (it leads its own session)
            for p in procs:
                with contextlib.suppress(psutil.Error):
                    p.send_signal(sig)
            if sig == signal.SIGKILL and self.group is not None:
                self.group.kill(timeout=grace)  # cgroup.kill: also what forked since the last look
            deadline = time.monotonic() + grace
            while True:
                self._drain(fd)
                alive = [p for p in procs if proctree.alive(p)]
                if not alive and not child.isalive() and not (self.group is not None and self.group.pids()):
                    break
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.02)
            if sig != signal.SIGINT and why is not None:
                names = ", ".join(proctree.describe_short(p) for p in procs if proctree.alive(p))
                still = f"; still running: {names}" if names else ""
                self.sink.note(f"sent {signal.Signals(sig).name}{still}")
        self._drain(fd)
        left = [p for p in tree.collect() if proctree.alive(p)]
        if left:
            self.sink.note("still alive after SIGKILL: " + ", ".join(proctree.describe_short(p) for p in left))

    def _drain(self, fd: int) -> None:
        with contextlib.suppress(OSError):
            data, _ = _read_batch(fd)
            if data:
                self.sink.emit(data)


def _read_batch(fd: int) -> tuple[bytes, bool]:
    """Everything the PTY has ready (up to BATCH bytes) and whether it reached end of file."""
    chunks: list[bytes] = []
    size = 0
    eof = False
    while size < BATCH:
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:
            break
        except OSError as exc:
            if exc.errno != errno.EIO:  # EIO: every holder of the PTY's other end closed it
                raise
            eof = True
            break
        if not data:
            eof = True
            break
        chunks.append(data)
        size += len(data)
    if len(chunks) == 1:
        return chunks[0], eof
    return b"".join(chunks), eof
