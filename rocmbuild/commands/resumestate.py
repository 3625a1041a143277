"""``rocmbuild resume RUN_DIR``: continue an interrupted or killed run where it stopped.

Owns saving what a run needs to be continued (``resume.json``: the recipe
file, the options, the working directory) and rebuilding the plan state from
the records: the ladder's history from the attempts and their
``failure.diagnosed`` events, the environment, MAX_JOBS and -O level from the
last ``plan.changed`` / ``attempt.started`` event (so the remedies applied so
far hold), and the attempt numbering (an attempt that was running when the
run was killed keeps its number and log and is recorded as ``interrupted``).
A run interrupted by a signal (outcome ``interrupted``) or killed (still ``running``, its rocmbuild
gone) resumes; a run that ended by itself, or one whose rocmbuild is still alive, is refused (exit 2).
What the run already spent (``time_spent``, ``counted``) is taken off ``--budget`` and ``--max-attempts``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin, get_type_hints

from rocmbuild.diagnosis.catalogue import category_or_unknown, known_remedies
from rocmbuild.errors import LockHeldError, UsageError
from rocmbuild.host.arch import Targets
from rocmbuild.loop.ladder import FailedAttempt, named_unknown
from rocmbuild.options import BuildOptions
from rocmbuild.planning.environment import EnvChange
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.process.progress import live_state
from rocmbuild.records.attempts import AttemptRecord, attempt_end
from rocmbuild.records.journal import RunSummary
from rocmbuild.records.recorder import write_private
from rocmbuild.records.recordfile import (
    CorruptRecord,
    JSONObject,
    ShapeError,
    as_list,
    as_number,
    as_object,
    as_str,
    read_json_object,
)
from rocmbuild.records.redact import REDACTED, redact

if TYPE_CHECKING:  # imported where used: a build saves resume.json on the way to its first attempt
    from rocmbuild.loop.ladder import FailedAttempt
    from rocmbuild.records.attempts import AttemptRecord

RESUME_FILE = "resume.json"
# "running" with no live rocmbuild: killed (SIGKILL, power loss); "interrupted": stopped by a signal.
RESUMABLE = ("running", "interrupted")


def save_resume_state(run_dir: Path, plan: BuildPlan, options: BuildOptions) -> None:
    # Records hold no secrets: an option carrying credentials (a --cache-remote with a password) is saved
    # redacted, and `resume` takes it from ROCMBUILD_<NAME> in its own environment instead (load_options).

    data = {"recipe": str(plan.recipe.path), "cwd": os.getcwd(),
            "options": redact({k: str(v) if isinstance(v, Path) else v for k, v in asdict(options).items()})}
    write_private(run_dir / RESUME_FILE, json.dumps(data, indent=2) + "\n")


def _option_types() -> dict[str, tuple[type, ...]]:
    """BuildOptions' field -> the JSON types resume.json may hold for it (a path is saved as text)."""
    allowed: dict[str, tuple[type, ...]] = {}
    for name, hint in get_type_hints(BuildOptions).items():
        members = get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,)
        kinds: set[type] = set()
        for member in members:
            origin = get_origin(member) or member
            kinds |= {str} if origin is Path else {int, float} if origin is float else {origin}
        allowed[name] = tuple(kinds)
    return allowed


def load_options(data: JSONObject, run_dir: Path, source: str) -> BuildOptions:
    """The options the run was started with (resume.json), checked for their types: a damaged or edited
    file is a usage error naming the option, never a crash inside the build."""
    saved = data.get("options") or {}
    if not isinstance(saved, Mapping):
        raise UsageError(f"{run_dir / RESUME_FILE}: options is a {type(saved).__name__}, not an object",
                         todo="start a new run with the same command")
    types = _option_types()
    # Checked below against BuildOptions' own field types (a dynamic check mypy cannot follow).
    values: dict[str, Any] = {k: v for k, v in saved.items() if k in types}
    for key, value in list(values.items()):
        if isinstance(value, str) and REDACTED in value:  # saved without its secret: take it from the caller
            values[key] = os.environ.get(f"ROCMBUILD_{key.upper()}") or None
            continue
        if (isinstance(value, bool) and bool not in types[key]) or not isinstance(value, types[key]):
            raise UsageError(f"{run_dir / RESUME_FILE}: option {key} is a {type(value).__name__}",
                             why="resume.json was damaged or edited; rocmbuild wrote it with the option's type",
                             todo="start a new run with the same command")
    for key in ("run_dir", "source", "wheel_dir"):  # the options that are paths (saved as text)
        if values.get(key) is not None:
            values[key] = Path(str(values[key]))
    options = BuildOptions(**values)
    return replace(options, run_dir=run_dir, source=Path(source), detach=False, dry_run=False)


