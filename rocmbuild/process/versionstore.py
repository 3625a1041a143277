"""``TOOL --version`` answers remembered across runs, in the state dir (``probes/``).

Why: the up-to-date check needs the HIP compiler's version before the first attempt, and hipcc
is a perl script that also runs rocm_agent_enumerator: 0.2-0.5 s a run, for an answer that only
changes when the toolchain does.

An answer is reused only while everything it could depend on looks the same:

* the argv, and the program the PATH resolves to: its path, its real path, and the identity
  (device, inode, size, mtime) of both files;
* the directories a tool finds its companions in (hipcc finds clang and its version files):
  every PATH entry, the program's directory and its real directory, and the ``*_PATH`` /
  ``*_HOME`` directories of the environment with their ``bin``, ``llvm/bin`` and ``share/hip``;
  each by its mtime, which changes whenever a file in it is added, removed or renamed -- and
  package managers (dpkg, rpm, pip) install by renaming;
* the environment, but for variables that differ between two shells and never change a
  version (``_VOLATILE``) and rocmbuild's own job counts, sized from free memory at each run.

Only answers with exit status 0 are remembered.  A corrupt or unreadable entry is a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

_VOLATILE = frozenset({"PWD", "OLDPWD", "SHLVL", "_", "TERM", "COLORTERM", "COLUMNS", "LINES", "WINDOWID",
                       "DISPLAY", "STY", "TMUX", "TMUX_PANE", "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY",
                       "SSH_AUTH_SOCK", "MAX_JOBS", "CMAKE_BUILD_PARALLEL_LEVEL", "MAKEFLAGS"})
_VOLATILE_PREFIXES = ("XDG_SESSION_", "ROCMBUILD_", "NOTIFY_SOCKET", "INVOCATION_ID", "JOURNAL_STREAM")
_COMPANION_DIRS = ("", "bin", "llvm/bin", "share/hip")


def _identity(path: str) -> list[object] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _directories(program: str, environ: Mapping[str, str]) -> list[str]:
    dirs = [d for d in environ.get("PATH", "").split(os.pathsep) if d]
    dirs += [os.path.dirname(program), os.path.dirname(os.path.realpath(program))]
    for name, value in sorted(environ.items()):
        if (name.endswith("_PATH") or name.endswith("_HOME")) and value.startswith("/") and os.pathsep not in value:
            dirs += [os.path.join(value, sub) for sub in _COMPANION_DIRS]
    return list(dict.fromkeys(dirs))


def version_program(argv: Sequence[str], env: Mapping[str, str] | None) -> tuple[str, Mapping[str, str]] | None:
    """(the program PATH resolves to, the environment) for a ``TOOL --version`` probe; None for any other
    command.  What both memos (this store and command.py's per-process one) start from."""
    if len(argv) != 2 or argv[1] != "--version":
        return None
    environ = os.environ if env is None else env
    program = shutil.which(argv[0], path=environ.get("PATH"))
    return None if program is None else (program, environ)


def key(argv: Sequence[str], env: Mapping[str, str] | None, cwd: Path | None) -> str | None:
    """The digest naming a remembered answer; None when the command is not a ``--version`` probe."""
    probe = version_program(argv, env)
    if probe is None:
        return None
    program, environ = probe
    real = os.path.realpath(program)
    kept = {k: v for k, v in environ.items() if k not in _VOLATILE and not k.startswith(_VOLATILE_PREFIXES)}
    parts = {
        "argv": list(argv), "program": [program, _identity(program)], "real": [real, _identity(real)],
        "dirs": [[d, _identity(d)] for d in _directories(program, environ)],
        "env": sorted(kept.items()), "cwd": str(cwd),
    }
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def load(store: Path, digest: str) -> tuple[int, str] | None:
    """(exit status, output) remembered under ``digest``, or None."""
    try:
        data = json.loads((store / f"{digest}.json").read_text(encoding="utf-8"))
        returncode, output = data["returncode"], data["output"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if returncode != 0 or not isinstance(output, str):
        return None
    return returncode, output


def save(store: Path, digest: str, returncode: int, output: str) -> None:
    """Remember a successful answer; a state dir that cannot be written only costs the next run a probe."""
    if returncode != 0:
        return
    with contextlib.suppress(OSError):
        store.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = store / f".{digest}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"returncode": returncode, "output": output}), encoding="utf-8")
        tmp.replace(store / f"{digest}.json")
