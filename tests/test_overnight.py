"""Overnight features end to end: notify, detach, history, resume, report --diff.

Detach and resume through the installed command (real processes, PTY, files and signals); notify,
history and report --diff through the command in this process (tests/inprocess.py), with the
installed command's notify as their smoke test.  The build is a fakebuild scenario.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil
import pytest
from inprocess import CliRun, PipeAttempts, build, isolate, run_cli

from rocmbuild.commands import app, resumestate
from rocmbuild.process.attempt import AttemptHooks, AttemptRequest
from rocmbuild.process.runner import AttemptOutcome
from tests.test_e2e_ladder import ROCMBUILD, base_env, rocmbuild, write_recipe

NOTIFY_SCRIPT = f"""{sys.executable} -c 'import json, os, sys; s = json.load(sys.stdin); \
open(os.environ["OUT"], "w").write(json.dumps({{"outcome": s["outcome"], "env": [os.environ["ROCMBUILD_OUTCOME"], \
os.environ["ROCMBUILD_EXIT_CODE"], os.environ["ROCMBUILD_RUN_DIR"]]}}))'"""


@pytest.mark.integration
def test_notify_gets_summary_on_stdin_and_outcome_in_env(tmp_path: Path) -> None:
    out = tmp_path / "notified.json"
    env = base_env(tmp_path, OUT=str(out))
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "ok")), "--notify", NOTIFY_SCRIPT, env=env)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text())
    assert got == {"outcome": "succeeded", "env": ["succeeded", "0", str((tmp_path / "run").resolve())]}
    assert summary["notify"]["exit_code"] == 0 and summary["notify"]["error"] is None
    names = [json.loads(line)["event"] for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    assert names[-1] == "notify.finished"


def in_process(tmp: Path, monkeypatch: pytest.MonkeyPatch, *args: str, env: dict[str, str] | None = None
               ) -> tuple[CliRun, dict[str, Any]]:
    return build(tmp, monkeypatch, *args, env=env)


def test_a_failing_notify_is_recorded_and_never_changes_the_exit_code(tmp_path: Path, probes_once: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    proc, summary = in_process(tmp_path, monkeypatch, str(write_recipe(tmp_path, "unknown")), "--notify",
                               "cat >/dev/null; echo webhook down >&2; exit 7")
    assert proc.returncode == 3, proc.stderr
    assert summary["outcome"] == "unrecognised"
    assert summary["notify"]["exit_code"] == 7 and "webhook down" in summary["notify"]["output"]
    assert "--notify command exited with 7" in proc.stderr


@pytest.mark.integration
def test_a_hanging_notify_is_killed_at_its_time_limit(tmp_path: Path, probes_once: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    started = time.monotonic()
    # The shell's child (sleep) is in the notify's process group: it must go too, or the pipe stays open.
    proc, summary = in_process(tmp_path, monkeypatch, str(write_recipe(tmp_path, "ok")), "--notify",
                               "sleep 31.25; echo late", env={"ROCMBUILD_NOTIFY_TIMEOUT": "1s"})
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 20
    assert summary["notify"]["timed_out"] is True and summary["notify"]["exit_code"] is None
    assert not any("sleep" in " ".join(p.info["cmdline"] or []) and "31.25" in (p.info["cmdline"] or [])
                   for p in psutil.process_iter(["cmdline"]))


def test_a_bad_notify_timeout_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc, _ = in_process(tmp_path, monkeypatch, str(write_recipe(tmp_path, "ok")), "--notify", "true",
                         env={"ROCMBUILD_NOTIFY_TIMEOUT": "5"})
    assert proc.returncode == 2 and "ROCMBUILD_NOTIFY_TIMEOUT" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.attempts.requests == []


SLOW_RECIPE = """
name = "slow"
packages = []
[steps]
build = ["for i in 1 2 3 4 5 6 7 8; do echo building part $i; sleep 0.5; done"]
"""


def detached(tmp_path: Path, *extra: str, recipe_text: str = SLOW_RECIPE) -> tuple[int, Path, int]:
    """Start ``rocmbuild slow.toml --detach`` on a real terminal, then close the terminal (SIGHUP)."""
    import pexpect

    recipe = tmp_path / "slow.toml"
    recipe.write_text(recipe_text)
    (tmp_path / "src").mkdir(exist_ok=True)
    args = [str(recipe), "--detach", "--source", str(tmp_path / "src"), "--arch", "gfx90a", "--skip-preflight",
            "--no-cache", *extra]
    term = pexpect.spawn(ROCMBUILD, args, env=base_env(tmp_path), encoding="utf-8", timeout=30)
    term.expect(r"PID (\d+)")
    pid = int(term.match.group(1))
    term.expect(r"run dir: (\S+)")
    run_dir = Path(term.match.group(1).strip())
    term.expect(pexpect.EOF)
    term.close(force=True)  # the terminal goes away: its session gets SIGHUP
    assert term.exitstatus == 0
    deadline = time.monotonic() + 20  # the background process records its start (and PID) soon after
    while time.monotonic() < deadline and '"run.started"' not in _read(run_dir / "events.jsonl"):
        time.sleep(0.05)
    return pid, run_dir, term.pid


@pytest.mark.integration
def test_detach_survives_the_terminal_closing_and_report_shows_progress(tmp_path: Path) -> None:
    pid, run_dir, terminal_session = detached(tmp_path)
    proc = psutil.Process(pid)
    # A session of its own (not the terminal's, which pexpect's child led), and not its leader: double fork.
    assert os.getsid(pid) not in (terminal_session, os.getsid(0), pid)
    assert proc.is_running() and proc.ppid() != os.getpid()
    deadline = time.monotonic() + 20
    shown = ""
    while time.monotonic() < deadline:
        shown = subprocess.run([ROCMBUILD, "report", "latest"], env=base_env(tmp_path), capture_output=True,
                               text=True).stdout
        if "building part 2" in shown:
            break
        time.sleep(0.2)
    assert f"running: attempt 1 in progress (rocmbuild PID {pid})" in shown, shown
    assert "last lines of attempt-1.log" in shown and "building part" in shown
    proc.wait(timeout=30)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["outcome"] == "succeeded"
    assert "building part 8" in (run_dir / "attempt-1.log").read_text()
    assert "rocmbuild: slow" in (run_dir / "console.log").read_text(), "the end-of-run table went to console.log"


@pytest.mark.integration
def test_report_on_a_killed_run_says_resume(tmp_path: Path) -> None:
    pid, run_dir, _ = detached(tmp_path)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and "building part 1" not in _read(run_dir / "attempt-1.log"):
        time.sleep(0.1)
    psutil.Process(pid).kill()  # SIGKILL: no chance to finish the records
    psutil.Process(pid).wait(timeout=10) if psutil.pid_exists(pid) else None
    shown = subprocess.run([ROCMBUILD, "report", str(run_dir)], env=base_env(tmp_path), capture_output=True,
                           text=True).stdout
    assert "is gone" in shown and f"rocmbuild resume {run_dir}" in shown, shown


def test_detach_with_a_bad_recipe_is_refused_in_the_foreground(tmp_path: Path) -> None:
    proc = subprocess.run([ROCMBUILD, "no-such-recipe", "--detach"], env=base_env(tmp_path), capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "no-such-recipe" in proc.stderr and "Traceback" not in proc.stderr


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def test_history_lists_runs_in_the_state_dir_and_elsewhere_and_stats_say_what_cured(
        tmp_path: Path, probes_once: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(monkeypatch, tmp_path)
    for name, scenario in (("a", "link"), ("b", "link"), ("c", "unknown")):
        tmp = tmp_path / name
        tmp.mkdir()
        if scenario == "link":
            lib = tmp / "src" / "lib"
            lib.mkdir(parents=True)
            (lib / "libfakeblas.so").write_text("")
        (tmp / "src").mkdir(exist_ok=True)
        proc = run_cli(monkeypatch, [str(write_recipe(tmp, scenario)), "--source", str(tmp / "src"), "--run-dir",
                                     str(tmp / "run"), "--arch", "gfx90a", "--skip-preflight", "--no-cache",
                                     "--json"], tmp / "run")  # --run-dir outside the state dir
        assert proc.returncode in (0, 3), proc.stderr
    (tmp_path / "d-src").mkdir()
    ok = run_cli(monkeypatch, [str(write_recipe(tmp_path, "ok", name="other")), "--source", str(tmp_path / "d-src"),
                               "--arch", "gfx90a", "--skip-preflight", "--no-cache"], tmp_path)  # under the state dir
    assert ok.returncode == 0, ok.stderr
    listed = run_cli(monkeypatch, ["history", "--json"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(r["recipe"], r["outcome"], r["attempts"], r["cured_by"]) for r in rows] == [
        ("fake", "succeeded", 2, "add_library_paths"), ("fake", "succeeded", 2, "add_library_paths"),
        ("fake", "unrecognised", 1, None), ("other", "succeeded", 1, None)]
    assert rows[0]["run_dir"] == str((tmp_path / "a" / "run").resolve())
    assert str(tmp_path / "state") in rows[3]["run_dir"]
    only = run_cli(monkeypatch, ["history", "--recipe", "other"], tmp_path)
    assert "other" in only.stdout and "fake" not in only.stdout
    stats = run_cli(monkeypatch, ["history", "--stats", "--json"], tmp_path)
    by_sig = {s["signature"]: s for s in map(json.loads, stats.stdout.splitlines())}
    link = next(s for s in by_sig.values() if s["category"] == "missing_library")
    assert (link["seen"], link["cured"], link["cured_by"]) == (2, 2, {"add_library_paths": 2})
    unknown = next(s for s in by_sig.values() if s["category"] == "unknown")
    assert (unknown["seen"], unknown["cured"]) == (1, 0)
    text = run_cli(monkeypatch, ["history", "--stats"], tmp_path).stdout
    assert "add_library_paths (2)" in text


def test_stats_count_a_different_failure_after_a_remedy_as_cured_and_the_same_one_as_not() -> None:
    from rocmbuild.records.history import signature_stats

    def attempt(sig: str | None, *remedies: str) -> dict[str, object]:
        return {"diagnosis": {"signature": sig, "category": "c"} if sig else None, "remedies": list(remedies)}

    runs = [{"attempts": [attempt("A", "x"), attempt("A", "y"), attempt("B", "z")]},
            {"attempts": [attempt("A", "y"), attempt(None)]}]
    stats = {s.signature: s for s in signature_stats(runs)}
    assert (stats["A"].seen, stats["A"].cured, stats["A"].cured_by) == (3, 2, {"y": 2})
    assert stats["A"].tried == {"x": 1, "y": 2}
    assert (stats["B"].seen, stats["B"].cured) == (1, 0), "no attempt after B: not cured"


# Attempt 1: the link fails (the library is in the tree, not on LIBRARY_PATH); after add_library_paths,
# attempt 2 hangs the first time (we kill rocmbuild there) and succeeds when run again.
RESUMABLE_BUILD = r"""
import os, sys, time
from pathlib import Path
if not any((Path(d) / "libfakeblas.so").exists() for d in os.environ.get("LIBRARY_PATH", "").split(":") if d):
    print("[39/40] Building HIP object kernel_39.hip.o")
    print("/usr/bin/ld: cannot find -lfakeblas: No such file or directory")
    print("clang++: error: linker command failed with exit code 1 (use -v to see invocation)")
    sys.exit(1)
