"""display: relay, status line on a terminal, plain progress lines elsewhere."""

from __future__ import annotations

import io
import re
import subprocess
from pathlib import Path

import pytest

from rocmbuild.process.display import Caption, Display, Pace
from rocmbuild.process.watcher import Watcher

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def watcher_at(done: int, total: int, extra: bytes = b"") -> Watcher:
    w = Watcher()
    w.feed(extra + f"[{done}/{total}] Building CXX object x.o\n".encode())
    return w


def test_quiet_not_a_tty_prints_only_plain_progress_lines() -> None:
    out = io.BytesIO()
    clock = Clock()
    with Display(out, mode="quiet", is_tty=False, caption=Caption(attempt=2, max_attempts=6),
                 pace=Pace(plain_interval_s=30, clock=clock)) as d:
        d.step("build")
        d.relay(b"compiler output\n")
        w = watcher_at(10, 100, b"a.cpp:1: warning: unused variable\n")
        d.update(w)
        assert out.getvalue() == b""  # not yet 30 s
        clock.now += 31
        d.update(w)
    text = out.getvalue().decode()
    assert "compiler output" not in text
    assert text.count("\n") == 1
    assert text.startswith("rocmbuild: attempt 2/6 · build · 10/100 (10.0%)")
    assert "31s" in text and "warning: unused variable" in text
    assert "\x1b" not in text  # no terminal control in CI logs


def test_normal_not_a_tty_relays_whole_lines_and_progress_only_between_lines() -> None:
    out = io.BytesIO()
    clock = Clock()
    d = Display(out, mode="normal", is_tty=False, pace=Pace(plain_interval_s=0, clock=clock))
    d.step("build")
    d.relay(b"half a li")
    clock.now += 1
    d.update(watcher_at(1, 4))
    first = out.getvalue()  # a line is relayed once it is whole (it may still be redrawn)
    assert b"half" not in first and first.decode().startswith("rocmbuild: attempt 1/1 · build · 1/4")
    d.relay(b"ne\n\xff raw\r\n")
    clock.now += 1
    d.update(watcher_at(2, 4))
    d.close()
    value = out.getvalue()[len(first):]
    assert value.startswith(b"half a line\n\xff raw\n")  # bytes kept, the PTY's \r\n is a plain \n
    assert value[len(b"half a line\n\xff raw\n"):].decode().startswith("rocmbuild: attempt 1/1 · build · 2/4")


def test_not_a_tty_strips_ansi_and_collapses_redraws() -> None:
    """Issue 12: relayed to a file, ninja's and pip's redraws and colours become their final lines."""
    out = io.BytesIO()
    raw = (b"\x1b[1;32m-- Configuring done\x1b[0m\r\n"
           b"\r[1/3] Building CXX object a.o\x1b[K\r[2/3] Building CXX object bb.o\x1b[K\r[3/3] Linking\x1b[K\r\n"
           b"Downloading x.whl   10%|#     |\rDownloading x.whl  100%|######|\r\n"
           b"\x1b]0;title\x07tail without newline")
    with Display(out, mode="normal", is_tty=False, pace=Pace(plain_interval_s=1e9)) as d:
        for i in range(0, len(raw), 7):   # chunks cut through escapes and lines
            d.relay(raw[i:i + 7])
        d.message("rocmbuild: attempt 1 failed")
    assert out.getvalue() == (b"-- Configuring done\n[3/3] Linking\nDownloading x.whl  100%|######|\n"
                              b"tail without newline\nrocmbuild: attempt 1 failed\n")


def test_on_a_tty_the_relay_is_byte_exact() -> None:
    out = io.BytesIO()
    with Display(out, mode="normal", is_tty=True, width=80) as d:
        d.relay(b"\x1b[32mok\x1b[0m\r\n\r[1/2] a\x1b[K\r[2/2] b\x1b[K\n")
    assert b"\x1b[32mok\x1b[0m\r\n\r[1/2] a\x1b[K\r[2/2] b\x1b[K\n" in out.getvalue()


def test_verbose_relays_like_normal() -> None:
    out = io.BytesIO()
    with Display(out, mode="verbose", is_tty=False) as d:
        d.relay(b"a\n")
    assert out.getvalue() == b"a\n"


