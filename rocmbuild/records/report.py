"""Rendering a run for a person: the attempts table, the outcome, what to do next.

Used at the end of a build (on stderr) and by ``rocmbuild report``.  Reads
only the summary dict (summary.json) and the events, so a past run renders
the same as a live one.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

# What a person should do when the ladder could not fix it, by category.
NEXT_STEPS: dict[str, str] = {
    "missing_library": (
        "The linker cannot find lib{library}. Install its development package ({package}), or put the "
        "directory holding lib{library}.so on LIBRARY_PATH (LD_LIBRARY_PATH does not help the linker)."
    ),
    "missing_runtime_library": (
        "{library} cannot be loaded. Add its directory to LD_LIBRARY_PATH or /etc/ld.so.conf.d/rocm.conf "
        "(then run ldconfig). If the soname is older than your ROCm's (e.g. .so.6 on ROCm 7), rebuild the "
        "binary against the installed ROCm."
    ),
    "arch_mismatch": (
        "The binary has no code object for {arch}. Build for the GPU you run on (--arch), clean the build "
        "directory so stale objects go, and check PYTORCH_ROCM_ARCH/GPU_ARCHS in your environment."
    ),
    "unsupported_arch": (
        "The compiler does not know {arch}. Install a ROCm release that supports it (gfx942 needs ROCm 6.0 "
        "or newer, gfx950 ROCm 7.0) and point --rocm-path at it, or build for another target."
    ),
    "compiler_crash": (
        "The compiler crashed even after lowering optimisation and jobs. Report it upstream with the "
        "preprocessed source named in the crash text; meanwhile try CMAKE_BUILD_TYPE=Release (no -g) or "
        "another ROCm version."
    ),
    "out_of_memory": (
        "Compile jobs ran out of memory even at a low MAX_JOBS. Add swap or memory, close other work, or "
        "pass --jobs 1; single links (rccl, hipBLASLt) may need > 16 GB on their own."
    ),
    "stale_build": (
        "The build directory belongs to another configuration. Remove it (the recipe's clean paths) or run "
        "`git clean -xdf` in the tree (destructive: commits are kept, untracked files go)."
    ),
    "abi_mismatch": (
        "An extension was built against another torch or libstdc++. Rebuild it against the installed torch "
        "(uninstall the old wheel first) and keep torch and its extensions from the same build."
    ),
    "toolchain_missing": (
        "A ROCm tool is missing or the CUDA toolchain was picked. Install ROCm (hipcc, hip-dev), set "
        "ROCM_PATH / --rocm-path, set HIP_PLATFORM=amd, and make sure torch is a ROCm build."
    ),
    "missing_python_dependency": (
        "Python module '{module}' is missing in the build's interpreter. Install the build requirements "
        "(`python3 -m pip install {module}` or the recipe's requirements file) in that same environment."
    ),
    "network": (
        "Downloads kept failing. Check the proxy/DNS/mirror settings, or pre-fetch sources (git submodules, "
        "FetchContent deps) and rerun; --backoff sets the wait between retries."
    ),
    "disk_full": "The disk is full. Free space (or point TMPDIR and the build at a bigger disk) and rerun.",
    "stalled": (
        "The build stopped printing output. Look at the process snapshot in the attempt log; raise "
        "--stall-timeout if a single step legitimately takes that long, or lower --jobs if the machine swaps."
    ),
    "unknown": (
        "rocmbuild does not recognise this failure. Read the decisive line and its context in the attempt "
        "log; rerun with --escalate-unknown to try the generic remedies, or add a signature in "
        "$XDG_CONFIG_HOME/rocmbuild/signatures/."
    ),
}


# Shapes whose own text says exactly what is missing: their advice beats the category's.
class _Blank(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "?"


@functools.lru_cache(maxsize=1)
def _signature_advice() -> dict[str, str]:
    """Each signature's own advice (where it has one), from the catalogue the build used."""
    from rocmbuild.diagnosis.catalogue import load_catalogue
    from rocmbuild.errors import CatalogueError

    try:
        catalogue = load_catalogue()
    except CatalogueError:  # a broken user file was reported when the build loaded it
        catalogue = load_catalogue(user=False)
    return {sig.id: sig.advice for sig in catalogue.signatures if sig.advice}


