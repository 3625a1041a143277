"""The short message a notification carries (pure): what a person reads on a phone before coffee.

Owns the wording from a finished run's summary and events: outcome, recipe, arch, duration, the
decisive line of the last failed attempt, the next step, and where the report page is.  Everything
in it comes from records that were redacted when they were written; it is bounded in length (a
decisive line can be a 100 KB template error).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_LINE = 300


@dataclass(frozen=True)
class Message:
    title: str
    body: str
    failed: bool


def human_duration(seconds: Any) -> str:
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


def decisive(summary: Mapping[str, Any]) -> str | None:
    """The last failed attempt's decisive line (None after a success or a stop from outside)."""
    if summary.get("outcome") in ("succeeded", "up_to_date", "running"):
        return None
    attempts = [a for a in summary.get("attempts") or [] if isinstance(a, Mapping)]
    last = attempts[-1] if attempts else None
    if last is None or last.get("ended") in ("interrupted", "budget"):
        return None
    diagnosis = last.get("diagnosis")
    return str(diagnosis.get("text")) if isinstance(diagnosis, Mapping) and diagnosis.get("text") else None


def build_message(summary: Mapping[str, Any], events: Sequence[Mapping[str, Any]], report: str) -> Message:
    outcome = str(summary.get("outcome") or "unknown")
    recipe = str(summary.get("recipe") or "?")
    arch = ";".join(str(a) for a in summary.get("arch") or []) or "?"
    attempts = [a for a in summary.get("attempts") or [] if isinstance(a, Mapping)]
    failed = outcome not in ("succeeded", "up_to_date")
    title = f"rocmbuild: {recipe} for {arch} {outcome} (exit {summary.get('exit_code')})"
    lines = [f"outcome: {outcome} (exit {summary.get('exit_code')}) after {len(attempts)} attempt(s), "
             f"{human_duration(summary.get('duration_s'))}",
             f"recipe: {recipe}, arch: {arch}"]
    cured = [a for a in attempts[:-1] if isinstance(a.get("diagnosis"), Mapping)]
    if not failed and cured:
        last_cure = cured[-1]
        diagnosis = last_cure["diagnosis"]
        lines.append(f"cured: {diagnosis.get('category')} ({diagnosis.get('signature')}) by "
                     f"{', '.join(str(r) for r in last_cure.get('remedies') or []) or '?'}")
    line = decisive(summary)
    if line:
        lines.append(f"decisive line: {_clip(line)}")
    todo = summary.get("todo")
    if todo:
        lines.append(f"next step: {_clip(str(todo), 600)}")
    lines.append(f"report: {report}")
    return Message(_clip(title, 200), "\n".join(lines), failed)
