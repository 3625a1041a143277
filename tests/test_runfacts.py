"""records/runfacts.py: facts.json gathered beside the first attempt, identical to asking in line."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from rocmbuild.process import command
from rocmbuild.records.runfacts import FACTS_FILE, collect_facts, save_facts, start_facts
from tests.test_overnight import _read, detached


def _slow_tool(directory: Path, name: str, version: str) -> None:
    """A real program that takes a while to say its version (hipcc is a perl script that probes GPUs)."""
    path = directory / name
    path.write_text(f"#!/bin/sh\nsleep 0.3\necho '{name} version {version}'\n")
    path.chmod(0o755)


def _plan(tmp_path: Path) -> SimpleNamespace:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("cmake", "ninja", "hipcc"):
        _slow_tool(bin_dir, name, "9.9")
    source = tmp_path / "src"
    source.mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return SimpleNamespace(env=env, python=None, source=source, rocm_root="/opt/rocm", rocm_version="6.4.1",
                           hip_compiler=SimpleNamespace(path=str(bin_dir / "hipcc"), kind="hipcc"))


def test_the_file_matches_asking_in_line(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    save_facts(run_dir, plan)
    command._VERSIONS.clear()  # asked again, in line, for the comparison
    assert json.loads((run_dir / FACTS_FILE).read_text()) == json.loads(json.dumps(collect_facts(plan)))
    facts = json.loads((run_dir / FACTS_FILE).read_text())
    assert facts["tools"]["cmake"] == "cmake version 9.9" and facts["hip_compiler"]["version"] == "hipcc version 9.9"


@pytest.mark.integration
def test_a_run_killed_mid_attempt_keeps_its_facts(tmp_path: Path) -> None:
    pid, run_dir, _ = detached(tmp_path)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
            (run_dir / FACTS_FILE).exists() and "building part 1" in _read(run_dir / "attempt-1.log")):
        time.sleep(0.1)
    psutil.Process(pid).kill()  # SIGKILL mid-attempt: nothing at the end of the run is reached
    psutil.Process(pid).wait(timeout=10) if psutil.pid_exists(pid) else None
    assert json.loads((run_dir / "summary.json").read_text())["outcome"] == "running"  # killed before its end
    facts = json.loads((run_dir / FACTS_FILE).read_text())  # written as soon as its probes answered
    assert set(facts) == {"rocm", "hip_compiler", "tools", "source"}
    assert {"cmake", "ninja", "setuptools", "pip", "torch"} <= set(facts["tools"])


def test_a_version_answer_after_a_traceback_records_the_version_line(tmp_path: Path) -> None:
    """hipcc on a host without /dev/kfd: rocm_agent_enumerator's traceback comes before the version."""
    plan = _plan(tmp_path)
    hipcc = Path(plan.hip_compiler.path)
    hipcc.write_text("#!/bin/sh\necho 'Traceback (most recent call last):'\necho '  File \"/usr/bin/x\", line 1'\n"
                     "echo 'HIP version: 5.2.21153-0'\necho 'clang version 15.0.6'\n")
    facts = collect_facts(plan)
    assert facts["hip_compiler"]["version"] == "HIP version: 5.2.21153-0"
    assert facts["tools"]["cmake"] == "cmake version 9.9"  # an answer without a traceback: its first line


def test_probes_running_beside_a_step_are_not_the_steps() -> None:
    """facts.json's probes run in a thread beside the first attempt: the step's process tree leaves
    them and their children out while they run; the step's own children are in it."""
    import subprocess
    import threading

    from rocmbuild.process import proctree

    step = subprocess.Popen(["sh", "-c", "sleep 5 & wait"])
    probe = threading.Thread(target=command.capture, args=(["sh", "-c", "sleep 3 & wait"],), kwargs={"timeout": 10})
    try:
        tree = proctree.Tree(step.pid)
        probe.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (command.pending_pids()
                                                   and psutil.Process(next(iter(command.pending_pids()))).children()
                                                   and psutil.Process(step.pid).children()):
            time.sleep(0.01)
        (probe_pid,) = command.pending_pids()
        probe_pids = {probe_pid, *(c.pid for c in psutil.Process(probe_pid).children())}
        step_children = {c.pid for c in psutil.Process(step.pid).children()}
        seen = {p.pid for p in tree.leftovers()}
        assert step_children <= seen and not probe_pids & seen
    finally:
        step.kill()
        step.wait()
        for child in psutil.Process().children(recursive=True):
            if child.name() == "sleep":
                child.kill()
        probe.join(timeout=10)
    assert command.pending_pids() == frozenset(), "collected: no longer ours to leave out"


def test_start_facts_writes_the_file_beside_the_run(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    job = start_facts(tmp_path, plan)
    assert job.wait() and job.error is None
    assert json.loads((tmp_path / FACTS_FILE).read_text())["tools"]["ninja"] == "ninja version 9.9"
