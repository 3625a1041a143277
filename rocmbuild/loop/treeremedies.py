"""Remedies for the source tree's git state and for the arch list.

Owns ``sync_submodules`` (a submodule points at a commit its checkout does not
have: stale submodule URLs after upstream moved them, pytorch#47529) and
``narrow_archs`` (the final link overflows 32-bit relocations because the fat
binary holds too many gfx targets; upstream's only fix is fewer targets,
rocBLAS#1448).  Both are registered in ``remedies.REMEDIES`` and build on remedybase.py; like every
remedy, one that finds nothing to do says so and spends no attempt.  Both are
read-only: the git commands and the fresh configure's removals are effects
(effects.py), carried out by the session's executor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rocmbuild.host.arch import Targets, processor_of
from rocmbuild.loop.effects import RemovePaths, RunCommands
from rocmbuild.loop.remedybase import RemedyResult, cmake_caches
from rocmbuild.planning.environment import EnvChange

if TYPE_CHECKING:
    from rocmbuild.loop.remedybase import DiagnosisLike, RemedyContext
    from rocmbuild.planning.plan import BuildPlan

# Fetching a submodule can take long (a big repo over a slow link), but not forever.
GIT_TIMEOUT_S = 1800

SYNC_COMMANDS = (
    ("git", "submodule", "sync", "--recursive"),
    ("git", "submodule", "update", "--init", "--recursive"),
)


def sync_submodules(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    """Re-sync submodule URLs and update them; read-only (looks for .git): the git commands are an effect."""
    name = "sync_submodules"
    if not (plan.source / ".git").exists():
        return RemedyResult(name, False, plan, f"{plan.source} is not a git checkout: nothing to sync "
                            "(re-download the source with its submodules)")
    sync = RunCommands(SYNC_COMMANDS, cwd=plan.source, env=plan.env, timeout_s=GIT_TIMEOUT_S,
                       on_failure="the submodule's commit is not on its remote either: re-clone the "
                                  "source, or check out a ref whose submodules exist")
    path = diagnosis.fields.get("path")
    # A command that fails (or git missing) makes it not apply (effects.settle).
    return RemedyResult(name, True, plan, "ran `git submodule sync --recursive && git submodule update --init "
                        f"--recursive` in {plan.source}" + (f" (submodule {path})" if path else ""),
                        effects=(sync,))


def narrower_archs(requested: Targets, local: Sequence[str]) -> Targets | None:
    """The requested archs the local GPUs need, when that is a proper, non-empty subset; else None (pure)."""
    kept = requested.only(processor_of(a) for a in local)
    if not kept or len(kept) >= len(requested):
        return None
    return kept


def narrow_archs(plan: BuildPlan, diagnosis: DiagnosisLike, ctx: RemedyContext) -> RemedyResult:
    """The arch list becomes the requested archs the local GPUs need; read-only: detects the GPUs and
    lists the CMake caches, whose removal (a fresh configure) is an effect."""
    name = "narrow_archs"
    detection = ctx.detect_archs()
    local = detection.targets if detection else ()
    narrowed = narrower_archs(plan.targets, local)
    requested = ", ".join(plan.archs)
    if narrowed is None:
        if len(plan.targets) <= 1:
            why = f"the build is for one arch ({requested}) already"
        elif not local:
            why = "no local GPU was detected to narrow the list to"
        else:
            why = f"the local GPUs ({', '.join(local)}) need all of {requested}"
        return RemedyResult(name, False, plan, f"nothing narrower than {requested}: {why}",
                            warning="build fewer gfx targets (--arch with only the GPUs you run on), "
                                    "the only fix upstream knows for a relocation overflow")
    reason = f"narrowed from {requested} to the local GPUs (remedy narrow_archs)"
    separator = plan.recipe.arch.separator
    changes = [EnvChange(var, "set", narrowed.as_env(separator), reason) for var in plan.recipe.arch.variables]
    source = detection.source if detection else "detection"
    # CMake caches the arch list of the first configure: without a fresh configure nothing changes.
    fresh = RemovePaths(tuple(cmake_caches(plan.source)), purpose="fresh configure")
    detail = (f"archs {requested} -> {', '.join(narrowed.names)} (the GPUs found by {source}) in "
              f"{', '.join(plan.recipe.arch.variables) or 'the plan'}")
    return RemedyResult(name, True, plan.with_changes(*changes, targets=narrowed), detail, effects=(fresh,))