def ladder_history(attempts: Sequence[AttemptRecord], events: Sequence[JSONObject]) -> list[FailedAttempt]:
    """The ladder's view of the finished attempts (pure): category, fingerprint, ladder, remedies applied."""

    diagnosed = {e.get("attempt"): e for e in events if e.get("event") == "failure.diagnosed"}
    history: list[FailedAttempt] = []
    for attempt in attempts:
        diagnosis = attempt.diagnosis
        if diagnosis is None or attempt.ended == "interrupted":
            continue
        event = diagnosed.get(attempt.number, {})
        history.append(FailedAttempt(
            number=attempt.number or len(history) + 1, ended=attempt.ended,
            category=category_or_unknown(diagnosis.get("category")),
            fingerprint=str(event.get("fingerprint") or f"{diagnosis.get('signature')}:{diagnosis.get('text')}"),
            retryable=bool(diagnosis.get("retryable", True)),
            ladder=known_remedies(as_list(event.get("remedies"))), remedies=attempt.remedies,
            named_unknown=named_unknown(diagnosis.get("category"), diagnosis.get("signature"))))
    return history


def last_plan_state(events: Sequence[JSONObject]) -> JSONObject | None:
    """The newest of ``attempt.started`` / ``plan.changed``: the environment the next attempt would run with."""
    return next((e for e in reversed(events) if e.get("event") in ("attempt.started", "plan.changed")), None)


def restored_plan(plan: BuildPlan, state: JSONObject | None) -> BuildPlan:
    """``plan`` with the recorded environment, jobs, prepare flag, -O level and arch list put back (pure).

    The arch list matters after ``narrow_archs``: the environment already says the narrowed list, and
    the artifact check must expect that list, not the one the command asked for.
    """
    if state is None:
        return plan
    env = {str(k): str(v) for k, v in as_object(state.get("env")).items()}
    current = plan.env_set
    changes = [EnvChange(name, "set", value, reason="restored by rocmbuild resume")
               for name, value in env.items() if current.get(name) != value]
    jobs, prepare, opt_level = state.get("jobs"), state.get("prepare"), state.get("opt_level")
    arch = [a for a in as_list(state.get("arch")) if isinstance(a, str)]
    restored = plan.with_changes(*changes)
    if isinstance(jobs, int) and not isinstance(jobs, bool):
        restored = replace(restored, jobs=jobs)
    if isinstance(prepare, bool):
        restored = replace(restored, run_prepare=prepare)
    if isinstance(opt_level, int) and not isinstance(opt_level, bool):
        restored = replace(restored, opt_level=opt_level)
    if arch and len(arch) == len(as_list(state.get("arch"))) and tuple(arch) != plan.archs:
        restored = replace(restored, targets=Targets.parse(";".join(arch)))
    return restored


