"""Resume after any interruption, and output scripts can parse, through the installed command.

Real processes, signals and files: a foreground rocmbuild is sent SIGINT, SIGTERM or SIGHUP (or killed
with SIGKILL) mid-build, then `rocmbuild resume RUN_DIR` continues the run.  The build "compiles"
one object per part and keeps the ones it already made, so a resume that kept the tree is visible.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.test_e2e_ladder import ROCMBUILD, base_env

# Each part leaves an object; a part whose object exists is reused, not made again.
BUILD = r"""
import sys, time
from pathlib import Path
parts = int(sys.argv[1])
Path("obj").mkdir(exist_ok=True)
for i in range(1, parts + 1):
    obj = Path("obj") / f"part-{i}.o"
    if obj.exists():
        print(f"[{i}/{parts}] reused {obj}", flush=True)
        continue
    print(f"[{i}/{parts}] Building CXX object {obj}", flush=True)
    time.sleep(0.4)
    obj.write_text("compiled")
print("[done] Linking CXX shared module _C.so", flush=True)
"""

RECIPE = """
name = "parts"
packages = []
[steps]
build = ["{python} build.py {parts}"]
{extra}
"""


def setup_tree(tmp_path: Path, parts: int = 12, extra: str = "") -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "build.py").write_text(BUILD)
    recipe = tmp_path / "parts.toml"
    recipe.write_text(RECIPE.format(python=sys.executable, parts=parts, extra=extra))
    return recipe


def start(tmp_path: Path, run_dir: Path, *extra: str) -> subprocess.Popen[str]:
    argv = [ROCMBUILD, str(tmp_path / "parts.toml"), "--source", str(tmp_path / "src"), "--run-dir", str(run_dir),
            "--arch", "gfx90a", "--skip-preflight", "--no-cache", *extra]
    return subprocess.Popen(argv, env=base_env(tmp_path), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(path: Path, text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if text in path.read_text(errors="replace"):
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {path}")


def summary_of(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "summary.json").read_text())
    return data


def event_names(run_dir: Path) -> list[str]:
    return [json.loads(line)["event"] for line in (run_dir / "events.jsonl").read_text().splitlines()]


def resume(tmp_path: Path, run_dir: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ROCMBUILD, "resume", str(run_dir)], env=base_env(tmp_path), capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def kill_tree(pid: int) -> None:
    """SIGKILL rocmbuild (no chance to finish its records), then what it started."""
    proc = psutil.Process(pid)
    tree = proc.children(recursive=True)
    proc.kill()
    for child in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    psutil.wait_procs([proc, *tree], timeout=10)


# SIGINT is `make test`'s smoke test of resume; the other two signals run in the integration tier.
@pytest.mark.parametrize("sig", [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.integration),
                                 pytest.param(signal.SIGHUP, marks=pytest.mark.integration)], ids=lambda s: s.name)
def test_an_interrupt_is_not_a_failure_and_resume_continues_the_same_run(tmp_path: Path,
                                                                         sig: signal.Signals) -> None:
    setup_tree(tmp_path)
    run_dir = tmp_path / "run dir"  # a space: the todo must be quoted for a shell
    # --max-attempts 1: an interrupted attempt is not spent, so the resume still has its attempt.
    proc = start(tmp_path, run_dir, "--max-attempts", "1")
    wait_for(run_dir / "attempt-1.log", "[3/12] Building")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    summary = summary_of(run_dir)
    assert (summary["outcome"], summary["exit_code"]) == ("interrupted", 130)
    [attempt] = summary["attempts"]
    assert attempt["ended"] == "interrupted" and attempt["diagnosis"] is None and attempt["remedies"] == []
    assert summary["todo"] == f"rocmbuild resume {shlex.quote(str(run_dir.resolve()))}"
    assert summary["todo"] in err, "the console says the exact command too"
    assert "failure.diagnosed" not in event_names(run_dir), "an interrupt is not diagnosed"
    stats = subprocess.run([ROCMBUILD, "history", "--stats", "--json"], env=base_env(tmp_path),
                           capture_output=True, text=True, timeout=60)
    assert stats.returncode == 0 and stats.stdout == "", "an interrupt is no failure in the stats"

    argv = shlex.split(summary["todo"])
    assert argv == ["rocmbuild", "resume", str(run_dir.resolve())]
    resumed = subprocess.run([ROCMBUILD, *argv[1:]], env=base_env(tmp_path), capture_output=True, text=True,
                             timeout=120, stdin=subprocess.DEVNULL)
    assert resumed.returncode == 0, resumed.stderr
    summary = summary_of(run_dir)
    assert summary["outcome"] == "succeeded"
    assert [(a["number"], a["ended"], a["diagnosis"]) for a in summary["attempts"]] == [
        (1, "interrupted", None), (2, "exited", None)]
    second = (run_dir / "attempt-2.log").read_text()
    assert "[1/12] reused obj/part-1.o" in second and "[2/12] reused" in second, "the compiled work was kept"
    names = event_names(run_dir)
    assert names.count("run.started") == 1 and names.count("run.resumed") == 1 and names[-1] == "run.finished"
    listed = subprocess.run([ROCMBUILD, "history", "--json"], env=base_env(tmp_path), capture_output=True,
                            text=True, timeout=60)
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(r["outcome"], r["attempts"]) for r in rows] == [("succeeded", 2)], "one run, one history entry"


@pytest.mark.integration
def test_resume_keeps_the_runs_budget(tmp_path: Path) -> None:
    """--budget is the run's: a resume gets what the run had left, not the budget again (nor none)."""
    setup_tree(tmp_path, parts=60)
    run_dir = tmp_path / "run"
    proc = start(tmp_path, run_dir, "--budget", "8s")
    wait_for(run_dir / "attempt-1.log", "[4/60] Building")
    kill_tree(proc.pid)
    proc.communicate(timeout=30)
    assert summary_of(run_dir)["outcome"] == "running"
    started = time.monotonic()
    resumed = resume(tmp_path, run_dir)
    elapsed = time.monotonic() - started
    summary = summary_of(run_dir)
    assert (resumed.returncode, summary["outcome"]) == (5, "budget_exhausted"), resumed.stderr
    assert "[60/60]" not in (run_dir / "attempt-2.log").read_text(), "the build was stopped by the budget"
    assert elapsed < 30, f"resume ran {elapsed:.0f}s of an 8s budget"


