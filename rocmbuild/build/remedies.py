"""Remedies: each a small function from plan to plan, looked up by name.

A remedy gets the current BuildPlan, the Diagnosis that asked for it and a
RemedyContext (how to run a helper command; where to look for libraries) and
returns a RemedyResult: the next plan, whether it applied (a remedy that
cannot help -- a library that is nowhere, MAX_JOBS already 1 -- says so and the
ladder moves on), what it did, and what it removed.

Deletion is the one dangerous thing rocmbuild does, so it lives in
``safe_remove``: only relative paths inside the source tree, never through a
symlink, never outside it, every removed path recorded.
"""

from __future__ import annotations

import glob as globlib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from rocmbuild.host import ldcache

from rocmbuild.process import command as proc
from rocmbuild.host.arch import Detection, detect_local_archs
from rocmbuild.diagnosis.catalogue import REMEDY_NAMES
from rocmbuild.build.environment import EnvChange, split_path
from rocmbuild.host.libraries import library_base, library_package_hint
from rocmbuild.build.plan import BuildPlan
from rocmbuild.process.command import capture
from rocmbuild.process.safedelete import remove_paths


class DiagnosisLike(Protocol):
    @property
    def category(self) -> str: ...
    @property
    def fields(self) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class RemedyResult:
    name: str
    applied: bool
    plan: BuildPlan
    detail: str
    removed: tuple[str, ...] = ()
    warning: str | None = None
    refused: tuple[str, ...] = ()  # paths a clean would not delete, each with its reason


@dataclass(frozen=True)
class RemedyContext:
    """What remedies may use from the outside world (replaceable in tests)."""

    run: proc.Run = capture
    extra_library_dirs: tuple[Path, ...] = ()
    cache_in_use: bool = False
    # Local GPU detection (narrow_archs); the session passes Services.detect_arch.
    detect_archs: Callable[[], Detection | None] = detect_local_archs


# --- deletion ---------------------------------------------------------------

def cmake_caches(source: Path, max_depth: int = 4) -> list[str]:
    """Relative paths of CMakeCache.txt files and CMakeFiles dirs in the tree (no symlinks followed)."""
    found: list[str] = []
    root_depth = len(source.parts)
    for dirpath, dirnames, filenames in os.walk(source, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if d not in (".git", "node_modules") and not (here / d).is_symlink()]
        if len(here.parts) - root_depth >= max_depth:
            dirnames[:] = []
        if "CMakeCache.txt" in filenames:
            found.append(str((here / "CMakeCache.txt").relative_to(source)))
            if "CMakeFiles" in dirnames:
                found.append(str((here / "CMakeFiles").relative_to(source)))
    return found


def safe_remove(source: Path, patterns: Sequence[str]) -> tuple[list[str], list[str]]:
    """Remove what ``patterns`` (relative globs) match inside ``source``.

    Returns (removed, refused) as paths relative to the source tree, a refusal
    with its reason.  A pattern that is absolute or climbs out (``..``) is
    refused; the deletion itself (safedelete.py) goes through directory
    descriptors: never through a symlink, never across a mount point, never
    raising.  A match that is itself a symlink is unlinked (the link goes,
    what it points to stays).
    """
    root = source.resolve()
    refused: list[str] = []
    matched: list[str] = []
    for pattern in patterns:
        if os.path.isabs(pattern) or ".." in Path(pattern).parts:
            refused.append(f"{pattern} (outside the tree)")
            continue
        try:
            found = globlib.glob(pattern, root_dir=root, recursive=True, include_hidden=True)
        except OSError as exc:
            refused.append(f"{pattern} ({exc.strerror or exc})")
            continue
        matched.extend(rel for rel in sorted(found) if rel not in matched)
    removed, not_removed = remove_paths(root, matched)
    return removed, refused + not_removed


# --- library search ---------------------------------------------------------

