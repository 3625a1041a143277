"""events.jsonl's writer: structlog, configured for JSON lines, imported without rich.

structlog's package import pulls in its console renderer and traceback helpers,
which import rich (when installed) at module level: ~35 ms of rocmbuild's
start-up for code the event log never runs (it only stamps and renders JSON).
While structlog is first imported, ``rich`` is made unimportable, so structlog
takes its documented fallbacks (plain tracebacks); rich itself stays importable
afterwards for the live status line and the reports.  When rich is already
loaded (a terminal's status line came first) structlog is imported as usual.
"""

from __future__ import annotations

import sys
from typing import IO, Any


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


def json_logger(file: IO[str]) -> Any:
    """A structlog logger writing one JSON object a line to ``file``, stamped with an ISO UTC timestamp."""
    structlog = _import_structlog()
    return structlog.wrap_logger(
        structlog.PrintLogger(file),
        processors=[
            structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
            structlog.processors.JSONRenderer(default=str),
        ],
    )
