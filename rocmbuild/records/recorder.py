"""The run directory: summary.json, events.jsonl, attempt-N.log, repro.sh.

Written as the run goes (events line by line, summary after every attempt,
atomically) so that a killed rocmbuild still leaves a readable record.
rocmbuild's own events go through structlog as JSON lines named noun.verb;
raw build output never does (it goes to attempt-N.log, byte for byte).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import InitVar, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, TextIO, TypeVar

from rocmbuild import paths
from rocmbuild.errors import Outcome, UsageError
from rocmbuild.records.eventlog import json_logger
from rocmbuild.records.events import EventName
from rocmbuild.records.journal import RunEnd, RunSummary, read_journal, run_state
from rocmbuild.records.recordfile import CorruptRecord, JSONObject, read_events, read_summary
from rocmbuild.records.redact import redact, redact_value, secret_name, secret_values
from rocmbuild.records.runindex import remember_run_dir

if TYPE_CHECKING:
    from rocmbuild.records.attempts import AttemptRecord

PRIVATE_DIR = 0o700  # records may describe a private tree: readable by their owner only
PRIVATE_FILE = 0o600
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def new_run_dir(recipe: str, run_dir_option: Path | None, several: bool) -> Path:
    """``--run-dir`` (one subdirectory per recipe when several are built) or a fresh one under the state dir."""
    if run_dir_option is not None:
        path = run_dir_option / recipe if several else run_dir_option
    else:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        path = paths.runs_root() / f"{stamp}-{recipe}-{os.getpid()}"
    if (path / "summary.json").exists() or (path / "events.jsonl").exists():
        raise UsageError(f"the run directory {path} already holds a run",
                         why="a second run there would mix its logs and events with the first one's",
                         todo="pass a new --run-dir (or remove the old one after reading it)")
    try:
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(PRIVATE_DIR)
    except OSError as exc:
        raise UsageError(f"cannot create the run directory {path}", why=exc.strerror or str(exc),
                         todo="pass --run-dir DIR pointing at a writable directory") from None
    # `rocmbuild report latest` follows this link, also to a --run-dir elsewhere.
    latest = paths.runs_root() / "latest"
    try:
        latest.parent.mkdir(parents=True, exist_ok=True)
        if latest.is_symlink() or latest.exists():
            latest.unlink()
        latest.symlink_to(path.resolve())
    except OSError:
        pass  # a read-only or racing state dir only costs the shortcut
    if paths.runs_root().resolve() not in path.resolve().parents:  # `rocmbuild history` finds it through the index
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
    root = paths.runs_root()
    latest = root / "latest"
    if (latest / "summary.json").is_file():
        return latest.resolve()
    runs = sorted((p for p in root.glob("*/summary.json")), key=lambda p: p.stat().st_mtime) if root.is_dir() else []
    if not runs:
        raise UsageError(f"no runs recorded under {root}", todo="run a build first, or pass RUN_DIR")
    return runs[-1].parent.resolve()


@dataclass
class RunRecorder:
    """Owns one run directory while the run goes; ``journal`` is what its summary.json says."""

    run_dir: Path
    recipe: str
    source: Path
    archs: tuple[str, ...]
    # `rocmbuild resume`: the run's journal as recorded, continued (else a new one begins).
    resumed: InitVar[RunSummary | None] = None
    echo: IO[str] | None = None  # --verbose: every event also goes here, as it is recorded
    write_error: str | None = None  # the first record that could not be written (a full filesystem)
    _events_file: TextIO | None = None
    _log: Callable[..., object] | None = None
    # The values of the secret-named variables the build inherits: blanked wherever the build's output
    # carries them into a record (a diagnosis's line and context, a note).
    secrets: tuple[str, ...] = field(default_factory=lambda: secret_values(os.environ))
    journal: RunSummary = field(init=False)

    def __post_init__(self, resumed: RunSummary | None) -> None:
        if resumed is None:
            self.journal = RunSummary.begin(self.recipe, self.source, self.archs, self.run_dir)
        else:  # running again, with the plan's recipe, source and arch list (narrow_archs may have narrowed it)
            self.journal = replace(resumed, recipe=self.recipe, source=str(self.source), arch=tuple(self.archs),
                                   run_dir=str(self.run_dir), end=RunEnd())  # the last session's end is over
        fd = os.open(self.run_dir / "events.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
                     PRIVATE_FILE)
        self._events_file = os.fdopen(fd, "a", encoding="utf-8")
        self._log = json_logger(self._events_file)
        # The first summary is written strictly: a run dir that cannot take it stops the run before it starts.
        write_private(self.run_dir / "summary.json", json.dumps(redact(self.journal.to_json(), self.secrets)) + "\n")

    @property
    def attempts(self) -> tuple[AttemptRecord, ...]:
        return self.journal.attempts

    def _write_event(self, event_name: str, fields: dict[str, object]) -> None:
        try:
            if self._log is not None:
                self._log(event_name, **fields)
        except (OSError, ValueError) as exc:  # a full or broken filesystem: the run goes on, the summary says so
            self.write_error = self.write_error or f"events.jsonl: {getattr(exc, 'strerror', None) or exc}"

    def event(self, event_name: EventName, /, **fields: object) -> None:
        fields = redact(fields, self.secrets)
        self._write_event(event_name, fields)
        if self.echo is not None:
            shown = " ".join(f"{k}={v}" for k, v in fields.items() if k not in ("env", "context", "options"))
            self.echo.write(f"rocmbuild[{event_name}] {shown}\n")
            self.echo.flush()

    def attempt_log(self, number: int) -> Path:
        return self.run_dir / f"attempt-{number}.log"

    def add_attempt(self, record: AttemptRecord) -> None:
        """The attempt's entry, written once (summary.json is rewritten after every attempt)."""
        self.journal = self.journal.with_attempt(record)
        self.write_summary()

    def end(self, outcome: Outcome, exit_code: int | None, reason: str, todo: str) -> None:
        """The run's end in the journal (written by the next ``write_summary``)."""
        self.journal = self.journal.ended(run_state(outcome), exit_code, reason, todo)

    def write_summary(self) -> dict[str, object]:
        """summary.json from the journal, atomically; the redacted object written."""
        if self.write_error:
            self.journal = replace(self.journal, records_incomplete=self.write_error)
        data = redact(self.journal.to_json(), self.secrets)
        replace_summary(self.run_dir, json.dumps(data, indent=2, default=str) + "\n")
        return data

    def write_repro(self, *, cwd: Path, env_set: Mapping[str, str], command: str, step: str, attempt: int) -> Path:
        path = self.run_dir / "repro.sh"
        entered = ReproStep(cwd=cwd, env_set=env_set, command=command, step=step, attempt=attempt)
        write_private(path, repro_script(run=self.run_dir.name, recipe=self.recipe, entered=entered), mode=PRIVATE_DIR)
        return path

    def close(self) -> None:
        if self._events_file is not None:
            with contextlib.suppress(OSError):
                self._events_file.close()
            self._events_file = None


