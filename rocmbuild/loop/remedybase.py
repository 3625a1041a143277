"""What every remedy gets and returns, and the tree query the cleaning remedies share.

``RemedyResult`` (the next plan, whether it applies, its effects as data), ``RemedyContext`` (what a
remedy may read from the outside world) and ``cmake_caches`` (what a fresh configure removes).  Its
own module so the remedy modules (remedies.py, which registers them all, and treeremedies.py) both
build on it without importing each other.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from rocmbuild.host.arch import Detection, detect_local_archs
from rocmbuild.loop.effects import Effect
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.process import command as proc
from rocmbuild.process.command import capture


class DiagnosisLike(Protocol):
    @property
    def category(self) -> str: ...
    @property
    def fields(self) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class RemedyResult:
    """What a remedy decided: the next plan and its effects; ``applied`` False = it cannot help."""

    name: str
    applied: bool
    plan: BuildPlan  # the next plan, if it applies
    detail: str
    effects: tuple[Effect, ...] = ()
    # When applying also depends on the effects (effects.settle): "removed" = only if something was
    # removed, "uninstalled" = only if something was uninstalled.  A failed command never applies.
    applies_if: Literal["always", "removed", "uninstalled"] = "always"
    warning: str | None = None


@dataclass(frozen=True)
class RemedyContext:
    """What remedies may read from the outside world (replaceable in tests); they change nothing in it."""

    run: proc.Run = capture  # read-only helper commands: the build's Python for its site dirs, ldconfig -p
    extra_library_dirs: tuple[Path, ...] = ()
    cache_in_use: bool = False
    # Local GPU detection (narrow_archs); the session passes Services.detect_arch.
    detect_archs: Callable[[], Detection | None] = detect_local_archs


# --- what a clean would remove (read-only) ---------------------------------

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
