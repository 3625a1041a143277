"""The recipe's verify step run again before an ``up_to_date`` claim, within a bound.

Owns: running ``[steps] verify`` in the build's environment and tree, in a session of its own (so
a timeout, a Ctrl-C or the budget ends all it started), with its output kept in a file (bounded
memory) and only the tail read back.  An import of the built module takes well under a second;
a verify step that needs more than ``BOUND_S`` is not cheap, and then no claim is made: the build runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

BOUND_S = 30.0  # the longest a verify step may take for an up_to_date claim to rest on it
_TAIL = 2000


@dataclass(frozen=True)
class Reverified:
    ok: bool
    detail: str


def _shell() -> list[str]:
    return ["/bin/bash", "-o", "pipefail", "-c"] if os.access("/bin/bash", os.X_OK) else ["/bin/sh", "-c"]


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def run_verify(commands: Sequence[str], cwd: Path, env: Mapping[str, str], stop: Callable[[], str | None],
               bound_s: float = BOUND_S) -> Reverified:
    """Each verify command in turn; the first that fails, or the bound, ends the claim."""
    if not commands:
        return Reverified(True, "the recipe has no verify step")
    deadline = time.monotonic() + bound_s
    with tempfile.TemporaryFile() as out:
        for command in commands:
            proc = subprocess.Popen([*_shell(), command], cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            while proc.poll() is None:
                if stop() or time.monotonic() >= deadline:
                    _end_group(proc)
                    why = "stopped" if stop() else f"took longer than {bound_s:g} s (not cheap enough to rely on)"
                    return Reverified(False, f"verify {why}")
                time.sleep(0.05)
            with contextlib.suppress(OSError):  # what it left running in its session goes with it
                os.killpg(proc.pid, signal.SIGKILL)
            if proc.returncode != 0:
                out.seek(max(0, out.tell() - _TAIL))
                tail = out.read().decode("utf-8", "replace").strip().splitlines()
                return Reverified(False, f"verify failed (exit {proc.returncode}): {tail[-1] if tail else ''}")
    return Reverified(True, f"verify passed again ({len(commands)} command(s))")
