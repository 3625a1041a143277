"""``--notify CMD``: tell someone the run ended.

Owns running the user's notify command once per rocmbuild invocation, after
the last run record is final, whatever the outcome.  The command is a shell
command line (``sh -c CMD``, as the user typed it: rocmbuild quotes nothing
inside it, so it is exactly as trusted as the person who wrote it); the
summary JSON comes on its stdin and ``ROCMBUILD_OUTCOME``,
``ROCMBUILD_EXIT_CODE``, ``ROCMBUILD_RUN_DIR`` in its environment, so a
webhook never has to splice values into the command line.  It runs in its own
session and is killed (whole process group) after a time limit; how it went is
recorded in summary.json (``notify``) and events.jsonl (``notify.finished``),
and never changes rocmbuild's exit code.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from rocmbuild.records.recorder import write_private
from rocmbuild.records.redact import redact

DEFAULT_NOTIFY_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class NotifyResult:
    """How the notify command went (recorded as summary.json's ``notify``)."""

    command: str
    exit_code: int | None   # None: timed out or could not start
    timed_out: bool
    duration_s: float
    error: str | None
    output: str             # its stdout+stderr, last 2000 characters (for the record of a failure)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def notify_env(environ: Mapping[str, str], summary: Mapping[str, Any], run_dir: Path) -> dict[str, str]:
    """The command's environment: the caller's plus the three ROCMBUILD_ variables of the contract."""
    env = dict(environ)
    env.update(ROCMBUILD_OUTCOME=str(summary.get("outcome")),
               ROCMBUILD_EXIT_CODE=str(summary.get("exit_code")),
               ROCMBUILD_RUN_DIR=str(run_dir))
    return env


def run_notify(command: str, run_dir: Path, environ: Mapping[str, str],
               timeout_s: float = DEFAULT_NOTIFY_TIMEOUT_S) -> NotifyResult:
    """Run ``sh -c command`` with the run's summary on stdin; record the result in the run dir."""
    summary_path = run_dir / "summary.json"
    text = summary_path.read_text(encoding="utf-8") if summary_path.is_file() else "{}"
    try:
        summary = json.loads(text)
    except json.JSONDecodeError:
        summary = {}
    started = time.monotonic()
    try:
        # Own session: on timeout the whole group goes (curl started by the shell included).
        proc = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, env=notify_env(environ, summary, run_dir),
                                cwd=run_dir, start_new_session=True)
    except OSError as exc:
        result = NotifyResult(command, None, False, 0.0, f"could not start /bin/sh: {exc}", "")
    else:
        timed_out = False
        try:
            out, _ = proc.communicate(text.encode(), timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid)
            out, _ = proc.communicate()
        code = None if timed_out else proc.returncode
        error = (f"timed out after {timeout_s:g}s (killed)" if timed_out
                 else None if code == 0 else f"exited with {code}")
        result = NotifyResult(command, code, timed_out, round(time.monotonic() - started, 3), error,
                              out.decode("utf-8", "replace")[-2000:])
    _record(run_dir, result)
    return result


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _record(run_dir: Path, result: NotifyResult) -> None:
    """Add ``notify`` to summary.json (atomically) and a ``notify.finished`` event; the run is over."""

    data = redact(asdict(result))
    summary_path = run_dir / "summary.json"
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        summary["notify"] = data
        tmp = run_dir / ".summary.json.tmp"
        write_private(tmp, json.dumps(summary, indent=2, default=str) + "\n")
        tmp.replace(summary_path)
    except (OSError, json.JSONDecodeError):
        pass  # no readable summary: the event below still says how notify went
    event = {"event": "notify.finished", **data, "timestamp": datetime.now(UTC).isoformat()}
    try:
        with (run_dir / "events.jsonl").open("a", encoding="utf-8") as events:
            events.write(json.dumps(event, default=str) + "\n")
    except OSError:
        pass


def notify_console(result: NotifyResult, err: IO[str]) -> None:
    """A failed notification is worth one line on the console (the exit code stays the build's)."""
    if not result.ok:
        err.write(f"rocmbuild: warning: --notify command {result.error}; see 'notify' in summary.json\n")
        err.flush()
