"""Arch truthfulness: what a build did with the arch list beyond "the requested archs are present".

Owns two warnings that go to summary.json's ``warnings`` (never a failure):
archs built *beyond* the request (TheRock#1927: a gfx90a build that also built
the gfx11/gfx12 family; pytorch#197124: an unwanted arch costing codegen time),
and configure-time downgrades, where a component is silently disabled for an
arch (TheRock#1037: ``-- Disabling CK for gfx1030: not supported``).  Pure
functions over an ArtifactReport and log lines.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import regex

from rocmbuild.diagnosis.noise import clean_line, may_contain, saved_log_lines
from rocmbuild.build.artifacts import ArtifactReport

# A configure line that disables something because it is not supported (either order, one line).
# Kept to one line of configure output: "-- " CMake status lines and plain "Warning:" lines.
_DOWNGRADE = regex.compile(
    r"^\s*(?:--\s*|CMake Warning[^:]*:\s*|WARNING:\s*|Warning:\s*)?"
    r"(?=.*\b(?:not\s+supported|unsupported)\b)(?=.*\b(?:disabl(?:e|ed|ing)|skipp(?:ed|ing)|turning\s+off)\b)"
    r"(?P<text>.{1,300})$",
    regex.IGNORECASE,
)
_GFX = regex.compile(r"\bgfx[0-9a-f]+\b")


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


def downgrades(lines: Iterable[str]) -> list[str]:
    """Configure-time 'not supported ... disabling' lines, cleaned, each once, in order."""
    found: dict[str, None] = {}
    for raw in lines:
        # _DOWNGRADE needs "supported" or "unsupported" (any case): plain `in` tests rule out nearly every
        # line of a build log before cleaning (1-2 us) and the regex (~4 us; seconds on a 90 MB log).
        if not may_contain(raw, "upport"):
            continue
        line = clean_line(raw.rstrip("\n"))  # the one noise rule: ANSI, \r redraws, CI prefixes
        if len(line) > 400 or "upport" not in line.lower():
            continue
        match = _DOWNGRADE.match(line)
        if match:
            text = match["text"].strip()
            archs = _GFX.findall(text)
            found.setdefault(f"configure disabled something{' for ' + ', '.join(archs) if archs else ''}: {text}")
    return list(found)


def downgrades_in_log(log: Path) -> list[str]:
    """downgrades() over an attempt log, read line by line (logs can be large)."""
    return downgrades(saved_log_lines(log))