@pytest.mark.integration
def test_resume_of_a_wheel_dir_run_keeps_the_wheel_step(tmp_path: Path) -> None:
    setup_tree(tmp_path, parts=12, extra=f'wheel = ["{sys.executable} mkwheel.py"]')
    (tmp_path / "src" / "mkwheel.py").write_text(
        "import os, zipfile\n"
        "with zipfile.ZipFile(os.path.join(os.environ['WHEEL_DIR'], 'parts-1.0-py3-none-any.whl'), 'w') as w:\n"
        "    w.writestr('parts/__init__.py', '')\n")
    run_dir, wheels = tmp_path / "run", tmp_path / "wheelhouse"
    proc = start(tmp_path, run_dir, "--wheel-dir", str(wheels))
    wait_for(run_dir / "attempt-1.log", "[3/12] Building")
    kill_tree(proc.pid)
    proc.communicate(timeout=30)
    resumed = resume(tmp_path, run_dir)
    assert resumed.returncode == 0, resumed.stderr
    summary = summary_of(run_dir)
    assert summary["outcome"] == "succeeded" and summary["wheels"]["ok"] is True
    assert (wheels / "parts-1.0-py3-none-any.whl").is_file()
    assert "parts-1.0-py3-none-any.whl" in json.loads((wheels / "manifest.json").read_text())["wheels"]
    assert "wheel.verified" in event_names(run_dir)


@pytest.mark.integration
def test_detach_json_is_one_document_and_a_refused_detach_exits_with_the_runs_code(tmp_path: Path) -> None:
    setup_tree(tmp_path, parts=30)
    first = subprocess.run([ROCMBUILD, str(tmp_path / "parts.toml"), "--source", str(tmp_path / "src"), "--run-dir",
                            str(tmp_path / "r1"), "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--detach",
                            "--json"], env=base_env(tmp_path), capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
    assert first.returncode == 0, first.stderr
    started = json.loads(first.stdout)  # exactly one document
    assert started["run_dir"] == str((tmp_path / "r1").resolve()) and psutil.pid_exists(started["pid"])
    assert started["follow"] == f"rocmbuild report {shlex.quote(started['run_dir'])}"
    # It returned once the run was past its refusals: the run dir holds the run, the tree is locked.
    assert summary_of(tmp_path / "r1")["outcome"] == "running"

    second = subprocess.run([ROCMBUILD, str(tmp_path / "parts.toml"), "--source", str(tmp_path / "src"),
                             "--run-dir", str(tmp_path / "r2"), "--arch", "gfx90a", "--skip-preflight", "--no-cache",
                             "--detach", "--json"], env=base_env(tmp_path), capture_output=True, text=True,
                            timeout=60, stdin=subprocess.DEVNULL)
    assert second.returncode == 2, "the background run's own code: the tree is locked"
    refused = json.loads(second.stdout)
    assert refused["exit_code"] == 2 and f"PID {started['pid']}" in refused["error"] and refused["todo"]
    assert refused["run_dir"] == str((tmp_path / "r2").resolve())
    assert "another rocmbuild" in second.stderr
    psutil.Process(started["pid"]).terminate()
    psutil.Process(started["pid"]).wait(timeout=30)
    assert summary_of(tmp_path / "r1")["outcome"] == "interrupted"
