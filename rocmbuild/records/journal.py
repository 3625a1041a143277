"""The run journal: what summary.json holds, as one frozen value (``RunSummary``) and its parts.

Owns summary.json's run-level fields (docs/reference-records.md) as named, typed fields: the run's
start (recipe, source, arch, run dir, when, which rocmbuild, ROCm, the scheduler job, containment),
its attempts (a tuple of ``AttemptRecord``), what came before and after them (preflight, the
up-to-date comparison, --force, the code objects, warnings, the fingerprint, wheels) and its end
(``RunEnd``: outcome, exit code, stop reason, todo).  A part changes by ``dataclasses.replace``;
nothing patches a dict.  ``to_json`` is the one place the summary becomes JSON (the keys and values
summary.json has always had), and ``from_json`` reads it back for ``resume`` and ``notify``
through recordfile.py's bounded reading: a damaged summary is a ``CorruptRecord``, never a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol, get_args

from rocmbuild import __version__
from rocmbuild.records.attempts import AttemptRecord
from rocmbuild.records.recordfile import (
    CorruptRecord,
    JSONObject,
    JSONValue,
    ShapeError,
    one_of,
    opt_bool,
    opt_int,
    opt_number,
    opt_object,
    opt_str,
    read_summary,
    str_list,
)

RunState = Literal["running", "succeeded", "up_to_date", "failed", "unrecognised", "not_retryable",
                   "budget_exhausted", "interrupted"]
CheckStatus = Literal["ok", "warn", "fail"]
CHECK_STATUSES: tuple[CheckStatus, ...] = get_args(CheckStatus)
RUN_STATES: tuple[RunState, ...] = get_args(RunState)


def now_iso() -> str:
    """A run-level timestamp: UTC, to the millisecond."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class CheckLike(Protocol):
    """What a preflight check offers its entry (checks/preflight.py's ``Check``)."""

    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def detail(self) -> str: ...
    @property
    def todo(self) -> str | None: ...


@dataclass(frozen=True)
class CheckEntry:
    """One entry of ``preflight``: every check, not only the first failure."""

    check: str
    ok: bool
    detail: str
    status: CheckStatus
    todo: str | None = None  # only for a check that is not ok

    @classmethod
    def of(cls, check: CheckLike) -> CheckEntry:
        status = check_status(check.status)
        return cls(check.name, status != "fail", check.detail, status,
                   check.todo if check.todo and status != "ok" else None)

    def to_json(self) -> JSONObject:
        data: JSONObject = {"check": self.check, "ok": self.ok, "detail": self.detail, "status": self.status}
        if self.todo is not None:
            data["todo"] = self.todo
        return data

    @classmethod
    def from_json(cls, data: JSONValue) -> CheckEntry:
        entry = opt_object(data, "a preflight entry")
        if entry is None:
            raise ShapeError("a preflight entry is null")
        return cls(str(opt_str(entry.get("check"), "preflight check") or ""),
                   bool(opt_bool(entry.get("ok"), "preflight ok")), opt_str(entry.get("detail"), "preflight detail")
                   or "", check_status(opt_str(entry.get("status"), "preflight status")
                                       or ("ok" if entry.get("ok") else "fail")),
                   opt_str(entry.get("todo"), "preflight todo"))


def check_status(value: str) -> CheckStatus:
    """A check's status as the closed type (an unknown one is a damaged record)."""
    return one_of(value, CHECK_STATUSES, "a check status")


def run_state(value: str) -> RunState:
    """An outcome as the closed type (an Outcome is a StrEnum, equal to its string)."""
    return one_of(value, RUN_STATES, "outcome")


@dataclass(frozen=True)
class Rocm:
    """``rocm``: the ROCm the run built against."""

    root: str | None
    version: str | None


@dataclass(frozen=True)
class Containment:
    """``containment``: how the steps were contained."""

    kind: str  # "cgroup" | "process-tree"
    detail: str

    def to_json(self) -> JSONObject:
        return {"kind": self.kind, "cgroup": self.kind == "cgroup", "detail": self.detail}


@dataclass(frozen=True)
class Forced:
    """``force``: what --force removed before the first attempt, and what it said."""

    removed: tuple[str, ...]
    refused: tuple[str, ...]
    patterns: tuple[str, ...]
    said: str

    def to_json(self) -> JSONObject:
        return {"removed": list(self.removed), "refused": list(self.refused), "patterns": list(self.patterns),
                "said": self.said}


