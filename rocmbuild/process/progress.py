"""Where a run that has not finished is: ``rocmbuild report`` on a running (or killed) run.

Owns reading a live run from its records only: the attempt in progress (the
last ``attempt.started`` event), the last lines of its log, and whether the
rocmbuild process that writes it (``pid`` in ``run.started``) is still alive,
so the report can tell "running" from "killed; resume it".
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psutil

from rocmbuild.process.watcher import LineScanner


@dataclass(frozen=True)
class LiveState:
    """A run whose summary still says ``running``."""

    pid: int | None
    alive: bool
    attempt: int | None
    step_log: str | None
    last_lines: tuple[str, ...]


def writer_alive(pid: int | None, started: str | None) -> bool:
    """Is the rocmbuild that started this run still running (and not a later process with its PID)?"""
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        created = proc.create_time()
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    if started:
        try:  # a PID reused by a process born after the run started is not the run
            return created <= datetime.fromisoformat(started).timestamp() + 1.0
        except ValueError:
            return True
    return True


def tail_lines(path: Path, count: int = 10) -> tuple[str, ...]:
    """The last ``count`` readable lines of a raw log, as the live watcher shows recent lines
    (the one line scanner and its noise rule: ``\\r`` updates collapsed, ANSI and CI prefixes gone)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            data = handle.read()
    except OSError:
        return ()
    scanner = LineScanner()
    scanner.feed(data)
    return tuple(scanner.recent(count))


def live_state(run_dir: Path, run_started: str | None, events: Sequence[Mapping[str, object]]) -> LiveState:
    """How a run that has not ended stands (``run_started``: summary.json's ``started``)."""
    # The rocmbuild writing the run now: the one that started it, or the last one that resumed it.
    writers = [e for e in events if e.get("event") in ("run.started", "run.resumed")]
    started: Mapping[str, object] = writers[-1] if writers else {}
    found = started.get("pid")
    pid = found if isinstance(found, int) else None
    attempt_events = [e for e in events if e.get("event") == "attempt.started"]
    attempt = attempt_events[-1].get("attempt") if attempt_events else None
    log = f"attempt-{attempt}.log" if isinstance(attempt, int) else None
    stamp = started.get("timestamp")
    return LiveState(pid=pid, alive=writer_alive(pid, stamp if isinstance(stamp, str) and stamp else run_started),
                     attempt=attempt if isinstance(attempt, int) else None, step_log=log,
                     last_lines=tail_lines(run_dir / log) if log else ())


def render_live(run_dir: Path, state: LiveState) -> str:
    """The progress block ``report`` prints under the table of a run that has not finished."""
    if state.alive:
        head = f"running: attempt {state.attempt or '?'} in progress (rocmbuild PID {state.pid})"
    else:
        head = (f"not finished, and its rocmbuild{f' (PID {state.pid})' if state.pid else ''} is gone: it was "
                f"killed or the machine went down.\n  what to do: rocmbuild resume {shlex.quote(str(run_dir))}")
    lines = [head]
    if state.step_log and state.last_lines:
        lines.append(f"last lines of {state.step_log}:")
        lines.extend(f"  {line}" for line in state.last_lines)
    return "\n".join(lines) + "\n"
