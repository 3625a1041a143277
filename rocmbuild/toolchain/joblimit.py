"""The global job limit: the launcher shim, each attempt's slots, and what the slots saw.

rocmbuild routes every compile through its launcher (``launcher.py``, stdlib only, on the hot path):
CMake's ``CMAKE_<LANG>_COMPILER_LAUNCHER`` (also in ``CMAKE_ARGS`` for vLLM) and the hipcc clang
wrapper (cache.py).  This module owns the rocmbuild side of it:

* ``limit_only_changes``: the plan changes that route compiles through the limit-only shim
  (``launchshim.py`` writes the shims) when no compiler cache is in use;
* ``AttemptSlots``: per attempt, the slot directory in the run dir with the limit in force (the
  plan's job count) and ``ROCMBUILD_JOB_SLOTS`` for the attempt's environment;
* ``parse_compiles`` / ``summarise`` (pure): peak concurrency the slots saw, compiles, time spent
  waiting for a slot, the largest peak RSS of one compile job (summary.json's attempt ``jobs``).

Without ccache (``--no-cache``, or none installed) the limit-only shim is the launcher (and hipcc's
clang wrapper runs it): a user with ``--no-cache`` and 64 jobs gets the limit too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocmbuild import paths
from rocmbuild.planning.environment import EnvChange
from rocmbuild.process import command as proc
from rocmbuild.toolchain import cache, launcher
from rocmbuild.toolchain.launchshim import install_launcher, launcher_env


def limit_only_changes(caller_env: Mapping[str, str], run: proc.Run | None = None, *,
                       hip_compiler_is_clang: bool = False) -> tuple[EnvChange, ...]:
    """The plan changes that install the limit-only launcher (no compiler cache in use).

    With ``run`` (the helper-command runner) and hipcc on PATH, hipcc's clang is wrapped too, as the
    cache does it (cache.write_wrappers), but with the limit-only shim: device compiles take slots.
    Raises OSError when the shim cannot be written (``launcher_unavailable`` says why).
    """

    shim = install_launcher(None)
    env = launcher_env(shim, caller_env)
    if run is not None and not hip_compiler_is_clang and "HIP_CLANG_PATH" not in caller_env:
        env.update(hipcc_wrapper_env(caller_env, shim, run))
    return tuple(EnvChange(name, "set", value, "global job limit (rocmbuild launcher)")
                 for name, value in env.items())


def hipcc_wrapper_env(caller_env: Mapping[str, str], shim: Path, run: proc.Run) -> dict[str, str]:
    """``HIP_CLANG_PATH`` to a clang wrapper whose compiles go through ``shim``; {} when hipcc does not use it.

    Asking hipcc (a perl script) where its clang is and whether it calls the wrapper costs ~0.4 s, so
    the answer is remembered in the user cache dir per hipcc file (path, inode, size, mtime) and
    environment: only the first ``--no-cache`` run on a host pays it.
    """
    hipcc = shutil.which("hipcc", path=caller_env.get("PATH", os.defpath))
    if hipcc is None:
        return {}
    try:
        st = os.stat(hipcc)
    except OSError:
        return {}
    identity = "\0".join(str(part) for part in (hipcc, st.st_ino, st.st_size, st.st_mtime_ns, shim,
                                                 caller_env.get("PATH"), caller_env.get("ROCM_PATH"),
                                                 caller_env.get("HIP_PLATFORM")))
    memo = paths.cache_dir("hip-clang-wrappers", f"limit-{hashlib.sha256(identity.encode()).hexdigest()[:12]}.json")
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        known = json.loads(memo.read_text())["bin"]
        if known is None or Path(known).is_dir():
            return {"HIP_CLANG_PATH": known} if known else {}

    env: dict[str, str] = {}
    real = cache.find_real_clang_dir(caller_env, run)
    if real is not None:
        key = hashlib.sha256(f"{real.resolve()}\0{shim}".encode()).hexdigest()[:12]
        try:
            bin_dir = cache.write_wrappers(paths.cache_dir("hip-clang-wrappers", key), real, shim)
        except OSError:
            return {}
        if cache.hipcc_uses_wrapper({**caller_env, "HIP_CLANG_PATH": str(bin_dir)}, run):
            env = {"HIP_CLANG_PATH": str(bin_dir)}
    with contextlib.suppress(OSError):
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_name(f".{memo.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"bin": env.get("HIP_CLANG_PATH")}))
        os.replace(tmp, memo)
    return env


# --- what the slots saw (pure) -----------------------------------------------------------------------

@dataclass(frozen=True)
class Compile:
    """One compile the launcher ran: when it held its slot, what it was, its peak RSS and end."""

    start: float
    end: float | None       # None: its launcher died before it could say (SIGKILLed with it)
    slot: int
    waited_s: float
    pid: int                # the compiler's PID (the launcher's child)
    name: str
    peak_rss: int | None    # bytes, the largest of the compile's processes (wait4's ru_maxrss)
    exit_code: int | None
    signal: int


def parse_compiles(lines: Iterable[str]) -> list[Compile]:
    """``compiles.tsv`` lines (``start``/``end`` pairs keyed by launcher PID) -> compiles (pure)."""
    open_: dict[str, dict[str, Any]] = {}
    done: list[Compile] = []
    for line in lines:
        parts = line.rstrip("\n").split("\t")
        try:
            if parts[0] == "start" and len(parts) >= 7:
                open_[parts[2]] = {"start": float(parts[1]), "slot": int(parts[3]), "waited_s": float(parts[4]),
                                   "pid": int(parts[5]), "name": parts[6]}
            elif parts[0] == "end" and len(parts) >= 6 and parts[2] in open_:
                begun = open_.pop(parts[2])
                done.append(Compile(**begun, end=float(parts[1]), peak_rss=int(parts[3]),
                                    exit_code=int(parts[4]), signal=int(parts[5])))
        except (ValueError, IndexError):
            continue  # a line cut short by a full disk
    done.extend(Compile(**begun, end=None, peak_rss=None, exit_code=None, signal=0) for begun in open_.values())
    return sorted(done, key=lambda c: c.start)


def peak_concurrency(intervals: Iterable[tuple[float, float]]) -> int:
    """The most intervals open at one instant (an end at t comes before a start at t) (pure)."""
    spans = list(intervals)
    points = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    now = peak = 0
    for _, step in points:
        now += step
        peak = max(peak, now)
    return peak


def summarise(compiles: list[Compile], limit: int, ended_at: float) -> dict[str, object]:
    """summary.json's attempt ``jobs``: limit, peak concurrency, compiles, waiting, peak RSS per job."""
    peak_rss = max((c for c in compiles if c.peak_rss), key=lambda c: c.peak_rss or 0, default=None)
    return {
        "limit": limit,
        "peak_concurrency": peak_concurrency((c.start, c.end if c.end is not None else ended_at) for c in compiles),
        "compiles": len(compiles),
        "waited_s": round(sum(c.waited_s for c in compiles), 3),
        "killed": sum(1 for c in compiles if c.signal or c.end is None),
        "peak_rss_per_job": peak_rss.peak_rss if peak_rss else None,
        "peak_rss_job": peak_rss.name if peak_rss else None,
    }


