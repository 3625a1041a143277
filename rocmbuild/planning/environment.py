"""Environment changes as data, and the one pure function that applies them.

rocmbuild never edits ``os.environ``.  The environment of a build is the
caller's environment plus a tuple of EnvChange values: the base set composed
here from host facts (the ``host.rocm.Rocm`` value, the loader's dirs), recipe
and options, and whatever remedies add later.
Keeping the changes as data is what lets ``plan`` show a diff, summary.json
record "what this attempt ran with", and repro.sh re-enter it.

Rules (docs/rocm-facts.md):
- ROCM_PATH, ROCM_HOME, HIP_PATH, HIP_PLATFORM=amd; the recipe's arch
  variables; MAX_JOBS (and the recipe's other job knobs); the recipe's env.
- Both LIBRARY_PATH (link time) and LD_LIBRARY_PATH (load time) get every ROCm
  lib dir that exists: they fix different failures.  Except the loader's own
  default dirs (/usr/lib/<multiarch>, /lib, ...): they are searched
  anyway, and on LD_LIBRARY_PATH they override every binary's RUNPATH (a pyenv
  Python then loads the system libpython and ``import ssl`` breaks).
- A variable the caller already set is kept unless an option overrides it;
  for path lists the caller's entries stay first and ours follow (the
  caller's deliberate choice wins), except PATH, where the chosen ROCm's bin
  dirs go first so that ``--rocm-path`` really selects its hipcc.
- Path lists are deduplicated and never get empty entries (an empty entry in
  LD_LIBRARY_PATH means "the current directory").
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from rocmbuild.host.rocm import Rocm

Action = Literal["set", "default", "prepend", "append", "unset"]

PATH_LISTS = frozenset({"PATH", "LIBRARY_PATH", "LD_LIBRARY_PATH", "CMAKE_PREFIX_PATH", "CPATH", "PYTHONPATH"})


@dataclass(frozen=True)
class EnvChange:
    """One change to one variable, with the reason shown by ``plan``.

    ``set`` overrides; ``default`` sets only when the caller has not;
    ``prepend``/``append`` add entries to a path list; ``unset`` removes.
    """

    name: str
    action: Action
    value: str = ""
    reason: str = ""


def split_path(value: str | None) -> list[str]:
    return [p for p in (value or "").split(os.pathsep) if p]


def _merge(entries: Iterable[str]) -> str:
    seen: dict[str, None] = {}
    for entry in entries:
        if entry and entry not in seen:
            seen[entry] = None
    return os.pathsep.join(seen)


def apply_changes(base: Mapping[str, str], changes: Sequence[EnvChange]) -> dict[str, str]:
    """The environment after applying ``changes`` in order to ``base`` (pure)."""
    env = dict(base)
    for change in changes:
        current = env.get(change.name)
        if change.action == "set":
            env[change.name] = change.value
        elif change.action == "default":
            if not current:
                env[change.name] = change.value
        elif change.action == "prepend":
            env[change.name] = _merge([*split_path(change.value), *split_path(current)])
        elif change.action == "append":
            env[change.name] = _merge([*split_path(current), *split_path(change.value)])
        elif change.action == "unset":
            env.pop(change.name, None)
    return {k: v for k, v in env.items() if not (k in PATH_LISTS and v == "")}


def changed_variables(base: Mapping[str, str], env: Mapping[str, str]) -> dict[str, tuple[str | None, str | None]]:
    """name -> (before, after) for every variable that differs."""
    names = sorted(set(base) | set(env))
    return {n: (base.get(n), env.get(n)) for n in names if base.get(n) != env.get(n)}


def variables_set(base: Mapping[str, str], changes: Sequence[EnvChange]) -> dict[str, str]:
    """The full value of every variable rocmbuild touches (summary.json's attempt ``env``)."""
    env = apply_changes(base, changes)
    return {c.name: env[c.name] for c in changes if c.name in env}


# The reason of planning's job-count changes: a later recipe's MAX_JOBS is re-sized by finding them
# (planning.resized_jobs), so it is one name, not a string written twice.
JOBS_REASON = "parallel jobs"


def choose_jobs(cpus: int, mem_available_bytes: int, memory_per_job_gb: float) -> tuple[int, str]:
    """MAX_JOBS = min(CPUs, floor(available GiB / GiB per job)), at least 1 (docs/rocm-facts.md, memory per job)."""
    gib = mem_available_bytes / 2**30
    by_memory = math.floor(gib / memory_per_job_gb) if memory_per_job_gb > 0 else cpus
    jobs = max(1, min(cpus, by_memory))
    limit = "memory" if by_memory < cpus else "CPUs"
    return jobs, (
        f"min({cpus} CPUs, {gib:.1f} GiB available / {memory_per_job_gb:g} GiB per job = {by_memory})"
        f" = {jobs}, limited by {limit}"
    )


def without_loader_dirs(dirs: Iterable[str], loader_dirs: Collection[str]) -> tuple[str, ...]:
    """``dirs`` minus the loader's default dirs (compared normalised; pass resolved forms too)."""
    defaults = {os.path.normpath(d) for d in loader_dirs}
    return tuple(d for d in dirs if os.path.normpath(d) not in defaults)


@dataclass(frozen=True, kw_only=True)
class BuildVariables:
    """The variables that carry the GPU targets and the job count to the build, and their values."""

    arch_variables: Sequence[str]
    arch_value: str
    job_variables: Sequence[str]
    jobs: int
    jobs_option: bool  # the job count was chosen (--jobs, or a caller's value that had to be replaced)


def base_changes(
    *,
    caller_env: Mapping[str, str],
    rocm: Rocm | None,
    rocm_path_option: bool,
    variables: BuildVariables,
    recipe_env: Mapping[str, str],
    loader_dirs: Collection[str] = (),
) -> tuple[EnvChange, ...]:
    """The changes rocmbuild makes before any remedy (pure)."""
    changes: list[EnvChange] = []
    root_action: Action = "set" if rocm_path_option else "default"
    if rocm is not None:
        why = "ROCm root (--rocm-path)" if rocm_path_option else "ROCm root (discovered)"
        root = str(rocm.root)
        for name in ("ROCM_PATH", "ROCM_HOME", "HIP_PATH"):
            changes.append(EnvChange(name, root_action, root, why))
        # Directories already on the caller's PATH (e.g. /usr/bin of the system layout) keep their
        # place: moving them first would let system tools shadow a virtualenv's python3.
        # With --rocm-path its bin dirs always go first (the merge drops their later copies).
        on_path = set() if rocm_path_option else set(split_path(caller_env.get("PATH")))
        bins = [d for d in map(str, (*rocm.bin_dirs, *([rocm.llvm_bin] if rocm.llvm_bin else []))) if d not in on_path]
        if bins:
            changes.append(EnvChange("PATH", "prepend", os.pathsep.join(bins), "ROCm and LLVM tools first"))
        lib_dirs = without_loader_dirs(map(str, rocm.lib_dirs), loader_dirs)
        if lib_dirs:
            libs = os.pathsep.join(lib_dirs)
            changes.append(EnvChange("LIBRARY_PATH", "append", libs, "ROCm libraries at link time"))
            changes.append(EnvChange("LD_LIBRARY_PATH", "append", libs, "ROCm libraries at load time"))
        changes.append(EnvChange("CMAKE_PREFIX_PATH", "append", root, "CMake finds hip, rocblas, ... here"))
    # hipcc picks the NVIDIA platform on a host that also has CUDA.
    changes.append(EnvChange("HIP_PLATFORM", "default", "amd", "hipcc must not pick nvcc"))
    for name in variables.arch_variables:
        changes.append(EnvChange(name, "set", variables.arch_value, "GPU targets"))
    job_action: Action = "set" if variables.jobs_option else "default"
    for name in variables.job_variables:
        changes.append(EnvChange(name, job_action, str(variables.jobs), JOBS_REASON))
    for name, value in recipe_env.items():
        changes.append(EnvChange(name, "default", value, "recipe [env]"))
    return tuple(changes)
