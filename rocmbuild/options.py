"""Build options as one frozen value, and the parsers for their text forms.

The CLI turns flags (and ``ROCMBUILD_<NAME>`` variables) into BuildOptions (``doctor``'s
into DoctorOptions); everything after the CLI reads only this value.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from rocmbuild.errors import UsageError

DEFAULT_MAX_ATTEMPTS = 6
DEFAULT_STALL_TIMEOUT_S = 30 * 60.0
DEFAULT_BACKOFF_S = 30.0

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(h|m|s|ms)?", re.IGNORECASE)
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, None: 1.0}


def parse_duration(text: str, option: str = "--budget") -> float:
    """Seconds from ``90s``, ``45m``, ``8h``, ``1h30m``, ``0.5s``.

    A bare number is refused (docs/reference-cli.md): ``--budget 8`` meant 8 seconds to the parser and 8 hours
    to the person who typed it.
    """
    cleaned = text.strip().lower().replace(" ", "")
    total, pos = 0.0, 0
    while pos < len(cleaned):
        match = _DURATION_PART.match(cleaned, pos)
        if not match:
            break
        if match.group(2) is None and not (pos == 0 and match.end() == len(cleaned) and float(match.group(1)) > 0):
            break  # a unitless part inside a duration ("1h30"): not a duration
        if match.group(2) is None:
            number = match.group(1)
            raise UsageError(
                f"{option} {text!r} has no unit",
                why="a bare number could mean seconds or hours; rocmbuild does not guess",
                todo=f"write {option} {number}h for hours, {option} {number}m for minutes "
                     f"or {option} {number}s for seconds",
            )
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if not cleaned or pos != len(cleaned) or total <= 0:
        raise UsageError(
            f"{option} {text!r} is not a duration",
            why="a duration is a positive number with a unit: s, m or h",
            todo=f"write e.g. {option} 90s, {option} 45m, {option} 8h or {option} 1h30m",
        )
    return total


MAX_NOTIFY_TIMEOUT_S = 24 * 3600.0


def parse_notify_timeout(text: str, option: str = "ROCMBUILD_NOTIFY_TIMEOUT") -> float:
    """The notification's time limit: a duration of at most a day (a larger one is no limit, and
    too large for the clock: refused before the build, not after it)."""
    value = parse_duration(text, option)
    if not value <= MAX_NOTIFY_TIMEOUT_S:
        raise UsageError(f"{option} {text!r} is longer than a day",
                         why="a notification that may take longer than a day has no time limit at all",
                         todo=f"write a shorter duration, e.g. {option}=60s (the default) or {option}=10m")
    return value


def parse_positive_int(text: str, option: str) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise UsageError(f"{option} {text!r} is not a whole number",
                         todo=f"write e.g. {option} 8") from None
    if value < 1:
        raise UsageError(f"{option} must be at least 1 (got {value})", todo=f"write e.g. {option} 8")
    return value


def parse_seconds(text: str, option: str) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        return parse_duration(str(text), option)
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{option} must be a finite number of seconds, not negative (got {text})",
                         todo=f"write e.g. {option} 30")
    return value


@dataclass(frozen=True, kw_only=True)
class DoctorOptions:
    """What ``rocmbuild doctor`` was asked to check, and whether it answers in JSON (docs/reference-cli.md)."""

    arch: str | None = None
    rocm_path: str | None = None
    as_json: bool = False
    hip_compiler: str | None = None
    wheel_dir: str | None = None
    requires_from: str | None = None
    cache_remote: str | None = None


@dataclass(frozen=True)
class BuildOptions:
    """Everything the user said about how to build (docs/reference-cli.md)."""

    arch: str = "auto"
    source: Path | None = None
    rocm_path: str | None = None
    jobs: int | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    budget_s: float | None = None
    stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S
    backoff_s: float = DEFAULT_BACKOFF_S
    run_dir: Path | None = None
    dry_run: bool = False
    json: bool = False
    escalate_unknown: bool = False
    fail_fast: bool = False
    skip_preflight: bool = False
    no_cache: bool = False
    cache_remote: str | None = None
    hip_compiler: str | None = None    # --hip-compiler: the build's HIP compiler (sets HIPCXX)
    verbosity: str = "normal"  # "quiet" | "normal" | "verbose"
    force: bool = False                # --force: build even when the fingerprint matches
    wheel_dir: Path | None = None      # --wheel-dir: leave verified wheels + manifest there
    requires_from: str | None = None   # --requires-from: wheel index URL or wheelhouse dir for `requires`
    notify: str | None = None          # --notify: shell command run once when the run ends (notify.py)
    memory_reserve: int | None = None  # --memory-reserve in bytes; None: default_reserve(), 0: guard off
    detach: bool = False               # --detach: run in the background (detach.py)
    notify_timeout_s: float = 60.0     # ROCMBUILD_NOTIFY_TIMEOUT: a hung webhook must not hold the run open


def format_duration(seconds: float) -> str:
    """``8h``, ``30m``, ``1h30m``, ``90s`` back from seconds (for the plan)."""
    if seconds < 60 or seconds != int(seconds):
        return f"{seconds:g}s"
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{secs}s" if secs else ""]
    return "".join(parts)


def run_limits(options: BuildOptions) -> dict[str, str]:
    """What bounds the run, as the plan shows it."""
    return {
        "budget": format_duration(options.budget_s) if options.budget_s else "none",
        "max_attempts": str(options.max_attempts),
        "stall_timeout": format_duration(options.stall_timeout_s),
    }
