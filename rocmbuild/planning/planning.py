"""From recipe + host facts + options to BuildPlans (before anything runs).

Resolves the arch list (option, the caller's exported arch variable, or
detection), the source tree (--source, a bundled tree, or the workspace
checkout and the git commands that fetch it), MAX_JOBS, the interpreter the
build uses and the base environment changes; checks ``requires``.  Runs no
build and deletes nothing: ``plan``/``--dry-run`` stop here.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rocmbuild import paths
from rocmbuild.errors import SourceError, UsageError
from rocmbuild.host import arch as archmod
from rocmbuild.host import facts as hostmod
from rocmbuild.host import hipcompiler
from rocmbuild.host.allocation import capped_cpus, capped_memory
from rocmbuild.options import BuildOptions
from rocmbuild.planning.environment import (
    JOBS_REASON,
    BuildVariables,
    EnvChange,
    apply_changes,
    base_changes,
    choose_jobs,
    split_path,
)
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.planning.recipe import Recipe, find_recipe
from rocmbuild.process import command as proc
from rocmbuild.services import Services


def workspace_root() -> Path:
    return paths.cache_dir("src")


def _resolve_arch(recipe: Recipe, options: BuildOptions, environ: Mapping[str, str],
                  services: Services) -> tuple[archmod.Targets, str, list[str]]:
    option = options.arch
    if archmod.is_auto(option):
        # A caller who exported the recipe's arch variable has already answered the question.
        for variable in recipe.arch.variables:
            if environ.get(variable, "").strip():
                resolved = archmod.ResolvedArch(archmod.parse_arch_list(environ[variable]), f"${variable}", ())
                break
        else:
            resolved = archmod.resolve_arch(option, detect=services.detect_arch)
    else:
        resolved = archmod.resolve_arch(option)
    warnings = list(resolved.warnings)
    targets = resolved.targets
    if recipe.arch.plain:
        targets, stripped = archmod.plain_targets(targets)
        warnings += stripped
    return targets, resolved.origin, warnings


def _checkout_commands(recipe: Recipe, directory: Path) -> tuple[str, ...]:
    git, ref = recipe.source.git, recipe.source.ref
    assert git is not None
    d = shlex.quote(str(directory))
    marker = directory.parent / f".{recipe.name}.ref"
    current = marker.read_text().strip() if marker.is_file() else None
    if (directory / ".git").is_dir() and current == (ref or "HEAD"):
        return ()
    # One command whichever state a failed attempt left: a clone cut short by the network still
    # has .git, and is fetched and checked out on the retry instead of cloned again.
    commands = [f"if [ -d {d}/.git ]; then git -C {d} fetch --tags --force origin; "
                f"else git clone --recurse-submodules {shlex.quote(git)} {d}; fi"]
    if ref:
        commands.append(f"git -C {d} checkout {shlex.quote(ref)}")
    commands.append(f"git -C {d} submodule update --init --recursive")
    commands.append(f"printf '%s\\n' {shlex.quote(ref or 'HEAD')} > {shlex.quote(str(marker))}")
    return tuple(commands)


def _resolve_source(recipe: Recipe, options: BuildOptions) -> tuple[Path, str, tuple[str, ...]]:
    if options.source is not None:
        source = options.source.expanduser()
        if not source.is_dir():
            raise SourceError(
                f"source directory {options.source} does not exist" if not source.exists()
                else f"--source {options.source} is not a directory",
                todo="pass --source pointing at the checked-out tree, or leave it out to use the recipe's checkout",
            )
        return source.resolve(), "--source", ()
    directory = workspace_root() / recipe.name
    bundled = recipe.source_path
    if bundled is not None:
        if not bundled.is_dir():
            raise SourceError(f"recipe '{recipe.name}' names [source] path {recipe.source.path}, "
                              f"but {bundled} is not a directory",
                              todo=f"fix [source] path in {recipe.path} (relative to the recipe file) or pass --source")
        return directory, f"copy of the bundled source {bundled}", ()
    if recipe.source.git:
        return directory, f"workspace checkout of {recipe.source.git} at {recipe.source.ref or 'HEAD'}", \
            _checkout_commands(recipe, directory)
    raise SourceError(f"recipe '{recipe.name}' has no [source] and no --source was given",
                      todo="pass --source DIR, or add [source] git/ref to the recipe")


def _which_python(env: Mapping[str, str]) -> str:
    return shutil.which("python3", path=env.get("PATH")) or sys.executable


def hip_compiler_changes(compiler: hipcompiler.HipCompiler | None, option: bool,
                         environ: Mapping[str, str]) -> tuple[EnvChange, ...]:
    """HIPCXX for --hip-compiler (CMake's variable), and that clang's LLVM tools first on PATH
    (llvm-objdump, clang-offload-bundler, lld of the same LLVM as the compiler)."""
    if compiler is None or not compiler.is_clang:
        return ()
    changes = []
    if option:
        changes.append(EnvChange("HIPCXX", "set", compiler.path, "the HIP compiler (--hip-compiler)"))
    if compiler.llvm_bin and compiler.llvm_bin not in split_path(environ.get("PATH")):
        changes.append(EnvChange("PATH", "prepend", compiler.llvm_bin, "the HIP compiler's LLVM tools"))
    return tuple(changes)


def make_plan(recipe: Recipe, options: BuildOptions, environ: Mapping[str, str],
              facts: hostmod.HostFacts, services: Services) -> BuildPlan:
    """The plan for one recipe (pure but for reading the recipe's workspace marker)."""
    targets, arch_origin, warnings = _resolve_arch(recipe, options, environ, services)
    source, source_origin, checkout = _resolve_source(recipe, options)
    rocm = facts.rocm
    if rocm is None:
        warnings.append("no ROCm installation found: pass --rocm-path or set ROCM_PATH")
    job_vars = recipe.resources.job_variables
    caller_jobs = _caller_jobs(recipe, environ)
    if options.jobs is not None:
        jobs, jobs_reason = options.jobs, "--jobs"
    elif caller_jobs.isdigit() and int(caller_jobs) > 0:
        jobs, jobs_reason = int(caller_jobs), f"${job_vars[0]} from your environment"
    else:
        jobs, jobs_reason = choose_jobs(facts.cpus, facts.mem_available, recipe.resources.memory_per_job_gb)
        if "Slurm job" in facts.cpus_reason + facts.mem_reason:  # sized from the job's share, not the node
            jobs_reason += "; " + "; ".join(r for r in (facts.cpus_reason, facts.mem_reason) if "Slurm job" in r)
    override_jobs = options.jobs is not None
    if caller_jobs and not (caller_jobs.isdigit() and int(caller_jobs) > 0) and options.jobs is None:
        warnings.append(f"${job_vars[0]}={caller_jobs!r} is not a positive whole number: using {jobs}")
        override_jobs = True
    changes = base_changes(
        caller_env=environ, rocm=rocm, rocm_path_option=options.rocm_path is not None,
        variables=BuildVariables(arch_variables=recipe.arch.variables, arch_value=targets.as_env(recipe.arch.separator),
                                 job_variables=job_vars, jobs=jobs, jobs_option=override_jobs),
        recipe_env=recipe.env, loader_dirs=facts.loader_dirs,
    )
    # The recipe's [env] may name HIPCXX too: resolve in the build's environment.
    compiler = hipcompiler.resolve(options.hip_compiler, apply_changes(environ, changes),
                                   str(rocm.hipcc) if rocm and rocm.hipcc else None)
    changes += hip_compiler_changes(compiler, options.hip_compiler is not None, environ)
    libs = hipcompiler.default_device_libs(compiler, rocm.layout if rocm else None, environ)
    if libs is not None:
        changes += (EnvChange("HIP_DEVICE_LIB_PATH", "default", str(libs),
                              "device libraries with gfx942's bitcode, built by `make toolchain`"),)
    plan = BuildPlan(
        recipe=recipe, source=source, source_origin=source_origin, rocm=rocm, targets=targets,
        arch_origin=arch_origin, jobs=jobs, jobs_reason=jobs_reason, caller_env=dict(environ),
        changes=changes, python="", loader_dirs=facts.loader_dirs, checkout=checkout, warnings=tuple(warnings),
        hip_compiler=compiler, bundled_copy=recipe.source_path if options.source is None else None,
    )
    return replace(plan, python=_which_python(plan.env))


def _caller_jobs(recipe: Recipe, environ: Mapping[str, str]) -> str:
    job_vars = recipe.resources.job_variables
    return environ.get(job_vars[0], "").strip() if job_vars else ""


def jobs_from_memory(recipe: Recipe, options: BuildOptions, environ: Mapping[str, str]) -> bool:
    """Whether MAX_JOBS is rocmbuild's own choice from CPUs and memory (no --jobs, no valid caller value)."""
    caller = _caller_jobs(recipe, environ)
    return options.jobs is None and not (caller.isdigit() and int(caller) > 0)


def resized_jobs(plan: BuildPlan, cpus: int, mem_available: int) -> BuildPlan:
    """``plan`` with MAX_JOBS (and the recipe's other job knobs) sized for memory measured now (pure).

    The reason says so: ``run.started`` records it as ``jobs_reason``.
    """
    jobs, reason = choose_jobs(cpus, mem_available, plan.recipe.resources.memory_per_job_gb)
    reason = f"{reason}; measured again when its turn came (planned: {plan.jobs})"
    job_vars = set(plan.recipe.resources.job_variables)
    changes = tuple(replace(c, value=str(jobs)) if c.name in job_vars and c.reason == JOBS_REASON else c
                    for c in plan.changes)
    return replace(plan, changes=changes, jobs=jobs, jobs_reason=reason)


def at_its_turn(plan: BuildPlan, options: BuildOptions, environ: Mapping[str, str]) -> BuildPlan:
    """A later recipe of ``rocmbuild torch vllm``: its memory-dependent choices made now, not at planning.

    Planning measured memory before the recipes ahead of it ran; MAX_JOBS chosen from it is sized
    again from what they left free.  ``--jobs`` or a caller's MAX_JOBS are kept as they are.
    """
    if not jobs_from_memory(plan.recipe, options, environ):
        return plan
    cpus, _ = capped_cpus(*hostmod.cpu_count(), environ)
    mem_available, _ = capped_memory(*hostmod.memory_available(), environ)
    return resized_jobs(plan, cpus, mem_available)


def load_recipes(names: Sequence[str]) -> list[Recipe]:
    if not names:
        raise UsageError("no recipe given",
                         todo="name one, e.g. `rocmbuild vllm --arch gfx942` (see `rocmbuild recipes`)")
    return [find_recipe(name) for name in names]


def _installed(python: str, packages: Sequence[str], env: Mapping[str, str], run: proc.Run) -> bool:
    code = "import importlib.metadata as m, sys\nfor p in sys.argv[1:]: m.version(p)"
    return bool(run([python, "-c", code, *packages], env=env).ok)


@dataclass(frozen=True)
class MissingRequire:
    """A recipe's ``requires`` that is neither installed nor built earlier in the run."""

    recipe: str
    required: str
    python: str
    packages: tuple[str, ...]

    @property
    def message(self) -> str:
        return (f"recipe '{self.recipe}' requires '{self.required}', which is neither installed in {self.python} "
                f"nor built earlier in this run")


def check_requires(plans: Sequence[BuildPlan], services: Services) -> list[MissingRequire]:
    """Problems with ``requires``: a required recipe neither earlier in the list nor installed."""
    problems = []
    for index, plan in enumerate(plans):
        earlier = {p.recipe.name for p in plans[:index]}
        for required in plan.recipe.requires:
            if required in earlier:
                continue
            packages = find_recipe(required).packages or (required,)
            if not _installed(plan.python, packages, plan.env, services.run):
                problems.append(MissingRequire(plan.recipe.name, required, plan.python, tuple(packages)))
    return problems


def plan_all(names: Sequence[str], options: BuildOptions, environ: Mapping[str, str],
             services: Services) -> list[BuildPlan]:
    recipes = load_recipes(names)
    if options.source is not None and len(recipes) > 1:
        raise UsageError("--source names one tree, but several recipes were given",
                         why="each recipe cleans its own build paths: sharing one tree would let one delete "
                             "the other's build",
                         todo="build them one by one with --source each, or leave --source out to use each "
                              "recipe's own checkout")
    facts = hostmod.gather_host(options.rocm_path, environ, run=services.run)
    return [make_plan(recipe, options, environ, facts, services) for recipe in recipes]
