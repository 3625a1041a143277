"""The run directory: summary.json, events.jsonl, attempt-N.log, repro.sh.

Written as the run goes (events line by line, summary after every attempt,
atomically) so that a killed rocmbuild still leaves a readable record.
rocmbuild's own events go through structlog as JSON lines named noun.verb;
raw build output never does (it goes to attempt-N.log, byte for byte).
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import platformdirs
import structlog

from rocmbuild.errors import UsageError


def runs_root() -> Path:
    return Path(platformdirs.user_state_dir("rocmbuild")) / "runs"


def new_run_dir(recipe: str, run_dir_option: Path | None, several: bool) -> Path:
    """``--run-dir`` (one subdirectory per recipe when several are built) or a fresh one under the state dir."""
    if run_dir_option is not None:
        path = run_dir_option / recipe if several else run_dir_option
    else:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        path = runs_root() / f"{stamp}-{recipe}-{os.getpid()}"
    if (path / "summary.json").exists() or (path / "events.jsonl").exists():
        raise UsageError(f"the run directory {path} already holds a run",
                         why="a second run there would mix its logs and events with the first one's",
                         todo="pass a new --run-dir (or remove the old one after reading it)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the run directory {path}", why=exc.strerror or str(exc),
                         todo="pass --run-dir DIR pointing at a writable directory") from None
    # `rocmbuild report latest` follows this link, also to a --run-dir elsewhere.
    latest = runs_root() / "latest"
    try:
        latest.parent.mkdir(parents=True, exist_ok=True)
        if latest.is_symlink() or latest.exists():
            latest.unlink()
        latest.symlink_to(path.resolve())
    except OSError:
        pass  # a read-only or racing state dir only costs the shortcut
    if runs_root().resolve() not in path.resolve().parents:  # `rocmbuild history` finds it through the index
        from rocmbuild.history import remember_run_dir

        remember_run_dir(path.resolve())
    return path.resolve()


def find_run_dir(which: str | None) -> Path:
    """A run directory from ``report``'s argument: a path, or ``latest`` (the default)."""
    if which and which != "latest":
        path = Path(which)
        if not (path / "summary.json").is_file():
            raise UsageError(f"{which} is not a rocmbuild run directory (no summary.json)",
                             todo="pass a directory printed at the end of a build, or 'latest'")
        return path.resolve()
    root = runs_root()
    latest = root / "latest"
    if (latest / "summary.json").is_file():
        return latest.resolve()
    runs = sorted((p for p in root.glob("*/summary.json")), key=lambda p: p.stat().st_mtime) if root.is_dir() else []
    if not runs:
        raise UsageError(f"no runs recorded under {root}", todo="run a build first, or pass RUN_DIR")
    return runs[-1].parent.resolve()


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass
class RunRecorder:
    """Owns one run directory while the run goes."""

    run_dir: Path
    recipe: str
    source: Path
    archs: tuple[str, ...]
    attempts: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    echo: IO[str] | None = None  # --verbose: every event also goes here, as it is recorded
    _events_file: IO[str] | None = None
    _log: Any = None

    def __post_init__(self) -> None:
        self._events_file = (self.run_dir / "events.jsonl").open("a", encoding="utf-8")
        self._log = structlog.wrap_logger(
            structlog.PrintLogger(self._events_file),
            processors=[
                structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
                structlog.processors.JSONRenderer(default=str),
            ],
        )
        self.write_summary("running", None)

    def event(self, event_name: str, /, **fields: Any) -> None:
        self._log.info(event_name, **fields)
        if self.echo is not None:
            shown = " ".join(f"{k}={v}" for k, v in fields.items() if k not in ("env", "context", "options"))
            self.echo.write(f"rocmbuild[{event_name}] {shown}\n")
            self.echo.flush()

    def attempt_log(self, number: int) -> Path:
        return self.run_dir / f"attempt-{number}.log"

    def add_attempt(self, record: dict[str, Any]) -> None:
        self.attempts.append(record)
        self.write_summary("running", None)

    def set_remedies(self, remedies: list[str]) -> None:
        if self.attempts:
            self.attempts[-1]["remedies"] = remedies
            self.write_summary("running", None)

    def summary(self, outcome: str, exit_code: int | None) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "source": str(self.source),
            "arch": list(self.archs),
            "run_dir": str(self.run_dir),
            "outcome": outcome,
            "exit_code": exit_code,
            "attempts": self.attempts,
            **self.extra,
        }

    def write_summary(self, outcome: str, exit_code: int | None) -> dict[str, Any]:
        data = self.summary(outcome, exit_code)
        tmp = self.run_dir / ".summary.json.tmp"
        tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        tmp.replace(self.run_dir / "summary.json")
        return data

    def write_repro(self, *, cwd: Path, env_set: Mapping[str, str], command: str, step: str, attempt: int) -> Path:
        lines = [
            "#!/usr/bin/env bash",
            f"# Re-enters attempt {attempt} of rocmbuild run {self.run_dir.name} (recipe {self.recipe}):",
            f"# its environment (the variables rocmbuild set, on top of yours), its directory and its {step} step.",
            f"# Generated {time.strftime('%Y-%m-%d %H:%M:%S')}.  Run: bash repro.sh   (or: bash repro.sh --shell)",
            "set -e",
            f"cd {shlex.quote(str(cwd))}",
            *(f"export {name}={shlex.quote(value)}" for name, value in sorted(env_set.items())),
            'if [ "${1:-}" = "--shell" ]; then exec "${SHELL:-bash}" -i; fi',
            f"exec bash -o pipefail -c {shlex.quote(command)}",
            "",
        ]
        path = self.run_dir / "repro.sh"
        path.write_text("\n".join(lines), encoding="utf-8")
        path.chmod(0o755)
        return path

    def close(self) -> None:
        if self._events_file is not None:
            self._events_file.close()
            self._events_file = None


def load_run(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """summary.json and the events of a past run."""
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read {run_dir / 'summary.json'}", why=str(exc),
                             todo="the run may have been killed while writing; see events.jsonl") from None
    attempts = summary.get("attempts") if isinstance(summary, dict) else None
    if not isinstance(attempts, list) or not all(isinstance(a, dict) for a in attempts):
        raise UsageError(f"{run_dir / 'summary.json'} is not a rocmbuild summary",
                         why="it has no list of attempts", todo="pass a run directory rocmbuild wrote")
    events: list[dict[str, Any]] = []
    events_path = run_dir / "events.jsonl"
    if events_path.is_file():
        for line in events_path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a kill
            if isinstance(event, dict):
                events.append(event)
    return summary, events