def _pip_rocm_dirs(plan: BuildPlan, run: proc.Run) -> list[Path]:
    """Library dirs of pip-installed ROCm (rocm-sdk wheels) and torch's bundled ROCm libs."""
    probe = run(
        [plan.python, "-c", "import site,sys; print('\\n'.join(site.getsitepackages()+[site.getusersitepackages()]))"],
        env=plan.env,
    )
    dirs: list[Path] = []
    if probe.ok:
        for line in probe.output.splitlines():
            sp = Path(line.strip())
            if sp.is_dir():
                dirs.extend(p for p in sorted(sp.glob("_rocm_sdk*/lib")) if p.is_dir())
                dirs.extend(p for p in sorted(sp.glob("rocm_sdk*/lib")) if p.is_dir())
                if (sp / "torch" / "lib").is_dir():
                    dirs.append(sp / "torch" / "lib")
    return dirs


def _ldconfig_dirs(filename: str, run: proc.Run) -> list[Path]:
    return [Path(entry.path).parent for entry in ldcache.lookup(run) if entry.soname == filename]


def _search_tree(source: Path, filename: str, max_depth: int = 6) -> list[Path]:
    found = []
    root_depth = len(source.parts)
    for dirpath, dirnames, filenames in os.walk(source, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if d not in (".git", "node_modules", "__pycache__")]
        if len(here.parts) - root_depth >= max_depth:
            dirnames[:] = []
        if filename in filenames:
            found.append(here)
    return found


def find_library_dirs(plan: BuildPlan, filename: str, ctx: RemedyContext, *, versioned: bool = False) -> list[Path]:
    """Directories holding ``filename``: ROCm lib dirs, other ROCm installs, pip ROCm, ldconfig, the tree.

    ``versioned``: look for ``filename.*`` instead (a runtime soname next to a missing dev symlink).
    """
    candidates: list[Path] = list(plan.rocm.lib_dirs) if plan.rocm else []
    # Other ROCm installs (/opt/rocm-X.Y.Z) are not searched on purpose: their libraries have other
    # sonames (ROCm 7 renumbered them) and mixing two ROCm runtimes breaks at load time.
    candidates += list(ctx.extra_library_dirs)
    candidates += _pip_rocm_dirs(plan, ctx.run)
    candidates += _ldconfig_dirs(filename, ctx.run)
    candidates += _search_tree(plan.source, filename)
    seen: dict[str, Path] = {}
    for directory in candidates:
        present = any(directory.glob(f"{filename}.*")) if versioned else (directory / filename).exists()
        if present and str(directory) not in seen:
            seen[str(directory)] = directory
    return list(seen.values())


# --- the remedies -----------------------------------------------------------

