"""Remedies: each a small function from plan to the next plan plus effects, looked up by name.

A remedy gets the current BuildPlan, the Diagnosis that asked for it and a
RemedyContext (how to run a read-only helper command; where to look for
libraries) and returns a RemedyResult: the next plan, whether it applies (a
remedy that cannot help -- a library that is nowhere, MAX_JOBS already 1 --
says so and the ladder moves on), what it does, and its *effects* as data
(paths to remove, packages to uninstall, commands to run: effects.py).

Remedies change nothing outside the plan: they are pure, or read-only where
they search (``add_library_paths`` reads the filesystem and asks the build's
Python and ldconfig where libraries are; ``clean_build``, ``lower_optimization``
and ``narrow_archs`` list the tree's CMake caches).  The one executor in
effects.py carries the effects out and settles whether a conditional remedy
applied (``applies_if``: a clean applies only if it removed something, an
uninstall only if something was uninstalled).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from rocmbuild.diagnosis.catalogue import REMEDY_NAMES
from rocmbuild.host import ldcache
from rocmbuild.host.libraries import library_base, library_package_hint
from rocmbuild.loop.effects import RemovePaths, Uninstall
from rocmbuild.loop.jobsizing import MemoryEvidence, next_jobs
from rocmbuild.loop.remedybase import DiagnosisLike, RemedyContext, RemedyResult, cmake_caches
from rocmbuild.loop.requirementremedy import install_build_requirements
from rocmbuild.loop.treeremedies import narrow_archs, sync_submodules
from rocmbuild.planning.environment import EnvChange, split_path
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.process import command as proc

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
    """Put the missing library's directory on LIBRARY_PATH and LD_LIBRARY_PATH.

    Read-only: searches the filesystem, asks the build's Python for its site dirs and ldconfig -p.
    """
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
    """Remove the recipe's clean paths and the tree's CMake caches (read-only: lists the caches)."""
    patterns = (*plan.recipe.clean_paths, *cmake_caches(plan.source))
    # A clean tree needs prepare again (e.g. hipify, vendored libraries).  Nothing removed = nothing
    # changed: not applied, so it does not spend an attempt.
    return RemedyResult("clean_build", True, replace(plan, run_prepare=True), "clean the build paths",
                        effects=(RemovePaths(patterns),), applies_if="removed")


def uninstall_packages(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    """Uninstall the recipe's packages from the build's interpreter (pure: the uninstall is an effect)."""
    name = "uninstall_packages"
    packages = tuple(plan.recipe.packages)
    if not packages:
        return RemedyResult(name, False, plan, "the recipe names no packages to uninstall")
    return RemedyResult(name, True, plan, f"uninstall {', '.join(packages)} from {plan.python}",
                        effects=(Uninstall(plan.python, packages, plan.env),), applies_if="uninstalled")


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
    """-O3 -> -O2 (then -O1) for host and device code; read-only: lists the CMake caches, whose
    removal (a fresh configure) is an effect."""
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
    fresh = RemovePaths(tuple(cmake_caches(plan.source)), purpose="fresh configure")
    detail = f"-O3 -> -O{level} in {', '.join(FLAG_VARIABLES)}, CMake per-config HIP/CXX/C flags and CMAKE_ARGS"
    warning = ("changing the optimisation flags changes every compile command: "
               "expect a cold compiler cache (0% hits) on the next attempt") if ctx.cache_in_use else None
    return RemedyResult(name, True, plan.with_changes(*changes, opt_level=level), detail,
                        effects=(fresh,), warning=warning)


def reduce_jobs(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    """Halve MAX_JOBS and the recipe's other job knobs, floor 1; after a memory failure fewer, from the
    peak per compile job the diagnosis carries (jobsizing.py) (pure)."""
    name = "reduce_jobs"
    if plan.jobs <= 1:
        return RemedyResult(name, False, plan, "MAX_JOBS is already 1")
    # Sized from the attempt's peak per compile job after a memory failure, else halved (jobsizing.py).
    found = getattr(diagnosis, "memory", None)
    jobs, reason = next_jobs(plan.jobs, found if isinstance(found, MemoryEvidence) else None)
    changes = [EnvChange(var, "set", str(jobs), f"{reason} (remedy reduce_jobs)")
               for var in plan.recipe.resources.job_variables]
    return RemedyResult(name, True, plan.with_changes(*changes, jobs=jobs, jobs_reason=reason),
                        f"{', '.join(plan.recipe.resources.job_variables)} {plan.jobs} -> {jobs} ({reason})")


def wait_and_retry(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    """Nothing changes; the session backs off before the retry (pure)."""
    return RemedyResult("wait_and_retry", True, plan, "nothing changes; waiting before the retry (transient failure)")


# A download whose hash does not match is a bad copy (truncated, rewritten by a proxy, a cached
# partial file) or a changed upstream file: waiting changes neither.  Fetch it once more with the
# cached copy gone; if it fails the same way, the pinned hash or URL is what needs changing (the
# ladder holds this remedy once, so the run then stops with that advice).
_NO_CACHE = (("PIP_NO_CACHE_DIR", "1"), ("UV_NO_CACHE", "1"))


def _tree_relative(plan: BuildPlan, value: str) -> str | None:
    """``value`` as a path relative to the source tree, when it names a file inside it (else None)."""
    if not value or "/" not in value or any(c in value for c in "*?["):
        return None
    path = Path(value)
    if not path.is_absolute():
        path = plan.source / path
    try:
        return str(Path(os.path.normpath(path)).relative_to(plan.source))
    except ValueError:
        return None


def refetch_download(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    """Remove the mismatching download (when it lies in the tree) and make pip/uv fetch afresh (pure)."""
    name = "refetch_download"
    partial = _tree_relative(plan, diagnosis.fields.get("file", "") or diagnosis.fields.get("path", ""))
    why = "a download did not match its hash: no cached copy (remedy refetch_download)"
    changes = [EnvChange(var, "set", value, why) for var, value in _NO_CACHE if plan.env.get(var) != value]
    if not changes and partial is None:
        return RemedyResult(name, False, plan, "pip/uv caches are already off and no partial download in the tree "
                            "is named: a second fetch would meet the same file")
    effects = (RemovePaths((partial,), purpose="clean"),) if partial else ()
    what = f"remove {partial} and " if partial else ""
    return RemedyResult(name, True, plan.with_changes(*changes),
                        f"{what}download again without pip's / uv's cache (once; a second mismatch stops the run)",
                        effects=effects)


# CMake 4 refuses `cmake_minimum_required(VERSION <3.5)` in any file it reads, also in package
# configs the project does not own (Debian's hip-config.cmake).  CMake's own message names the
# workaround; as an environment variable (CMake >= 4.0 reads it) it also reaches nested CMake runs
# (setup.py, ExternalProject) that a -D flag on the outer command line never sees.
CMAKE_POLICY_MINIMUM = "3.5"


def set_cmake_policy_minimum(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    """CMAKE_POLICY_VERSION_MINIMUM for CMake 4 (pure)."""
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
    "sync_submodules": sync_submodules,  # the remedies about the tree live in treeremedies.py
    "narrow_archs": narrow_archs,
    "refetch_download": refetch_download,
    "install_build_requirements": install_build_requirements,
}
assert tuple(REMEDIES) == REMEDY_NAMES