def killed_attempt(attempts: Sequence[AttemptRecord], events: Sequence[JSONObject]) -> AttemptRecord | None:
    """The attempt that had started but was never recorded (the run was killed during it), as a record.

    An attempt's record is written once the ladder has decided, after its remedy's effects ran: a run
    killed in between (during a long uninstall or submodule sync) left the attempt diagnosed but not
    recorded.  That one is rebuilt from its ``attempt.finished`` / ``failure.diagnosed`` events (and
    the ``plan.changed`` after them, if the remedy finished), so the ladder's history keeps it.
    """

    done = {a.number for a in attempts}
    started = [e for e in events if e.get("event") == "attempt.started" and e.get("attempt") not in done]
    if not started:
        return None
    event = started[-1]
    found = event.get("attempt")
    number = found if isinstance(found, int) and found else len(attempts) + 1
    env = {str(k): str(v) for k, v in as_object(event.get("env")).items()}
    stamp = as_str(event.get("timestamp"))
    at = {id(e): i for i, e in enumerate(events)}
    finished = next((e for e in events if e.get("event") == "attempt.finished" and e.get("attempt") == number), None)
    diagnosed = next((e for e in events if e.get("event") == "failure.diagnosed" and e.get("attempt") == number),
                     None)
    if finished is not None and diagnosed is not None:
        remedies = known_remedies(e.get("remedy") for e in events[at[id(diagnosed)]:]
                                  if e.get("event") == "plan.changed")
        diagnosis = {k: diagnosed.get(k) for k in ("category", "signature", "line", "text", "fields", "retryable")}
        code = finished.get("exit_code")
        try:
            ended = attempt_end(as_str(finished.get("ended")) or "exited")
        except ShapeError:  # an edited event: the attempt ended, how is not known
            ended = "exited"
        return AttemptRecord(number=number, started=stamp, duration_s=as_number(finished.get("duration_s")),
                             ended=ended, exit_code=code if isinstance(code, int) and not isinstance(code, bool)
                             else None, log=f"attempt-{number}.log", env=env, diagnosis=diagnosis, remedies=remedies)
    return AttemptRecord(number=number, started=stamp, duration_s=None, ended="interrupted",
                         exit_code=None, log=f"attempt-{number}.log", env=env, diagnosis=None, kind="killed")


def check_resumable(run_dir: Path, summary: RunSummary, events: Sequence[JSONObject]) -> JSONObject:
    """Refuse (exit 2) what cannot be resumed; else the saved resume state."""

    outcome = summary.end.outcome
    if outcome not in RESUMABLE:
        raise UsageError(f"the run in {run_dir} has ended by itself ({outcome}, exit {summary.end.exit_code}): "
                         "there is nothing to resume",
                         why="resume continues a run stopped from outside: by SIGINT, SIGTERM or SIGHUP "
                             "(outcome interrupted), or killed (SIGKILL, power loss) before it ended",
                         todo="start a new run with the same command (see `rocmbuild report " f"{run_dir}`)")
    live = live_state(run_dir, summary.started, events)
    if live.alive:
        raise LockHeldError(f"the run in {run_dir} is still running (rocmbuild PID {live.pid})",
                            why="two rocmbuilds in one run dir would mix their records",
                            todo=f"wait for it (rocmbuild report {run_dir}), or stop PID {live.pid} first")
    try:
        data = read_json_object(run_dir / RESUME_FILE)
    except CorruptRecord as exc:
        raise UsageError(f"the run in {run_dir} cannot be resumed: {RESUME_FILE} is {exc.why}",
                         why="it was started by an older rocmbuild, stopped before its first attempt, or edited",
                         todo="start a new run with the same command") from None
    if not data.get("recipe"):
        raise UsageError(f"{run_dir / RESUME_FILE} is not a resume state", todo="start a new run")
    return data


def time_spent(events: Sequence[JSONObject]) -> float:
    """Seconds the run has already run (pure): each session, from its ``run.started`` / ``run.resumed``
    to its last event, summed.  The time between sessions (a job waiting in a queue) is not spent."""
    from datetime import datetime

    total = 0.0
    first: datetime | None = None
    last: datetime | None = None
    for event in events:
        try:
            moment = datetime.fromisoformat(str(event.get("timestamp")))
        except ValueError:
            continue
        if event.get("event") in ("run.started", "run.resumed"):
            if first is not None and last is not None:
                total += max(0.0, (last - first).total_seconds())
            first = moment
        last = moment
    if first is not None and last is not None:
        total += max(0.0, (last - first).total_seconds())
    return total


def counted(attempts: Sequence[AttemptRecord]) -> int:
    """Attempts spent of --max-attempts (pure): an attempt cut short by an interrupt is not one."""
    return sum(1 for a in attempts if not (a.ended == "interrupted" and not a.diagnosis))
