"""End to end through the installed `rocmbuild` command, the real PTY runner and scripted builds.

Each scenario's build (tests/fakebuild.py) fails the way a real ROCm build does
until the environment is right; the test asserts exit code, attempts, remedies
and the summary.json / events.jsonl of the contract.  The ladder scenarios run
in process (tests/test_ladder_scenarios.py); here are the command's smoke tests
and what only the PTY engine and separate processes show: a stall and its
process-tree snapshot, the budget's kill, SIGTERM, the tree lock, an early stop
of a build that keeps draining.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")
FAKEBUILD = Path(__file__).parent / "fakebuild.py"

RECIPE = """
name = "{name}"
packages = ["rocmbuild-test-nonexistent"]
requires = {requires}
{source}
[steps]
build = ["{python} {fakebuild} {build}"]
verify = [{verify}]
[clean]
paths = ["build", "*.egg-info", "cache/*"]
[resources]
memory_per_job_gb = 1
"""


def write_recipe(tmp: Path, build: str, *, verify: str | None = None, name: str = "fake",
                 requires: tuple[str, ...] = (), own_source: bool = False) -> Path:
    """A recipe running a fakebuild scenario; ``own_source``: a [source] path of its own (no --source)."""
    path = tmp / f"{name}.toml"
    source = ""
    if own_source:
        (tmp / f"{name}-tree").mkdir(exist_ok=True)
        source = f'[source]\npath = "{name}-tree"'
    path.write_text(RECIPE.format(
        name=name, python=sys.executable, fakebuild=FAKEBUILD, build=build, source=source,
        verify=f'"{sys.executable} {FAKEBUILD} {verify}"' if verify else "",
        requires=json.dumps(list(requires))))
    return path


def base_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_")}
    env.update(XDG_STATE_HOME=str(tmp / "state"), XDG_CACHE_HOME=str(tmp / "cache"),
               XDG_CONFIG_HOME=str(tmp / "config"), HIP_PLATFORM="amd")
    env.pop("CXXFLAGS", None)
    env.update(extra)
    return env


def rocmbuild(tmp: Path, *args: str, env: dict[str, str] | None = None, source: Path | None = None,
              timeout: float = 60, with_source: bool = True) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    source = source or tmp / "src"
    source.mkdir(exist_ok=True)
    argv = [ROCMBUILD, *args, *(["--source", str(source)] if with_source else []), "--run-dir", str(tmp / "run"),
            "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--backoff", "0.01", "--stall-timeout", "1s",
            "--json"]
    proc = subprocess.run(argv, env=env or base_env(tmp), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    summary_path = tmp / "run" / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return proc, summary


def events(tmp: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp / "run" / "events.jsonl").read_text().splitlines()]


def diag(summary: dict[str, Any], n: int) -> dict[str, Any]:
    return summary["attempts"][n - 1]["diagnosis"]


def remedies(summary: dict[str, Any]) -> list[list[str]]:
    return [a["remedies"] for a in summary["attempts"]]


def check_link_cured(proc: Any, summary: dict[str, Any], tmp_path: Path, lib: Path) -> None:
    """The link scenario, cured on its second attempt by add_library_paths: the same checks whether the
    command ran installed (here, the PTY engine) or in process (test_ladder_scenarios)."""
    assert proc.returncode == 0, proc.stderr
    assert len(summary["attempts"]) == 2 and summary["outcome"] == "succeeded"
    assert diag(summary, 1)["category"] == "missing_library"
    assert diag(summary, 1)["fields"]["library"] == "fakeblas"
    assert "cannot find -lfakeblas" in diag(summary, 1)["text"]
    assert remedies(summary) == [["add_library_paths"], []]
    assert summary["attempts"][1]["env"]["LIBRARY_PATH"].startswith(str(lib))
    assert json.loads(proc.stdout.splitlines()[-1]) == summary, "--json prints the summary object on stdout"
    check_contract(summary, tmp_path)
    log = (tmp_path / "run" / "attempt-1.log").read_bytes()
    assert b"cannot find -lfakeblas" in log and b"[39/40]" in log


def check_contract(summary: dict[str, Any], tmp: Path) -> None:
    assert set(summary) >= {"recipe", "source", "arch", "run_dir", "outcome", "exit_code", "attempts"}
    for attempt in summary["attempts"]:
        assert set(attempt) >= {"number", "started", "duration_s", "ended", "exit_code", "log", "env",
                                "diagnosis", "remedies"}
        assert (tmp / "run" / attempt["log"]).is_file()
        if attempt["diagnosis"] is not None:
            assert set(attempt["diagnosis"]) >= {"category", "signature", "line", "text", "fields", "retryable"}
    names = [e["event"] for e in events(tmp)]
    assert names[0] == "run.started" and names[-1] == "run.finished"
    assert all("timestamp" in e for e in events(tmp))
    assert (tmp / "run" / "repro.sh").is_file()


@pytest.mark.integration
def test_link_failure_until_library_path_reaches_the_library(tmp_path: Path) -> None:
    lib = tmp_path / "src" / "third_party" / "fakeblas" / "lib"
    lib.mkdir(parents=True)
    (lib / "libfakeblas.so").write_text("")
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "link")))
    check_link_cured(proc, summary, tmp_path, lib)


@pytest.mark.integration
def test_stall_then_success_after_reducing_jobs(tmp_path: Path) -> None:
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "stall")), "--jobs", "4")
    assert proc.returncode == 0, proc.stderr
    assert summary["attempts"][0]["ended"] == "stalled"
    assert diag(summary, 1)["category"] == "stalled"
    assert remedies(summary) == [["reduce_jobs"], []]
    log = (tmp_path / "run" / "attempt-1.log").read_text(errors="replace")
    assert "fakebuild.py" in log.split("[3/40]")[-1], "a process-tree snapshot is written before the kill"


@pytest.mark.integration
def test_budget_spent_stops_with_exit_5(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, "stall")
    source = tmp_path / "src"
    source.mkdir()
    argv = [ROCMBUILD, str(recipe), "--source", str(source), "--run-dir", str(tmp_path / "run"), "--arch", "gfx90a",
            "--skip-preflight", "--no-cache", "--budget", "6s", "--stall-timeout", "30s", "--jobs", "8"]
    # 6 s: enough for planning and the fingerprint on a loaded 2-CPU machine to leave the attempt running
    # when the budget ends it (2 s ended some runs before their first attempt).
    proc = subprocess.run(argv, env=base_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 5, proc.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["outcome"] == "budget_exhausted" and summary["attempts"][0]["ended"] == "budget"
    # On time: the run's own record (not the interpreter's start-up on a loaded machine) ends well before
    # the 30 s stall timeout would have ended the attempt.
    assert summary["duration_s"] < 15


def _wait_for_event(tmp: Path, name: str, timeout: float = 20) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        path = tmp / "run" / "events.jsonl"
        if path.exists() and f'"{name}"' in path.read_text():
            return
        time.sleep(0.1)
    raise AssertionError(f"no {name} event")


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


@pytest.mark.integration
def test_sigterm_stops_the_build_writes_records_and_exits_130(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, "stall")
    source = tmp_path / "src"
    source.mkdir()
    argv = [ROCMBUILD, str(recipe), "--source", str(source), "--run-dir", str(tmp_path / "run"), "--arch", "gfx90a",
            "--skip-preflight", "--no-cache", "--stall-timeout", "60s", "--jobs", "8"]
    proc = subprocess.Popen(argv, env=base_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait_for_event(tmp_path, "attempt.started")
    children: list[int] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # until the build's own process runs (not only the step's shell)
        tree = psutil.Process(proc.pid).children(recursive=True)
        if any("fakebuild.py" in " ".join(_cmdline(p)) for p in tree):
            children = [p.pid for p in tree]
            break
        time.sleep(0.05)
    assert children, "the build is running"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 130
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["outcome"] == "interrupted" and summary["exit_code"] == 130
    assert summary["attempts"][0]["ended"] == "interrupted"
    time.sleep(0.2)
    survivors = [pid for pid in children if psutil.pid_exists(pid)
                 and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert survivors == []


@pytest.mark.integration
def test_second_build_on_the_same_tree_exits_2_naming_the_pid(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, "stall")
    source = tmp_path / "src"
    source.mkdir()
    argv = [ROCMBUILD, str(recipe), "--source", str(source), "--run-dir", str(tmp_path / "run"), "--arch", "gfx90a",
            "--skip-preflight", "--no-cache", "--stall-timeout", "60s", "--jobs", "8"]
    first = subprocess.Popen(argv, env=base_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_event(tmp_path, "attempt.started")
        second = subprocess.run([*argv[:5], str(tmp_path / "run2"), *argv[6:]], env=base_env(tmp_path),
                                capture_output=True, text=True, timeout=30)
        assert second.returncode == 2
        assert f"PID {first.pid}" in second.stderr and "Traceback" not in second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=20)


@pytest.mark.integration
def test_report_latest_renders_the_last_run(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    source = tmp_path / "src"
    source.mkdir()
    argv = [ROCMBUILD, str(write_recipe(tmp_path, "unsupported")), "--source", str(source), "--arch", "gfx90a",
            "--skip-preflight", "--no-cache"]
    assert subprocess.run(argv, env=env, capture_output=True, timeout=60).returncode == 4
    proc = subprocess.run([ROCMBUILD, "report", "latest"], env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert "unsupported_arch" in proc.stdout and "not_retryable" in proc.stdout
    assert "invalid target ID 'gfx942'" in proc.stdout
    as_json = subprocess.run([ROCMBUILD, "report", "--json"], env=env, capture_output=True, text=True, timeout=30)
    assert json.loads(as_json.stdout)["outcome"] == "not_retryable"


def test_a_bad_option_exits_2_without_traceback(tmp_path: Path) -> None:
    """The installed command's usage error (every bad option: tests/test_ladder_scenarios.py)."""
    argv = [ROCMBUILD, str(write_recipe(tmp_path, "ok")), "--source", str(tmp_path), "--jobs", "eight"]
    proc = subprocess.run(argv, env=base_env(tmp_path), capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "error:" in proc.stderr


def local_remote(tmp: Path, commits: dict[str, dict[str, str]]) -> Path:
    """A git repository standing in for the recipe's remote: one commit (and tag) per entry, in order."""
    remote = tmp / "remote"
    remote.mkdir()
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(remote)]
    subprocess.run(["git", "init", "-q", str(remote)], check=True)
    for tag, files in commits.items():
        for name, text in files.items():
            (remote / name).write_text(text)
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-qm", tag], check=True)
        subprocess.run([*git, "tag", tag], check=True)
    return remote


