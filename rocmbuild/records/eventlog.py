"""events.jsonl's writer: structlog, configured for JSON lines, imported without rich.

structlog's package import pulls in its console renderer and traceback helpers,
which import rich (when installed) at module level: ~35 ms of rocmbuild's
start-up for code the event log never runs (it only stamps and renders JSON).
While structlog is first imported, ``rich`` is made unimportable, so structlog
takes its documented fallbacks (plain tracebacks); rich itself stays importable
afterwards for the live status line and the reports.  When rich is already
loaded (a terminal's status line came first) structlog is imported as usual.

structlog's import still costs ~25 ms (its ``stdlib`` and ``_native`` modules import
asyncio), a sixth of ``rocmbuild build``'s way to its first attempt.  So a build's
recorder holds the events it records before the first attempt's process starts
(:func:`iso_now` stamps each one then) and writes them, in order and with those
times, the moment it starts (``RunRecorder.open_events``): the same lines, written
through the same structlog processors, a few milliseconds later.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import IO, Any

HELD_TIME = "_rocmbuild_held_time"  # an event held before structlog was loaded: the time it was recorded


def _import_structlog() -> Any:
    if "structlog" in sys.modules or "rich" in sys.modules:
        import structlog

        return structlog
    sys.modules["rich"] = None  # type: ignore[assignment]  # import rich -> ImportError, for this import only
    try:
        import structlog
    finally:
        if sys.modules.get("rich", 0) is None:
            del sys.modules["rich"]
    return structlog


def iso_now() -> str:
    """Now, exactly as ``TimeStamper(fmt="iso", utc=True)`` stamps it (``...T03:33:25.781517Z``)."""
    return datetime.now(tz=UTC).isoformat().replace("+00:00", "Z")


def _held_time(logger: Any, name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    """A held event keeps the time it was recorded (TimeStamper stamped it with the time it is written)."""
    held = event_dict.pop(HELD_TIME, None)
    if held is not None:
        event_dict["timestamp"] = held
    return event_dict


def json_logger(file: IO[str]) -> Any:
    """A structlog logger writing one JSON object a line to ``file``, stamped with an ISO UTC timestamp.

    An event logged with ``HELD_TIME=iso_now()`` (taken earlier) is stamped with that time instead.
    """
    structlog = _import_structlog()
    return structlog.wrap_logger(
        structlog.PrintLogger(file),
        processors=[
            structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
            _held_time,
            structlog.processors.JSONRenderer(default=str),
        ],
    )
