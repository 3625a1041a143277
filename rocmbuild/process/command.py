"""Short helper commands: the one command-runner protocol and its real implementation.

Version probes, ``ldconfig -p``, git, pip: every module that asks the host a
question through a program takes a :class:`Run` (default :func:`capture`), so
tests hand in a fake without patching modules.  Build steps do not run here:
they run under a PTY in :mod:`rocmbuild.process.runner`.

``TOOL --version`` answers are remembered for the life of the process, keyed by
the argv, the environment, the directory and the identity of the program file
the PATH resolves to (inode, size, mtime): one run asks hipcc (a perl script
that probes for GPUs, ~0.2 s) for its version four times (facts.json, the
fingerprint before and after, provenance); a tool replaced in between (a
``pip install cmake`` in a prepare step) is a different file and is asked again.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rocmbuild.process import versionstore


@dataclass(frozen=True)
class CommandResult:
    """What a short helper command did; ``missing`` when the program is not installed."""

    returncode: int | None
    output: str
    missing: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0


_VERSIONS: dict[tuple[object, ...], CommandResult] = {}


def _version_key(argv: Sequence[str], env: Mapping[str, str] | None, cwd: Path | None) -> tuple[object, ...] | None:
    """What makes a ``TOOL --version`` answer the same again within this process; None for any other command."""
    probe = versionstore.version_program(argv, env)
    if probe is None:
        return None
    program, environ = probe
    try:
        st = os.stat(program)
    except OSError:
        return None
    return (tuple(argv), program, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
            tuple(sorted(environ.items())), str(cwd))


def capture(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 60,
) -> CommandResult:
    """Run a short command, stdout and stderr merged; never raises for a missing program."""
    key = _version_key(argv, env, cwd)
    if key is not None and key in _VERSIONS:
        return _VERSIONS[key]
    stored = _stored(key, argv, env, cwd)
    if stored is not None:
        return stored
    result = _run(argv, env=env, cwd=cwd, timeout=timeout)
    _remember(key, argv, env, cwd, result)
    return result


# Where ``--version`` answers are also remembered across runs (versionstore.py); None = this process only.
# The build command sets it (``remember_versions``); library callers and tests keep per-process answers.
_STORE: list[Path] = []


def remember_versions(store: Path | None) -> None:
    """Remember ``TOOL --version`` answers in ``store`` across runs too (None: stop)."""
    _STORE[:] = [store] if store is not None else []


def _stored(key: tuple[object, ...] | None, argv: Sequence[str], env: Mapping[str, str] | None,
            cwd: Path | None) -> CommandResult | None:
    if key is None or not _STORE:
        return None
    digest = versionstore.key(argv, env, cwd)
    answer = versionstore.load(_STORE[0], digest) if digest is not None else None
    if answer is None:
        return None
    result = CommandResult(*answer)
    _VERSIONS[key] = result
    return result


def _remember(key: tuple[object, ...] | None, argv: Sequence[str], env: Mapping[str, str] | None,
              cwd: Path | None, result: CommandResult) -> None:
    if key is None or result.returncode is None:  # a timed-out probe is asked again next time
        return
    _VERSIONS[key] = result
    if _STORE:
        digest = versionstore.key(argv, env, cwd)
        if digest is not None:
            versionstore.save(_STORE[0], digest, result.returncode, result.output)


def _run(argv: Sequence[str], *, env: Mapping[str, str] | None, cwd: Path | None, timeout: float) -> CommandResult:
    try:
        process = subprocess.Popen(
            list(argv), env=dict(env) if env is not None else None, cwd=cwd,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        return CommandResult(None, f"{argv[0]}: not found", missing=True)
    except PermissionError as exc:
        return CommandResult(None, f"{argv[0]}: {exc.strerror}", missing=True)
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        process.kill()
        process.communicate()
        partial = exc.output.decode("utf-8", "replace") if isinstance(exc.output, bytes) else ""
        return CommandResult(None, partial + f"\n{argv[0]}: timed out after {timeout:g}s")
    return CommandResult(process.returncode, out.decode("utf-8", "replace"))


def capture_many(run: Run, calls: Mapping[str, tuple[Sequence[str], Mapping[str, str] | None, float]]
                 ) -> dict[str, CommandResult]:
    """Independent short commands ``{name: (argv, env, timeout)}`` run at once, through ``run``.

    Each waits on its own child, so the set takes as long as its slowest member, not the sum:
    the version probes at the start of a run are ~0.2 s each (hipcc is a perl script, cmake from
    PyPI a Python entry point).
    """
    from concurrent.futures import ThreadPoolExecutor  # only the commands that probe in bulk pay for it

    with ThreadPoolExecutor(max_workers=max(len(calls), 1)) as pool:
        futures = {name: pool.submit(run, argv, env=env, timeout=timeout)
                   for name, (argv, env, timeout) in calls.items()}
    return {name: future.result() for name, future in futures.items()}


class Run(Protocol):
    """The shape of :func:`capture`: what every helper-command consumer accepts."""

    def __call__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = ...,
                 cwd: Path | None = ..., timeout: float = ...) -> CommandResult: ...