def add_library_paths(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    name = "add_library_paths"
    library = diagnosis.fields.get("library") or diagnosis.fields.get("soname")
    if not library:
        return RemedyResult(name, False, plan, "the diagnosis names no library to look for")
    load_time = diagnosis.category == "missing_runtime_library"
    base = library_base(library)
    filename = library if load_time and ".so" in library else f"lib{base}.so"
    variable = "LD_LIBRARY_PATH" if load_time else "LIBRARY_PATH"
    dirs = find_library_dirs(plan, filename, ctx)
    # The loader's default dirs are searched anyway; on LD_LIBRARY_PATH they would override RUNPATHs.
    on_path = {*split_path(plan.env.get(variable)), *plan.loader_dirs}
    new_dirs = [d for d in dirs if str(d) not in on_path and os.path.realpath(d) not in on_path]
    if not new_dirs:
        if dirs:
            detail = (f"{filename} is in {dirs[0]}, which is already on {variable} or searched by default; "
                      "the path is not the problem")
        else:
            versioned = [] if load_time else find_library_dirs(plan, filename, ctx, versioned=True)
            detail = f"{filename} was not found in the ROCm lib dirs, pip-installed ROCm, ldconfig or the source tree"
            if versioned:
                detail += " (only a versioned soname exists: the development package is missing)"
        return RemedyResult(name, False, plan, detail,
                            warning=f"lib{base} is likely provided by {library_package_hint(base)}")
    chosen = os.pathsep.join(str(d) for d in new_dirs[:1])
    changes = (
        EnvChange("LIBRARY_PATH", "prepend", chosen, f"found {filename} (remedy add_library_paths)"),
        EnvChange("LD_LIBRARY_PATH", "prepend", chosen, f"found {filename} (remedy add_library_paths)"),
    )
    return RemedyResult(name, True, plan.with_changes(*changes),
                        f"found {filename} in {chosen}; added it to LIBRARY_PATH and LD_LIBRARY_PATH")


def clean_build(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    patterns = [*plan.recipe.clean_paths, *cmake_caches(plan.source)]
    removed, refused = safe_remove(plan.source, patterns)
    detail = f"removed {', '.join(removed)}" if removed else "nothing to remove"
    if refused:
        detail += f"; refused: {', '.join(refused)}"
    # A clean tree needs prepare again (e.g. hipify, vendored libraries).  Nothing removed = nothing
    # changed: not applied, so it does not spend an attempt (issue 12).
    return RemedyResult("clean_build", bool(removed), replace(plan, run_prepare=True) if removed else plan, detail,
                        removed=tuple(removed), refused=tuple(refused))


def uninstall_packages(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    name = "uninstall_packages"
    packages = list(plan.recipe.packages)
    if not packages:
        return RemedyResult(name, False, plan, "the recipe names no packages to uninstall")
    result = ctx.run([plan.python, "-m", "pip", "uninstall", "-y", *packages], env=plan.env, timeout=600)
    gone = re.findall(r"Successfully uninstalled (\S+)", result.output)
    if not gone:
        return RemedyResult(name, False, plan, f"none of {', '.join(packages)} was installed in {plan.python}")
    return RemedyResult(name, True, plan, f"uninstalled {', '.join(gone)} from {plan.python}")


_OPT_FLAG = re.compile(r"(?<!\S)-O(?:[0-3sgz]|fast)?(?!\S)")
FLAG_VARIABLES = ("CFLAGS", "CXXFLAGS", "HIPFLAGS", "HIPCC_COMPILE_FLAGS_APPEND")
CMAKE_CONFIG_FLAGS = tuple(
    f"CMAKE_{lang}_FLAGS_{config}" for lang in ("C", "CXX", "HIP") for config in ("RELEASE", "RELWITHDEBINFO")
)


def replace_opt_level(flags: str, level: int) -> str:
    """Replace every -O flag with -O<level>; add one if there is none (never two contradicting)."""
    if _OPT_FLAG.search(flags):
        replaced = _OPT_FLAG.sub(f"-O{level}", flags)
        return re.sub(rf"(-O{level})(\s+-O{level})+", r"\1", replaced)
    return f"{flags} -O{level}".strip()


def lower_optimization(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    name = "lower_optimization"
    level = {None: 2, 2: 1}.get(plan.opt_level)
    if level is None:
        return RemedyResult(name, False, plan, "already at -O1")
    env = plan.env
    reason = f"-O{level} (remedy lower_optimization)"
    changes = [EnvChange(var, "set", replace_opt_level(env.get(var, ""), level), reason) for var in FLAG_VARIABLES]
    for var in CMAKE_CONFIG_FLAGS:
        debug = " -g" if var.endswith("RELWITHDEBINFO") else ""
        changes.append(EnvChange(var, "set", f"-O{level}{debug} -DNDEBUG", reason))
    # vLLM splits CMAKE_ARGS on spaces (no quoting): one token per -D, no spaces inside values.
    kept = [t for t in env.get("CMAKE_ARGS", "").split()
            if not any(t.startswith(f"-D{v}=") for v in CMAKE_CONFIG_FLAGS)]
    # RelWithDebInfo (vLLM's default) too: there the -g of the default flags goes as well, which is
    # what ROCm 7.0's clang crashes on (ROCm/llvm-project#722).
    kept += [f"-D{var}=-O{level}" for var in CMAKE_CONFIG_FLAGS]
    changes.append(EnvChange("CMAKE_ARGS", "set", " ".join(kept), reason))
    # CMake caches the flags of the first configure: without a fresh configure nothing changes.
    removed, refused = safe_remove(plan.source, cmake_caches(plan.source))
    detail = f"-O3 -> -O{level} in {', '.join(FLAG_VARIABLES)}, CMake per-config HIP/CXX/C flags and CMAKE_ARGS"
    if removed:
        detail += f"; removed {', '.join(removed)} for a fresh configure"
    warning = ("changing the optimisation flags changes every compile command: "
               "expect a cold compiler cache (0% hits) on the next attempt") if ctx.cache_in_use else None
    return RemedyResult(name, True, plan.with_changes(*changes, opt_level=level), detail,
                        removed=tuple(removed), warning=warning, refused=tuple(refused))


def reduce_jobs(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    name = "reduce_jobs"
    if plan.jobs <= 1:
        return RemedyResult(name, False, plan, "MAX_JOBS is already 1")
    jobs = max(1, plan.jobs // 2)
    changes = [EnvChange(var, "set", str(jobs), f"halved from {plan.jobs} (remedy reduce_jobs)")
               for var in plan.recipe.resources.job_variables]
    return RemedyResult(name, True, plan.with_changes(*changes, jobs=jobs,
                                                      jobs_reason=f"halved from {plan.jobs} by reduce_jobs"),
                        f"{', '.join(plan.recipe.resources.job_variables)} {plan.jobs} -> {jobs}")


def wait_and_retry(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    return RemedyResult("wait_and_retry", True, plan, "nothing changes; waiting before the retry (transient failure)")


# CMake 4 refuses `cmake_minimum_required(VERSION <3.5)` in any file it reads, also in package
# configs the project does not own (Debian's hip-config.cmake).  CMake's own message names the
# workaround; as an environment variable (CMake >= 4.0 reads it) it also reaches nested CMake runs
# (setup.py, ExternalProject) that a -D flag on the outer command line never sees.
CMAKE_POLICY_MINIMUM = "3.5"


def set_cmake_policy_minimum(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    name = "set_cmake_policy_minimum"
    current = plan.env.get("CMAKE_POLICY_VERSION_MINIMUM", "").strip()
    if current:
        return RemedyResult(name, False, plan, f"CMAKE_POLICY_VERSION_MINIMUM is already {current}")
    change = EnvChange("CMAKE_POLICY_VERSION_MINIMUM", "set", CMAKE_POLICY_MINIMUM,
                       "CMake 4 refused an old cmake_minimum_required (remedy set_cmake_policy_minimum)")
    return RemedyResult(name, True, plan.with_changes(change),
                        f"CMAKE_POLICY_VERSION_MINIMUM={CMAKE_POLICY_MINIMUM}: CMake treats "
                        "cmake_minimum_required(VERSION <3.5) as 3.5 (its own suggested workaround)")


Remedy = Callable[[BuildPlan, DiagnosisLike, RemedyContext], RemedyResult]

REMEDIES: dict[str, Remedy] = {
    "add_library_paths": add_library_paths,
    "clean_build": clean_build,
    "uninstall_packages": uninstall_packages,
    "lower_optimization": lower_optimization,
    "reduce_jobs": reduce_jobs,
    "wait_and_retry": wait_and_retry,
    "set_cmake_policy_minimum": set_cmake_policy_minimum,
}
# Issue 17's remedies live in their own module (it imports RemedyResult from here, so registered last).
from rocmbuild.build.treeremedies import narrow_archs, sync_submodules  # noqa: E402

REMEDIES.update({"sync_submodules": sync_submodules, "narrow_archs": narrow_archs})
assert tuple(REMEDIES) == REMEDY_NAMES
