"""Live progress on the user's terminal while a build's output is relayed.

Owns what the person watching sees during an attempt:

* the build's output, relayed byte for byte to a binary stream (stdout, or
  stderr when ``--json`` keeps stdout for machine output), modes "normal" and
  "verbose"; nothing of it in "quiet";
* on a terminal, one status line drawn with rich (``rich.live.Live``): attempt
  k/N, step, ninja N/M with percentage and an ETA from the recent rate,
  elapsed time, the last warning or error line.  It is redrawn at most
  ``refresh_s`` apart (10x/s), is erased before relayed bytes are written and
  is redrawn only when the relayed output ends at a line boundary, so it never
  splits a line of the build's output.  (A build that redraws its own status
  with ``\\r`` and no newline, like ninja on a smart terminal, shows its own
  line instead of ours until it prints a newline.)
* not on a terminal (CI logs, nohup): no live line; a plain progress line
  every ``plain_interval_s`` seconds (30 by default), written between lines
  of output; and the relayed output without ANSI sequences, each ``\r``
  redraw collapsed to its final state (plainrelay.PlainRelay).

"verbose" and "normal" look the same here: the difference in verbosity is the
app's (what rocmbuild itself prints); both relay everything.
"""

from __future__ import annotations

import io
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import IO, TYPE_CHECKING, BinaryIO, TextIO, cast

from rocmbuild.process.escapes import TerminalFilter
from rocmbuild.process.plainrelay import PlainRelay
from rocmbuild.process.watcher import Progress, Watcher

if TYPE_CHECKING:  # rich is imported where it is used: a build off a terminal starts without it
    from _typeshed import ReadableBuffer
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

MODES = ("quiet", "normal", "verbose")
_RATE_WINDOW_S = 120.0  # the ETA comes from the rate over about this long


def _duration(seconds: float) -> str:
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class _TextOut(io.TextIOBase):
    """What rich's console writes to: text encoded onto the same binary stream as the relay."""

    def __init__(self, stream: BinaryIO, tty: bool) -> None:
        self._stream = stream
        self._tty = tty

    def write(self, s: str) -> int:
        self._stream.write(s.encode("utf-8", "replace"))
        return len(s)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._tty


class _TextSink(io.RawIOBase):
    """A binary face for a text stream without a buffer (e.g. io.StringIO): bytes decoded as UTF-8."""

    def __init__(self, text: TextIO) -> None:
        self._text = text

    def writable(self) -> bool:
        return True

    def write(self, b: ReadableBuffer) -> int:
        data = bytes(b)
        self._text.write(data.decode("utf-8", "replace"))
        return len(data)

    def flush(self) -> None:
        self._text.flush()


def _as_binary(stream: BinaryIO | TextIO) -> tuple[BinaryIO, TextIO | None]:
    """The binary stream to relay bytes to, and the text stream in front of it (flushed before writes)."""
    if isinstance(stream, io.TextIOBase) or hasattr(stream, "encoding"):
        text = cast(TextIO, stream)
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            return cast(BinaryIO, buffer), text
        return cast(BinaryIO, _TextSink(text)), None
    return stream, None


@dataclass(frozen=True, kw_only=True)
class Caption:
    """What the status line names: attempt k of N, and the recipe."""

    attempt: int = 1
    max_attempts: int = 1
    recipe: str | None = None


@dataclass(frozen=True, kw_only=True)
class Pace:
    """How often the display draws: the live line at most every ``refresh_s``, a plain progress line
    every ``plain_interval_s`` off a terminal, both timed by ``clock``."""

    refresh_s: float = 0.1
    plain_interval_s: float = 30.0
    clock: Callable[[], float] = time.monotonic


