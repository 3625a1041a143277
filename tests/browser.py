"""Headless Chromium for the tests: a page's DOM, its console messages and a screenshot's pixels.

The pages rocmbuild writes have no JavaScript and forbid every fetch (Content-Security-Policy), so
*any* console message (a CSP violation, a blocked load, a script error) is a failure.  The
screenshot is read with Pillow so a test can check that the colours of the outcome banner, the
timeline and the memory line are really drawn.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0")
_CONSOLE = re.compile(r":(?:INFO|WARNING|ERROR):CONSOLE[^\]]*\]\s*(.*)")


@dataclass(frozen=True)
class Rendered:
    dom: str
    console: list[str]


def _run(page: Path, *extra: str, timeout: float = 90) -> tuple[str, str]:
    """Run chromium on the page; a browser that died (exit status, nothing rendered) is run once more,
    then reported with its stderr: a crash under load is not the page's fault, but must not pass silently."""
    for _ in range(2):
        with tempfile.TemporaryDirectory(prefix="rocmbuild-chromium-") as profile:
            proc = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()],
                                  capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if proc.returncode == 0 and (proc.stdout.strip() or "--dump-dom" not in extra):
            return proc.stdout, proc.stderr
    raise AssertionError(f"chromium exited {proc.returncode} on {page}: {proc.stderr[-2000:]}")


def dump_dom(page: Path) -> Rendered:
    out, err = _run(page, "--dump-dom")
    return Rendered(out, [m.group(1) for m in _CONSOLE.finditer(err)])


def screenshot(page: Path, png: Path, width: int = 1000, height: int = 2200) -> list[str]:
    """Take the screenshot; the console messages seen while rendering."""
    _, err = _run(page, f"--screenshot={png}", f"--window-size={width},{height}", "--hide-scrollbars")
    return [m.group(1) for m in _CONSOLE.finditer(err)]


def colour_count(png: Path, rgb: tuple[int, int, int], tolerance: int = 24) -> int:
    """How many pixels of the screenshot are within ``tolerance`` of ``rgb`` (every channel)."""
    from PIL import Image

    with Image.open(png) as image:
        r0, g0, b0 = rgb
        return sum(n for n, (r, g, b) in (image.convert("RGB").getcolors(1 << 24) or [])
                   if abs(r - r0) <= tolerance and abs(g - g0) <= tolerance and abs(b - b0) <= tolerance)


def distinct_colours(png: Path) -> int:
    from PIL import Image

    with Image.open(png) as image:
        return len(image.convert("RGB").getcolors(1 << 24) or [])
