"""What a run was built with, beyond its environment: ``facts.json`` in the run dir.

Owns collecting, once at the start of a run (before its first attempt: :func:`save_facts`),
the facts ``report --diff`` compares between a failing run and the last good one: ROCm root and
version, the HIP compiler (path and its ``--version`` first line), tool versions (cmake, ninja,
and setuptools, pip, torch in the build's interpreter), the source revision and submodule SHAs.
Each probe is a short command through ``proc.capture``, all at once; a missing tool is
recorded as ``null``, never an error.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rocmbuild.process import command as proc
from rocmbuild.records.recorder import write_private
from rocmbuild.records.recordfile import CorruptRecord, read_json_object
from rocmbuild.records.redact import redact

FACTS_FILE = "facts.json"
_PY_VERSIONS = ("import importlib.metadata as m, json, sys\n"
                "out = {}\n"
                "for name in sys.argv[1:]:\n"
                "    try: out[name] = m.version(name)\n"
                "    except Exception: out[name] = None\n"
                "print(json.dumps(out))")


def _first_line(result: proc.CommandResult) -> str | None:
    """The answer's version line: the first line naming a version, else the first line.

    Debian's ``hipcc --version`` on a host without /dev/kfd prints rocm_agent_enumerator's Python
    traceback before ``HIP version: 5.2...``: the traceback's first line is no version to compare.
    """
    if not result.ok:
        return None
    lines = [line.strip() for line in result.output.splitlines() if line.strip()]
    return next((line for line in lines if "version" in line.lower()), lines[0] if lines else None)


def _probe_calls(plan: Any) -> dict[str, tuple[list[str], Any, float]]:
    """The probes, all independent of each other: ``{name: (argv, env, timeout)}``."""
    env = plan.env
    python = plan.python or "python3"
    compiler = plan.hip_compiler
    source = Path(plan.source)
    calls: dict[str, tuple[list[str], Any, float]] = {
        "cmake": (["cmake", "--version"], env, 10),
        "ninja": (["ninja", "--version"], env, 10),
        "python": ([python, "-c", _PY_VERSIONS, "setuptools", "pip", "torch"], env, 30),
    }
    if compiler is not None:
        calls["compiler"] = ([compiler.path, "--version"], env, 10)
    if (source / ".git").exists():
        calls["revision"] = (["git", "-C", str(source), "rev-parse", "HEAD"], None, 10)
        if (source / ".gitmodules").is_file():
            calls["submodules"] = (["git", "-C", str(source), "submodule", "status", "--recursive"], None, 30)
    return calls


def _assemble(plan: Any, results: Mapping[str, proc.CommandResult]) -> dict[str, Any]:
    compiler = plan.hip_compiler
    source = Path(plan.source)
    tools: dict[str, str | None] = {"cmake": _first_line(results["cmake"]), "ninja": _first_line(results["ninja"])}
    result = results["python"]
    with contextlib.suppress(json.JSONDecodeError, IndexError):
        tools.update(json.loads(result.output.strip().splitlines()[-1]) if result.ok else {})
    revision = _first_line(results["revision"]) if "revision" in results else None
    submodules: dict[str, str] = {}
    status = results.get("submodules")
    if revision and status is not None and status.ok:
        for line in status.output.splitlines():
            parts = line.strip().lstrip("+-U").split()
            if len(parts) >= 2:
                submodules[parts[1]] = parts[0]
    return {
        "rocm": {"root": plan.rocm_root, "version": plan.rocm_version},
        "hip_compiler": {"path": compiler.path, "kind": compiler.kind, "version": _first_line(results["compiler"])}
        if compiler is not None else None,
        "tools": tools,
        "source": {"path": str(source), "revision": revision, "submodules": submodules},
    }


def collect_facts(plan: Any, run: proc.Run = proc.capture) -> dict[str, Any]:
    """The facts, asked now (the probes at once: they cost the slowest one)."""
    return _assemble(plan, proc.capture_many(run, _probe_calls(plan)))


def _write(run_dir: Path, facts: Mapping[str, Any]) -> None:
    write_private(run_dir / FACTS_FILE, json.dumps(redact(dict(facts)), indent=2) + "\n")


def save_facts(run_dir: Path, plan: Any, run: proc.Run = proc.capture) -> None:
    _write(run_dir, collect_facts(plan, run))


def load_facts(run_dir: Path) -> dict[str, Any]:
    try:
        return read_json_object(run_dir / FACTS_FILE)
    except CorruptRecord:
        return {}  # facts are context for --diff; a run without them still renders
