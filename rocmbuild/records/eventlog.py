"""events.jsonl's writer: structlog, configured for one JSON object a line with an ISO UTC timestamp."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO


def json_logger(file: TextIO) -> Callable[..., object]:
    """Writes one event (``name, **fields``) as one JSON object a line to ``file``, stamped with an ISO
    UTC timestamp (structlog's ``info``)."""
    # Imported by the run that records (~0.1 s with what it imports), not by the commands that only
    # read records (`report`, `history`, `resume`'s checks), which a person waits for.
    import structlog

    logger = structlog.wrap_logger(
        structlog.PrintLogger(file),
        processors=[
            structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
            structlog.processors.JSONRenderer(default=str),
        ],
    )
    write: Callable[..., object] = logger.info
    return write