marker = Path("killed-once")
if not marker.exists():
    marker.write_text("")
    for i in range(600):
        print(f"[{i}/600] long compile", flush=True)
        time.sleep(0.1)
print("[40/40] Linking HIP shared module _C.so MAX_JOBS=" + os.environ.get("MAX_JOBS", "?"))
"""

RESUMABLE_RECIPE = """
name = "slow"
packages = []
[steps]
build = ["{python} build.py"]
"""


@pytest.mark.integration
def test_resume_continues_a_killed_run_with_its_remedies_and_numbering(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "lib").mkdir(parents=True)
    (src / "lib" / "libfakeblas.so").write_text("")
    (src / "build.py").write_text(RESUMABLE_BUILD)
    pid, run_dir, _ = detached(tmp_path, "--jobs", "2",
                               recipe_text=RESUMABLE_RECIPE.format(python=sys.executable))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "long compile" not in _read(run_dir / "attempt-2.log"):
        time.sleep(0.1)
    proc = psutil.Process(pid)
    tree = proc.children(recursive=True)
    proc.kill()  # rocmbuild dies without finishing its records; then its build
    for child in tree:
        child.kill()
    psutil.wait_procs([proc, *tree], timeout=10)
    assert json.loads((run_dir / "summary.json").read_text())["outcome"] == "running"

    resumed = subprocess.run([ROCMBUILD, "resume", str(run_dir)], env=base_env(tmp_path), capture_output=True,
                             text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["outcome"] == "succeeded"
    assert [(a["number"], a["ended"], a["remedies"]) for a in summary["attempts"]] == [
        (1, "exited", ["add_library_paths"]), (2, "interrupted", []), (3, "exited", [])]
    assert summary["attempts"][2]["env"]["LIBRARY_PATH"].startswith(str(src / "lib")), "the remedy still holds"
    assert summary["attempts"][2]["env"]["MAX_JOBS"] == "2"
    assert "long compile" in (run_dir / "attempt-2.log").read_text(), "the killed attempt's log is kept"
    assert "MAX_JOBS=2" in (run_dir / "attempt-3.log").read_text()
    names = [json.loads(line)["event"] for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert names.count("run.started") == 1 and "run.resumed" in names and names[-1] == "run.finished"

    again = subprocess.run([ROCMBUILD, "resume", str(run_dir)], env=base_env(tmp_path), capture_output=True,
                           text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert again.returncode == 2 and "has ended by itself (succeeded" in again.stderr
    assert "Traceback" not in again.stderr


@pytest.mark.integration
def test_resume_refuses_a_running_run_and_a_directory_that_is_no_run(tmp_path: Path) -> None:
    pid, run_dir, _ = detached(tmp_path)
    running = subprocess.run([ROCMBUILD, "resume", str(run_dir)], env=base_env(tmp_path), capture_output=True,
                             text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert running.returncode == 2 and f"still running (rocmbuild PID {pid})" in running.stderr
    psutil.Process(pid).wait(timeout=30)
    nothing = subprocess.run([ROCMBUILD, "resume", str(tmp_path)], env=base_env(tmp_path), capture_output=True,
                             text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert nothing.returncode == 2 and "not a rocmbuild run directory" in nothing.stderr


DIFF_BUILD = r"""
import os, sys
from pathlib import Path
src = Path.cwd()
n = int(os.environ.get("MAX_JOBS", "1")) * 7
for i in range(1, 21):
    print(f"[{i}/20] Building HIP object {src}/build/CMakeFiles/_C.dir/csrc/kernel_{i * n}.hip.o")
