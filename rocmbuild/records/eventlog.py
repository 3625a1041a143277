"""events.jsonl's writer: structlog, configured for one JSON object a line with an ISO UTC timestamp."""

from __future__ import annotations

from typing import Any, TextIO


def json_logger(file: TextIO) -> Any:
    """A structlog logger writing one JSON object a line to ``file``, stamped with an ISO UTC timestamp."""
    # Imported by the run that records (~0.1 s with what it imports), not by the commands that only
    # read records (`report`, `history`, `resume`'s checks), which a person waits for.
    import structlog

    return structlog.wrap_logger(
        structlog.PrintLogger(file),
        processors=[
            structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
            structlog.processors.JSONRenderer(default=str),
        ],
    )
