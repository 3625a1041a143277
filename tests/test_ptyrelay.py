"""The relay process (process/ptyrelay.py): real PTYs, real processes, real logs.

What it must hold: every byte the build writes reaches the log; rocmbuild's notes land on
fresh lines between the build's writes; stopping it still copies what the PTY has ready; it
leaves when rocmbuild dies; it survives the Ctrl-C that reaches rocmbuild's process group; a
relay killed from outside is replaced; and nothing rocmbuild does with the output holds the
build up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil
import pytest

from rocmbuild.process import ptyrelay
from rocmbuild.process.attempt import AttemptHooks, AttemptRequest
from rocmbuild.process.runner import Limits, Step, run_attempt
from rocmbuild.process.watcher import Watcher


@pytest.fixture
def pty_and_log(tmp_path: Path) -> Iterator[tuple[int, int, int, Path]]:
    """(master, slave, log fd, log path): a PTY with output post-processing off, and an empty log."""
    master, slave = os.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    log = tmp_path / "attempt-1.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    yield master, slave, fd, log
    for each in (master, slave, fd):
        with contextlib.suppress(OSError):  # a test closed the slave: the build's end
            os.close(each)


def wait_for(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_every_byte_reaches_the_log_and_the_end_is_said(pty_and_log: tuple[int, int, int, Path]) -> None:
    master, slave, fd, log = pty_and_log
    relay = ptyrelay.RelayProcess(master, fd, at_line_start=True)
    payload = b"".join(b"line %d \x1b[1mbold\x1b[0m\r\n" % i for i in range(20000)) + b"no newline at the end"
    os.write(slave, payload[:100])
    wait_for(lambda: log.stat().st_size >= 100)
    writer = threading.Thread(target=lambda: os.write(slave, payload[100:]))  # more than the PTY buffers
    writer.start()
    writer.join()
    os.close(slave)  # the build's end: the PTY reaches its end of file
    wait_for(lambda: (relay.wait(0.05), relay.pty_closed)[1])
    assert log.read_bytes() == payload
    assert relay.note(b"==> rocmbuild: after the end\n"), "notes are still taken after the PTY's end"
    relay.close()
    assert relay.ended and relay.write_error is None and relay.exit_status == 0
    assert log.read_bytes() == payload + b"\n==> rocmbuild: after the end\n"


def test_a_note_lands_on_a_fresh_line_between_two_writes(pty_and_log: tuple[int, int, int, Path]) -> None:
    master, slave, fd, log = pty_and_log
    relay = ptyrelay.RelayProcess(master, fd, at_line_start=True)
    os.write(slave, b"[1/2] compiling half a li")
    wait_for(lambda: log.stat().st_size == 25)
    assert relay.note(b"==> rocmbuild: stopping step build: stalled\n")
    wait_for(lambda: b"stalled\n" in log.read_bytes())
    os.write(slave, b"ne\n[2/2] done\n")
    os.close(slave)
    relay.close()
    assert log.read_bytes() == (b"[1/2] compiling half a li\n==> rocmbuild: stopping step build: stalled\n"
                                b"ne\n[2/2] done\n")


def test_stopping_copies_what_the_pty_has_ready(pty_and_log: tuple[int, int, int, Path]) -> None:
    master, slave, fd, log = pty_and_log
    relay = ptyrelay.RelayProcess(master, fd, at_line_start=True)
    os.write(slave, b"x" * 3000 + b"\n")
    relay.stop()  # the slave is still open (a daemon holding the terminal): the relay leaves anyway
    assert relay.ended and not relay.pty_closed
    assert log.read_bytes() == b"x" * 3000 + b"\n"
    relay.close()


def test_a_log_that_cannot_be_written_is_reported_with_its_errno(pty_and_log: tuple[int, int, int, Path]) -> None:
    master, slave, _, _ = pty_and_log
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        relay = ptyrelay.RelayProcess(master, full, at_line_start=True)
        os.write(slave, b"output\n")
        wait_for(lambda: (relay.wait(0.05), relay.ended)[1])
        assert relay.write_error == 28  # ENOSPC
        assert not relay.note(b"==> rocmbuild: too late\n")
        relay.close()
    finally:
        os.close(full)


def ignored_signals(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:")), 16)


def test_ctrl_c_neither_reaches_nor_ends_the_relay(pty_and_log: tuple[int, int, int, Path]) -> None:
    master, slave, fd, log = pty_and_log
    relay = ptyrelay.RelayProcess(master, fd, at_line_start=True)
    assert os.getsid(relay.pid) == relay.pid, "a session of its own: the terminal's Ctrl-C is rocmbuild's"
    wanted = sum(1 << (sig - 1) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))
    wait_for(lambda: ignored_signals(relay.pid) & wanted == wanted)  # set as it starts
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        os.kill(relay.pid, sig)
    os.write(slave, b"still relayed\n")
    wait_for(lambda: log.read_bytes() == b"still relayed\n")
    assert not gone(relay.pid)
    relay.close()


def test_a_long_note_goes_in_whole_lines_while_output_flows(pty_and_log: tuple[int, int, int, Path]) -> None:
    """A stall's process table can pass a pipe read (64 KiB): no line of it is split or interleaved."""
    master, slave, fd, log = pty_and_log
    relay = ptyrelay.RelayProcess(master, fd, at_line_start=True)
    rows = [f"==> rocmbuild:   {pid:>7} {pid - 1:>7}   99.0  1.2GiB  /usr/bin/clang++ " + "-I/x " * 40 + "\n"
            for pid in range(1000, 1500)]
    note = "".join(rows).encode()
    assert len(note) > 2 * ptyrelay.NOTES_MAX
    stop = threading.Event()

    def flood() -> None:
        n = 0
        while not stop.is_set():
            os.write(slave, b"[%d/99999] Building HIPCC object part" % n)  # no newline: mid-line writes
            os.write(slave, b" two\n")
            n += 1

    writer = threading.Thread(target=flood)
    writer.start()
    try:
        time.sleep(0.05)
        assert relay.note(note)
        time.sleep(0.2)
    finally:
        stop.set()
        writer.join()
    os.close(slave)
    relay.close()
    lines = log.read_text().splitlines(keepends=True)
    assert [line for line in lines if line.startswith("==> rocmbuild:")] == rows, "every row whole, in order"
    # The build's bytes are all there, in order; a note only put a newline before itself when the
    # build was mid-line ("...part" + note + " two").
    # A PTY read can end anywhere in a build's line, so the newline before the note can fall inside any
    # line: with every newline taken out, the build's bytes must be exactly what it wrote, in order.
    build = "".join(line for line in lines if not line.startswith("==> rocmbuild:"))
    written = build.count("[")
    assert build.replace("\n", "") == "".join(f"[{n}/99999] Building HIPCC object part two" for n in range(written))
    # a newline is added only before a piece of the note (it goes in whole lines, up to NOTES_MAX at a time)
    assert written <= build.count("\n") <= written + len(note) // ptyrelay.NOTES_MAX + 1