def _comment(text: str) -> str:
    """A value for a comment line: one printable line, quoted (a newline cannot start a command)."""
    return shlex.quote("".join(c if c.isprintable() else "?" for c in text))


@dataclass(frozen=True, kw_only=True)
class ReproStep:
    """The step repro.sh re-enters: its directory, the variables rocmbuild set, its command, which attempt."""

    cwd: Path
    env_set: Mapping[str, str]
    command: str
    step: str
    attempt: int


def repro_script(*, run: str, recipe: str, entered: ReproStep) -> str:
    """repro.sh: every value quoted; a secret is not written but taken from the environment at run time."""
    cwd, env_set, command, step, attempt = entered.cwd, entered.env_set, entered.command, entered.step, entered.attempt
    exports: list[str] = []
    for name, value in sorted(env_set.items()):
        if not _IDENTIFIER.fullmatch(name):  # cannot be exported by a shell; never written unquoted
            exports.append(f"# not exported (not a variable name): {_comment(name)}")
        elif secret_name(name) or redact_value(name, value) != value:
            exports.append(f': "${{{name}:?{name} holds a secret, which is not recorded: export it, then rerun}}"')
            exports.append(f"export {name}")
        else:
            exports.append(f"export {name}={shlex.quote(value)}")
    lines = [
        "#!/usr/bin/env bash",
        f"# Re-enters attempt {attempt} of rocmbuild run {_comment(run)} (recipe {_comment(recipe)}):",
        f"# its environment (the variables rocmbuild set, on top of yours), its directory and its {_comment(step)}"
        " step.",
        f"# Generated {time.strftime('%Y-%m-%d %H:%M:%S')}.  Run: bash repro.sh   (or: bash repro.sh --shell)",
        "set -e",
        f"cd -- {shlex.quote(str(cwd))}",
        *exports,
        'if [ "${1:-}" = "--shell" ]; then exec "${SHELL:-bash}" -i; fi',
        f"exec bash -o pipefail -c {shlex.quote(command)}",
        "",
    ]
    return "\n".join(lines)


def replace_summary(run_dir: Path, text: str) -> None:
    """Replace a run's summary.json with ``text`` atomically: the one writer after the run's first summary.

    A full disk: the text is written in place instead (truncating the old summary frees its blocks first),
    and when even that fails the old summary stays.
    """
    tmp = run_dir / ".summary.json.tmp"
    try:
        write_private(tmp, text)
        tmp.replace(run_dir / "summary.json")
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            write_private(run_dir / "summary.json", text)


def write_private(path: Path, text: str, mode: int = PRIVATE_FILE) -> None:
    """Write a record readable by its owner only (whatever the umask)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(fd, mode)
        f.write(text)


_Read = TypeVar("_Read")


def _refused(read: Callable[[Path], _Read], run_dir: Path) -> _Read:
    try:
        return read(run_dir)
    except CorruptRecord as exc:
        raise UsageError(f"cannot use {exc.path}", why=exc.why,
                         todo="the run may have been killed while writing, or the file was edited; "
                              "pass another run dir (see `rocmbuild history`)") from None


def load_run(run_dir: Path) -> tuple[JSONObject, list[JSONObject]]:
    """summary.json and the events of a past run; a damaged summary is a usage error naming it and why."""
    return _refused(read_summary, run_dir), read_events(run_dir / "events.jsonl")


def load_journal(run_dir: Path) -> tuple[RunSummary, list[JSONObject]]:
    """A past run's journal (what ``resume`` continues) and its events; damaged: a usage error, as above."""
    return _refused(read_journal, run_dir), read_events(run_dir / "events.jsonl")
