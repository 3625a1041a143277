"""One attempt as a request and a typed answer: ``AttemptRequest`` in, ``runner.AttemptOutcome`` out.

Owns the shape of the call between the ladder loop and the PTY engine: the
request is a frozen value (steps, working directory, environment, log path,
limits, the tree whose cgroup holds the attempt); ``AttemptHooks`` holds the
live collaborators that are not data (the watcher that reads the output, the
display, the stop check, the interrupt flag).  ``runner.run_attempt`` takes
both; ``Services.attempt`` has its shape, so tests replace the engine, not the loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocmbuild.process.display import Display
    from rocmbuild.process.runner import Limits, Step
    from rocmbuild.process.watcher import Watcher


@dataclass(frozen=True)
class AttemptRequest:
    """What one run of the PTY engine does: these steps, there, with this environment, logged here."""

    steps: tuple[Step, ...]
    cwd: Path
    env: Mapping[str, str]
    log_path: Path
    limits: Limits
    tree: Path | None = None  # keys the attempt's cgroup (default: cwd)


def _never() -> bool:
    return False


@dataclass(frozen=True)
class AttemptHooks:
    """The live collaborators of one attempt (not data: they watch, draw and stop it)."""

    watcher: Watcher
    display: Display | None = None
    stop_check: Callable[[], str | None] | None = None
    interrupted: Callable[[], bool] = _never

