"""Keep the build's torch: a pip constraints file pinning the installed torch, for every pip the build runs.

A prepare step that pip-installs requirements (vLLM's ``requirements/rocm-build.txt``: torchvision,
torchaudio, triton) may otherwise pull in a torch from PyPI over the ROCm one, or a torchvision
built for another torch (``operator torchvision::nms does not exist`` at import).  With
``PIP_CONSTRAINT`` naming a file that says ``torch==<installed version>``, pip either finds
packages that fit the build's torch or fails saying why; it never replaces torch.  A user's own
``PIP_CONSTRAINT`` is kept (pip reads a space-separated list).
"""

from __future__ import annotations

from pathlib import Path

from rocmbuild.planning.environment import EnvChange
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.process import command as proc

CONSTRAINTS_FILE = "constraints.txt"
_VERSION = "import importlib.metadata as m; print(m.version('torch'))"


def installed_torch(python: str, env: dict[str, str] | None, run: proc.Run = proc.capture) -> str | None:
    """The version of the torch distribution installed for ``python`` (``2.8.0+rocm6.3``), or None."""
    result = run([python, "-c", _VERSION], env=env)
    lines = result.output.strip().splitlines() if result.ok else []
    return lines[-1].strip() if lines and lines[-1].strip() else None


def constraint_change(constraints: Path, existing: str | None) -> EnvChange:
    """PIP_CONSTRAINT with ours first, a user's own kept after it. Pure."""
    value = f"{constraints} {existing}".strip() if existing and str(constraints) not in existing else str(constraints)
    return EnvChange("PIP_CONSTRAINT", "set", value,
                     "keep the build's torch: pip installs in the build may not replace it (constraints file)")


def keep_torch(plan: BuildPlan, directory: Path, run: proc.Run = proc.capture) -> BuildPlan:
    """The plan with PIP_CONSTRAINT pinning the installed torch, when the recipe builds against torch."""
    if "torch" not in plan.recipe.requires:
        return plan
    version = installed_torch(plan.python or "python3", dict(plan.env), run)
    if version is None:
        return plan
    constraints = directory / CONSTRAINTS_FILE
    constraints.write_text(f"# written by rocmbuild: the torch this build compiles against\ntorch=={version}\n",
                           encoding="utf-8")
    return plan.with_changes(constraint_change(constraints, plan.env.get("PIP_CONSTRAINT")))
