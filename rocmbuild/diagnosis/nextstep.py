"""What to tell a person (or a provisioning script) to do next, and the exact command to do it.

One place for the text of refusals and of summary.json's ``todo``:
- the exact command a refusal names (``rocmbuild torch vllm --arch gfx942``);
- one todo for every failed preflight check at once (all missing libraries in
  one install line, not one library per rerun);
- the ``todo`` of each outcome.
Pure functions over values; advice.py keeps the per-category advice.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rocmbuild.diagnosis.advice import next_steps
from rocmbuild.host.libraries import install_line

if TYPE_CHECKING:  # the checks are a layer above: only their type is named here
    from rocmbuild.checks.preflight import Check


def exact_command(recipes: Sequence[str], archs: Sequence[str]) -> str:
    """The command line that builds ``recipes`` in order for ``archs``, quoted for a shell."""
    argv = ["rocmbuild", *dict.fromkeys(recipes), *(["--arch", ",".join(archs)] if archs else [])]
    return " ".join(shlex.quote(a) for a in argv)


@dataclass(frozen=True, kw_only=True)
class Required:
    """A recipe's ``requires`` that is missing: its name, the Python it is missing from, its packages."""

    name: str
    python: str
    packages: Sequence[str]


def requires_todo(missing: Required, recipes: Sequence[str], archs: Sequence[str], *,
                  torch_install: str | None = None, blockers: Sequence[str] = ()) -> str:
    """A missing ``requires``: what blocks the build before it (``blockers``, in order), then build it
    first (the exact command) or install it (``torch_install``: torchadvice's, from the source's pin)."""
    required, python, packages = missing.name, missing.python, missing.packages
    command = exact_command([required, *recipes], archs)
    if required == "torch":
        install = torch_install or (f"install a ROCm torch into {python} (`{shlex.quote(python)} -m pip install "
                                    "torch --index-url https://download.pytorch.org/whl/rocmX.Y` for the host's ROCm)")
    else:
        install = f"install {', '.join(packages) or required} into {python}"
    todo = f"build it first in the same run: `{command}`; or {install}"
    if blockers:
        steps = [*blockers, f"then {todo}"]
        return "first: " + "; ".join(dict.fromkeys(steps))
    return todo


# Blockers in the order they must be fixed: a ROCm too old for the arch first (it decides which
# toolchain and which torch fit), then the rest of the toolchain, then torch, then everything else.
_RANK = {"unsupported_arch": 0, "toolchain_missing": 1, "missing_library": 2}


def blocker_rank(check: Check) -> int:
    """Where a failed check's fix goes in the todo. Pure."""
    if check.name.startswith("ROCm root"):
        return 0
    if check.name.startswith("torch"):
        return 3
    return _RANK.get(check.category or "", 4)


def ordered(failed: Sequence[Check]) -> list[Check]:
    """The failed checks, first what must be fixed first (a stable sort: same rank keeps its order)."""
    return sorted(failed, key=blocker_rank)


def preflight_todo(failed: Sequence[Check], torch_command: str | None = None) -> str:
    """Every failed check's remedy at once; missing libraries share one install line.

    ``torch_command`` (``rocmbuild torch vllm --arch gfx942``) is named when torch is not a usable
    ROCm build, so the refusal says exactly what to run.
    """
    failed = ordered(failed)  # what must be fixed first comes first (ROCm, toolchain, torch, the rest)
    libraries = [c.name.removeprefix("library ") for c in failed
                 if c.category == "missing_library" and c.name.startswith("library ")]
    todos: list[str] = []
    for check in failed:
        if check.category == "missing_library" and check.name.startswith("library "):
            if libraries:
                todos.append(f"install the missing libraries ({', '.join(libraries)}): {install_line(libraries)}")
                libraries = []
            continue
        if check.name == "torch (ROCm)" and torch_command:
            todos.append(f"{check.todo} (or build torch in the same run: `{torch_command}`)" if check.todo
                         else f"`{torch_command}`")
        elif check.todo:
            todos.append(check.todo)
    return "; then ".join(dict.fromkeys(todos))


def resume_command(run_dir: Path) -> str:
    """The todo of an interrupted run: the exact command that continues it, quoted for a shell."""
    return f"rocmbuild resume {shlex.quote(str(run_dir))}"


def outcome_todo(outcome: str, diagnosis: Mapping[str, object] | None, diagnosed_todo: str | None,
                 stop_reason: str, known_todo: str | None = None) -> str:
    """summary.json's ``todo`` for how the run ended.

    ``known_todo``: what a step after the build (the wheel step) already knows to do; the todo is
    never vaguer than that, nor than the stop reason when no diagnosis says more.
    """

    if outcome in ("succeeded", "up_to_date"):
        return "nothing: the build succeeded and verified"
    if outcome == "interrupted":  # app.py and resuming.py say the exact command (resume_command)
        return "continue it with `rocmbuild resume RUN_DIR` when ready; the attempt logs show how far it got"
    if outcome == "budget_exhausted" and not (diagnosis and diagnosis.get("category") == "stalled"):
        return f"give the run more time (--budget) and rerun; {stop_reason}"
    if known_todo:
        return known_todo
    found = diagnosed_todo or next_steps(diagnosis)
    if found:
        return found
    if not diagnosis and stop_reason:
        return f"{stop_reason}: read the log it names, fix that, and rerun"
    return "read the last attempt's log and rerun"
