"""What a run was built with, beyond its environment: ``facts.json`` in the run dir.

Owns collecting, once at the start of a run (beside its first attempt: :func:`start_facts`),
the facts ``report --diff`` compares between a failing run and the last good one: ROCm root and
version, the HIP compiler (path and its ``--version`` first line), tool versions (cmake, ninja,
and setuptools, pip, torch in the build's interpreter), the source revision and submodule SHAs.
Each probe is a short command through ``proc.capture``, all at once; a missing tool is
recorded as ``null``, never an error.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from rocmbuild.host.hipcompiler import HipCompiler
from rocmbuild.process import command as proc
from rocmbuild.records.recorder import write_private
from rocmbuild.records.recordfile import CorruptRecord, JSONObject, read_json_object
from rocmbuild.records.redact import redact

FACTS_FILE = "facts.json"
_PY_VERSIONS = ("import importlib.metadata as m, json, sys\n"
                "out = {}\n"
                "for name in sys.argv[1:]:\n"
                "    try: out[name] = m.version(name)\n"
                "    except Exception: out[name] = None\n"
                "print(json.dumps(out))")


class FactsPlan(Protocol):
    """What the facts are asked of (planning's ``BuildPlan``, a layer above)."""

    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def python(self) -> str: ...
    @property
    def hip_compiler(self) -> HipCompiler | None: ...
    @property
    def source(self) -> Path: ...
    @property
    def rocm_root(self) -> str | None: ...
    @property
    def rocm_version(self) -> str | None: ...


_Call = tuple[list[str], Mapping[str, str] | None, float]


def _first_line(result: proc.CommandResult) -> str | None:
    """The answer's version line: the first line naming a version, else the first line.

    Debian's ``hipcc --version`` on a host without /dev/kfd prints rocm_agent_enumerator's Python
    traceback before ``HIP version: 5.2...``: the traceback's first line is no version to compare.
    """
    if not result.ok:
        return None
    lines = [line.strip() for line in result.output.splitlines() if line.strip()]
    return next((line for line in lines if "version" in line.lower()), lines[0] if lines else None)


def _probe_calls(plan: FactsPlan) -> dict[str, _Call]:
    """The probes, all independent of each other: ``{name: (argv, env, timeout)}``."""
    env = plan.env
    python = plan.python or "python3"
    compiler = plan.hip_compiler
    source = Path(plan.source)
    calls: dict[str, _Call] = {
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


def _assemble(plan: FactsPlan, results: Mapping[str, proc.CommandResult]) -> dict[str, object]:
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


def collect_facts(plan: FactsPlan, run: proc.Run = proc.capture) -> dict[str, object]:
    """The facts, asked now (the probes at once: they cost the slowest one)."""
    return _assemble(plan, proc.capture_many(run, _probe_calls(plan)))


def _write(run_dir: Path, facts: Mapping[str, object]) -> None:
    write_private(run_dir / FACTS_FILE, json.dumps(redact(dict(facts)), indent=2) + "\n")


def save_facts(run_dir: Path, plan: FactsPlan, run: proc.Run = proc.capture) -> None:
    _write(run_dir, collect_facts(plan, run))


class FactsJob:
    """facts.json gathered beside the run (:func:`start_facts`); :meth:`wait` before the final summary.

    Nothing before the first attempt decides on these facts, and their probes take 0.2-0.5 s (hipcc is a
    perl script that probes for GPUs, the build's Python imports importlib.metadata): a thread asks
    them while the run goes on, so they neither hold the first attempt up nor spend its ``--budget``.
    The file is written the moment the last answer is in, so a run killed after that still has it.
    """

    def __init__(self, run_dir: Path, plan: FactsPlan, run: proc.Run) -> None:
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._gather, args=(run_dir, plan, run), name="rocmbuild-facts",
                                        daemon=True)
        self._thread.start()

    def _gather(self, run_dir: Path, plan: FactsPlan, run: proc.Run) -> None:
        try:
            save_facts(run_dir, plan, run)
        except BaseException as exc:  # kept for wait(): a thread's exception would be lost
            self.error = exc

    def wait(self, timeout: float | None = 90) -> bool:
        """Until facts.json is written (the probes time out after 30 s at most); False when it could not be."""
        self._thread.join(timeout)
        return not self._thread.is_alive() and self.error is None


def start_facts(run_dir: Path, plan: FactsPlan, run: proc.Run = proc.capture) -> FactsJob:
    """Start gathering facts.json now, beside the run."""
    return FactsJob(run_dir, plan, run)


def load_facts(run_dir: Path) -> JSONObject:
    try:
        return read_json_object(run_dir / FACTS_FILE)
    except CorruptRecord:
        return {}  # facts are context for --diff; a run without them still renders