@dataclass(frozen=True)
class Wheels:
    """``wheels``: the wheel step's result (wheels.py's ``to_json``) and, when it failed, what to do."""

    result: Mapping[str, object]
    todo: str | None = None

    def to_json(self) -> dict[str, object]:
        return {**self.result, **({"todo": self.todo} if self.todo is not None else {})}



def _iso_time(value: str | None, what: str) -> str | None:
    """A recorded time rocmbuild computes with (a run's duration from ``started``): ISO 8601 or a damaged record."""
    if value is not None:
        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise ShapeError(f"{what} is not an ISO time: {value!r}") from None
    return value

@dataclass(frozen=True)
class RunEnd:
    """How the run ended (``outcome`` ``running`` until it does)."""

    outcome: RunState = "running"
    exit_code: int | None = None
    todo: str | None = None
    stop_reason: str | None = None
    finished: str | None = None
    duration_s: float | None = None


@dataclass(frozen=True)
class RunSummary:
    """summary.json as one value."""

    recipe: str
    source: str
    arch: tuple[str, ...]
    run_dir: str
    started: str | None = None
    rocmbuild_version: str | None = __version__
    attempts: tuple[AttemptRecord, ...] = ()
    end: RunEnd = RunEnd()
    preflight: tuple[CheckEntry, ...] = ()
    requires_from: tuple[Mapping[str, object], ...] | None = None  # what --requires-from installed for it
    rocm: Rocm | None = None
    job: Mapping[str, str] | None = None  # the batch scheduler's job (schedjob.py)
    containment: Containment | None = None
    up_to_date: Mapping[str, object] | None = None  # what the fingerprint comparison compared
    force: Forced | None = None
    code_objects: Mapping[str, object] | None = None  # the last verification's (session.py)
    warnings: tuple[str, ...] | None = None  # None: no attempt got as far as looking
    fingerprint_saved: bool | None = None
    wheels: Wheels | None = None
    records_incomplete: str | None = None  # the first record that could not be written
    notify: Mapping[str, object] | None = None  # written by notify.py after the run

    @classmethod
    def begin(cls, recipe: str, source: Path, archs: tuple[str, ...], run_dir: Path) -> RunSummary:
        return cls(recipe=recipe, source=str(source), arch=tuple(archs), run_dir=str(run_dir), started=now_iso())

    def with_attempt(self, record: AttemptRecord) -> RunSummary:
        return replace(self, attempts=(*self.attempts, record))

    def with_warnings(self, messages: tuple[str, ...]) -> RunSummary:
        return replace(self, warnings=messages)

    def ended(self, outcome: RunState, exit_code: int | None, reason: str, todo: str) -> RunSummary:
        """The run's end: outcome, stop reason, todo, and how long it took from ``started``."""
        finished = datetime.now(UTC)
        duration = (finished - datetime.fromisoformat(self.started)).total_seconds() if self.started else None
        return replace(self, end=RunEnd(outcome, exit_code, todo, reason, finished.isoformat(timespec="milliseconds"),
                                        round(duration, 3) if duration is not None else None))

    def to_json(self) -> dict[str, object]:
        """summary.json's object (docs/reference-records.md): the keys it has always had, in their order."""
        end = self.end
        data: dict[str, object] = {
            "recipe": self.recipe, "source": self.source, "arch": list(self.arch), "run_dir": self.run_dir,
            "outcome": end.outcome, "exit_code": end.exit_code, "attempts": [a.to_json() for a in self.attempts],
            "todo": end.todo, "stop_reason": end.stop_reason, "started": self.started, "finished": end.finished,
            "duration_s": end.duration_s, "rocmbuild_version": self.rocmbuild_version,
            "preflight": [c.to_json() for c in self.preflight],
        }
        if self.requires_from is not None:
            data["requires_from"] = [dict(p) for p in self.requires_from]
        if self.rocm is not None:
            data["rocm"] = {"root": self.rocm.root, "version": self.rocm.version}
        if self.job:
            data["job"] = dict(self.job)
        if self.containment is not None:
            data["containment"] = self.containment.to_json()
        if self.up_to_date is not None:
            data["up_to_date"] = dict(self.up_to_date)
        if self.force is not None:
            data["force"] = self.force.to_json()
        if self.code_objects is not None:
            data["code_objects"] = dict(self.code_objects)
        if self.warnings is not None:
            data["warnings"] = list(self.warnings)
        if self.fingerprint_saved is not None:
            data["fingerprint_saved"] = self.fingerprint_saved
        if self.wheels is not None:
            data["wheels"] = self.wheels.to_json()
        if self.records_incomplete is not None:
            data["records_incomplete"] = self.records_incomplete
        if self.notify is not None:
            data["notify"] = dict(self.notify)
        return data

    @classmethod
    def from_json(cls, data: JSONObject) -> RunSummary:
        """The summary a reader checked (recordfile.read_summary) as the journal; ``ShapeError`` when a
        field rocmbuild writes has another type."""
        attempts = data.get("attempts")
        rocm = opt_object(data.get("rocm"), "rocm")
        containment = opt_object(data.get("containment"), "containment")
        force = opt_object(data.get("force"), "force")
        wheels = opt_object(data.get("wheels"), "wheels")
        job = opt_object(data.get("job"), "job")
        requires = data.get("requires_from")
        if requires is not None and not isinstance(requires, list):
            raise ShapeError("requires_from is not a list")
        preflight = data.get("preflight") or []
        if not isinstance(preflight, list):
            raise ShapeError("preflight is not a list")
        warnings = data.get("warnings")
        return cls(
            recipe=opt_str(data.get("recipe"), "recipe") or "", source=opt_str(data.get("source"), "source") or "",
            arch=tuple(str_list(data.get("arch"), "arch")), run_dir=opt_str(data.get("run_dir"), "run_dir") or "",
            started=_iso_time(opt_str(data.get("started"), "started"), "started"),
            rocmbuild_version=opt_str(data.get("rocmbuild_version"), "rocmbuild_version"),
            attempts=tuple(AttemptRecord.from_json(a, index)
                           for index, a in enumerate(attempts if isinstance(attempts, list) else [], 1)),
            end=RunEnd(run_state(opt_str(data.get("outcome"), "outcome") or "running"),
                       opt_int(data.get("exit_code"), "exit_code"), opt_str(data.get("todo"), "todo"),
                       opt_str(data.get("stop_reason"), "stop_reason"), opt_str(data.get("finished"), "finished"),
                       opt_number(data.get("duration_s"), "duration_s")),
            preflight=tuple(CheckEntry.from_json(c) for c in preflight),
            requires_from=(tuple(_object(p, "requires_from") for p in requires) if requires is not None else None),
            rocm=(Rocm(opt_str(rocm.get("root"), "rocm root"), opt_str(rocm.get("version"), "rocm version"))
                  if rocm is not None else None),
            job={k: str(v) for k, v in job.items()} if job is not None else None,
            containment=(Containment(opt_str(containment.get("kind"), "containment kind") or "",
                                     opt_str(containment.get("detail"), "containment detail") or "")
                         if containment is not None else None),
            up_to_date=opt_object(data.get("up_to_date"), "up_to_date"),
            force=(Forced(tuple(str_list(force.get("removed"), "force removed")),
                          tuple(str_list(force.get("refused"), "force refused")),
                          tuple(str_list(force.get("patterns"), "force patterns")),
                          opt_str(force.get("said"), "force said") or "") if force is not None else None),
            code_objects=opt_object(data.get("code_objects"), "code_objects"),
            warnings=tuple(str_list(warnings, "warnings")) if warnings is not None else None,
            fingerprint_saved=opt_bool(data.get("fingerprint_saved"), "fingerprint_saved"),
            wheels=(Wheels({k: v for k, v in wheels.items() if k != "todo"}, opt_str(wheels.get("todo"), "wheels todo"))
                    if wheels is not None else None),
            records_incomplete=opt_str(data.get("records_incomplete"), "records_incomplete"),
            notify=opt_object(data.get("notify"), "notify"),
        )


def _object(value: JSONValue, where: str) -> JSONObject:
    found = opt_object(value, where)
    if found is None:
        raise ShapeError(f"{where} holds a null")
    return found


def read_journal(run_dir: Path) -> RunSummary:
    """A run's summary.json as the journal, or ``CorruptRecord`` naming the file and why."""
    data = read_summary(run_dir)
    try:
        return RunSummary.from_json(data)
    except ShapeError as exc:
        raise CorruptRecord(run_dir / "summary.json", f"not a rocmbuild summary: {exc}") from None
