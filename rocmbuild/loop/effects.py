"""What remedies do to the world, as data, and the one executor that does it.

Remedies (remedies.py, treeremedies.py) are pure or read-only: they return the
next plan plus *effects*, values saying what must happen outside the plan:

* ``RemovePaths``: delete tree-relative globs (a clean, or a fresh configure);
* ``Uninstall``: ``python -m pip uninstall -y`` packages in the build's interpreter;
* ``RunCommands``: helper commands in the tree (``git submodule sync``...).

:func:`execute` is the only code that carries effects out.  Deletion goes
through :func:`safe_remove` (process/safedelete.py underneath): only relative
paths inside the source tree, never through a symlink, never across a mount,
never outside the tree.  :func:`settle` then decides, from the remedy's own
condition (``RemedyResult.applies_if``) and what the effects did, whether the
remedy applied (a clean that removed nothing did not, so it spends no attempt),
and :func:`record` writes every removal as a ``path.removed`` event and every
refusal as ``path.refused``.
"""

from __future__ import annotations

import glob as globlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from rocmbuild.process import command as proc
from rocmbuild.process.safedelete import remove_paths

if TYPE_CHECKING:
    from rocmbuild.loop.remedybase import RemedyResult
    from rocmbuild.planning.plan import BuildPlan
    from rocmbuild.records.recorder import RunRecorder


@dataclass(frozen=True)
class RemovePaths:
    """Delete what these globs (relative to the source tree) match."""

    patterns: tuple[str, ...]
    purpose: Literal["clean", "fresh configure"] = "clean"


@dataclass(frozen=True)
class Uninstall:
    """``python -m pip uninstall -y`` these packages in the build's interpreter."""

    python: str
    packages: tuple[str, ...]
    env: Mapping[str, str]
    timeout_s: float = 600


@dataclass(frozen=True)
class RunCommands:
    """Helper commands, in order, in the tree; the first that fails ends them."""

    commands: tuple[tuple[str, ...], ...]
    cwd: Path
    env: Mapping[str, str]
    timeout_s: float
    on_failure: str | None = None  # the warning when one fails


Effect = RemovePaths | Uninstall | RunCommands


@dataclass(frozen=True)
class EffectReport:
    """What the effects did."""

    removed: tuple[str, ...] = ()  # relative to the tree
    refused: tuple[str, ...] = ()  # each with its reason
    uninstalled: tuple[str, ...] = ()
    failed: str | None = None  # the command that failed (or whose tool is missing), with why
    failure_warning: str | None = None


@dataclass(frozen=True)
class Applied:
    """A remedy after its effects: did it apply, the next plan, and what to record."""

    name: str
    applied: bool
    plan: BuildPlan
    detail: str
    warning: str | None
    report: EffectReport

    @property
    def removed(self) -> tuple[str, ...]:
        return self.report.removed

    @property
    def refused(self) -> tuple[str, ...]:
        return self.report.refused


# --- deletion ---------------------------------------------------------------

def safe_remove(source: Path, patterns: Sequence[str]) -> tuple[list[str], list[str]]:
    """Remove what ``patterns`` (relative globs) match inside ``source``.

    Returns (removed, refused) as paths relative to the source tree, a refusal
    with its reason.  A pattern that is absolute or climbs out (``..``) is
    refused; the deletion itself (safedelete.py) goes through directory
    descriptors: never through a symlink, never across a mount point, never
    raising.  A match that is itself a symlink is unlinked (the link goes,
    what it points to stays).
    """
    root = source.resolve()
    refused: list[str] = []
    matched: list[str] = []
    for pattern in patterns:
        if os.path.isabs(pattern) or ".." in Path(pattern).parts:
            refused.append(f"{pattern} (outside the tree)")
            continue
        try:
            found = globlib.glob(pattern, root_dir=root, recursive=True, include_hidden=True)
        except OSError as exc:
            refused.append(f"{pattern} ({exc.strerror or exc})")
            continue
        matched.extend(rel for rel in sorted(found) if rel not in matched)
    removed, not_removed = remove_paths(root, matched)
    return removed, refused + not_removed


# --- the executor -----------------------------------------------------------

def execute(effects: Sequence[Effect], *, source: Path, run: proc.Run) -> EffectReport:
    """Carry the effects out, in order (the one place remedies' effects happen)."""
    removed: list[str] = []
    refused: list[str] = []
    uninstalled: list[str] = []
    for effect in effects:
        if isinstance(effect, RemovePaths):
            gone, kept = safe_remove(source, effect.patterns)
            removed += [p for p in gone if p not in removed]
            refused += kept
        elif isinstance(effect, Uninstall):
            result = run([effect.python, "-m", "pip", "uninstall", "-y", *effect.packages], env=dict(effect.env),
                         timeout=effect.timeout_s)
            uninstalled += re.findall(r"Successfully uninstalled (\S+)", result.output)
        else:
            for argv in effect.commands:
                result = run(list(argv), env=dict(effect.env), cwd=effect.cwd, timeout=effect.timeout_s)
                if result.missing:
                    return EffectReport(tuple(removed), tuple(refused), tuple(uninstalled),
                                        failed=f"{argv[0]} is not installed")
                if not result.ok:
                    last = (result.output.strip().splitlines() or ["no output"])[-1]
                    return EffectReport(tuple(removed), tuple(refused), tuple(uninstalled),
                                        failed=f"`{' '.join(argv)}` failed in {effect.cwd}: {last}",
                                        failure_warning=effect.on_failure)
    return EffectReport(tuple(removed), tuple(refused), tuple(uninstalled))


def settle(result: RemedyResult, report: EffectReport) -> Applied:
    """Whether the remedy applied, given what its effects did (pure), and how to say so."""
    applied, detail, warning = result.applied, result.detail, result.warning
    if not applied:  # decided without effects (nothing to look for, already at the floor...)
        return Applied(result.name, False, result.plan, detail, warning, report)
    if result.applies_if == "removed":  # a clean: nothing removed = nothing changed
        applied = bool(report.removed)
        detail = f"removed {', '.join(report.removed)}" if report.removed else "nothing to remove"
        if report.refused:
            detail += f"; refused: {', '.join(report.refused)}"
    elif report.removed:  # caches removed alongside (a fresh configure)
        detail += f"; removed {', '.join(report.removed)} for a fresh configure"
    if result.applies_if == "uninstalled":
        packages = [p for e in result.effects if isinstance(e, Uninstall) for p in e.packages]
        applied = bool(report.uninstalled)
        detail = (f"uninstalled {', '.join(report.uninstalled)} from {result.plan.python}" if applied
                  else f"none of {', '.join(packages)} was installed in {result.plan.python}")
    if report.failed is not None:  # a command the remedy needed did not succeed
        applied, detail = False, report.failed
        warning = report.failure_warning or warning
    return Applied(result.name, applied, result.plan, detail, warning, report)


def carry_out(result: RemedyResult, *, source: Path, run: proc.Run) -> Applied:
    """execute + settle: a remedy's result, done.  Nothing runs for one that already does not apply."""
    if not result.applied:
        return settle(result, EffectReport())
    return settle(result, execute(result.effects, source=source, run=run))


def record(rec: RunRecorder, applied: Applied, source: Path) -> None:
    """Every removal a ``path.removed`` event, every refusal a ``path.refused`` one."""
    for path in applied.removed:
        rec.event("path.removed", remedy=applied.name, path=str(source / path))
    for refusal in applied.refused:  # a clean that would leave the tree (symlink, mount point) says so
        rec.event("path.refused", remedy=applied.name, path=refusal)
