"""The short message a notification carries (pure): what a person reads on a phone before coffee.

Owns the wording from a finished run's summary and events: outcome, recipe, arch, duration, the
decisive line of the last failed attempt, the next step, and where the report page is.  Everything
in it comes from records that were redacted when they were written; it is bounded in length (a
decisive line can be a 100 KB template error).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rocmbuild.records.recordfile import as_object

MAX_LINE = 300


def _items(value: object) -> list[object]:
    return list(value) if isinstance(value, list | tuple) else []


@dataclass(frozen=True)
class Message:
    title: str
    body: str
    failed: bool


def human_duration(seconds: object) -> str:
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds < 0:
        return "?"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def _clip(text: str, limit: int = MAX_LINE) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def decisive(summary: Mapping[str, object]) -> str | None:
    """The last failed attempt's decisive line (None after a success or a stop from outside)."""
    if summary.get("outcome") in ("succeeded", "up_to_date", "running"):
        return None
    attempts = [a for a in _items(summary.get("attempts")) if isinstance(a, Mapping)]
    last = attempts[-1] if attempts else None
    if last is None or last.get("ended") in ("interrupted", "budget"):
        return None
    diagnosis = last.get("diagnosis")
    return str(diagnosis.get("text")) if isinstance(diagnosis, Mapping) and diagnosis.get("text") else None


def cure(summary: Mapping[str, object]) -> tuple[Mapping[str, object], list[str]] | None:
    """After a failed-then-cured run: the last cured failure's attempt and what its remedy set (pure)."""
    if summary.get("outcome") not in ("succeeded", "up_to_date"):
        return None
    attempts = [a for a in _items(summary.get("attempts")) if isinstance(a, Mapping)]
    for index in range(len(attempts) - 2, -1, -1):
        attempt = attempts[index]
        if isinstance(attempt.get("diagnosis"), Mapping) and attempt.get("remedies"):
            raw_before, raw_after = attempt.get("env"), attempts[index + 1].get("env")
            before: Mapping[str, object] = raw_before if isinstance(raw_before, Mapping) else {}
            after: Mapping[str, object] = raw_after if isinstance(raw_after, Mapping) else {}
            changes = [f"{k}={after[k]}" for k in sorted(after) if before.get(k) != after[k]]
            return attempt, changes
    return None


def cured_todo(summary: Mapping[str, object]) -> str | None:
    """The next step after a cured failure: make the cure part of the command, so no attempt fails next time."""
    found = cure(summary)
    if found is None:
        return None
    attempt, changes = found
    remedies = ", ".join(str(r) for r in _items(attempt.get("remedies")))
    if changes:
        return (f"nothing is broken; attempt {attempt.get('number')} failed and {remedies} cured it. To start "
                f"right next time, set {'; '.join(changes[:4])} (the remedy's change) in the build's environment")
    return f"nothing is broken; attempt {attempt.get('number')} failed and {remedies} cured it"


def build_message(summary: Mapping[str, object], events: Sequence[Mapping[str, object]], report: str) -> Message:
    outcome = str(summary.get("outcome") or "unknown")
    recipe = str(summary.get("recipe") or "?")
    arch = ";".join(str(a) for a in _items(summary.get("arch"))) or "?"
    attempts = [a for a in _items(summary.get("attempts")) if isinstance(a, Mapping)]
    failed = outcome not in ("succeeded", "up_to_date")
    title = f"rocmbuild: {recipe} for {arch} {outcome} (exit {summary.get('exit_code')})"
    lines = [f"outcome: {outcome} (exit {summary.get('exit_code')}) after {len(attempts)} attempt(s), "
             f"{human_duration(summary.get('duration_s'))}",
             f"recipe: {recipe}, arch: {arch}"]
    found = cure(summary)
    if found is not None:
        attempt, _ = found
        diagnosis = as_object(attempt.get("diagnosis"))
        remedies = ", ".join(str(r) for r in _items(attempt.get("remedies")))
        lines.append(f"decisive line (attempt {attempt.get('number')}, cured by {remedies}): "
                     f"{_clip(str(diagnosis.get('text')))}")
    line = decisive(summary)
    if line:
        lines.append(f"decisive line: {_clip(line)}")
    todo = cured_todo(summary) or summary.get("todo")
    if todo:
        lines.append(f"next step: {_clip(str(todo), 600)}")
    lines.append(f"report: {report}")
    return Message(_clip(title, 200), "\n".join(lines), failed)
