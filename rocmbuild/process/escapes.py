"""The build's escape sequences that act outside the window, kept off the user's terminal.

Owns the filter the display puts between a build and a terminal.  A build is third-party output: an OSC
sequence in it can set the clipboard (OSC 52, which some terminals let a program read back or paste),
the window title (OSC 0/2), hyperlinks, notifications or the palette; DCS, APC, PM and SOS strings reach
terminal extensions.  Colour and cursor movement (CSI, ``ESC [``) and ``\\r`` progress stay: they are
what a build's output looks like.  The raw log keeps every byte; only the console copy is filtered.

A string runs until BEL, ST (``ESC \\``, or U+009C) or CAN/SUB (which abort it, as terminals do), so the
filter keeps its state across reads: a sequence split between two reads is still dropped whole.
"""

from __future__ import annotations

import re

# ESC ] (OSC), ESC P (DCS), ESC X (SOS), ESC ^ (PM), ESC _ (APC), and OSC's 8-bit form as UTF-8 (U+009D).
_START = re.compile(rb"\x1b[\]PX^_]|\xc2\x9d")
_END = re.compile(rb"\x07|\x1b\\|\xc2\x9c|\x18|\x1a")


class TerminalFilter:
    """``feed(bytes) -> bytes``: the output with every OSC/DCS/SOS/PM/APC string removed."""

    __slots__ = ("_carry", "_inside")

    def __init__(self) -> None:
        self._inside = False  # in a string whose end has not been read yet
        self._carry = b""  # an ESC (or 0xC2) at the end of a read: the start of what?

    def feed(self, data: bytes) -> bytes:
        if self._carry:
            data, self._carry = self._carry + data, b""
        if not self._inside and b"\x1b" not in data and b"\xc2" not in data:
            return data  # the common case: a line of compiler output
        kept: list[bytes] = []
        position = 0
        while position < len(data):
            if self._inside:
                end = _END.search(data, position)
                if end is None:
                    if data.endswith((b"\x1b", b"\xc2")):
                        self._carry = data[-1:]  # ESC of a split ST, or the first byte of U+009C
                    return b"".join(kept)
                self._inside = False
                position = end.end()
                continue
            start = _START.search(data, position)
            if start is None:
                tail = data[position:]
                if tail.endswith((b"\x1b", b"\xc2")):
                    tail, self._carry = tail[:-1], tail[-1:]
                kept.append(tail)
                break
            kept.append(data[position:start.start()])
            self._inside = True
            position = start.end()
        return b"".join(kept)
