"""A readable relay off a terminal: build output without ANSI sequences or ``\\r`` redraws.

On a terminal the build's bytes go straight through (colours, ninja's and
pip's redrawn status lines are what a person wants to see).  Relayed to a file
or a pipe (nohup, CI), the same bytes are 4,504 escape sequences a minute of
vLLM's prepare step.  ``PlainRelay`` turns the stream into what a
terminal would finally have shown: each line as its last redraw left it, no
escape sequences, ``\\n`` line ends.  It is a stateful filter over chunks
(an escape sequence or a line may straddle two); attempt-N.log never goes
through it (the raw log keeps every byte).
"""

from __future__ import annotations

import re

# CSI (colours, erase, cursor), OSC (titles, hyperlinks), and the two-byte escapes.
_ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Erase to end of line (ninja's "\r[N/M] ...\x1b[K"): what was under the cursor onwards is gone.
_ERASE_TO_END = re.compile(rb"\x1b\[0?K")
# An escape sequence cut off at the end of a chunk: wait for the rest.
_PARTIAL_ESCAPE = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*)?$")
# A whole line (from its start) that holds an escape or a \r; anchored so a clean line costs one pass.
_DIRTY_LINE = re.compile(rb"^[^\n\r\x1b]*[\r\x1b][^\n]*", re.M)
_HOLD_LIMIT = 1 << 16  # a "line" longer than this without a newline is written as it is


def render_line(raw: bytes) -> bytes:
    """What a terminal finally shows for one line (no newline): ``\\r`` overwrites from column 0."""
    shown = b""
    for segment in raw.split(b"\r"):
        if not segment:
            continue
        erase = _ERASE_TO_END.search(segment)
        text = _ANSI.sub(b"", segment[:erase.start()] if erase else segment)
        shown = text if erase else text + shown[len(text):]
    return shown


def _render_match(match: re.Match[bytes]) -> bytes:
    return render_line(match.group(0))


class PlainRelay:
    """Feed raw chunks, get readable bytes back; ``flush`` at the end for a last unterminated line."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, data: bytes) -> bytes:
        buffer = self._pending + data if self._pending else data
        cut = buffer.rfind(b"\n") + 1
        complete, rest = buffer[:cut], buffer[cut:]
        # Most chunks of a big build are plain lines: pass them through at C speed, and render only
        # the lines that hold an escape or a carriage return (the relay's throughput matters).
        out = complete
        if b"\x1b" in complete or b"\r" in complete:
            out = _DIRTY_LINE.sub(_render_match, complete)
        if len(rest) > _HOLD_LIMIT:
            out += render_line(rest)
            rest = b""
        self._pending = rest
        return out

    def flush(self) -> bytes:
        """The unterminated last line as it stands (an escape cut short is dropped)."""
        rest, self._pending = self._pending, b""
        if _PARTIAL_ESCAPE.search(rest):
            rest = _PARTIAL_ESCAPE.sub(b"", rest)
        return render_line(rest)
