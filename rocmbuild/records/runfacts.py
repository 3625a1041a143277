"""What a run was built with, beyond its environment: ``facts.json`` in the run dir (issue 16).

Owns collecting, once at the start of a run (beside its first attempt: :func:`start_facts`),
the facts ``report --diff`` compares between a failing run and the last good one: ROCm root and
version, the HIP compiler (path and its ``--version`` first line), tool versions (cmake, ninja,
and setuptools, pip, torch in the build's interpreter), the source revision and submodule SHAs.
Each probe is a short command through ``proc.capture`` (or ``proc.start``); a missing tool is
recorded as ``null``, never an error.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Mapping
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
        # Asked with the revision, not after it: every probe starts before the attempt's step does.
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


class FactsJob:
    """facts.json being gathered while the run goes on (:func:`start_facts`); :meth:`wait` ends it.

    Nothing in facts.json decides anything before the first attempt, and its probes take
    0.2-0.5 s (hipcc is a perl script that probes for GPUs, the build's Python imports
    importlib.metadata): they run beside the attempt.  The file is written by a thread the
    moment the last answer is in, so a run killed after that still has it; a run killed in
    the first second may have none (``report --diff`` then compares what summary.json holds).
    """

    def __init__(self, run_dir: Path, plan: Any, started: Mapping[str, Callable[[], proc.CommandResult]]) -> None:
        self.run_dir = run_dir
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._finish, args=(plan, started), name="rocmbuild-facts",
                                        daemon=True)
        self._thread.start()

    def _finish(self, plan: Any, started: Mapping[str, Callable[[], proc.CommandResult]]) -> None:
        try:
            _write(self.run_dir, _assemble(plan, {name: answer() for name, answer in started.items()}))
        except BaseException as exc:  # kept for wait(): a thread's exception would be lost
            self.error = exc

    def wait(self, timeout: float | None = 90) -> bool:
        """Until facts.json is written (the probes time out after 30 s at most); False when it could not be."""
        self._thread.join(timeout)
        return not self._thread.is_alive() and self.error is None


class DeferredFacts:
    """facts.json for a build: its probes started once the first attempt's process exists (:meth:`start`,
    from the attempt's ``on_start``), not on the way to it, where they only cost that start (their
    processes compete for the CPUs with rocmbuild's own start: ~5 ms of a build's first attempt).

    Started after the step, they are still rocmbuild's own children, not the build's: the runner's
    process tree leaves out what :mod:`command` started and has not collected yet (``pending_pids``).
    A run that ends without an attempt (up to date, preflight, an error) starts them when it waits for
    them, so its facts.json is there as before (app.py starts none after an interrupt).  A replaced
    runner (a test's) is asked at once, as :func:`start_facts` does: nothing it starts runs into the attempt.
    """

    def __init__(self, run_dir: Path, plan: Any, run: proc.Run = proc.capture) -> None:
        self._args = (run_dir, plan, run)
        self.job: FactsJob | None = None if run is proc.capture else start_facts(run_dir, plan, run)

    def start(self) -> None:
        if self.job is None:
            self.job = start_facts(*self._args)

    @property
    def started(self) -> bool:
        return self.job is not None

    @property
    def error(self) -> BaseException | None:
        return self.job.error if self.job is not None else None

    def wait(self, timeout: float | None = 90) -> bool:
        """Until facts.json is written (its probes started now if they were not); False when it could not be."""
        self.start()
        assert self.job is not None
        return self.job.wait(timeout)


def _answered(result: proc.CommandResult) -> Callable[[], proc.CommandResult]:
    return lambda: result


def start_facts(run_dir: Path, plan: Any, run: proc.Run = proc.capture) -> FactsJob:
    """Start gathering facts.json now: with the real runner, every probe's process exists on return.

    The probes are children the runner does not take for the build's, also when a step is running
    (``command.pending_pids``, left out of ``proctree.Tree``).  A replaced runner (a test's) is asked
    here and now: whatever it starts must not outlive this call into the attempt.
    """
    calls = _probe_calls(plan)
    started: dict[str, Callable[[], proc.CommandResult]] = {}
    if run is proc.capture:
        for name, (argv, env, timeout) in calls.items():
            started[name] = proc.start(argv, env=env, timeout=timeout).result
    else:
        for name, result in proc.capture_many(run, calls).items():
            started[name] = _answered(result)
    return FactsJob(run_dir, plan, started)


def load_facts(run_dir: Path) -> dict[str, Any]:
    try:
        return read_json_object(run_dir / FACTS_FILE)
    except CorruptRecord:
        return {}  # facts are context for --diff; a run without them still renders
