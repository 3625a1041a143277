"""Saved logs and lists of lines through the one line scanner (``watcher.LineScanner``).

Every reader that looks for keywords in a build log line by line goes through here:
``diagnose`` and ``classify()`` (the classifier), provenance (download URLs),
archtruth (configure-time downgrades).  So they all see the lines, line numbers,
long-line cuts and noise cleaning the live watcher sees, and only lines holding one
of the hook's keywords are decoded and cleaned; the rest stay bytes.  The input is
fed in chunks: a 1 GB log costs bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from rocmbuild.process.watcher import LineHook, LineScanner

CHUNK_SIZE = 1 << 20


def scan_stream(stream: BinaryIO, hook: LineHook) -> None:
    """Feed a binary stream (a saved log, stdin) to ``hook`` through a LineScanner."""
    scanner = LineScanner(hook)
    while chunk := stream.read(CHUNK_SIZE):
        scanner.feed(chunk)
    scanner.close()


def scan_log(path: Path, hook: LineHook) -> None:
    """Feed a saved log to ``hook``; a log that cannot be read feeds nothing (records never fail a run)."""
    try:
        with path.open("rb") as stream:
            scan_stream(stream, hook)
    except OSError:
        return


def scan_lines(lines: Iterable[str], hook: LineHook) -> None:
    """Feed lines (each with or without its ``\\n``) to ``hook`` as if they were one log."""
    scanner = LineScanner(hook)
    chunk = bytearray()
    for line in lines:
        chunk += line.rstrip("\n").encode("utf-8", errors="replace")
        chunk += b"\n"
        if len(chunk) >= CHUNK_SIZE:
            scanner.feed(bytes(chunk))
            chunk.clear()
    scanner.feed(bytes(chunk))
    scanner.close()
