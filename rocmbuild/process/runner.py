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
* **Relay**: the PTY is read by a small process of its own (``ptyrelay.py``), which
  copies the output into the attempt's log (unbuffered ``os.write``: on disk as soon as it
  is relayed) and nothing else.  rocmbuild follows the log as it grows, in reads of up to
  1 MiB, and hands each to the display and the watcher; the relay wakes it at most every
  5 ms while output flows.  Reading a PTY is a ping-pong of ~4 KiB reads through the
  kernel, so work done between two reads (classifying a flood of warnings, redrawing the
  status line) would hold the build up; this way it never does, and a slow classifier only
  makes rocmbuild finish reading later.  The log starts each step with
  ``==> rocmbuild step NAME: COMMAND``; rocmbuild's own notes (a stall's process tree,
  processes stopped) are lines starting with ``==> rocmbuild``, handed to the relay while it
  runs so that they fall between two of the build's writes.  Everything written to the log
  is also fed to the watcher, in the log's order, so the watcher's line numbers are the
  log's line numbers.  A newline is inserted before a header or note, and at the end of the
  attempt, only when the output before it did not end with one.
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
  other children (the relay is started before the tree is first looked at): they would
  be taken for the build's.
"""

from __future__ import annotations

import contextlib
import os
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

from rocmbuild.errors import DiskFullError, InternalError
from rocmbuild.process import containment, proctree, ptyrelay, stoppolicy
from rocmbuild.process.watcher import Progress, Watcher

if TYPE_CHECKING:
    from rocmbuild.process.attempt import AttemptHooks, AttemptRequest
    from rocmbuild.process.display import Display

WINDOW = (40, 250)  # rows, columns of the build's terminal
FOLLOW_CHUNK = 1 << 20  # the log is followed in reads of at most this much...
FOLLOW_MAX = 1 << 23  # ...and at most this much between two checks of limits and the child
FOLLOW_S = 0.002  # while output flows, the log is looked at again this soon (the relay wakes us too)
MAX_RELAY_RESTARTS = 3  # a relay killed from outside is replaced this often in one step
# Grace per signal when stopping an attempt whose verdict is known (stop_check): INT, TERM, KILL
# within ~2 s, whatever the tree does with the first two.
EARLY_STOP_GRACE_S = 0.75
TICK = 0.1  # longest wait between checks of limits, interrupts and the child
EOF_POLL_S = 0.005  # first wait for the child's exit once its PTY is closed (then doubled up to TICK)
TRACK_EVERY = 0.5  # how often the process tree is snapshot
QUIET_AFTER_EXIT = 0.2  # output drained this long after the step exited while a daemon holds the PTY
HEADER = "==> rocmbuild step {name}: {command}\n"
NOTE = "==> rocmbuild: "
_DISK_TODO = ("free space on (or remount read-write) the run directory's filesystem, or pass --run-dir "
              "elsewhere; then rerun")


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
    """The attempt's log, and what follows it: the display and the watcher, in that order.

    Output reaches the log two ways: the step's, copied by its relay process (ptyrelay.py), and
    rocmbuild's own lines (step headers, notes), written here or, while a relay runs, handed to
    it so that they land between two of the build's writes.  The display and the watcher read
    the log as it grows (``follow``), so they see exactly its bytes, in its order.
    """

    def __init__(self, log_path: Path, watcher: Watcher, display: Display | None) -> None:
        try:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
            self.rfd = os.open(log_path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise DiskFullError(f"cannot create the build log {log_path}", why=exc.strerror or str(exc),
                                todo=_DISK_TODO) from None
        size = os.lseek(self.rfd, 0, os.SEEK_END)  # the watcher sees this attempt's output, not earlier runs'
        self.path = log_path
        self.broken: OSError | None = None  # the log could not be written: nothing more goes there
        self.watcher = watcher
        self.display = display
        self.log_only = False  # the watcher or the display failed: they are fed nothing more
        self.relay: ptyrelay.RelayProcess | None = None  # while a step runs
        self.at_line_start = size == 0 or os.pread(self.rfd, 1, size - 1) == b"\n"

    def follow(self) -> int:
        """Hand the next bytes the log holds to the display and the watcher; how many (0: none yet)."""
        data = os.read(self.rfd, FOLLOW_CHUNK)
        if data:
            self.at_line_start = data.endswith(b"\n")
            if not self.log_only:
                if self.display is not None:
                    self.display.relay(data)
                self.watcher.feed(data)
        return len(data)

    def catch_up(self) -> None:
        while self.follow():
            pass

    def write(self, data: bytes) -> None:
        """rocmbuild's own bytes, straight into the log (no relay is running), then followed."""
        view = memoryview(data)
        while view and self.broken is None:
            try:
                view = view[os.write(self.fd, view) :]
            except OSError as exc:  # a full or read-only run dir: the build is stopped, then rocmbuild answers
                self.broken = exc
                raise self.write_failed(exc.errno) from None
        self.catch_up()

    def relay_write_failed(self, code: int) -> DiskFullError:
        """The relay could not write the log: nothing more goes there; the error to raise."""
        self.broken = OSError(code, os.strerror(code))
        return self.write_failed(code)

    def write_failed(self, code: int | None) -> DiskFullError:
        why = os.strerror(code) if code else "the write failed"
        return DiskFullError(f"cannot write the build log {self.path}", why=why, todo=_DISK_TODO)

    def lines(self, text: str) -> None:
        """rocmbuild's own lines, starting on a fresh line."""
        data = text.encode("utf-8", "replace")
        if self.relay is not None and self.relay.note(data):
            return  # the relay starts it on a fresh line
        self.catch_up()  # what the relay wrote decides whether a newline goes first
        self.write(data if self.at_line_start else b"\n" + data)

    def note(self, *lines: str) -> None:
        self.lines("".join(f"{NOTE}{line}\n" for line in lines))

    def end_line(self) -> None:
        """End the log (and the watcher's input) on a line boundary."""
        self.catch_up()
        if not self.at_line_start:
            self.write(b"\n")

    def update_display(self) -> None:
        if self.display is not None and not self.log_only:
            self.display.update(self.watcher)

    def close(self) -> None:
        os.close(self.fd)
        os.close(self.rfd)


