"""Noise stripping for matching: what a log line says once decoration is gone.

Used by the watcher (live) and the classifier (saved logs).  The raw log always
keeps the original bytes; only the copy that is matched is cleaned.  Removes
ANSI escapes, ``\\r`` progress redraws (keeps the last redraw), CI timestamps,
docker BuildKit step prefixes (``#8 245.6 ``), TheRock ``[component phase]``
prefixes, pip's indentation and box characters (``×│╰─>``), and markdown quote
markers.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Leading decorations, applied repeatedly (a BuildKit prefix may follow a timestamp).
_PREFIXES = re.compile(
    r"""^(?:
        \s*\d{4}-\d\d-\d\d[T\s]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s*   # ISO timestamp (GitHub Actions)
      | \s*\[?\d\d:\d\d:\d\d(?:[.,]\d+)?\]?\s+                                      # 12:34:56 / [12:34:56.789]
      | \#\d+\s+\d+(?:\.\d+)?\s                                                     # BuildKit "#8 245.6 "
      | \[[\w.+-]+\s(?:configure|build|install|stage|download)\]\s                  # TheRock "[hipBLASLt build] "
      | \s*>\s?                                                                     # markdown quote
      | \s*[×│╰╭─┃]+(?:─*>)?\s*                                                     # pip's error boxes
    )""",
    re.VERBOSE,
)


def clean_line(raw: str) -> str:
    """The matchable text of one line of build output."""
    if "\x1b" in raw:
        raw = _ANSI.sub("", raw)
    if "\r" in raw:
        # A progress bar redraws with \r: what a terminal shows is the last part.
        parts = [p for p in raw.split("\r") if p.strip()]
        raw = parts[-1] if parts else ""
    previous = None
    while previous != raw:
        previous = raw
        raw = _PREFIXES.sub("", raw, count=1)
    return raw.strip()
