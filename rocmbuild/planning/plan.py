"""The build plan: everything one attempt needs, as one frozen value.

A plan is made once from recipe + host + options, and remedies turn one plan
into the next (``dataclasses.replace``).  ``plan``/``--dry-run`` render it.
It carries the host's typed values as they are (``host.rocm.Rocm``,
``host.arch.Targets``, the loader's dirs); the JSON and text forms of them
(the contract) are made here and only here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from rocmbuild.host.arch import Targets
from rocmbuild.host.hipcompiler import HipCompiler, device_lib_path
from rocmbuild.host.rocm import Rocm
from rocmbuild.planning.environment import EnvChange, apply_changes, changed_variables, variables_set
from rocmbuild.planning.recipe import Recipe
from rocmbuild.records.redact import redact_value


def rocm_json(rocm: Rocm | None) -> dict[str, str | None]:
    """The plan's ``rocm`` object (contract: the same keys whether ROCm was found or not)."""
    if rocm is None:
        return {"root": None, "version": None, "origin": "not found", "version_source": "", "layout": ""}
    return {"root": str(rocm.root), "version": rocm.version, "origin": rocm.origin,
            "version_source": rocm.version_source, "layout": rocm.layout}


@dataclass(frozen=True)
class BuildPlan:
    """One recipe's build: where, for which GPUs, with which environment and steps."""

    recipe: Recipe
    source: Path
    source_origin: str
    rocm: Rocm | None  # None: no ROCm found (the plan says so; preflight refuses)
    targets: Targets
    arch_origin: str
    jobs: int
    jobs_reason: str
    caller_env: Mapping[str, str]
    changes: tuple[EnvChange, ...]
    python: str
    # The loader's default dirs (host facts, gathered once by planning): never added to the library paths.
    loader_dirs: tuple[str, ...]
    checkout: tuple[str, ...] = ()  # commands that fetch the source (run from the workspace)
    warnings: tuple[str, ...] = ()
    run_prepare: bool = True  # prepare runs before the first attempt and after every clean
    opt_level: int | None = None  # set by lower_optimization: 2, then 1
    hip_compiler: HipCompiler | None = None  # what compiles device code (HIPCXX, else hipcc)
    bundled_copy: Path | None = None  # a recipe's bundled tree, copied to ``source`` before the first attempt

    @property
    def archs(self) -> tuple[str, ...]:
        """The target IDs as strings: the contract's ``"arch"`` list, records and messages."""
        return self.targets.names

    @property
    def rocm_root(self) -> str | None:
        return str(self.rocm.root) if self.rocm else None

    @property
    def rocm_version(self) -> str | None:
        return self.rocm.version if self.rocm else None

    @property
    def rocm_hipcc(self) -> str | None:
        """The ROCm install's hipcc, when it has one."""
        return str(self.rocm.hipcc) if self.rocm and self.rocm.hipcc else None

    @property
    def tools_llvm_bin(self) -> str | None:
        """The LLVM bin dir whose tools read this build's code objects: the HIP compiler's own."""
        if self.hip_compiler is not None and self.hip_compiler.llvm_bin:
            return self.hip_compiler.llvm_bin
        return str(self.rocm.llvm_bin) if self.rocm and self.rocm.llvm_bin else None

    @cached_property
    def env(self) -> dict[str, str]:
        """The full environment of the build."""
        return apply_changes(self.caller_env, self.changes)

    @property
    def env_set(self) -> dict[str, str]:
        """Every variable rocmbuild sets, with its full value."""
        return variables_set(self.caller_env, self.changes)

    def with_changes(self, *extra: EnvChange, **updates: Any) -> BuildPlan:
        """The next plan: more environment changes (applied after the current ones), other fields replaced."""
        return replace(self, changes=(*self.changes, *extra), **updates)

    @property
    def steps(self) -> dict[str, tuple[str, ...]]:
        s = self.recipe.steps
        return {"prepare": s.prepare, "build": s.build, "verify": s.verify}

    def to_json(self, ladders: Mapping[str, tuple[str, ...]] | None = None,
                limits: Mapping[str, str] | None = None, generic: tuple[str, ...] = ()) -> dict[str, object]:
        """The plan as ``plan --json`` prints it; ``ladders`` and ``generic`` come from the catalogue."""
        return {
            "recipe": self.recipe.name,
            "recipe_file": str(self.recipe.path),
            "source": str(self.source),
            "source_origin": self.source_origin,
            "rocm": rocm_json(self.rocm),
            "arch": list(self.archs),
            "arch_origin": self.arch_origin,
            "hip_compiler": self.hip_compiler.to_json() if self.hip_compiler else None,
            "hip_device_lib_path": device_lib_path(self.env),
            "jobs": self.jobs,
            "jobs_reason": self.jobs_reason,
            "python": self.python,
            "env": self.env_set,
            "env_diff": {k: {"before": b, "after": a}
                         for k, (b, a) in changed_variables(self.caller_env, self.env).items()},
            "checkout": list(self.checkout),
            "steps": {k: list(v) for k, v in self.steps.items()},
            "clean": list(self.recipe.clean_paths),
            "verify_artifacts": list(self.recipe.verify_artifacts),
            "ladder": {"generic": list(generic), **{k: list(v) for k, v in (ladders or {}).items()}},
            "warnings": list(self.warnings),
            "limits": dict(limits or {}),
        }