class Display:
    """Relays build output and shows progress; use as a context manager (or call close())."""

    def __init__(
        self,
        stream: BinaryIO | TextIO,
        *,
        mode: str = "normal",
        is_tty: bool | None = None,
        width: int | None = None,
        caption: Caption = Caption(),
        pace: Pace = Pace(),
    ) -> None:
        attempt, max_attempts, recipe = caption.attempt, caption.max_attempts, caption.recipe
        refresh_s, plain_interval_s, clock = pace.refresh_s, pace.plain_interval_s, pace.clock
        if mode not in MODES:
            raise ValueError(f"display mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self._stream, self._text_front = _as_binary(stream)
        if self._text_front is not None:
            self._text_front.flush()
        if is_tty is None:
            try:
                is_tty = stream.isatty()
            except (AttributeError, ValueError):
                is_tty = False
        self.is_tty = is_tty
        self._relay = mode != "quiet"
        self._plain = None if is_tty else PlainRelay()
        # On a terminal the build's OSC/DCS strings (clipboard, title) are dropped; a file gets every byte.
        self._escapes = TerminalFilter() if is_tty else None
        self._refresh_s = refresh_s
        self._plain_interval_s = plain_interval_s
        self._clock = clock
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.recipe = recipe
        self._step: str | None = None
        self._started = clock()
        self._samples: deque[tuple[float, int, int]] = deque()
        self._last_update = float("-inf")
        self._last_plain = self._started
        self._at_line_start = True
        self._status: Text | None = None
        self._shown = False
        self._live: Live | None = None
        self._console: Console | None = None
        if is_tty:
            from rich.console import Console
            from rich.live import Live

            if width is None:
                try:
                    width = os.get_terminal_size(self._stream.fileno()).columns
                except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
                    width = 120
            self._console = Console(
                file=cast(IO[str], _TextOut(self._stream, True)), force_terminal=True, width=width,
                highlight=False, soft_wrap=False,
            )
            self._live = Live(
                console=self._console, auto_refresh=False, transient=True,
                redirect_stdout=False, redirect_stderr=False,
            )

    # -- the attempt ---------------------------------------------------------------------------

    def start_attempt(self, attempt: int, max_attempts: int | None = None) -> None:
        """Reuse the display for the next attempt: elapsed time and rate start again."""
        self.attempt = attempt
        if max_attempts is not None:
            self.max_attempts = max_attempts
        self._step = None
        self._started = self._last_plain = self._clock()
        self._samples.clear()

    def step(self, name: str) -> None:
        self._step = name
        self._last_update = float("-inf")  # show the new step at the next update

    # -- output --------------------------------------------------------------------------------

    def relay(self, data: bytes) -> None:
        """Write build output straight through (not in quiet mode)."""
        if not self._relay or not data:
            return
        if self._plain is not None:
            data = self._plain.feed(data)
            if not data:
                return
        elif self._escapes is not None:
            data = self._escapes.feed(data)
            if not data:
                return
        if self._shown:
            self._hide()
        if self._text_front is not None:
            self._text_front.flush()  # what the app printed through the text layer comes first
        self._stream.write(data)
        self._stream.flush()
        self._at_line_start = data.endswith(b"\n")

    def _flush_plain(self) -> None:
        """Off a terminal, the build's unterminated last line as it stands, before anything of ours."""
        if self._plain is not None and self._relay:
            rest = self._plain.flush()
            if rest:
                self._stream.write(rest)
                self._at_line_start = False

    def message(self, text: str) -> None:
        """A line of rocmbuild's own, shown with the build output without breaking the status line."""
        self._flush_plain()
        if self._shown:
            self._hide()
        if self._text_front is not None:
            self._text_front.flush()
        prefix = b"" if self._at_line_start else b"\n"
        self._stream.write(prefix + text.rstrip("\n").encode("utf-8", "replace") + b"\n")
        self._stream.flush()
        self._at_line_start = True

    # -- progress ------------------------------------------------------------------------------

    def update(self, watcher: Watcher, *, force: bool = False) -> None:
        """Refresh the status from the watcher (cheap to call often: rate limited)."""
        now = self._clock()
        if not force and now - self._last_update < self._refresh_s:
            return
        self._last_update = now
        progress = watcher.progress
        if progress.done is not None and progress.total:
            self._sample(now, progress.done, progress.total)
        if self.is_tty:
            self._status = self._render(watcher, now)
            if self._at_line_start or not self._relay:
                self._draw()
        elif now - self._last_plain >= self._plain_interval_s and (self._at_line_start or not self._relay):
            self._last_plain = now
            self._stream.write(("rocmbuild: " + self.status_text(watcher, now) + "\n").encode())
            self._stream.flush()

    def status_text(self, watcher: Watcher, now: float | None = None) -> str:
        """The status as plain text (what the live line shows)."""
        return self._render(watcher, self._clock() if now is None else now).plain

    def eta_s(self, progress: Progress, now: float | None = None) -> float | None:
        """Seconds left at the recent rate of ninja edges, or None when unknown."""
        if progress.done is None or not progress.total or len(self._samples) < 2:
            return None
        now = self._clock() if now is None else now
        t0, d0, _ = self._samples[0]
        t1, d1, _ = self._samples[-1]
        if t1 <= t0 or d1 <= d0:
            return None
        rate = (d1 - d0) / (t1 - t0)
        return max(progress.total - progress.done, 0) / rate

    def _sample(self, now: float, done: int, total: int) -> None:
        samples = self._samples
        if samples and (samples[-1][2] != total or done < samples[-1][1]):
            samples.clear()  # a different ninja run (another extension) started
        if samples and samples[-1][1] == done:
            return
        samples.append((now, done, total))
        while len(samples) > 2 and now - samples[0][0] > _RATE_WINDOW_S:
            samples.popleft()

    def _render(self, watcher: Watcher, now: float) -> Text:
        from rich.text import Text

        p = watcher.progress
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        if self.recipe:
            text.append(f"{self.recipe} ", style="bold")
        text.append(f"attempt {self.attempt}/{self.max_attempts}", style="bold")
        if self._step:
            text.append(f" · {self._step}", style="cyan")
        if p.done is not None and p.total:
            text.append(f" · {p.done}/{p.total} ({100.0 * p.done / p.total:.1f}%)", style="green")
            eta = self.eta_s(p, now)
            if eta is not None:
                text.append(f" · ETA {_duration(eta)}")
        elif p.percent is not None:
            text.append(f" · {p.percent:.0f}%", style="green")
        if p.phase:
            text.append(f" · {p.phase}")
        text.append(f" · {_duration(now - self._started)}")
        problem = watcher.last_problem
        if problem:
            style = "red" if "error" in problem.lower() or "FAILED" in problem else "yellow"
            text.append(" · ")
            text.append(problem[:200], style=style)
        return text

    # -- the live line -------------------------------------------------------------------------

    def _draw(self) -> None:
        assert self._live is not None and self._status is not None
        if not self._live.is_started:
            self._live.start()
        self._live.update(self._status, refresh=True)
        self._shown = True

    def _hide(self) -> None:
        from rich.text import Text

        assert self._live is not None
        self._live.update(Text(""), refresh=True)  # rich erases the old line and leaves an empty one
        self._shown = False

    def close(self) -> None:
        self._flush_plain()
        if self._plain is not None and not self._at_line_start:
            self._stream.write(b"\n")
            self._at_line_start = True
        if self._live is not None and self._live.is_started:
            from rich.text import Text

            if not self._at_line_start:
                self._stream.write(b"\n")  # the status line is erased in place; keep the output's last line
                self._at_line_start = True
            self._live.update(Text(""))
            self._live.stop()
            self._shown = False
        self._stream.flush()

    def __enter__(self) -> Display:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
