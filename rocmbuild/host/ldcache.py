"""The loader's cache as ``ldconfig -p`` prints it: the one parser of that output.

``lookup(run)`` asks ``ldconfig -p`` (``/sbin/ldconfig`` when ldconfig is not
on PATH) and returns its entries; preflight (is a library known?), remedies
(where is a missing one?) and doctor (what does the loader know of HIP?) all
read these, never the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocmbuild.process import command as proc

_ENTRY = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)\s*$")


@dataclass(frozen=True)
class Entry:
    """One line of ``ldconfig -p``: ``libfoo.so.1 (libc6,x86-64) => /usr/lib/.../libfoo.so.1``."""

    soname: str
    flags: str
    path: str
    line: str

    @property
    def is_64bit(self) -> bool:
        return "64" in self.flags


def parse(output: str) -> tuple[Entry, ...]:
    """The entries of ``ldconfig -p`` output (its header and odd lines are skipped)."""
    entries = []
    for line in output.splitlines():
        match = _ENTRY.match(line)
        if match:
            entries.append(Entry(match.group(1), match.group(2), match.group(3), line.strip()))
    return tuple(entries)


def lookup(run: proc.Run) -> tuple[Entry, ...]:
    """The loader's cache; empty when ldconfig is unavailable."""
    result = run(["ldconfig", "-p"])
    if result.missing or not result.ok:
        result = run(["/sbin/ldconfig", "-p"])
    return parse(result.output)
