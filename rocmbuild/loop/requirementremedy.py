"""``install_build_requirements``: a build failing on ``No module named X`` where the source declares X.

Installs the declared requirement (as the source writes it: ``setuptools-scm>=8``) into the build's
interpreter, and nothing else: a module the source does not declare is not guessed at (the remedy
does not apply, the ladder moves on and the run stops with the module named).  The torch family is
never installed this way: its ROCm build is the build's ABI (``requires`` / ``--requires-from``),
and a PyPI torch would replace it.  Read-only: the install is an ``Install`` effect (effects.py),
recorded as ``package.installed``; pip runs with the plan's environment, so the constraints that
keep the build's torch (``PIP_CONSTRAINT``, torchpin.py) apply to it too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocmbuild.loop.effects import Install
from rocmbuild.loop.remedybase import RemedyResult
from rocmbuild.planning.sourcereqs import declared, declaring, normalize, requirement_name

if TYPE_CHECKING:
    from rocmbuild.loop.remedybase import DiagnosisLike, RemedyContext
    from rocmbuild.planning.plan import BuildPlan

# Distributions that carry the build's torch ABI: installed from ROCm wheels or built, never by this remedy.
TORCH_FAMILY = frozenset({"torch", "torchvision", "torchaudio", "triton", "pytorch_triton_rocm"})


def install_build_requirements(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    """pip-install the declared build requirement providing the missing module (an effect)."""
    name = "install_build_requirements"
    module = str(diagnosis.fields.get("module") or "").strip()
    if not module:
        return RemedyResult(name, False, plan, "the diagnosis names no module")
    found = declaring(plan.source, module)
    if found is None:
        files = ", ".join(declared(plan.source).files) or "none found"
        return RemedyResult(name, False, plan,
                            f"'{module}' is not among the build requirements {plan.source} declares ({files}): "
                            "rocmbuild installs only what the source declares",
                            warning=f"install the package providing '{module}' into {plan.python} yourself, or "
                                    "fix the source's build requirements")
    requirement, file = found
    if normalize(requirement_name(requirement) or "") in TORCH_FAMILY:
        return RemedyResult(name, False, plan,
                            f"'{module}' is {requirement} ({file}): the build's torch must be a ROCm build, which "
                            "rocmbuild does not pip-install from PyPI (build it first, or --requires-from)")
    python = plan.python or "python3"
    return RemedyResult(name, True, plan, f"installed {requirement} (declared in {file}) into {python}",
                        effects=(Install(python, (requirement,), plan.env, declared_in=file),))
