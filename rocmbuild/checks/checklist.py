"""Which checks run, for a build plan (preflight) and for ``doctor``.

The individual checks live in preflight.py; this module only chooses them
from what the plan or the machine says (the same ``host.rocm.Rocm`` and
``host.arch.Targets`` values in both), so preflight and doctor stay "the
same checks".
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from rocmbuild.checks import preflight, torchfacts
from rocmbuild.host.arch import Targets
from rocmbuild.host.hipcompiler import HipCompiler
from rocmbuild.host.rocm import Rocm
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.planning.recipe import Recipe
from rocmbuild.process import command as proc


def find_hipcc(hipcc: str | None, env: Mapping[str, str]) -> str | None:
    if hipcc and Path(hipcc).exists():
        return hipcc
    return shutil.which("hipcc", path=env.get("PATH"))


def toolchain_checks(*, rocm: Rocm | None, hipcc: str | None, archs: Targets, env: Mapping[str, str],
                     run: proc.Run, compiler: HipCompiler | None = None,
                     probes: preflight.ProbeCache | None = None) -> list[preflight.Check]:
    checks = [preflight.check_rocm_root(rocm)]
    if compiler is not None and compiler.is_clang:
        # The build compiles with this clang (HIPCXX), not hipcc: probe what the build will use.
        check = preflight.check_hip_compiler(compiler, env, run)
        checks.append(check)
        if not check.failed and archs:
            checks += preflight.check_arch_supported(compiler.path, archs, env, run, compiler=compiler,
                                                     cache=probes)
        return checks
    platform = preflight.check_hipcc_is_amd(hipcc, env, run)
    checks.append(platform)
    if hipcc and not platform.failed and archs:
        checks += preflight.check_arch_supported(hipcc, archs, env, run, cache=probes)
    return checks


def plan_checks(plan: BuildPlan, mem_available: int, run: proc.Run = proc.capture,
                probes: preflight.ProbeCache | None = None) -> list[preflight.Check]:
    """Preflight: what predictably fails a 2-hour build, checked in seconds."""
    env = plan.env
    hipcc = find_hipcc(plan.rocm_hipcc, env)
    checks = toolchain_checks(rocm=plan.rocm, hipcc=hipcc, archs=plan.targets, env=env, run=run,
                              compiler=plan.hip_compiler, probes=probes)
    resources = plan.recipe.resources
    checks += preflight.check_libraries(plan.recipe.preflight.libraries,
                                        plan.rocm.lib_dirs if plan.rocm else (), run)
    checks.append(preflight.check_disk(plan.source, resources.min_free_disk_gb))
    checks.append(preflight.check_memory(mem_available, resources.memory_per_job_gb))
    if "torch" in plan.recipe.requires:
        checks.append(preflight.check_torch_rocm(plan.python, env, run))
        checks += _torch_integrity(plan, run)
    if plan.recipe.preflight.python_modules:
        check = preflight.check_python_modules(plan.python, plan.recipe.preflight.python_modules, env, run)
        if check.failed and check.category == "missing_python_dependency" and prepare_installs(plan.recipe):
            # vLLM's prepare step pip-installs its build requirements: a fresh venv lacks them until then.
            # Checked again right after prepare (after_prepare_command), not refused here.
            check = replace(check, status=preflight.WARN, fatal=False,
                            detail=f"{check.detail} (the prepare step installs packages: checked again after it)")
        checks.append(check)
    return checks


def _torch_integrity(plan: BuildPlan, run: proc.Run) -> list[preflight.Check]:
    """torchfacts' checks: HIP version, arch list, companions, setuptools, build isolation."""

    steps = plan.recipe.steps
    return torchfacts.integrity_checks(plan.python or "python3", plan.env, rocm_version=plan.rocm_version,
                                       archs=plan.targets, steps=[*steps.prepare, *steps.build],
                                       prepare_installs=prepare_installs(plan.recipe), run=run)


_INSTALLS = re.compile(r"\b(?:pip3?|uv\s+pip|conda|mamba)\s+install\b")


def prepare_installs(recipe: Recipe) -> bool:
    """Whether the recipe's prepare step installs Python packages (pip/uv/conda install)."""
    return any(_INSTALLS.search(command) for command in recipe.steps.prepare)


# Prints Python's own "No module named" line for each missing module (the catalogue's
# missing_python_dependency signature), and fails, so the attempt is diagnosed like any step.
_AFTER_PREPARE = (
    "import importlib.util, sys\n"
    "missing = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]\n"
    "for m in missing: print(f\"ModuleNotFoundError: No module named '{m}'\")\n"
    "print('rocmbuild: after prepare, ' + ('not importable: ' + ', '.join(missing) if missing else 'modules ok'))\n"
    "sys.exit(1 if missing else 0)"
)


def after_prepare_command(plan: BuildPlan) -> str | None:
    """The check of the recipe's python modules that runs right after a prepare that installs packages."""
    modules = plan.recipe.preflight.python_modules
    if not modules or not prepare_installs(plan.recipe):
        return None
    return " ".join(shlex.quote(a) for a in (plan.python or "python3", "-c", _AFTER_PREPARE, *modules))


def render_checks(checks: Sequence[preflight.Check]) -> str:
    """The checks as the plan and preflight print them, one a line."""
    lines = []
    for check in checks:
        lines.append(f"  [{check.status}] {check.name}: {check.detail}")
        if check.todo and check.status != preflight.OK:
            lines.append(f"      what to do: {check.todo}")
    return "\n".join(lines)
