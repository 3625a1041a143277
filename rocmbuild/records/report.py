"""Rendering a run for a person: the attempts table, the outcome, what to do next.

Used at the end of a build (on stderr) and by ``rocmbuild report``.  Reads
only the summary dict (summary.json) and the events, so a past run renders
the same as a live one.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from rich.console import Console
from rich.table import Table

from rocmbuild.diagnosis.advice import next_steps
from rocmbuild.records.recordfile import as_int, as_list, as_number, as_object, as_objects, as_strs


def _diagnosis_cell(diagnosis: Mapping[str, object] | None) -> str:
    if not diagnosis:
        return "-"
    sig = diagnosis.get("signature")
    return f"{diagnosis.get('category')}" + (f" ({sig})" if sig else "")


def render_summary(summary: Mapping[str, object], events: Sequence[Mapping[str, object]] = (), width: int = 120) -> str:
    """The end-of-run text: attempts table, outcome, and on failure the decisive line and advice."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=False, no_color=True, highlight=False)
    table = Table(title=f"rocmbuild: {summary.get('recipe')} for {';'.join(as_strs(summary.get('arch')))}",
                  title_justify="left", show_lines=False)
    for column in ("#", "duration", "ended", "exit", "diagnosis", "remedy applied next", "cache hits"):
        table.add_column(column, overflow="fold")
    attempts = as_objects(summary.get("attempts"))
    for attempt in attempts:
        cache = as_object(attempt.get("cache"))
        hits, misses = as_int(cache.get("hits")) or 0, as_int(cache.get("misses")) or 0
        cache_cell = f"{hits}/{hits + misses}" if cache else "-"
        exit_code = attempt.get("exit_code")
        table.add_row(
            str(attempt.get("number")),
            f"{as_number(attempt.get('duration_s')) or 0:.1f}s",
            str(attempt.get("ended")),
            "-" if exit_code is None else str(exit_code),
            _diagnosis_cell(as_object(attempt.get("diagnosis"))),
            ", ".join(as_strs(attempt.get("remedies"))) or "-",
            cache_cell,
        )
    if summary.get("attempts"):  # an up_to_date run has none: no empty table
        console.print(table)
    else:
        console.print(table.title)
    outcome = summary.get("outcome")
    console.print(f"outcome: {outcome} (exit {summary.get('exit_code')})")
    if outcome == "running":
        console.print("the run is still going, or rocmbuild was killed before it could finish its records")
    last = attempts[-1] if attempts else None
    diagnosis = as_object(last.get("diagnosis")) if last else None
    # A run stopped by a signal or by the clock did not fail on a line: no decisive line, no advice.
    stopped_from_outside = last is not None and last.get("ended") in ("interrupted", "budget")
    if outcome not in ("succeeded", "running", None) and diagnosis and not stopped_from_outside:
        line = diagnosis.get("line")
        # A failed verification of the artifacts is not a line of the log: say what it is instead.
        where = f"{last.get('log') if last else ''}:{line}" if line is not None else "artifact verification"
        console.print(f"decisive line ({where}):" if line is not None else f"found by {where}:")
        console.print(f"  {diagnosis.get('text')}")
        context = _context_for(events, as_int(last.get("number")) if last else None)
        if context:
            console.print("context:")
            for line in context:
                console.print(f"  | {line}")
        todo = _event_for(events, as_int(last.get("number")) if last else None).get("todo")
        console.print(f"what to do: {todo or next_steps(diagnosis)}")
    code_objects = summary.get("code_objects")
    if isinstance(code_objects, dict) and code_objects.get("detail"):
        console.print(f"code objects: {code_objects['detail']}")
    if outcome == "interrupted" and summary.get("todo"):  # the exact `rocmbuild resume` command
        console.print(f"what to do: {summary.get('todo')}")
    # summary.json's stop_reason; a record written before it existed has the reason only in run.finished
    reason = summary.get("stop_reason") or next(
        (e.get("reason") for e in reversed(events) if e.get("event") == "run.finished"), None)
    if reason and outcome != "succeeded":
        console.print(f"why rocmbuild stopped: {reason}")
    notes = (str(e.get("message")) for e in events if e.get("event") in ("remedy.warning", "cache.warning"))
    for note in dict.fromkeys(notes):  # each once, in order: a remedy skipped on every attempt says it each time
        console.print(f"note: {note}")
    for warning in as_list(summary.get("warnings")):   # extra archs, configure-time downgrades
        console.print(f"warning: {warning}")
    if outcome == "up_to_date" and isinstance(summary.get("up_to_date"), Mapping):
        compared = as_object(as_object(summary.get("up_to_date")).get("compared"))
        console.print("compared: " + ", ".join(sorted(compared)))
    console.print(f"records: {summary.get('run_dir')}")
    return buffer.getvalue()


def _event_for(events: Sequence[Mapping[str, object]], attempt: int | None) -> Mapping[str, object]:
    """The failure.diagnosed event of an attempt (it carries context and advice)."""
    for event in reversed(events):
        if event.get("event") == "failure.diagnosed" and event.get("attempt") == attempt:
            return event
    return {}


def _context_for(events: Sequence[Mapping[str, object]], attempt: int | None) -> list[str]:
    return [str(line) for line in as_list(_event_for(events, attempt).get("context"))]