print(f"-- Found HIP: /opt/rocm-6.{n}.0 (found version \"6.{n}.41133\") id 0x{n:08x}")
if (src / "BROKEN").exists():
    print(f"frobnicator: the widget table at 0x7ffe{n:04x} lost its quorum in {src}/build/gen_{n}.inc")
    print("frobnicator: giving up after 3 retries")
    sys.exit(1)
print("[20/20] Linking HIP shared module _C.so")
"""


@pytest.mark.integration
def test_report_diff_against_the_last_good_run(tmp_path: Path, probes_once: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "build.py").write_text(DIFF_BUILD)
    git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "build.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    recipe = tmp_path / "d.toml"
    recipe.write_text(f'name = "d"\npackages = []\n[steps]\nbuild = ["{sys.executable} build.py"]\n')
    isolate(monkeypatch, tmp_path)

    def build(run: str, jobs: str) -> CliRun:
        return run_cli(monkeypatch, [str(recipe), "--source", str(src), "--run-dir", str(tmp_path / run),
                                     "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--jobs", jobs],
                       tmp_path / run)

    assert build("good", "1").returncode == 0
    (src / "BROKEN").write_text("")
    subprocess.run([*git, "add", "BROKEN"], check=True)
    subprocess.run([*git, "commit", "-qm", "two"], check=True)
    bad = build("bad", "2")
    assert bad.returncode == 3, bad.stderr  # unrecognised
    shown = run_cli(monkeypatch, ["report", str(tmp_path / "bad"), "--diff"], tmp_path / "bad")
    assert shown.returncode == 0, shown.stderr
    assert "MAX_JOBS: '2'  (other: '1')" in shown.stdout
    assert "source.revision:" in shown.stdout and "jobs: '2'  (other: '1')" in shown.stdout
    as_json = json.loads(run_cli(monkeypatch, ["report", str(tmp_path / "bad"), "--json", "--diff",
                                               str(tmp_path / "good")], tmp_path / "bad").stdout)
    assert as_json["other"] == str((tmp_path / "good").resolve())
    # Only what the good build never printed: its numbers, paths and hex differ, its shape does not.
    assert [line.split(":")[0] for line in as_json["new_log_lines"]] == ["frobnicator", "frobnicator"], \
        as_json["new_log_lines"]
    nothing_before = run_cli(monkeypatch, ["report", str(tmp_path / "good"), "--diff"], tmp_path / "good")
    assert nothing_before.returncode == 2 and "no earlier successful run of 'd'" in nothing_before.stderr


def test_templates_mask_numbers_paths_and_hex() -> None:
    from rocmbuild.records.rundiff import new_lines, template

    assert template("[12/40] Building /src/a/kernel_12.hip.o at 0xdeadbeef") == \
        template("[13/41] Building /other/b/kernel_9.hip.o at 0x1234")
    assert new_lines(["[1/2] ok", "weird thing 7", "weird thing 8"], ["[5/9] ok"]) == ["weird thing 7"]


@dataclass
class _EndsWith(PipeAttempts):
    """An attempt runner that ends the command from inside an attempt with ``exc``, as a Ctrl-C or a
    bug deep in the session would."""

    exc: BaseException = field(default_factory=KeyboardInterrupt)

    def __call__(self, request: AttemptRequest, hooks: AttemptHooks) -> AttemptOutcome:
        raise self.exc


@pytest.mark.parametrize("exc, outcome, code", [(KeyboardInterrupt(), "interrupted", 130),
                                                (RuntimeError("boom"), "failed", 70)],
                         ids=["interrupt", "bug"])
def test_a_resume_that_ends_abruptly_records_how_and_still_notifies(
        tmp_path: Path, probes_once: Any, monkeypatch: pytest.MonkeyPatch, exc: BaseException, outcome: str,
        code: int) -> None:
    # A run interrupted in its first attempt: resumable; its --notify was sent (a build notifies whatever ends it).
    isolate(monkeypatch, tmp_path)
    (tmp_path / "src").mkdir()
    notified = tmp_path / "notified.txt"
    first = run_cli(monkeypatch, [str(write_recipe(tmp_path, "ok")), "--source", str(tmp_path / "src"),
                                  "--run-dir", str(tmp_path / "run"), "--arch", "gfx90a", "--skip-preflight",
                                  "--no-cache", "--notify", f"cat > {notified}"], tmp_path / "run",
                    attempts=_EndsWith(exc=KeyboardInterrupt()))
    assert first.returncode == 130 and first.summary["outcome"] == "interrupted", first.stderr
    assert notified.is_file()
    notified.unlink()
    # Its resume ends the same abrupt way: the record says how, and the run's --notify is still sent.
    # In process, the interrupted run's writer is this test's own process: it stands for one that exited.
    real_live_state = resumestate.live_state
    monkeypatch.setattr(resumestate, "live_state", lambda *args: replace(real_live_state(*args), alive=False))
    monkeypatch.setattr(app, "DEFAULT_SERVICES", replace(app.DEFAULT_SERVICES, attempt=_EndsWith(exc=exc)))
    again = run_cli(monkeypatch, ["resume", str(tmp_path / "run")], tmp_path / "run")
    assert again.returncode == code, again.stderr
    summary = again.summary
    assert summary["outcome"] == outcome and summary["exit_code"] == code
    assert summary["todo"], "what to do next is never left empty"
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    assert [e["outcome"] for e in events if e["event"] == "run.finished"][-1] == outcome
    # This session's containment is recorded, as a build's is (the summary alone would show the first run's).
    names = [e["event"] for e in events]
    assert "containment" in names[len(names) - names[::-1].index("run.resumed"):]
    assert notified.is_file() and json.loads(notified.read_text())["outcome"] == outcome
