"""``--force``: the build system rebuilds too, not only rocmbuild's steps.

Owns: before the first attempt of a forced build, removing the recipe's clean paths and the tree's
CMake caches (a fresh configure), the way the clean_build remedy removes them (effects.safe_remove:
never through a symlink, never outside the tree), and saying what was removed on the console, in
the event ``force.cleaned`` and in summary.json's ``force``.
"""

from __future__ import annotations

from dataclasses import replace

from rocmbuild.loop.effects import safe_remove
from rocmbuild.loop.remedybase import cmake_caches
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.records.journal import Forced
from rocmbuild.records.recorder import RunRecorder


def force_message(removed: list[str], refused: list[str], patterns: tuple[str, ...]) -> str:
    """What --force did, in one line. Pure."""
    if removed:
        shown = ", ".join(removed[:5]) + (f" (+{len(removed) - 5} more)" if len(removed) > 5 else "")
        said = f"--force: removed {shown} so that the build system rebuilds everything"
    elif patterns:
        said = "--force: the clean paths and CMake caches were already absent; the build starts from a clean tree"
    else:
        said = ("--force: the recipe names no clean paths and the tree has no CMake cache, so nothing was "
                "removed; the build system may still skip work it considers up to date")
    if refused:
        said += f"; not removed: {', '.join(refused[:3])}"
    return said


def force_clean(plan: BuildPlan, rec: RunRecorder) -> str:
    """Remove the clean paths and CMake caches; record what was removed; return the line to print."""
    patterns = (*plan.recipe.clean_paths, *cmake_caches(plan.source))
    removed, refused = safe_remove(plan.source, patterns) if patterns else ([], [])
    said = force_message(removed, refused, patterns)
    rec.journal = replace(rec.journal, force=Forced(tuple(removed), tuple(refused), tuple(patterns), said))
    rec.event("force.cleaned", removed=removed, refused=refused, detail=said)
    return said
