"""Arch truthfulness: what a build did with the arch list beyond "the requested archs are present".

Owns two warnings that go to summary.json's ``warnings`` (never a failure):
archs built *beyond* the request (TheRock#1927: a gfx90a build that also built
the gfx11/gfx12 family; pytorch#197124: an unwanted arch costing codegen time),
and configure-time downgrades, where a component is silently disabled for an
arch (TheRock#1037: ``-- Disabling CK for gfx1030: not supported``).  Pure
functions over an ArtifactReport and log lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import regex

from rocmbuild.host.arch import processors_in
from rocmbuild.process.logscan import scan_lines, scan_log
from rocmbuild.verification.artifacts import ArtifactReport

# A configure line that disables something because it is not supported (either order, one line).
# Kept to one line of configure output: "-- " CMake status lines and plain "Warning:" lines.
_DOWNGRADE = regex.compile(
    r"^\s*(?:--\s*|CMake Warning[^:]*:\s*|WARNING:\s*|Warning:\s*)?"
    r"(?=.*\b(?:not\s+supported|unsupported)\b)(?=.*\b(?:disabl(?:e|ed|ing)|skipp(?:ed|ing)|turning\s+off)\b)"
    r"(?P<text>.{1,300})$",
    regex.IGNORECASE,
)


def beyond_request(report: ArtifactReport) -> list[str]:
    """One warning per artifact that carries code objects for archs nobody asked for."""
    wanted = set(report.archs)
    warnings = []
    for check in report.artifacts:
        if not check.listing.readable:
            continue
        extra = [a for a in check.archs if a not in wanted]
        if extra:
            warnings.append(f"{check.name} also has code objects for {', '.join(extra)}, beyond the requested "
                            f"{', '.join(report.archs) or 'none'} (build time and size for GPUs you did not ask for)")
    return warnings


class _Downgrades:
    """A LineHook collecting configure-time downgrades: only lines saying "(un)supported" reach it,
    cleaned by the scanner (the one noise rule: ANSI, \\r redraws, CI prefixes)."""

    # Both spellings' common part, in the cases configure scripts write ("Unsupported", "NOT SUPPORTED").
    keywords: tuple[bytes, ...] = (b"upported", b"UPPORTED")

    def __init__(self) -> None:
        self.found: dict[str, None] = {}

    def on_line(self, number: int, line: str, before: Sequence[str]) -> int:
        if len(line) <= 400 and (match := _DOWNGRADE.match(line)):
            text = match["text"].strip()
            archs = processors_in(text)
            self.found.setdefault(
                f"configure disabled something{' for ' + ', '.join(archs) if archs else ''}: {text}")
        return 0

    def on_context(self, number: int, text: str) -> None:
        """Never asked for: on_line wants no following lines."""


def downgrades(lines: Iterable[str]) -> list[str]:
    """Configure-time 'not supported ... disabling' lines, cleaned, each once, in order."""
    hook = _Downgrades()
    scan_lines(lines, hook)
    return list(hook.found)


def downgrades_in_log(log: Path) -> list[str]:
    """downgrades() over an attempt log, through the one line scanner (logs can be large)."""
    hook = _Downgrades()
    scan_log(log, hook)
    return list(hook.found)
