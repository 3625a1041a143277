"""One attempt's entry in summary.json, as one frozen value written once (``AttemptRecord``).

Owns the attempt fields of the contract (docs/reference-records.md):
``to_json`` gives exactly the keys summary.json has always had, for
the three kinds of entry: an attempt that ran (with how it ran: signal, early
stop, progress, lines), a preflight refusal (recorded like an attempt, step
``preflight``), and the attempt a killed run was in (``killed``, written by
``rocmbuild resume``).  The session builds the record once the ladder has
decided (the remedies applied after it are known), so nothing patches it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, get_args

from rocmbuild.diagnosis.catalogue import RemedyName, remedy_names
from rocmbuild.records.recordfile import (
    JSONValue,
    ShapeError,
    one_of,
    opt_int,
    opt_number,
    opt_object,
    opt_str,
    str_list,
    str_map,
)

EntryKind = Literal["attempt", "preflight", "killed"]
# How an attempt ended (the runner's ``AttemptOutcome.ended``) and the step it ended in: the strings
# summary.json has always held, as closed types.
AttemptEnd = Literal["exited", "stalled", "budget", "interrupted"]
StepName = Literal["checkout", "prepare", "build", "verify", "preflight"]
ATTEMPT_ENDS: tuple[AttemptEnd, ...] = get_args(AttemptEnd)
STEP_NAMES: tuple[StepName, ...] = get_args(StepName)


def attempt_end(value: str) -> AttemptEnd:
    """``value`` as the closed type (anything else is a damaged record, or a runner bug)."""
    return one_of(value, ATTEMPT_ENDS, "ended")


def _remedies(names: list[str], where: str) -> tuple[RemedyName, ...]:
    try:
        return remedy_names(names)
    except ValueError as exc:
        raise ShapeError(f"{where}remedies: {exc}") from None


def step_name(value: str | None) -> StepName | None:
    """A step's name as the closed type; None stays None."""
    return None if value is None else one_of(value, STEP_NAMES, "step")


@dataclass(frozen=True)
class RunFacts:
    """How an attempt that ran ended, beyond its exit code."""

    signal: int | None
    stopped_early: str | None
    progress: Mapping[str, object] | None
    lines: int


@dataclass(frozen=True)
class AttemptRecord:
    """One entry of summary.json's ``attempts``."""

    number: int
    started: str | None  # ISO-8601
    duration_s: float | None
    ended: AttemptEnd
    exit_code: int | None
    log: str
    env: Mapping[str, str]
    diagnosis: Mapping[str, object] | None  # the Diagnosis' summary_json(); None: succeeded (or killed)
    remedies: tuple[RemedyName, ...] = ()  # applied after this attempt, before the next
    step: StepName | None = None
    kind: EntryKind = "attempt"
    ran: RunFacts | None = None
    cache: Mapping[str, object] | None = None
    memory: Mapping[str, object] | None = None
    provenance: Mapping[str, object] | None = None
    jobs: Mapping[str, object] | None = None  # the global job limit and what its slots saw
    # What the diagnosis says to do, when it says more than its category's advice (a preflight
    # refusal: the blockers in the order they must be fixed).  The run's ``todo`` carries it; it is
    # not a key of the attempt's entry.
    todo: str | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "number": self.number, "started": self.started, "duration_s": self.duration_s, "ended": self.ended,
            "exit_code": self.exit_code, "log": self.log, "env": dict(self.env),
            "diagnosis": dict(self.diagnosis) if self.diagnosis is not None else None,
            "remedies": list(self.remedies),
        }
        if self.kind == "killed":
            data["killed"] = True
            return data
        data["step"] = self.step
        if self.ran is not None:
            data.update(signal=self.ran.signal, stopped_early=self.ran.stopped_early,
                        progress=dict(self.ran.progress) if self.ran.progress is not None else None,
                        lines=self.ran.lines)
        if self.cache is not None:
            data["cache"] = dict(self.cache)
        if self.memory is not None:
            data["memory"] = dict(self.memory)
        if self.jobs is not None:
            data["jobs"] = dict(self.jobs)
        if self.provenance is not None:
            data["provenance"] = dict(self.provenance)
        return data

    @classmethod
    def from_json(cls, value: JSONValue, index: int) -> AttemptRecord:
        """An entry ``to_json`` wrote (recordfile.summary_problem checked its basic fields), or ``ShapeError``."""
        data = opt_object(value, f"attempt {index}")
        if data is None:
            raise ShapeError(f"attempt {index} is null")
        where = f"attempt {index}'s "
        number = opt_int(data.get("number"), where + "number")
        killed = data.get("killed") is True
        step = step_name(opt_str(data.get("step"), where + "step"))
        ran = None
        if "lines" in data:
            ran = RunFacts(opt_int(data.get("signal"), where + "signal"),
                           opt_str(data.get("stopped_early"), where + "stopped_early"),
                           opt_object(data.get("progress"), where + "progress"),
                           opt_int(data.get("lines"), where + "lines") or 0)
        return cls(
            number=number if number is not None else index, started=opt_str(data.get("started"), where + "started"),
            duration_s=opt_number(data.get("duration_s"), where + "duration_s"),
            ended=attempt_end(opt_str(data.get("ended"), where + "ended") or "exited"),
            exit_code=opt_int(data.get("exit_code"), where + "exit_code"),
            log=opt_str(data.get("log"), where + "log") or f"attempt-{index}.log",
            env=str_map(data.get("env"), where + "env"),
            diagnosis=opt_object(data.get("diagnosis"), where + "diagnosis"),
            remedies=_remedies(str_list(data.get("remedies"), where + "remedies"), where),
            step=step, kind="killed" if killed else "preflight" if step == "preflight" else "attempt", ran=ran,
            cache=opt_object(data.get("cache"), where + "cache"),
            memory=opt_object(data.get("memory"), where + "memory"),
            provenance=opt_object(data.get("provenance"), where + "provenance"),
            jobs=opt_object(data.get("jobs"), where + "jobs"))


def iso_seconds(moment: datetime) -> str:
    """A record's timestamp: UTC, to the second."""
    return moment.astimezone(UTC).isoformat(timespec="seconds")
