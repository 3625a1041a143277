"""The build's escape strings that act outside the window never reach the user's terminal.

OSC 52 sets (and on some terminals reads) the clipboard, OSC 0/2 the title, DCS/APC/PM/SOS reach
terminal extensions; colour, cursor moves and ``\\r`` progress are a build's normal output and stay.
"""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from rocmbuild.process.display import Display
from rocmbuild.process.escapes import TerminalFilter

CLIPBOARD = b"\x1b]52;c;ZWNobyBwd25lZA==\x07"  # OSC 52: "echo pwned" into the clipboard
TITLE = b"\x1b]0;you have been pwned\x1b\\"
NORMAL = b"\x1b[32m[3/9] Building HIP object k.hip.o\x1b[0m\r\x1b[K[4/9] x\n"


@pytest.mark.parametrize("hostile", [
    CLIPBOARD, TITLE, b"\x1b]8;;http://evil/\x07link\x1b]8;;\x07", b"\x1bPq#0;2;0;0;0#1~~@@\x1b\\",
    b"\x1b_Gf=24,a=T;AAAA\x1b\\", b"\x1b^private\x07", b"\x1bXsos\x07", "\u009d0;title\u009c".encode(),
    b"\x1b]52;c;abc\x18",  # CAN aborts the string, as on a terminal
])
def test_strings_acting_outside_the_window_are_dropped_and_the_rest_kept(hostile: bytes) -> None:
    out = TerminalFilter().feed(b"before " + hostile + b" after\n" + NORMAL)
    assert out.replace(b"link", b"") == b"before  after\n" + NORMAL


def test_a_string_split_across_reads_is_dropped_whole() -> None:
    data = b"a" + CLIPBOARD + b"b" + TITLE + b"c\n"
    for size in (1, 2, 3, 5, 7, 64):
        terminal = TerminalFilter()
        out = b"".join(terminal.feed(data[i:i + size]) for i in range(0, len(data), size))
        assert out == b"abc\n", size


def test_an_unterminated_string_swallows_what_follows_as_a_terminal_would() -> None:
    terminal = TerminalFilter()
    assert terminal.feed(b"x\x1b]52;c;AAAA") == b"x"
    assert terminal.feed(b"more clipboard data\n") == b""
    assert terminal.feed(b"\x07visible\n") == b"visible\n"


def test_utf8_text_with_c2_bytes_passes() -> None:
    text = "100 °C µs ©\n".encode()
    assert TerminalFilter().feed(text) == text


def test_the_display_filters_on_a_terminal_and_relays_every_byte_elsewhere() -> None:
    tty, pipe = io.BytesIO(), io.BytesIO()
    with Display(tty, mode="normal", is_tty=True, width=80) as d:
        d.relay(CLIPBOARD + NORMAL + TITLE)
    assert CLIPBOARD not in tty.getvalue() and TITLE not in tty.getvalue() and NORMAL in tty.getvalue()
    with Display(pipe, mode="verbose", is_tty=False) as d:
        d.relay(b"x" + CLIPBOARD + b"y\n")
    assert b"\x1b" not in pipe.getvalue()  # off a terminal every escape goes (PlainRelay)


@pytest.mark.integration
def test_a_real_build_on_a_real_terminal_cannot_set_the_clipboard_and_its_log_keeps_it(tmp_path: Path) -> None:
    from test_e2e_ladder import ROCMBUILD, base_env

    recipe = tmp_path / "osc.toml"
    script = tmp_path / "osc.py"
    script.write_text(f"import sys\nsys.stdout.buffer.write(b'start ' + {CLIPBOARD!r} + {TITLE!r} + b' done\\n')\n")
    recipe.write_text(f'name = "osc"\n[steps]\nbuild = ["{sys.executable} {script}"]\n')
    argv = [ROCMBUILD, str(recipe), "--source", str(tmp_path), "--arch", "gfx90a", "--run-dir", str(tmp_path / "run"),
            "--skip-preflight", "--no-cache"]
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(argv, env=base_env(tmp_path), stdin=subprocess.DEVNULL, stdout=secondary,
                            stderr=secondary, close_fds=True)
    os.close(secondary)
    seen = b""
    while True:
        ready, _, _ = select.select([primary], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(primary, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(timeout=60) == 0
    os.close(primary)
    assert b"start  done" in seen, seen[-2000:]
    assert b"\x1b]" not in seen
    assert CLIPBOARD in (tmp_path / "run" / "attempt-1.log").read_bytes()