def next_steps(diagnosis: Mapping[str, Any] | None) -> str:
    """What to do about ``diagnosis``: its signature's own advice when it has one, else its category's."""
    if not diagnosis:
        return ""
    from rocmbuild.diagnosis.classifier import fill_advice

    own = _signature_advice().get(str(diagnosis.get("signature") or ""))
    if own:
        return fill_advice(own, {k: str(v) for k, v in (diagnosis.get("fields") or {}).items()})
    from rocmbuild.host.libraries import library_base, library_package_hint

    fields = _Blank({k: str(v) for k, v in (diagnosis.get("fields") or {}).items()})
    if "library" in fields:
        fields.setdefault("package", library_package_hint(fields["library"]))
        if diagnosis.get("category") == "missing_library":
            fields["library"] = library_base(fields["library"])
    template = NEXT_STEPS.get(str(diagnosis.get("category")), NEXT_STEPS["unknown"])
    return template.format_map(fields)


def _diagnosis_cell(diagnosis: Mapping[str, Any] | None) -> str:
    if not diagnosis:
        return "-"
    sig = diagnosis.get("signature")
    return f"{diagnosis.get('category')}" + (f" ({sig})" if sig else "")


def render_summary(summary: Mapping[str, Any], events: Sequence[Mapping[str, Any]] = (), width: int = 120) -> str:
    """The end-of-run text: attempts table, outcome, and on failure the decisive line and advice."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=False, no_color=True, highlight=False)
    table = Table(title=f"rocmbuild: {summary.get('recipe')} for {';'.join(summary.get('arch') or [])}",
                  title_justify="left", show_lines=False)
    for column in ("#", "duration", "ended", "exit", "diagnosis", "remedy applied next", "cache hits"):
        table.add_column(column, overflow="fold")
    for attempt in summary.get("attempts") or []:
        cache = attempt.get("cache") or {}
        cache_cell = (f"{cache.get('hits', 0)}/{cache.get('hits', 0) + cache.get('misses', 0)}"
                      if cache else "-")
        exit_code = attempt.get("exit_code")
        table.add_row(
            str(attempt.get("number")),
            f"{attempt.get('duration_s') or 0:.1f}s",
            str(attempt.get("ended")),
            "-" if exit_code is None else str(exit_code),
            _diagnosis_cell(attempt.get("diagnosis")),
            ", ".join(attempt.get("remedies") or []) or "-",
            cache_cell,
        )
    if summary.get("attempts"):  # an up_to_date run has none: no empty table
        console.print(table)
    else:
        console.print(table.title)
    outcome = summary.get("outcome")
    console.print(f"outcome: {outcome} (exit {summary.get('exit_code')})")
    if outcome == "running":
        console.print("the run is still going, or rocmbuild was killed before it could finish its records")
    attempts = summary.get("attempts") or []
    last = attempts[-1] if attempts else None
    diagnosis = last.get("diagnosis") if last else None
    # A run stopped by a signal or by the clock did not fail on a line: no decisive line, no advice.
    stopped_from_outside = last is not None and last.get("ended") in ("interrupted", "budget")
    if outcome not in ("succeeded", "running", None) and diagnosis and not stopped_from_outside:
        console.print(f"decisive line ({last.get('log') if last else ''}:{diagnosis.get('line')}):")
        console.print(f"  {diagnosis.get('text')}")
        context = _context_for(events, last.get("number") if last else None)
        if context:
            console.print("context:")
            for line in context:
                console.print(f"  | {line}")
        todo = _event_for(events, last.get("number") if last else None).get("todo")
        console.print(f"what to do: {todo or next_steps(diagnosis)}")
    if outcome == "interrupted" and summary.get("todo"):  # the exact `rocmbuild resume` command
        console.print(f"what to do: {summary.get('todo')}")
    reason = next((e.get("reason") for e in reversed(events) if e.get("event") == "run.finished"), None)
    if reason and outcome != "succeeded":
        console.print(f"why rocmbuild stopped: {reason}")
    notes = (str(e.get("message")) for e in events if e.get("event") in ("remedy.warning", "cache.warning"))
    for note in dict.fromkeys(notes):  # each once, in order: a remedy skipped on every attempt says it each time
        console.print(f"note: {note}")
    for warning in summary.get("warnings") or []:   # issue 17: extra archs, configure-time downgrades
        console.print(f"warning: {warning}")
    if outcome == "up_to_date" and isinstance(summary.get("up_to_date"), Mapping):
        compared = summary["up_to_date"].get("compared") or {}
        console.print("compared: " + ", ".join(sorted(compared)))
    console.print(f"records: {summary.get('run_dir')}")
    return buffer.getvalue()


def _event_for(events: Sequence[Mapping[str, Any]], attempt: int | None) -> Mapping[str, Any]:
    """The failure.diagnosed event of an attempt (it carries context and advice)."""
    for event in reversed(events):
        if event.get("event") == "failure.diagnosed" and event.get("attempt") == attempt:
            return event
    return {}


def _context_for(events: Sequence[Mapping[str, Any]], attempt: int | None) -> list[str]:
    return list(_event_for(events, attempt).get("context") or [])