@pytest.mark.integration
def test_a_decisive_non_retryable_failure_stops_the_build_at_once(tmp_path: Path) -> None:
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "unsupported_then_drain")))
    assert proc.returncode == 4, proc.stderr
    attempt = summary["attempts"][0]
    # The build drains for 30 s after its decisive line; the attempt's own time, not the command's (start-up
    # and probes on a loaded machine), says whether the runner waited for it.
    assert attempt["duration_s"] < 20, "did not wait for the build to drain its other jobs"
    assert attempt["stopped_early"] and "unsupported_arch" in attempt["stopped_early"]
    assert attempt["diagnosis"]["category"] == "unsupported_arch"


FAKE_GIT = """#!/usr/bin/env bash
# Fails the first clone after it fetched the main repository, the way a submodule fetch dies
# on a flaky network (fixtures/logs/network: TheRock#4916-style RPC failures).
real="$REAL_GIT"
if [ "$1" = clone ] && [ ! -e "$MARKER" ]; then
  touch "$MARKER"
  "$real" "$@" || exit $?
  echo "fatal: unable to access 'https://github.com/example/sub.git/': Could not resolve host: github.com" >&2
  echo "fatal: clone of 'https://github.com/example/sub.git' into submodule path 'third_party/sub' failed" >&2
  exit 128
fi
exec "$real" "$@"
"""
