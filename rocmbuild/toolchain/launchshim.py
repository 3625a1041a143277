"""The launcher shim: the one-word command every compile starts through (the global job limit).

``install_launcher`` writes ``rocmbuild-launch`` (limit only) or ``rocmbuild-launch-ccache`` (limit,
then the cache tool): a shell script that runs ``launcher.py`` with this interpreter, kept in the
user cache dir so a CMake cache that remembered it still finds it in the next attempt and the next
run.  ``launcher_env`` points CMake's compiler launchers at it.  Both the compiler cache (cache.py)
and the limit-only path (joblimit.py) use it, so it depends on neither.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

from rocmbuild import paths
from rocmbuild.toolchain import launcher

LAUNCHER_SCRIPT = Path(launcher.__file__)
LAUNCHER_LANGS = ("C", "CXX", "HIP")


def shim_text(python: str, cache_tool: Path | None) -> str:
    """The shim: ``exec python -I -S launcher.py [ccache] "$@"`` (-I -S: no site, ~10 ms a start)."""
    words = [python, "-I", "-S", str(LAUNCHER_SCRIPT), *([str(cache_tool)] if cache_tool else [])]
    return ("#!/bin/sh\n# Written by rocmbuild (toolchain/joblimit.py): the global job limit for every compile.\n"
            f"exec {' '.join(shlex.quote(w) for w in words)} \"$@\"\n")


def install_launcher(cache_tool: Path | None = None, python: str | None = None,
                     directory: Path | None = None) -> Path:
    """Write (idempotent, atomic) and return the shim: limit-only, or limit then ``cache_tool``."""
    python = python or sys.executable
    text = shim_text(python, cache_tool)
    if directory is None:
        key = hashlib.sha256(text.encode()).hexdigest()[:12]
        directory = paths.cache_dir("launcher", key)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (f"rocmbuild-launch-{cache_tool.name}" if cache_tool else "rocmbuild-launch")
    if not path.is_file() or path.read_text() != text:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.chmod(0o755)
        os.replace(tmp, path)  # concurrent runs never see a half-written shim
    return path


def launcher_unavailable(exc: OSError) -> str:
    """The warning when the shim cannot be written (an unwritable or full user cache dir): the build
    runs without the global job limit rather than failing."""
    return (f"the global job limit is off for this run: its launcher cannot be written in "
            f"{paths.cache_dir('launcher')} ({exc.strerror or exc}); make that directory writable or point "
            "XDG_CACHE_HOME at a writable one")


def launcher_env(launcher_path: Path, caller_env: Mapping[str, str], *, cmake_args: bool = True,
                 bare_word: str | None = None) -> dict[str, str]:
    """CMake's compiler launchers (environment and ``CMAKE_ARGS``) set to ``launcher_path`` (pure).

    The one rule for both the job-limit shim and a bare cache tool (cache.py).  A launcher the caller
    set explicitly is left alone, as the cache leaves the caller's settings.  vLLM splits
    ``CMAKE_ARGS`` on whitespace: a path with a space goes there as ``bare_word`` (a program found
    on PATH) when given, else not at all (the environment variables still reach CMake >= 3.17).
    """
    env = {f"CMAKE_{lang}_COMPILER_LAUNCHER": str(launcher_path) for lang in LAUNCHER_LANGS
           if f"CMAKE_{lang}_COMPILER_LAUNCHER" not in caller_env}
    word = str(launcher_path) if not any(c.isspace() for c in str(launcher_path)) else bare_word
    if cmake_args and word is not None:
        existing = caller_env.get("CMAKE_ARGS", "")
        extra = [f"-DCMAKE_{lang}_COMPILER_LAUNCHER={word}" for lang in LAUNCHER_LANGS
                 if f"-DCMAKE_{lang}_COMPILER_LAUNCHER" not in existing]
        if extra:
            env["CMAKE_ARGS"] = " ".join([existing, *extra]).strip()
    return env