def test_tty_quiet_shows_the_status_line_and_no_output() -> None:
    out = io.BytesIO()
    clock = Clock()
    d = Display(out, mode="quiet", is_tty=True, width=120, caption=Caption(attempt=1, max_attempts=3, recipe="vllm"),
                pace=Pace(clock=clock))
    d.step("build")
    d.relay(b"hidden compiler output\n")
    d.update(watcher_at(30, 120, b"x.cpp:2: error: boom\n"))
    text = ANSI.sub("", out.getvalue().decode())
    assert "hidden compiler output" not in text
    assert "vllm attempt 1/3 · build · 30/120 (25.0%)" in text
    assert "error: boom" in text
    d.close()


def test_tty_normal_relays_output_intact_around_the_status_line() -> None:
    out = io.BytesIO()
    clock = Clock()
    d = Display(out, mode="normal", is_tty=True, width=100, pace=Pace(clock=clock))
    d.step("build")
    d.update(watcher_at(1, 10))
    drawn = out.getvalue()
    assert b"1/10" in drawn
    d.relay(b"line one\n")
    after = out.getvalue()[len(drawn):]
    assert b"line one\n" in after  # the bytes themselves are written unchanged
    assert after.index(b"line one\n") > 0  # ...after the status line was erased
    clock.now += 1
    d.relay(b"partial")
    d.update(watcher_at(2, 10))
    assert out.getvalue().endswith(b"partial")  # not redrawn in the middle of a line
    d.relay(b" end\n")
    clock.now += 1
    d.update(watcher_at(3, 10))
    assert b"3/10" in out.getvalue()[-300:]
    d.close()
    assert ANSI.sub("", out.getvalue().decode()).count("line one") == 1


def test_status_updates_are_rate_limited() -> None:
    out = io.BytesIO()
    clock = Clock()
    d = Display(out, mode="quiet", is_tty=True, width=100, pace=Pace(refresh_s=0.1, clock=clock))
    w = watcher_at(1, 10)
    d.update(w)
    size = len(out.getvalue())
    for _ in range(100):
        d.update(w)
    assert len(out.getvalue()) == size
    clock.now += 0.2
    d.update(w)
    assert len(out.getvalue()) > size
    d.close()


def test_eta_from_the_recent_rate() -> None:
    clock = Clock()
    d = Display(io.BytesIO(), mode="quiet", is_tty=False, pace=Pace(refresh_s=0, clock=clock))
    d.update(watcher_at(100, 1000))
    clock.now += 10
    w = watcher_at(200, 1000)
    d.update(w)  # 10 edges/s, 800 left
    assert d.eta_s(w.progress) == pytest.approx(80.0)
    assert "ETA 1m20s" in d.status_text(w)


def test_text_streams_are_accepted() -> None:
    text = io.StringIO()
    with Display(text, mode="normal", is_tty=False) as d:
        d.relay("café\n".encode())
        d.message("rocmbuild: note")
    assert text.getvalue() == "café\nrocmbuild: note\n"
    wrapped = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    wrapped.write("before ")
    with Display(wrapped, mode="normal", is_tty=False) as d:
        d.relay(b"raw \xff\n")
    assert wrapped.buffer.getvalue() == b"before raw \xff\n"


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode"):
        Display(io.BytesIO(), mode="loud")


@pytest.mark.integration
def test_a_real_build_relayed_to_a_pipe_has_no_escapes_and_the_log_stays_raw(tmp_path: Path) -> None:
    """Through the installed command, the real PTY runner and a scripted build (tests/fakebuild.py colours)."""
    from test_e2e_ladder import ROCMBUILD, base_env, write_recipe

    argv = [ROCMBUILD, str(write_recipe(tmp_path, "colours")), "--source", str(tmp_path), "--arch", "gfx90a",
            "--run-dir", str(tmp_path / "run"), "--skip-preflight", "--no-cache"]
    proc = subprocess.run(argv, env=base_env(tmp_path), capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    relayed = proc.stdout
    assert b"\x1b" not in relayed and b"\r" not in relayed
    assert "   ━━━━━━━━━━━━━━━━━━━━ 100/100 MB\n".encode() in relayed      # the bar's final state, once
    assert b"Successfully installed setuptools-scm-8.1.0\n" in relayed
    assert b"[4/4] Building HIP object CMakeFiles/_C.dir/csrc/k4.hip.o\n" in relayed
    assert b"[1/4]" not in relayed
    log = (tmp_path / "run" / "attempt-1.log").read_bytes()
    assert log.count(b"\x1b[") >= 20 and b"\r[1/4] Building" in log, "attempt-1.log keeps the raw bytes"