def test_a_relay_failure_that_is_not_the_log_is_not_a_full_disk(tmp_path: Path) -> None:
    log = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    not_a_pty = os.open(tmp_path, os.O_RDONLY)  # reading a directory: EISDIR
    try:
        relay = ptyrelay.RelayProcess(not_a_pty, log, at_line_start=True)
        wait_for(lambda: (relay.wait(0.05), relay.ended)[1])
        assert relay.write_error is None and relay.failure == 21  # EISDIR
        relay.close()
    finally:
        os.close(not_a_pty)
        os.close(log)


def test_the_relay_leaves_when_rocmbuild_dies(tmp_path: Path) -> None:
    # A parent that starts a relay on a PTY whose other end a build still holds, then is SIGKILLed.
    script = (
        "import os, subprocess, sys, time\n"
        "from rocmbuild.process import ptyrelay\n"
        "master, slave = os.openpty()\n"
        "build = subprocess.Popen(['sleep', '30'], stdout=slave, start_new_session=True)\n"
        f"fd = os.open({str(tmp_path / 'log')!r}, os.O_WRONLY | os.O_CREAT | os.O_APPEND)\n"
        "relay = ptyrelay.RelayProcess(master, fd, at_line_start=True)\n"
        "print(relay.pid, build.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    build_pid = None
    try:
        assert parent.stdout is not None
        relay_pid, build_pid = map(int, parent.stdout.readline().split())
        time.sleep(0.3)
        assert not gone(relay_pid)
        parent.kill()
        parent.wait()
        wait_for(lambda: gone(relay_pid), timeout=ptyrelay.PARENT_CHECK_S + 5)
        assert not gone(build_pid), "the PTY is still open: the relay left because rocmbuild did"
    finally:
        parent.kill()
        if build_pid is not None:
            os.kill(build_pid, signal.SIGKILL)


class SlowHook:
    """A hook whose every line takes 0.3 s: a classifier far slower than any real one."""

    keywords = (b"FAILURE-",)

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_line(self, number: int, text: str, before: Sequence[str]) -> int:
        time.sleep(0.3)
        self.seen.append(text)
        return 0

    def on_context(self, number: int, text: str) -> None:
        pass


def test_a_slow_watcher_never_holds_the_build_up(tmp_path: Path) -> None:
    """The build writes its output and finishes at its own pace; rocmbuild catches up after."""
    done = tmp_path / "done"
    command = (f"for i in 1 2 3 4 5; do echo \"FAIL\"\"URE-$i\"; done; "  # the header holds no keyword
               f"head -c 300000 /dev/zero | tr '\\0' x; echo; date +%s.%N > {done}")
    hook = SlowHook()
    t0 = time.time()
    outcome = run_attempt(AttemptRequest((Step("build", command),), cwd=tmp_path, env=dict(os.environ),
                                         log_path=tmp_path / "attempt-1.log",
                                         limits=Limits(stall_timeout_s=30, grace_s=0.5)),
                          AttemptHooks(watcher=Watcher(hook)))
    ended = time.time()
    assert outcome.succeeded
    finished = float(done.read_text())
    assert len(hook.seen) == 5, "every line was still classified"
    # The hook's 5 x 0.3 s came after the build had ended (the build did not wait for them).
    assert ended - finished > 1.0, (finished - t0, ended - t0)


def test_a_relay_killed_from_outside_is_replaced(tmp_path: Path) -> None:
    marker = tmp_path / "go"
    command = f"echo first; while [ ! -e {marker} ]; do sleep 0.05; done; echo second"
    killed: list[int] = []

    def relays() -> list[psutil.Process]:
        found = []
        for p in psutil.Process().children():
            with contextlib.suppress(psutil.Error):  # gone, or a zombie of an earlier test
                if ptyrelay.__file__ in p.cmdline():  # exec'd: not a fork of ours on its way to exec
                    found.append(p)
        return found

    def kill_the_relay() -> None:
        for _ in range(200):
            found = relays()
            if found:
                time.sleep(0.2)
                found[0].kill()
                killed.append(found[0].pid)
                break
            time.sleep(0.02)
        marker.touch()

    threading.Thread(target=kill_the_relay).start()
    outcome = run_attempt(AttemptRequest((Step("build", command),), cwd=tmp_path, env=dict(os.environ),
                                         log_path=tmp_path / "attempt-1.log",
                                         limits=Limits(stall_timeout_s=30, grace_s=3)),
                          AttemptHooks(watcher=Watcher()))
    assert outcome.succeeded and killed
    text = (tmp_path / "attempt-1.log").read_text()
    assert "first\n" in text and "second\n" in text
    assert f"the output relay (pid {killed[0]}) ended unexpectedly" in text
    assert "left" not in text and "stopping" not in text, "the new relay is rocmbuild's, not the build's"
    assert outcome.duration_s < 3, "nothing waited out a grace period"
    assert outcome.lines_seen == len(text.splitlines())


def test_a_relay_that_keeps_dying_ends_the_step_with_a_clear_error(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from rocmbuild.errors import InternalError
    from rocmbuild.process import runner

    monkeypatch.setattr(runner, "MAX_RELAY_RESTARTS", 0)
    pidfile = tmp_path / "pid"
    command = f"echo $$ > {pidfile}; echo first; sleep 30"

    def kill_the_relay() -> None:
        for _ in range(500):
            for p in psutil.Process().children():
                with contextlib.suppress(psutil.Error):
                    if ptyrelay.__file__ in p.cmdline():
                        time.sleep(0.2)
                        p.kill()
                        return
            time.sleep(0.02)

    threading.Thread(target=kill_the_relay).start()
    with pytest.raises(InternalError) as raised:
        run_attempt(AttemptRequest((Step("build", command),), cwd=tmp_path, env=dict(os.environ),
                                   log_path=tmp_path / "attempt-1.log", limits=Limits(stall_timeout_s=60, grace_s=0.5)),
                    AttemptHooks(watcher=Watcher()))
    assert "ended unexpectedly 1 times" in raised.value.what and raised.value.todo
    assert gone(int(pidfile.read_text())), "the build was stopped before the error went up"