def run_attempt(request: AttemptRequest, hooks: AttemptHooks) -> AttemptOutcome:
    """Run the request's steps in order under a PTY; the first failing (or stopped) step ends the attempt.

    ``request.tree`` (default ``cwd``) keys the attempt's cgroup, so that the next run on the same tree
    finds what a killed run left behind.
    """
    steps, cwd, env, log_path, limits = request.steps, request.cwd, request.env, request.log_path, request.limits
    watcher, display, stop_check, interrupted = hooks.watcher, hooks.display, hooks.stop_check, hooks.interrupted
    started = datetime.now(UTC)
    t0 = time.monotonic()
    sink = _Sink(log_path, watcher, display)
    result = _StepResult("exited", 0, None, None)
    failed: Step | None = None
    group = containment.AttemptGroup.create(request.tree or cwd)
    watchdog = containment.Watchdog(group)
    try:
        with proctree.subreaper():
            for step in steps:
                if display is not None:
                    display.step(step.name)
                sink.lines(HEADER.format(name=step.name, command=step.command))
                result = _StepRun(step=step, cwd=cwd, env=env, sink=sink, limits=limits, stop_check=stop_check,
                                  interrupted=interrupted, group=group, watchdog=watchdog).run()
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
        with contextlib.suppress(DiskFullError):  # reported already, where it happened
            sink.end_line()  # the log (and the watcher) end on a line boundary; the next header starts fresh
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
    tree: proctree.Tree | None = field(default=None, init=False)
    relay_restarts: int = field(default=0, init=False)

    def _limit_reached(self, now: float, last_output: float) -> str | None:
        """How the step ends now (interrupted, budget, stalled: the stop policy's answer), or None."""
        deadline = self.limits.deadline
        return stoppolicy.during_attempt(stoppolicy.Running(
            interrupted=self.interrupted(), budget_left_s=None if deadline is None else deadline - now,
            quiet_s=now - last_output, stall_timeout_s=self.limits.stall_timeout_s)).ended

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
        ours = proctree.own_children()  # before the spawn: after it, the step's orphans are our children too
        try:
            child = pexpect.spawn(
                shell[0], argv[1:], cwd=str(self.cwd), env=env,
                dimensions=WINDOW, preexec_fn=lambda: _exec_child(argv, env, join),
            )
        except (pexpect.ExceptionPexpect, OSError) as exc:
            self.sink.note(f"step {self.step.name} could not start: {exc}")
            return _StepResult("exited", 127, None, None)
        child.ptyproc.delayafterclose = 0  # the child is dead by the time we close
        # The relay starts before the process tree is first looked at: it is rocmbuild's, not the step's.
        try:
            self._start_relay(child)
        except OSError as exc:
            self.sink.note(f"step {self.step.name} could not start: its output relay failed: {exc}")
            with contextlib.suppress(Exception):
                child.close(force=True)
            return _StepResult("exited", 127, None, None)
        if self.group is None and self.watchdog is not None:
            self.watchdog.watch_session(child.pid)  # without a cgroup, the watchdog ends this session
        relay = self.sink.relay
        self.tree = proctree.Tree(child.pid, self.group, ours | ({relay.pid} if relay is not None else set()))
        try:
            result = self._watch(child)
        except BaseException as exc:  # a failing hook, a KeyboardInterrupt: never leave the build running
            self.sink.log_only = True  # the watcher or display may be what failed
            with contextlib.suppress(Exception):
                self._stop(child, f"rocmbuild failed: {type(exc).__name__}: {exc}")
            raise
        finally:
            if self.limits.monitor is not None:  # nothing stays SIGSTOPped after its step
                with contextlib.suppress(Exception):
                    self.limits.monitor.release()
            write_failed = self._end_relay()
            with contextlib.suppress(Exception):
                child.close(force=True)
        if write_failed is not None:  # the relay's last copy could not be written
            raise write_failed
        return result

    def _start_relay(self, child: pexpect.spawn) -> ptyrelay.RelayProcess:
        self.sink.catch_up()  # the relay must know whether the log ends on a line boundary
        relay = ptyrelay.RelayProcess(child.child_fd, self.sink.fd, at_line_start=self.sink.at_line_start)
        self.sink.relay = relay
        if self.tree is not None:  # a replacement, started once the tree is watched: rocmbuild's too
            self.tree.ignore.add(relay.pid)
        return relay

    def _end_relay(self) -> DiskFullError | None:
        """Stop the step's relay (it copies what the PTY has ready first) and follow the log to its end.

        Returns the error to raise when the relay could not write the log and nobody said so yet.
        """
        relay, self.sink.relay = self.sink.relay, None
        if relay is not None:
            relay.close()
        with contextlib.suppress(Exception):  # a failing watcher or display was reported where it failed
            self.sink.catch_up()
        if relay is not None and relay.write_error is not None and self.sink.broken is None:
            return self.sink.relay_write_failed(relay.write_error)
        return None

    def _follow(self, check: bool = True) -> tuple[bool, str | None]:
        """Follow the log (up to FOLLOW_MAX bytes): whether it moved, and stop_check's reason to stop."""
        moved = 0
        while moved < FOLLOW_MAX and (n := self.sink.follow()):
            moved += n
            self.sink.update_display()
            if check and self.stop_check is not None and (stopped := self.stop_check()) is not None:
                return True, stopped
        return moved > 0, None

    def _relay_alive(self, child: pexpect.spawn) -> ptyrelay.RelayProcess:
        """The running relay; one that died without reaching the PTY's end is replaced (the build would block)."""
        relay = self.sink.relay
        assert relay is not None
        if not relay.ended or relay.pty_closed:
            return relay
        if relay.write_error is not None:
            raise self.sink.relay_write_failed(relay.write_error)
        self.relay_restarts += 1
        if self.relay_restarts > MAX_RELAY_RESTARTS:
            raise InternalError(
                f"the output relay of step {self.step.name} ended unexpectedly {self.relay_restarts} times",
                why=f"its last exit status was {relay.exit_status} (something outside rocmbuild kills it?)",
                todo=f"see the end of {self.sink.path}; rerun, and report it with that log if it happens again")
        relay.close()
        self.sink.relay = None
        why = f"error {relay.failure}: {os.strerror(relay.failure)}" if relay.failure else f"status {relay.exit_status}"
        self.sink.note(f"the output relay (pid {relay.pid}) ended unexpectedly ({why}); starting another")
        return self._start_relay(child)

    def _watch(self, child: pexpect.spawn) -> _StepResult:
        tree = self.tree
        assert tree is not None
        sink = self.sink
        last_output = next_check = time.monotonic()
        next_track = next_check + (TRACK_EVERY if self.group is not None else TICK)
        eof_wait = EOF_POLL_S
        wait = FOLLOW_S
        exited_at: float | None = None
        reason: str | None = None
        stopped: str | None = None
        while True:
            relay = self._relay_alive(child)
            moved, stopped = self._follow()
            now = time.monotonic()
            if moved:
                last_output = now
            if stopped is not None:
                break
            if now >= next_check:  # limits, child and tree: every TICK, not every read
                next_check = now + TICK
                reason = self._limit_reached(now, last_output)
                if reason is not None:
                    break
                # A verdict that waits for running jobs comes due while the log may be silent.
                if self.stop_check is not None and (stopped := self.stop_check()) is not None:
                    break
                if now >= next_track:
                    # Without a cgroup the snapshot is also what tells the watchdog a daemon's session:
                    # taken every tick, so that a SIGKILL soon after a daemon starts still finds it.
                    next_track = now + (TRACK_EVERY if self.group is not None else TICK)
                    tree.snapshot()
                    if self.group is None and self.watchdog is not None:
                        self.watchdog.watch_sessions_of(tree.known)
                if self.limits.monitor is not None:
                    self.limits.monitor.poll(child.pid)
                if exited_at is None and not child.isalive():
                    exited_at = now
                # After the exit, output still in flight is drained; a daemon holding the PTY is not
                # waited for (its output stops being relayed once things are quiet).
                if exited_at is not None and (relay.pty_closed or (
                        now - exited_at >= QUIET_AFTER_EXIT and now - last_output >= QUIET_AFTER_EXIT)):
                    break
                sink.update_display()
            if relay.pty_closed:
                # The PTY is closed: the step has nearly always exited.  Look again after EOF_POLL_S,
                # doubling up to a TICK, rather than a whole TICK after its last output.
                next_check = min(next_check, now + eof_wait)
                eof_wait = min(eof_wait * 2, TICK)
                time.sleep(max(next_check - now, 0.0))
                continue
            # Sleep until the relay says the log grew (at most every WAKE_S while output flows), or
            # the next check is due; while output flows, look again soon even without a wake-up.
            wait = FOLLOW_S if moved else min(wait * 2, TICK)
            relay.wait(min(wait, max(next_check - now, 0.0)))
        if reason == "stalled":
            tree.snapshot()
            stall = self.limits.stall_timeout_s
            sink.note(f"stalled: no output for {stall:g}s; process tree:", *tree.describe())
        if reason is not None or stopped is not None:
            why = reason if reason is not None else f"stopped early ({stopped})"
            self._stop(child, why)
        else:
            leftovers = tree.leftovers()
            if leftovers:
                sink.note(
                    f"step {self.step.name} exited leaving {len(leftovers)} process(es) running;"
                    " stopping them:",
                    *(f"  {proctree.describe_short(p)}" for p in leftovers),
                )
                self._stop(child, None)
        if child.isalive():  # only if SIGKILL did not work (uninterruptible sleep)
            sink.note(f"process {child.pid} survived SIGKILL")
        code, sig = child.exitstatus, child.signalstatus
        return _StepResult(reason or "exited", code, sig, stopped)

    def _stop(self, child: pexpect.spawn, why: str | None) -> None:
        """SIGINT, SIGTERM, SIGKILL to the whole tree, relaying output while waiting."""
        import psutil  # imported after the step started (proctree.Tree), not on the way to it

        tree = self.tree
        assert tree is not None
        grace = max(self.limits.grace_s, 0.0)
        if why is not None and why.startswith("stopped early"):
            # The verdict is known: the build's last words are not needed, only its end.
            grace = min(grace, EARLY_STOP_GRACE_S)
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
                self._follow(check=False)
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
        self._follow(check=False)
        left = [p for p in tree.collect() if proctree.alive(p)]
        if left:
            self.sink.note("still alive after SIGKILL: " + ", ".join(proctree.describe_short(p) for p in left))
