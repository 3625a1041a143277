"""``--detach``: hand the run to a background process that outlives the terminal.

Owns the double fork: the first child calls ``setsid()`` (a new session with
no controlling terminal, so closing the terminal sends it no SIGHUP), forks
the grandchild that runs the build and exits at once, so the build is
re-parented to init and is nobody's job.  The grandchild's stdin is
/dev/null and its stdout/stderr go to ``console.log`` in the run dir.  The
parent learns the grandchild's PID through a pipe, and waits on that pipe
until the run has passed its refusals (tree lock, run dir, preflight: the
run says ``ok``) or ended before that (it sends its exit code and error):
then it prints the run dir and PID and exits 0, or the refusal and the
run's own exit code.  The PID is also left in ``rocmbuild.pid``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rocmbuild import paths
from rocmbuild.errors import ExitCode, UsageError
from rocmbuild.records.recorder import write_private

CONSOLE_LOG = "console.log"
PID_FILE = "rocmbuild.pid"


def detached_run_dir(names: Sequence[str], run_dir: Path | None) -> Path:
    """Where a detached run's records go: --run-dir, else a fresh directory under the state dir.

    Chosen before the fork so the parent can print it; the build uses it as its --run-dir.
    """
    if run_dir is not None:
        path = run_dir
    else:
        label = "+".join(Path(n).stem for n in names) or "build"
        path = paths.runs_root() / f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{label}-{os.getpid()}"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the run directory {path}", why=exc.strerror or str(exc),
                         todo="pass --run-dir DIR pointing at a writable directory") from None
    return path.resolve()


@dataclass(frozen=True)
class Started:
    """What the foreground learned from the background run: its PID, and its exit code and error when it
    ended before passing its refusals (None: it passed them and is building)."""

    pid: int
    exit_code: int | None = None
    error: dict[str, object] | None = None


# The background run's end of the pipe to the foreground, until it has passed its refusals.
_REPORT: list[int] = []
_ERROR: dict[str, object] = {}


def detach(run_dir: Path) -> Started | None:
    """Fork the build into the background.

    In the parent, returns once the background run has passed its refusals (lock, run dir, preflight:
    :func:`passed`) or ended (:func:`ended`), with what it said; None in the background process (which
    goes on to build, its output already in ``console.log``).
    """
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    first = os.fork()
    if first > 0:  # the parent: wait for the first child (it exits at once), then for the run's word
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()
        os.waitpid(first, 0)
        return _started(data, run_dir)
    # The first child: a session of its own, then the grandchild does the work.
    os.close(read_end)
    try:
        os.setsid()
        if os.fork() > 0:
            os._exit(0)
        _become_background(run_dir)
        os.write(write_end, f"pid {os.getpid()}\n".encode())
        _REPORT.append(write_end)
    except BaseException:  # never let a child run the parent's code path
        os._exit(70)
    return None


def _started(data: bytes, run_dir: Path) -> Started:
    lines = data.decode(errors="replace").splitlines()
    pid = next((int(line.split()[1]) for line in lines if line.startswith("pid ")), None)
    if pid is None:
        raise UsageError("could not start the background run", why="the background process died at once",
                         todo=f"see {run_dir / CONSOLE_LOG}, or run without --detach")
    end = next((json.loads(line[5:]) for line in lines if line.startswith("exit ")), None)
    if end is not None:
        return Started(pid, int(end.get("exit_code", 1)), end.get("error"))
    if "ok" not in lines:  # the pipe closed with no word: the run died before its refusals were passed
        return Started(pid, int(ExitCode.INTERNAL), {"error": "the background run died before it started building",
                                                     "why": "it ended without recording why",
                                                     "todo": f"see {run_dir / CONSOLE_LOG}"})
    return Started(pid)


def passed() -> None:
    """The background run is past its refusals (tree lock, run dir, preflight): the foreground may go."""
    _say("ok")


def refused(what: str, why: str, todo: str) -> None:
    """The error the background run is about to exit with, for :func:`ended` to pass on."""
    _ERROR.update(error=what, why=why, todo=todo)


def ended(exit_code: int) -> None:
    """The background run ends before passing its refusals: the foreground exits with its code."""
    _say("exit " + json.dumps({"exit_code": exit_code, "error": dict(_ERROR) or None}))


def _say(line: str) -> None:
    while _REPORT:
        fd = _REPORT.pop()
        try:
            os.write(fd, f"{line}\n".encode())
        except OSError:
            pass  # the foreground is gone (killed): the run goes on
        finally:
            os.close(fd)


def _become_background(run_dir: Path) -> None:
    write_private(run_dir / PID_FILE, f"{os.getpid()}\n")
    null = os.open(os.devnull, os.O_RDONLY)
    log = os.open(run_dir / CONSOLE_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(null)
    os.close(log)
