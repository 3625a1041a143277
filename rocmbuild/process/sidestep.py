"""Side steps: commands rocmbuild runs outside an attempt, contained and bounded exactly like an attempt's step.

Owns: running the wheel step and ``--requires-from``'s pip through the attempt engine
(:func:`rocmbuild.process.runner.run_attempt`) rather than a bare ``subprocess`` call, so that the
same guarantees hold there: the command in a cgroup of its own (or, without cgroups, tracked as
a process tree with rocmbuild a child subreaper), a watchdog that ends it if rocmbuild dies, the
``--budget`` deadline, the stall timeout and an interrupt stop the whole tree (SIGINT, SIGTERM,
SIGKILL), a daemon it leaves behind is ended, and its output goes to a log file, never into
memory.  :func:`bounded_run` wraps that as a :class:`rocmbuild.process.command.Run` for the code
written against the short-command protocol; its answer holds the log's last bytes only.
"""

from __future__ import annotations

import os
import shlex
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rocmbuild.errors import ExitCode, RocmbuildError
from rocmbuild.process import runner
from rocmbuild.process.attempt import AttemptHooks, AttemptRequest
from rocmbuild.process.command import CommandResult, Run
from rocmbuild.process.watcher import Watcher

TAIL_BYTES = 16384  # what a bounded_run answer holds of a command's output: its end, where pip says why


def _never() -> bool:
    return False


@dataclass(frozen=True)
class Bounds:
    """The run's limits, as a step outside the attempts obeys them: deadline on time.monotonic()."""

    deadline: float | None = None
    stall_timeout_s: float | None = None
    interrupted: Callable[[], bool] = field(default=_never)

    def with_timeout(self, timeout_s: float | None) -> Bounds:
        """The same bounds, the deadline brought forward to ``timeout_s`` from now when that is sooner."""
        if timeout_s is None:
            return self
        own = time.monotonic() + timeout_s
        deadline = own if self.deadline is None else min(self.deadline, own)
        return Bounds(deadline, self.stall_timeout_s, self.interrupted)


class BudgetSpent(RocmbuildError):
    """The --budget ran out in a step outside the attempts, before any run record exists: exit 5."""

    exit_code = ExitCode.BUDGET_EXHAUSTED


def run_step(name: str, command: str, *, cwd: Path, env: Mapping[str, str], log: Path,
             bounds: Bounds) -> runner.AttemptOutcome:
    """``command`` (a shell string) as one step of its own, contained like an attempt, output into ``log``."""
    limits = runner.Limits(stall_timeout_s=bounds.stall_timeout_s, deadline=bounds.deadline)
    request = AttemptRequest((runner.Step(name, command),), cwd=cwd, env=env, log_path=log, limits=limits)
    return runner.run_attempt(request, AttemptHooks(watcher=Watcher(), interrupted=bounds.interrupted))


def tail(log: Path, size: int = TAIL_BYTES) -> str:
    """The last ``size`` bytes of a log, as text (a flood of output is never read whole)."""
    try:
        with log.open("rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(handle.tell() - size, 0))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def ended_why(outcome: runner.AttemptOutcome, bounds: Bounds) -> str:
    """Why a contained step did not exit by itself, in words. Pure."""
    if outcome.ended == "budget":
        return "the --budget ran out"
    if outcome.ended == "stalled":
        return f"no output for {bounds.stall_timeout_s:g}s (stall timeout)" if bounds.stall_timeout_s else "stalled"
    if outcome.ended == "interrupted":
        return "interrupted"
    if outcome.signal is not None:
        return f"killed by signal {outcome.signal}"
    return f"exited {outcome.exit_code}"


def bounded_run(name: str, bounds: Bounds, where: Path | None = None) -> Run:
    """A :class:`Run` whose commands run as contained steps within ``bounds`` (each also within its own
    ``timeout``).  The budget running out raises :class:`BudgetSpent`, an interrupt KeyboardInterrupt;
    a stall or a timeout is an answer with returncode None, as :func:`command.capture` gives one."""

    def run(argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 60) -> CommandResult:
        mine = bounds.with_timeout(timeout)
        with tempfile.TemporaryDirectory(prefix="rocmbuild-step-") as tmp:
            log = Path(tmp) / "output.log"
            outcome = run_step(name, shlex.join(argv), cwd=cwd or where or Path.cwd(),
                               env=dict(env) if env is not None else dict(os.environ), log=log, bounds=mine)
            output = _without_header(tail(log))
        if outcome.ended == "budget" and bounds.deadline is not None and time.monotonic() >= bounds.deadline:
            raise BudgetSpent(f"the time budget ran out during {name}",
                              why=f"`{shlex.join(argv)[:200]}` was still running at the --budget's end; it was "
                                  "stopped with its whole process tree",
                              todo="rerun with a larger --budget, or check that the source answers "
                                   "(an index that never answers, or trickles, holds pip forever)")
        if outcome.ended == "interrupted":
            raise KeyboardInterrupt
        if outcome.ended == "budget":  # its own timeout, not the run's budget
            return CommandResult(None, f"{output}\n{argv[0]}: timed out after {timeout:g}s")
        if outcome.ended != "exited":
            return CommandResult(None, f"{output}\n{argv[0]}: stopped: {ended_why(outcome, mine)}")
        return CommandResult(outcome.exit_code if outcome.signal is None else None, output)

    return run


def _without_header(text: str) -> str:
    """The command's own output: the attempt engine's ``==> rocmbuild`` lines dropped."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("==> rocmbuild"))
