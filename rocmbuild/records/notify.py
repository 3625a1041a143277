"""``--notify``: tell someone the run ended, by a command or by notification URLs.

Owns running the notification once per rocmbuild invocation, after the last run record is final,
whatever the outcome.  ``--notify`` takes either

* a shell command line (``sh -c CMD``, as the user typed it: rocmbuild quotes nothing inside it, so
  it is exactly as trusted as the person who wrote it), with the summary JSON on its stdin and
  ``ROCMBUILD_OUTCOME``, ``ROCMBUILD_EXIT_CODE``, ``ROCMBUILD_RUN_DIR`` (and ``ROCMBUILD_REPORT``) in
  its environment, so a webhook never has to splice values into the command line; or
* notification URLs, separated by spaces (``slack://...``, ``msteams://...``, ``matrixs://...``,
  ``mailtos://...``, ``ntfys://...``, ``json://host/path``): apprise delivers a short message
  (notifymessage.py) from a child process (notifysend.py).

Either way the child runs contained (process/contained.py): own session and cgroup, output read
with bounded memory, killed whole at its time limit or on SIGINT/SIGTERM/SIGHUP, and whatever it
leaves behind is stopped.  The HTML report is written into the run dir first (``report.html``), so
the message can say where it is.  How it went is recorded in summary.json (``notify``) and
events.jsonl (``notify.finished``), with URLs reduced to their scheme and the values of
secret-named variables redacted; it never changes the recorded outcome or rocmbuild's exit code.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from rocmbuild.process.contained import run_contained
from rocmbuild.records.htmlreport import write_report
from rocmbuild.records.journal import read_journal
from rocmbuild.records.notifymessage import build_message
from rocmbuild.records.recorder import replace_summary
from rocmbuild.records.recordfile import CorruptRecord
from rocmbuild.records.redact import redact, redact_text, redact_urls, secret_values

DEFAULT_NOTIFY_TIMEOUT_S = 60.0
MAX_SUMMARY_BYTES = 16 << 20      # a summary bigger than this is not parsed for the message
REPORT_FILE = "report.html"
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://\S+$")


@dataclass(frozen=True)
class NotifyResult:
    """How the notification went (recorded as summary.json's ``notify``)."""

    command: str            # the command, or the URLs by scheme only (never their credentials)
    exit_code: int | None   # None: timed out, interrupted or could not start
    timed_out: bool
    duration_s: float
    error: str | None
    output: str             # its stdout+stderr, last 2000 characters, redacted
    kind: str = "command"   # "command" or "urls"
    interrupted: bool = False
    leftovers: int = 0      # processes it left running (stopped by rocmbuild)
    report: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def notification_urls(value: str) -> list[str] | None:
    """The URLs when ``value`` is only notification URLs (separated by whitespace), else None (a command)."""
    tokens = value.split()
    return tokens if tokens and all(_URL.match(t) for t in tokens) else None


def notify_env(environ: Mapping[str, str], summary: Mapping[str, object], run_dir: Path,
               report: Path | None = None) -> dict[str, str]:
    """The command's environment: the caller's plus the ROCMBUILD_ variables of the contract."""
    env = dict(environ)
    env.update(ROCMBUILD_OUTCOME=str(summary.get("outcome")),
               ROCMBUILD_EXIT_CODE=str(summary.get("exit_code")),
               ROCMBUILD_RUN_DIR=str(run_dir))
    if report is not None:
        env["ROCMBUILD_REPORT"] = str(report)
    return env


def _read_summary(run_dir: Path) -> tuple[str, dict[str, object]]:
    try:
        with (run_dir / "summary.json").open("rb") as handle:
            raw = handle.read(MAX_SUMMARY_BYTES + 1)
    except OSError:
        return "{}", {}
    text = raw.decode("utf-8", "replace")
    if len(raw) > MAX_SUMMARY_BYTES:
        return text, {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text, {}
    return text, data if isinstance(data, dict) else {}


def _write_report(run_dir: Path) -> Path | None:
    """report.html in the run dir (best effort: a page that cannot be written is no reason not to notify)."""
    try:
        return write_report(run_dir, run_dir / REPORT_FILE)
    except Exception:  # the notification matters more than the page
        return None


def run_notify(command: str, run_dir: Path, environ: Mapping[str, str],
               timeout_s: float = DEFAULT_NOTIFY_TIMEOUT_S) -> NotifyResult:
    """Send the notification (command or URLs), contained; record the result in the run dir."""
    text, summary = _read_summary(run_dir)
    report = _write_report(run_dir)
    urls = notification_urls(command)
    if urls is not None:
        message = build_message(summary, (), str(report or run_dir))
        argv = [sys.executable, "-m", "rocmbuild.records.notifysend"]
        stdin = json.dumps({"urls": urls, "title": message.title, "body": message.body,
                            "failed": message.failed}).encode()
        env = dict(environ)
        label = " ".join(redact_urls(u) for u in urls)
    else:
        argv = ["/bin/sh", "-c", command]
        stdin = text.encode()
        env = notify_env(environ, summary, run_dir, report)
        label = redact_urls(command)
    ran = run_contained(argv, stdin=stdin, env=env, cwd=run_dir, timeout_s=timeout_s)
    output = redact_urls(redact_text(ran.output, secret_values(environ)))[-2000:]
    if ran.error is not None:
        error: str | None = ran.error
    elif ran.timed_out:
        error = f"timed out after {timeout_s:g}s (killed)"
    elif ran.interrupted:
        error = "interrupted (killed); the build's outcome and exit code stand"
    elif ran.exit_code != 0:
        error = (f"exited with {ran.exit_code}" if urls is None
                 else "not delivered to every URL" if ran.exit_code == 1 else "a URL is not a notification URL")
    else:
        error = None
    result = NotifyResult(label, ran.exit_code, ran.timed_out, ran.duration_s, error, output,
                          kind="command" if urls is None else "urls", interrupted=ran.interrupted,
                          leftovers=ran.leftovers, report=str(report) if report else None)
    _record(run_dir, result)
    return result


def _record(run_dir: Path, result: NotifyResult) -> None:
    """Add ``notify`` to summary.json (atomically) and a ``notify.finished`` event; the run is over."""

    data = redact(asdict(result))
    try:
        summary = replace(read_journal(run_dir), notify=data)
    except (OSError, CorruptRecord):
        pass  # no readable summary: the event below still says how notify went
    else:
        replace_summary(run_dir, json.dumps(summary.to_json(), indent=2, default=str) + "\n")
    event = {"event": "notify.finished", **data, "timestamp": datetime.now(UTC).isoformat()}
    try:
        with (run_dir / "events.jsonl").open("a", encoding="utf-8") as events:
            events.write(json.dumps(event, default=str) + "\n")
    except OSError:
        pass


def notify_console(result: NotifyResult, err: IO[str]) -> None:
    """A failed notification is worth one line on the console (the exit code stays the build's)."""
    what = "--notify command" if result.kind == "command" else f"notification to {result.command}"
    if not result.ok:
        err.write(f"rocmbuild: warning: {what} {result.error}; see 'notify' in summary.json\n")
    elif result.leftovers:
        err.write(f"rocmbuild: note: {what} left {result.leftovers} process(es) running; stopped them\n")
    err.flush()
