"""Short helper commands: the one command-runner protocol and its real implementation.

Version probes, ``ldconfig -p``, git, pip: every module that asks the host a
question through a program takes a :class:`Run` (default :func:`capture`), so
tests hand in a fake without patching modules.  Build steps do not run here:
they run under a PTY in :mod:`rocmbuild.process.runner`.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class CommandResult:
    """What a short helper command did; ``missing`` when the program is not installed."""

    returncode: int | None
    output: str
    missing: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def capture(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 60,
) -> CommandResult:
    """Run a short command, stdout and stderr merged; never raises for a missing program."""
    try:
        proc = subprocess.run(
            list(argv), env=dict(env) if env is not None else None, cwd=cwd,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            timeout=timeout, check=False,
        )
    except FileNotFoundError:
        return CommandResult(None, f"{argv[0]}: not found", missing=True)
    except PermissionError as exc:
        return CommandResult(None, f"{argv[0]}: {exc.strerror}", missing=True)
    except subprocess.TimeoutExpired as exc:
        out = exc.output.decode("utf-8", "replace") if isinstance(exc.output, bytes) else ""
        return CommandResult(None, out + f"\n{argv[0]}: timed out after {timeout:g}s")
    return CommandResult(proc.returncode, proc.stdout.decode("utf-8", "replace"))


class Run(Protocol):
    """The shape of :func:`capture`: what every helper-command consumer accepts."""

    def __call__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = ...,
                 cwd: Path | None = ..., timeout: float = ...) -> CommandResult: ...
