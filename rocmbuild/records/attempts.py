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
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

EntryKind = Literal["attempt", "preflight", "killed"]


@dataclass(frozen=True)
class RunFacts:
    """How an attempt that ran ended, beyond its exit code."""

    signal: int | None
    stopped_early: str | None
    progress: Mapping[str, Any] | None
    lines: int


@dataclass(frozen=True)
class AttemptRecord:
    """One entry of summary.json's ``attempts``."""

    number: int
    started: str | None  # ISO-8601
    duration_s: float | None
    ended: str
    exit_code: int | None
    log: str
    env: Mapping[str, str]
    diagnosis: Mapping[str, Any] | None  # the Diagnosis' summary_json(); None: succeeded (or killed)
    remedies: tuple[str, ...] = ()  # applied after this attempt, before the next
    step: str | None = None
    kind: EntryKind = "attempt"
    ran: RunFacts | None = None
    cache: Mapping[str, Any] | None = None
    memory: Mapping[str, Any] | None = None
    provenance: Mapping[str, Any] | None = None
    jobs: Mapping[str, Any] | None = None  # the global job limit and what its slots saw

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
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


def iso_seconds(moment: datetime) -> str:
    """A record's timestamp: UTC, to the second."""
    return moment.astimezone(UTC).isoformat(timespec="seconds")