def render_plan(plan: BuildPlan, ladders: Mapping[str, tuple[str, ...]] | None = None,
                limits: Mapping[str, str] | None = None, generic: tuple[str, ...] = (),
                exceptions: Mapping[str, Mapping[str, tuple[str, ...]]] | None = None) -> str:
    """Human-readable plan, as printed by ``rocmbuild plan``."""
    out: list[str] = [f"Plan for recipe '{plan.recipe.name}' ({plan.recipe.path})"]
    add = out.append
    add(f"  source      {plan.source}  ({plan.source_origin})")
    rocm = rocm_json(plan.rocm)
    add(f"  ROCm        {rocm['root'] or 'not found'}  version {rocm['version'] or 'unknown'}"
        f"  ({rocm['origin']}{'; version from ' + rocm['version_source'] if rocm['version_source'] else ''})")
    add(f"  arch        {';'.join(plan.archs)}  ({plan.arch_origin})")
    if plan.hip_compiler is not None:
        add(f"  HIP compiler {plan.hip_compiler.describe()}")
    add(f"  device libs HIP_DEVICE_LIB_PATH={device_lib_path(plan.env) or '(unset: the compiler searches its ROCm)'}")
    add(f"  MAX_JOBS    {plan.jobs}  ({plan.jobs_reason})")
    add(f"  python      {plan.python}")
    if limits:
        add(f"  limits      budget {limits.get('budget')}, max attempts {limits.get('max_attempts')}, "
            f"stall timeout {limits.get('stall_timeout')}")
    for warning in plan.warnings:
        add(f"  warning     {warning}")
    add("")
    add("Environment changes (before -> after):")
    diff = changed_variables(plan.caller_env, plan.env)
    reasons = {c.name: c.reason for c in plan.changes}
    for name, (before, after) in diff.items():
        add(f"  {name}={redact_value(name, after) if after is not None else '(unset)'}")
        add(f"      was: {redact_value(name, before) if before is not None else '(unset)'}"
            f"    why: {reasons.get(name, '')}")
    if not diff:
        add("  (none)")
    add("")
    if plan.checkout:
        add("Checkout (from the workspace):")
        out.extend(f"  $ {cmd}" for cmd in plan.checkout)
    for step, commands in plan.steps.items():
        add(f"Step {step}:" + ("" if commands else " (none)"))
        out.extend(f"  $ {cmd}" for cmd in commands)
    add("")
    add(f"Clean paths (inside {plan.source}, plus CMake caches): {', '.join(plan.recipe.clean_paths) or '(none)'}")
    if plan.recipe.verify_artifacts:
        add(f"Verify artifacts for {', '.join(plan.archs)}: {', '.join(plan.recipe.verify_artifacts)}")
    add("")
    add("Remedy ladder (per failure category; a spent ladder stops the run; the generic order only for "
        "unrecognised failures with --escalate-unknown, never for one the catalogue names as the project's own bug):")
    for category, ladder in (ladders or {}).items():
        add(f"  {category:<26} {' -> '.join(ladder) if ladder else 'stop (not retryable)'}")
        for signature, own in (exceptions or {}).get(category, {}).items():
            add(f"  {'':<26}   except {signature}: {' -> '.join(own) if own else 'stop (not retryable)'}")
    add(f"  {'generic':<26} {' -> '.join(generic)}")
    return "\n".join(out)
