"""runner.run_attempt with real child processes (scripts in tests/children)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest

from rocmbuild.process.attempt import AttemptHooks, AttemptRequest
from rocmbuild.process.runner import (
    HEADER,
    AttemptOutcome,
    InterruptFlag,
    Limits,
    Step,
    run_attempt,
)
from rocmbuild.process.watcher import Watcher

CHILDREN = Path(__file__).parent / "children"
PY = shlex.quote(sys.executable)


def child(script: str, *args: object) -> str:
    return " ".join([PY, shlex.quote(str(CHILDREN / script)), *(shlex.quote(str(a)) for a in args)])


def run(tmp_path: Path, *commands: str, watcher: Watcher | None = None, limits: Limits | None = None,
        **kw: object) -> AttemptOutcome:
    steps = tuple(Step(f"s{i}", c) for i, c in enumerate(commands))
    request = AttemptRequest(steps, cwd=tmp_path, env=dict(os.environ), log_path=tmp_path / "attempt-1.log",
                             limits=limits or Limits(stall_timeout_s=20, grace_s=0.5))
    return run_attempt(request, AttemptHooks(watcher=watcher or Watcher(), **kw))  # type: ignore[arg-type]


def header(name: str, command: str) -> bytes:
    return HEADER.format(name=name, command=command).encode()


def dead(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def read_pids(path: Path, timeout: float = 10) -> list[int]:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    lines = path.read_text().split()
    assert lines[-1] == "ready"
    return [int(x) for x in lines[:-1]]


class Recorder:
    """A LineHook that records what it receives and can act on a line."""

    def __init__(self, keywords: tuple[bytes, ...], action: object = None) -> None:
        self.keywords = keywords
        self.lines: list[tuple[int, str]] = []
        self.action = action

    def on_line(self, number: int, text: str, before: Sequence[str]) -> int:
        self.lines.append((number, text))
        if callable(self.action):
            self.action(number, text)
        return 0

    def on_context(self, number: int, text: str) -> None:
        pass


# -- relay ----------------------------------------------------------------------------------------


def test_output_is_relayed_while_the_child_runs(tmp_path: Path) -> None:
    flag = tmp_path / "seen"
    seen_at: list[float] = []

    def on_first(number: int, text: str) -> None:
        seen_at.append(time.monotonic())
        flag.touch()  # the child waits for this before printing its second line

    hook = Recorder((b"first",), on_first)
    cmd = child("stream_wait.py", flag)
    out = run(tmp_path, cmd, watcher=Watcher(hook))
    assert out.succeeded, (tmp_path / "attempt-1.log").read_text()
    assert hook.lines == [(2, "first line")]  # line 1 is the step header
    assert (tmp_path / "attempt-1.log").read_bytes() == header("s0", cmd) + b"first line\nsecond line\n"


@pytest.mark.parametrize("kind", ["partial", "progress", "badutf8", "mixed", "ninja"])
def test_log_holds_exactly_the_bytes_the_child_wrote(tmp_path: Path, kind: str) -> None:
    copy = tmp_path / "copy.bin"
    cmd = child("emit.py", kind, copy)
    out = run(tmp_path, cmd)
    assert out.succeeded
    log = (tmp_path / "attempt-1.log").read_bytes()
    assert log == header("s0", cmd) + copy.read_bytes()
    assert b"\r\n" not in log  # ONLCR is off: no \n -> \r\n translation


def test_output_is_relayed_to_display_and_watcher(tmp_path: Path) -> None:
    relayed: list[bytes] = []

    class FakeDisplay:
        def __init__(self) -> None:
            self.steps: list[str] = []

        def relay(self, data: bytes) -> None:
            relayed.append(data)

        def step(self, name: str) -> None:
            self.steps.append(name)

        def update(self, watcher: Watcher) -> None:
            pass

    display = FakeDisplay()
    watcher = Watcher()
    cmd = child("emit.py", "partial")
    out = run(tmp_path, cmd, watcher=watcher, display=display)
    assert out.succeeded
    assert b"".join(relayed) == (tmp_path / "attempt-1.log").read_bytes()
    assert display.steps == ["s0"]
    assert watcher.lines_seen == 3 == out.lines_seen
    assert watcher.recent(2) == ["partial line one", "line two"]


def test_unterminated_last_line_gets_a_newline_and_is_counted(tmp_path: Path) -> None:
    cmd = child("emit.py", "unterminated")
    out = run(tmp_path, cmd)
    assert (tmp_path / "attempt-1.log").read_bytes() == header("s0", cmd) + b"line\nno newline at the end\n"
    assert out.lines_seen == 3


def test_pty_window_is_wide(tmp_path: Path) -> None:
    out = run(tmp_path, "stty size; test -t 1 && echo tty")
    assert out.succeeded
    assert (tmp_path / "attempt-1.log").read_text().splitlines()[1:] == ["40 250", "tty"]


def test_environment_and_cwd_are_the_given_ones(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "ROCMBUILD_TEST_VAR": "value 1"}
    out = run_attempt(AttemptRequest((Step("build", 'echo "$ROCMBUILD_TEST_VAR"; pwd; echo "${HOME:-unset}"'),),
                                     cwd=tmp_path, env=env, log_path=tmp_path / "a.log", limits=Limits()),
                      AttemptHooks(watcher=Watcher()))
    assert out.succeeded
    assert (tmp_path / "a.log").read_text().splitlines()[1:] == ["value 1", str(tmp_path), "unset"]


# -- steps ----------------------------------------------------------------------------------------


def test_steps_run_in_order_and_the_first_failure_ends_the_attempt(tmp_path: Path) -> None:
    out = run(tmp_path, "echo A", "echo B; exit 3", "echo C")
    assert not out.succeeded
    assert (out.ended, out.exit_code, out.signal) == ("exited", 3, None)
    assert out.step == Step("s1", "echo B; exit 3")
    assert (tmp_path / "attempt-1.log").read_bytes() == (
        header("s0", "echo A") + b"A\n" + header("s1", "echo B; exit 3") + b"B\n"
    )
    assert out.log == tmp_path / "attempt-1.log"
    assert out.duration_s < 10


def test_all_steps_succeed(tmp_path: Path) -> None:
    out = run(tmp_path, "echo A", "echo B")
    assert out.succeeded and out.step is None and out.exit_code == 0 and out.stopped_early is None


def test_pipefail_makes_a_failing_pipeline_fail(tmp_path: Path) -> None:
    out = run(tmp_path, "false | cat")
    assert out.exit_code == 1


def test_log_is_appended_across_calls(tmp_path: Path) -> None:
    watcher = Watcher()
    run(tmp_path, "printf 'no newline'", watcher=watcher)
    run(tmp_path, "echo second", watcher=watcher)
    assert (tmp_path / "attempt-1.log").read_bytes() == (
        header("s0", "printf 'no newline'") + b"no newline\n" + header("s0", "echo second") + b"second\n"
    )
    assert watcher.lines_seen == 4  # the watcher's line numbers are the log's


def test_missing_directory_is_a_failed_start_not_a_crash(tmp_path: Path) -> None:
    out = run_attempt(AttemptRequest((Step("build", "true"),), cwd=tmp_path / "nope", env=dict(os.environ),
                                     log_path=tmp_path / "a.log", limits=Limits()), AttemptHooks(watcher=Watcher()))
    assert (out.ended, out.exit_code) == ("exited", 127)
    assert "could not start" in (tmp_path / "a.log").read_text()


# -- limits ---------------------------------------------------------------------------------------


def test_stall_kills_a_child_that_ignores_sigterm_and_logs_the_process_tree(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    cmd = child("ignore_term.py", pidfile)
    t0 = time.monotonic()
    out = run(tmp_path, cmd, limits=Limits(stall_timeout_s=1, grace_s=0.3))
    elapsed = time.monotonic() - t0
    pid = int(pidfile.read_text())
    assert out.ended == "stalled"
    assert out.signal == signal.SIGKILL  # SIGINT and SIGTERM were ignored
    assert out.step is not None and out.step.name == "s0"
    assert dead(pid)
    assert 1 <= elapsed < 5
    log = (tmp_path / "attempt-1.log").read_text()
    assert "==> rocmbuild: stalled: no output for 1s; process tree:" in log
    table = log[log.index("process tree:"):]
    assert "PID" in table and "RSS" in table and "CPU%" in table
    assert f" {pid} " in table and "ignore_term.py" in table
    assert "sent SIGKILL" in log


def test_budget_deadline_stops_a_chatty_child(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    t0 = time.monotonic()
    out = run(tmp_path, child("ignore_term.py", pidfile, "chatty"),
              limits=Limits(stall_timeout_s=5, deadline=time.monotonic() + 1.0, grace_s=0.2))
    assert out.ended == "budget"
    assert 1.0 <= time.monotonic() - t0 < 4
    assert dead(int(pidfile.read_text()))
    assert "stopping step s0: budget" in (tmp_path / "attempt-1.log").read_text()


def test_budget_already_spent_starts_nothing(tmp_path: Path) -> None:
    out = run(tmp_path, "touch started", limits=Limits(deadline=time.monotonic() - 1))
    assert out.ended == "budget" and out.exit_code is None
    assert not (tmp_path / "started").exists()


def test_stall_kills_grandchildren_that_left_the_session(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    out = run(tmp_path, child("tree.py", pidfile), limits=Limits(stall_timeout_s=1, grace_s=0.3))
    pids = read_pids(pidfile)
    assert out.ended == "stalled"
    assert len(pids) == 3
    survivors = [p for p in pids if not dead(p)]
    assert survivors == []


def test_processes_left_behind_by_a_finished_step_are_stopped(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    out = run(tmp_path, child("tree.py", pidfile, "exit"), limits=Limits(stall_timeout_s=10, grace_s=0.3))
    pids = read_pids(pidfile)
    assert out.succeeded
    assert [p for p in pids if not dead(p)] == []
    log = (tmp_path / "attempt-1.log").read_text()
    assert "exited leaving" in log
    assert str(pids[2]) in log  # the daemon is named


def test_stop_check_ends_the_attempt_early(tmp_path: Path) -> None:
    hook = Recorder((b"cannot find",))
    checks: list[int] = []

    def stop_check() -> str | None:
        checks.append(1)
        return "fail-fast: missing_library" if hook.lines else None

    cmd = "echo starting; echo 'ld: cannot find -lhipblas'; sleep 30; echo never"
    t0 = time.monotonic()
    out = run(tmp_path, cmd, watcher=Watcher(hook), stop_check=stop_check,
              limits=Limits(stall_timeout_s=60, grace_s=0.5))
    assert time.monotonic() - t0 < 5
    assert out.ended == "exited"
    assert out.stopped_early == "fail-fast: missing_library"
    assert not out.succeeded
    assert out.step is not None and out.step.name == "s0"
    assert checks
    assert "\nnever" not in (tmp_path / "attempt-1.log").read_text()


def test_interrupted_callable_stops_the_tree(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    out = run(tmp_path, child("tree.py", pidfile), interrupted=lambda: pidfile.exists(),
              limits=Limits(stall_timeout_s=30, grace_s=0.3))
    assert out.ended == "interrupted"
    assert [p for p in read_pids(pidfile) if not dead(p)] == []


def test_a_failing_hook_stops_the_build_before_the_error_propagates(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"

    def explode(number: int, text: str) -> None:
        raise ValueError("hook bug")

    hook = Recorder((b"ignoring",), explode)
    with pytest.raises(ValueError, match="hook bug"):
        run(tmp_path, child("ignore_term.py", pidfile), watcher=Watcher(hook),
            limits=Limits(stall_timeout_s=30, grace_s=0.3))
    assert dead(int(pidfile.read_text()))
    assert "stopping step s0: rocmbuild failed: ValueError: hook bug" in (tmp_path / "attempt-1.log").read_text()


def test_progress_in_outcome(tmp_path: Path) -> None:
    out = run(tmp_path, child("emit.py", "ninja"))
    assert (out.progress.done, out.progress.total) == (3, 4)


# -- interrupts, end to end -----------------------------------------------------------------------


def test_sigterm_to_the_driver_stops_everything_and_exits_130(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    driver = subprocess.Popen(
        [sys.executable, str(CHILDREN / "driver.py"), str(tmp_path), child("tree.py", pidfile)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        pids = read_pids(pidfile)
        driver.send_signal(signal.SIGTERM)
        rc = driver.wait(timeout=15)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert rc == 130, driver.stderr.read() if driver.stderr else ""
    marker = json.loads((tmp_path / "marker.json").read_text())
    assert marker["ended"] == "interrupted"
    assert marker["received"] == signal.SIGTERM
    assert marker["step"] == "build"
    assert len(pids) == 3
    assert [p for p in pids if not dead(p)] == []
    assert "stopping step build: interrupted" in (tmp_path / "attempt-1.log").read_text()


def test_interrupt_flag_restores_handlers() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with InterruptFlag() as flag:
        assert not flag()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        assert flag() and flag.received == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) == before
