"""records/runfacts.py: facts.json gathered beside the first attempt, identical to asking in line."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import psutil

from rocmbuild.process import command
from rocmbuild.records.runfacts import FACTS_FILE, collect_facts, start_facts
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


def test_every_probe_is_running_when_start_returns_and_the_file_matches_asking_in_line(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    job = start_facts(run_dir, plan)
    # Pending probes are not taken for the build's (command.pending_pids, left out of proctree.Tree).
    started = {" ".join(p.cmdline()) for p in psutil.Process().children()}
    assert any("cmake --version" in c for c in started) and any("hipcc --version" in c for c in started), started
    assert job.wait() and job.error is None
    command._VERSIONS.clear()  # asked again, in line, for the comparison
    assert json.loads((run_dir / FACTS_FILE).read_text()) == json.loads(json.dumps(collect_facts(plan)))
    facts = json.loads((run_dir / FACTS_FILE).read_text())
    assert facts["tools"]["cmake"] == "cmake version 9.9" and facts["hip_compiler"]["version"] == "hipcc version 9.9"


def test_a_replaced_runner_is_asked_before_start_returns(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    asked: list[list[str]] = []

    def fake(argv, *, env=None, cwd=None, timeout=60):  # type: ignore[no-untyped-def]
        asked.append(list(argv))
        return command.CommandResult(0, f"{argv[0]} 1.0\n")

    job = start_facts(tmp_path, plan, fake)
    assert len(asked) == 4  # cmake, ninja, python, compiler: nothing runs later, during an attempt
    assert job.wait()
    assert json.loads((tmp_path / FACTS_FILE).read_text())["tools"]["ninja"] == "ninja 1.0"


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


def test_a_probe_that_ended_during_the_attempt_keeps_its_exit_status() -> None:
    """The runner reaps zombies left to rocmbuild after each attempt; a probe's is its Popen's to read."""
    from rocmbuild.process import proctree

    started = command.start(["sh", "-c", "echo broken; exit 3"])
    assert started.process is not None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and psutil.Process(started.process.pid).status() != psutil.STATUS_ZOMBIE:
        time.sleep(0.01)
    proctree.reap_orphans()  # what the end of every attempt does
    result = started.result()
    assert (result.returncode, result.output) == (3, "broken\n")  # not "exit status 0", as a stolen status reads


def test_a_version_answer_after_a_traceback_records_the_version_line(tmp_path: Path) -> None:
    """hipcc on a host without /dev/kfd: rocm_agent_enumerator's traceback comes before the version."""
    plan = _plan(tmp_path)
    hipcc = Path(plan.hip_compiler.path)
    hipcc.write_text("#!/bin/sh\necho 'Traceback (most recent call last):'\necho '  File \"/usr/bin/x\", line 1'\n"
                     "echo 'HIP version: 5.2.21153-0'\necho 'clang version 15.0.6'\n")
    facts = collect_facts(plan)
    assert facts["hip_compiler"]["version"] == "HIP version: 5.2.21153-0"
    assert facts["tools"]["cmake"] == "cmake version 9.9"  # an answer without a traceback: its first line


def test_probes_started_while_a_step_runs_are_not_the_steps() -> None:
    """facts.json's probes start once the first attempt's process exists (DeferredFacts): the step's process
    tree leaves them and their children out until they are collected; the step's own children are in it."""
    import subprocess

    from rocmbuild.process import proctree

    step = subprocess.Popen(["sh", "-c", "sleep 5 & wait"])
    try:
        tree = proctree.Tree(step.pid)
        probe = command.start(["sh", "-c", "sleep 5 & wait"])  # after the step, as DeferredFacts starts them
        assert probe.process is not None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (psutil.Process(probe.process.pid).children()
                                                   and psutil.Process(step.pid).children()):
            time.sleep(0.01)
        probe_pids = {probe.process.pid, *(c.pid for c in psutil.Process(probe.process.pid).children())}
        step_children = {c.pid for c in psutil.Process(step.pid).children()}
        seen = {p.pid for p in tree.leftovers()}
        assert step_children <= seen and not probe_pids & seen
        for pid in probe_pids:
            psutil.Process(pid).kill()
        probe.result()
    finally:
        step.kill()
        step.wait()
        for child in psutil.Process().children(recursive=True):
            if child.name() == "sleep":
                child.kill()


def test_deferred_facts_start_at_the_attempt_or_when_waited_for(tmp_path: Path) -> None:
    """With the real runner nothing runs until start (the attempt's on_start) or wait (a run without an
    attempt); a replaced runner is asked at once, as start_facts does."""
    from rocmbuild.records.runfacts import DeferredFacts

    plan = _plan(tmp_path)
    before = command.pending_pids()
    facts = DeferredFacts(tmp_path, plan)
    assert facts.job is None and command.pending_pids() == before and not (tmp_path / FACTS_FILE).exists()
    assert facts.wait() and facts.error is None  # a run that ended before any attempt: started here
    assert json.loads((tmp_path / FACTS_FILE).read_text())["tools"]["cmake"] == "cmake version 9.9"
    asked: list[list[str]] = []

    def fake(argv, *, env=None, cwd=None, timeout=60):  # type: ignore[no-untyped-def]
        asked.append(list(argv))
        return command.CommandResult(0, f"{argv[0]} 1.0\n")

    other = tmp_path / "other"
    other.mkdir()
    DeferredFacts(other, plan, fake)
    assert len(asked) == 4


def test_a_run_without_an_attempt_has_its_facts_unless_interrupted(tmp_path: Path) -> None:
    """Up to date, a preflight refusal, an error: the probes start when the run waits for them, so
    facts.json is there as before; after Ctrl-C nothing new is started."""
    from rocmbuild.commands import app
    from rocmbuild.records.recorder import RunRecorder
    from rocmbuild.records.runfacts import DeferredFacts

    plan = _plan(tmp_path)
    for interrupted in (False, True):
        run_dir = tmp_path / f"run-{interrupted}"
        run_dir.mkdir()
        rec = RunRecorder(run_dir, "demo", tmp_path, ("gfx942",))
        facts = DeferredFacts(run_dir, plan)
        app._wait_for_facts(facts, rec, interrupted=interrupted)
        assert (run_dir / FACTS_FILE).exists() is not interrupted and facts.started is not interrupted
        assert rec.write_error is None
        rec.close()