# --- one attempt ---------------------------------------------------------------------------------------

class AttemptSlots:
    """One attempt's slot directory (``jobs-N`` in the run dir) with the plan's job count as the limit."""

    def __init__(self, run_dir: Path, number: int, limit: int) -> None:
        self.directory = run_dir / f"jobs-{number}"
        self.limit = max(1, limit)
        self.compiles: list[Compile] = []
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            (self.directory / launcher.LIMIT_FILE).write_text(f"{self.limit}\n")
        except OSError:  # a full run dir: the build still runs, without the limit (summary: limit null)
            self.env: dict[str, str] = {}
            return
        self.env = {launcher.SLOTS_ENV: str(self.directory)}

    def finish(self, ended_at: float) -> dict[str, object]:
        """Read what the launchers recorded; the slot files go (the records stay, as evidence)."""
        try:
            with (self.directory / launcher.RECORDS).open(encoding="utf-8", errors="replace") as handle:
                self.compiles = parse_compiles(handle)
        except OSError:
            self.compiles = []
        try:
            for slot in self.directory.glob("slot-*"):
                slot.unlink(missing_ok=True)
            (self.directory / launcher.LIMIT_FILE).unlink(missing_ok=True)
            if not any(self.directory.iterdir()):
                shutil.rmtree(self.directory, ignore_errors=True)
        except OSError:
            pass  # tidying only: the records were read above
        summary = summarise(self.compiles, self.limit, ended_at)
        if not self.env:
            summary["limit"] = None
        return summary
