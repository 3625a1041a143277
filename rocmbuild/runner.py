"""The only module that starts processes.

Builds run under a pseudo-terminal (pexpect) in their own session, with the
whole process tree tracked and killed on stall, budget or interrupt.  Short
helper commands (version probes, ldconfig, git, pip) go through capture().
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


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
