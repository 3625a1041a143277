"""``--detach``: hand the run to a background process that outlives the terminal.

Owns the double fork: the first child calls ``setsid()`` (a new session with
no controlling terminal, so closing the terminal sends it no SIGHUP), forks
the grandchild that runs the build and exits at once, so the build is
re-parented to init and is nobody's job.  The grandchild's stdin is
/dev/null and its stdout/stderr go to ``console.log`` in the run dir.  The
parent learns the grandchild's PID through a pipe, prints the run dir and the
PID, and exits 0.  The PID is also left in ``rocmbuild.pid`` in the run dir.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from rocmbuild import paths
from rocmbuild.errors import UsageError
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


def detach(run_dir: Path) -> int | None:
    """Fork the build into the background.

    Returns the background PID in the parent (which should print it and exit 0), None in the
    background process (which goes on to build, its output already in ``console.log``).
    """
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    first = os.fork()
    if first > 0:  # the parent: wait for the first child (it exits at once) and read the PID
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()
        os.waitpid(first, 0)
        if not data.strip():
            raise UsageError("could not start the background run", why="the background process died at once",
                             todo=f"see {run_dir / CONSOLE_LOG}, or run without --detach")
        return int(data)
    # The first child: a session of its own, then the grandchild does the work.
    os.close(read_end)
    try:
        os.setsid()
        if os.fork() > 0:
            os._exit(0)
        _become_background(run_dir)
        os.write(write_end, str(os.getpid()).encode())
        os.close(write_end)
    except BaseException:  # never let a child run the parent's code path
        os._exit(70)
    return None


def _become_background(run_dir: Path) -> None:

    write_private(run_dir / PID_FILE, f"{os.getpid()}\n")
    null = os.open(os.devnull, os.O_RDONLY)
    log = os.open(run_dir / CONSOLE_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(null)
    os.close(log)
