"""What a run was built with, beyond its environment: ``facts.json`` in the run dir (issue 16).

Owns collecting, once at the start of a run, the facts ``report --diff`` compares between a
failing run and the last good one: ROCm root and version, the HIP compiler (path and its
``--version`` first line), tool versions (cmake, ninja, and setuptools, pip, torch in the build's
interpreter), the source revision and submodule SHAs.  Each probe is a short command through
``proc.capture``; a missing tool is recorded as ``null``, never an error.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from rocmbuild.process import command as proc

FACTS_FILE = "facts.json"
_PY_VERSIONS = ("import importlib.metadata as m, json, sys\n"
                "out = {}\n"
                "for name in sys.argv[1:]:\n"
                "    try: out[name] = m.version(name)\n"
                "    except Exception: out[name] = None\n"
                "print(json.dumps(out))")


def _first_line(result: proc.CommandResult) -> str | None:
    if not result.ok:
        return None
    lines = [line.strip() for line in result.output.splitlines() if line.strip()]
    return lines[0] if lines else None


def collect_facts(plan: Any, run: proc.Run = proc.capture) -> dict[str, Any]:
    env = plan.env
    python = plan.python or "python3"
    compiler = plan.hip_compiler
    source = Path(plan.source)
    # The probes are independent: run at once, they cost the slowest one before the first attempt.
    probes: dict[str, tuple[list[str], Any, float]] = {
        "cmake": (["cmake", "--version"], env, 10),
        "ninja": (["ninja", "--version"], env, 10),
        "python": ([python, "-c", _PY_VERSIONS, "setuptools", "pip", "torch"], env, 30),
    }
    if compiler is not None:
        probes["compiler"] = ([compiler.path, "--version"], env, 10)
    if (source / ".git").exists():
        probes["revision"] = (["git", "-C", str(source), "rev-parse", "HEAD"], None, 10)
    results = proc.capture_many(run, probes)
    tools: dict[str, str | None] = {"cmake": _first_line(results["cmake"]), "ninja": _first_line(results["ninja"])}
    result = results["python"]
    with contextlib.suppress(json.JSONDecodeError, IndexError):
        tools.update(json.loads(result.output.strip().splitlines()[-1]) if result.ok else {})
    revision = _first_line(results["revision"]) if "revision" in results else None
    submodules: dict[str, str] = {}
    if revision and (source / ".gitmodules").is_file():
        status = run(["git", "-C", str(source), "submodule", "status", "--recursive"], timeout=30)
        for line in status.output.splitlines() if status.ok else []:
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


def save_facts(run_dir: Path, plan: Any, run: proc.Run = proc.capture) -> None:
    from rocmbuild.records.recorder import write_private
    from rocmbuild.records.redact import redact

    write_private(run_dir / FACTS_FILE, json.dumps(redact(collect_facts(plan, run)), indent=2) + "\n")


def load_facts(run_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((run_dir / FACTS_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}
