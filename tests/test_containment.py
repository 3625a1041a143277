"""Containment: cgroups per attempt, no survivor on any stop path, SIGKILL of rocmbuild, leftovers."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from test_e2e_ladder import ROCMBUILD, base_env

from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.diagnosis.classifier import Classifier
from rocmbuild.process import containment, runner
from rocmbuild.process.attempt import AttemptHooks, AttemptRequest
from rocmbuild.process.watcher import Watcher

CHILDREN = Path(__file__).parent / "children"
PY = sys.executable


def marked(marker: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        if p.info["status"] != psutil.STATUS_ZOMBIE and marker in (p.info["cmdline"] or []):
            found.append(p)
    return found


def survivors(marker: str, settle: float = 0.5) -> list[str]:
    """Processes carrying the marker after a short settle (a re-forker's next generation included)."""
    time.sleep(settle)
    return [f"{p.pid} {p.info['cmdline']}" for p in marked(marker)]


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique token for the test's processes; whatever still carries it is killed afterwards."""
    token = f"rocmbuild-test-{uuid.uuid4().hex[:12]}"
    try:
        yield token
    finally:
        for _ in range(50):
            procs = marked(token)
            if not procs:
                break
            for p in procs:
                with contextlib.suppress(psutil.Error):
                    p.kill()
            time.sleep(0.02)


def attempt(tmp: Path, command: str, interrupt_after: float | None = None, **limits: Any) -> runner.AttemptOutcome:
    t0 = time.monotonic()
    return runner.run_attempt(
        AttemptRequest((runner.Step("build", command),), cwd=tmp, env=dict(os.environ), log_path=tmp / "a.log",
                       limits=runner.Limits(grace_s=0.5, **limits)),
        AttemptHooks(watcher=Watcher(Classifier(load_catalogue())),
                     interrupted=lambda: interrupt_after is not None and time.monotonic() - t0 > interrupt_after))


def test_cgroup_v2_is_found_and_used_here() -> None:
    assert containment.cgroup2_mount() is not None, "CI runs as root with a cgroup2 hierarchy"
    assert containment.mode().kind == "cgroup"
    assert containment.cgroup2_mount("cgroup2 /x\\040y cgroup2 rw 0 0\n") == Path("/x y")
    assert containment.cgroup2_mount("cgroup /sys/fs/cgroup/cpu cgroup rw 0 0\n") is None


@pytest.mark.parametrize("path", ["normal exit", "stall", "budget", "interrupt"])
@pytest.mark.integration
def test_a_setsid_reforker_survives_no_stop_path(tmp_path: Path, marker: str, path: str) -> None:
    start = f"{PY} {CHILDREN / 'reforker.py'} {marker}; echo started"
    if path == "normal exit":
        outcome = attempt(tmp_path, start)
        assert outcome.exit_code == 0
    elif path == "stall":
        outcome = attempt(tmp_path, f"{start}; sleep 30", stall_timeout_s=0.5)
        assert outcome.ended == "stalled"
    elif path == "budget":
        outcome = attempt(tmp_path, f"{start}; sleep 30", deadline=time.monotonic() + 1)
        assert outcome.ended == "budget"
    else:
        outcome = attempt(tmp_path, f"{start}; sleep 30", interrupt_after=1)
        assert outcome.ended == "interrupted"
    assert survivors(marker) == []


def test_without_a_cgroup_the_process_tree_fallback_still_stops_the_tree(tmp_path: Path, marker: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(containment, "base_dir", lambda: None)
    assert containment.mode().kind == "process-tree"
    ign = "import signal,time\\nsignal.signal(15, signal.SIG_IGN)\\ntime.sleep(60)"
    outcome = attempt(tmp_path, f"{PY} -c '{ign}' {marker} & {PY} -c '{ign}' {marker} & sleep 30",
                      stall_timeout_s=0.5)
    assert outcome.ended == "stalled"
    assert survivors(marker) == []


def _start_build(tmp: Path, marker: str, name: str = "run") -> subprocess.Popen[str]:
    recipe = tmp / "esc.toml"
    recipe.write_text(f'name = "esc"\n[steps]\nbuild = ["{PY} {CHILDREN / "escapers.py"} {marker} stay"]\n')
    (tmp / "src").mkdir(exist_ok=True)
    return subprocess.Popen(
        [ROCMBUILD, str(recipe), "--source", str(tmp / "src"), "--run-dir", str(tmp / name), "--arch", "gfx90a",
         "--skip-preflight", "--no-cache", "--max-attempts", "1"],
        env=base_env(tmp), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _wait_ready(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    for line in proc.stdout:
        if "escapers ready" in line:
            return
        assert time.monotonic() < deadline
    raise AssertionError("the build never got ready")


@pytest.mark.integration
def test_sigkill_of_rocmbuild_leaves_no_survivor_within_seconds(tmp_path: Path, marker: str) -> None:
    proc = _start_build(tmp_path, marker)
    try:
        _wait_ready(proc)
        assert len(marked(marker)) >= 4
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 5
        while marked(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert survivors(marker) == [], "the watchdog ended the build after rocmbuild's death"


def _watchdogs(pid: int) -> list[psutil.Process]:
    """``pid``'s live watchdog children (a short-lived child may exit while it is looked at: it is skipped)."""
    found = []
    for child in psutil.Process(pid).children():
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "watchdog.py" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


@pytest.mark.integration
def test_the_next_run_on_the_tree_ends_and_records_a_killed_runs_leftovers(tmp_path: Path, marker: str) -> None:
    proc = _start_build(tmp_path, marker)
    try:
        _wait_ready(proc)
        # rocmbuild and its watchdog die together (e.g. the OOM killer, kill -9 of both)
        watchdogs = _watchdogs(proc.pid)
        assert watchdogs
        # Stopped first, then killed, so neither can act on the other's death between two kills: a CI run under load
        # once found the build already gone here, which is not the case this test is about.
        both = [psutil.Process(proc.pid), *watchdogs]
        for p in both:
            p.suspend()
        for p in both:
            p.kill()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(0.3)
    assert marked(marker), "without the watchdog the build is still running"
    recipe = tmp_path / "ok.toml"
    recipe.write_text('name = "ok"\n[steps]\nbuild = ["true"]\n')
    second = subprocess.run(
        [ROCMBUILD, str(recipe), "--source", str(tmp_path / "src"), "--run-dir", str(tmp_path / "run2"),
         "--arch", "gfx90a", "--skip-preflight", "--no-cache"],
        env=base_env(tmp_path), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert second.returncode == 0, second.stderr
    assert survivors(marker) == []
    events = [json.loads(line) for line in (tmp_path / "run2" / "events.jsonl").read_text().splitlines()]
    leftovers = [e for e in events if e["event"] == "leftovers.stopped"]
    assert leftovers and leftovers[0]["owner_pid"] == proc.pid and leftovers[0]["count"] >= 3
    assert "stopped" in second.stderr and "killed run" in second.stderr


@pytest.mark.integration
def test_sighup_and_sigterm_of_rocmbuild_leave_no_survivor(tmp_path: Path, marker: str) -> None:
    for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        proc = _start_build(tmp_path, marker, name=f"run-{sig}")
        try:
            _wait_ready(proc)
            proc.send_signal(sig)
            assert proc.wait(timeout=30) == 130
        finally:
            if proc.poll() is None:
                proc.kill()
        assert survivors(marker) == [], signal.Signals(sig).name


def test_orphans_that_died_are_reaped_not_left_as_zombies(tmp_path: Path, marker: str) -> None:
    outcome = attempt(tmp_path, f"{PY} {CHILDREN / 'reforker.py'} {marker}; sleep 0.5")
    assert outcome.exit_code == 0
    zombies = [c for c in psutil.Process().children() if c.status() == psutil.STATUS_ZOMBIE]
    assert zombies == [], "each would pass to init when rocmbuild exits"


def test_a_process_that_is_gone_has_no_start_time() -> None:
    sleeper = subprocess.Popen(["sleep", "5"])
    assert containment._start_time(sleeper.pid) == int(psutil.Process(sleeper.pid).create_time() * 100)
    sleeper.kill()
    sleeper.wait()
    assert containment._start_time(sleeper.pid) is None
