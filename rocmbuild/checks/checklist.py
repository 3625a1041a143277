"""Which checks run, for a build plan (preflight) and for ``doctor``.

The individual checks live in preflight.py; this module only chooses them
from what the plan or the machine says (the same ``host.rocm.Rocm`` and
``host.arch.Targets`` values in both), so preflight and doctor stay "the
same checks".
"""

from __future__ import annotations

import os
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
from rocmbuild.planning.torchadvice import torch_install
from rocmbuild.process import command as proc


def find_hipcc(hipcc: str | None, env: Mapping[str, str]) -> str | None:
    if hipcc and Path(hipcc).exists():
        return hipcc
    return shutil.which("hipcc", path=env.get("PATH"))


def toolchain_checks(*, rocm: Rocm | None, hipcc: str | None, archs: Targets, probing: preflight.Probing,
                     compiler: HipCompiler | None = None) -> list[preflight.Check]:
    """The ROCm root, the HIP compiler the build uses, and whether it compiles for ``archs``."""
    env: Mapping[str, str] = os.environ if probing.env is None else probing.env  # as check_arch_supported
    run = probing.run
    checks = [preflight.check_rocm_root(rocm)]
    if compiler is not None and compiler.is_clang:
        # The build compiles with this clang (HIPCXX), not hipcc: probe what the build will use.
        check = preflight.check_hip_compiler(compiler, env, run)
        checks.append(check)
        checks.append(preflight.check_cmake_for_clang_hip(compiler, env, run))
        if not check.failed and archs:
            checks += preflight.check_arch_supported(compiler.path, archs, probing, compiler=compiler)
        return checks
    platform = preflight.check_hipcc_is_amd(hipcc, env, run)
    checks.append(platform)
    if hipcc and not platform.failed and archs:
        checks += preflight.check_arch_supported(hipcc, archs, probing)
    return checks


def plan_checks(plan: BuildPlan, mem_available: int, run: proc.Run = proc.capture,
                probes: preflight.ProbeCache | None = None) -> list[preflight.Check]:
    """Preflight: what predictably fails a 2-hour build, checked in seconds."""
    env = plan.env
    hipcc = find_hipcc(plan.rocm_hipcc, env)
    checks = toolchain_checks(rocm=plan.rocm, hipcc=hipcc, archs=plan.targets,
                              probing=preflight.Probing(env=env, run=run, cache=probes), compiler=plan.hip_compiler)
    resources = plan.recipe.resources
    checks += preflight.check_libraries(plan.recipe.preflight.libraries,
                                        plan.rocm.lib_dirs if plan.rocm else (), run)
    checks.append(preflight.check_disk(plan.source, resources.min_free_disk_gb))
    checks.append(preflight.check_memory(mem_available, resources.memory_per_job_gb))
    if "torch" in plan.recipe.requires:
        torch = preflight.check_torch_rocm(plan.python, env, run)
        if torch.failed and torch.category != "missing_runtime_library":
            # The torch the source pins, for this host's ROCm (or ROCm first), not a generic index.
            install = torch_install(plan.python, plan.source, plan.rocm_version)
            if "uninstall" in torch.todo:  # a CPU/CUDA torch: it goes first
                python = plan.python or "python3"
                install = f"uninstall this torch (`{python} -m pip uninstall -y torch`); then {install}"
            torch = replace(torch, todo=install)
        checks.append(torch)
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
    use = torchfacts.TorchUse(rocm_version=plan.rocm_version, archs=plan.targets, steps=[*steps.prepare, *steps.build],
                              prepare_installs=prepare_installs(plan.recipe))
    return torchfacts.integrity_checks(plan.python or "python3", plan.env, use, run=run)


def wheel_step_check(plan: BuildPlan, run: proc.Run = proc.capture) -> preflight.Check:
    """--wheel-dir: what the wheel step needs (``wheel`` for setuptools < 70.1), checked before the build.

    A prepare step that installs packages may still bring it: then a warning, not a refusal.
    """
    check = preflight.check_wheel_step(plan.python or "python3", plan.env, run)
    if check.failed and plan.recipe.steps.wheel:
        # The recipe's own wheel step may not use setuptools' bdist_wheel at all.
        return replace(check, status=preflight.WARN, fatal=False,
                       detail=f"{check.detail} (the recipe has its own wheel step)")
    if check.failed and prepare_installs(plan.recipe):
        return replace(check, status=preflight.WARN, fatal=False,
                       detail=f"{check.detail} (the prepare step installs packages: it may bring it)")
    return check


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
