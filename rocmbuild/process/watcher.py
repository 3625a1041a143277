"""Watching build output: line splitting, keyword prefilter, progress, recent lines.

Owns the one hot path of a build besides the PTY itself, so it works per
*chunk*, never per line: ``bytes.count`` for line numbers, one ``find`` per
hook keyword to locate candidate lines, ``rfind`` over the chunk for progress
and problem lines.  Only candidate lines (and the context lines a hook asked
for) are decoded (UTF-8, ``errors="replace"``) and cleaned with
:func:`rocmbuild.process.noise.clean_line`; everything else stays bytes.

Line rules: lines end at ``b"\\n"`` and are numbered from 1; a line split
across reads is joined; ``\\r`` redraws stay inside one line (``clean_line``
keeps the last redraw); a line longer than :data:`MAX_LINE` bytes is kept as
its first :data:`MAX_LINE` bytes, a ``[… N bytes cut …]`` note and its last
:data:`LONG_TAIL` bytes (a ninja status line redrawn with ``\\r`` for a whole
build ends with the latest state), so a 10 MB line costs neither time nor
memory.  A keyword anywhere in a long line still makes it a candidate.

Keywords must not contain ``\\n``.  Finding candidates costs one ``find``
pass per keyword over each chunk (about 0.3-0.7 ns a byte each); when the
``ahocorasick_rs`` package is installed, one Aho-Corasick pass per
:data:`AUTOMATON_KEYWORDS` keywords finds them all (tens of times faster with a
large catalogue).  Both give the same candidates.

A hook may have a ``raw_dismiss`` attribute: a bytes pattern; a candidate line whose raw
bytes fully match it is not given to ``on_line`` (the hook promises it would dismiss it
unseen, returning 0), which spares decoding and cleaning lines a build prints by the thousand.

A line that is both a context line the hook asked for and a candidate is
delivered to ``on_context`` first, then to ``on_line``; the number of
following lines wanted becomes the larger of what is left and what
``on_line`` returned.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, overload

from rocmbuild.process.noise import clean_line, prefilter_form

_ahocorasick: Any
try:  # one Aho-Corasick pass for all keywords instead of one `find` pass per keyword
    import ahocorasick_rs as _ahocorasick
except ImportError:  # pragma: no cover - a dependency; the find() fallback keeps working without it
    _ahocorasick = None
ACCELERATOR_AVAILABLE = _ahocorasick is not None

CONTEXT_BEFORE = 6
MAX_LINE = 4096  # bytes of a line's head kept for matching
LONG_TAIL = 512  # bytes of a long line's end kept as well
KEEP = 64 * 1024  # bytes of recent output kept for recent() and `before`
AUTOMATON_KEYWORDS = 48  # keywords per Aho-Corasick automaton (its SIMD prefilter's sweet spot)
_NL = 10
_CR = 13


class LineHook(Protocol):
    """Receives candidate lines (those containing any keyword) as they complete."""

    @property
    def keywords(self) -> tuple[bytes, ...]: ...

    def on_line(self, number: int, text: str, before: Sequence[str]) -> int: ...

    def on_context(self, number: int, text: str) -> None: ...


def minimal_keywords(keywords: tuple[bytes, ...] | list[bytes]) -> tuple[bytes, ...]:
    """What to search raw output for: each keyword's quote-free form (a line's quotes are made ASCII
    only once it was found), minus those that contain another keyword: the shorter one finds the same
    lines.

    Each keyword costs one pass over every chunk, so this is a real saving for
    catalogues with ``error`` next to ``internal compiler error``.
    """
    unique = sorted({prefilter_form(k) for k in keywords if k}, key=len)
    kept: list[bytes] = []
    for kw in unique:
        if not any(k in kw for k in kept):
            kept.append(kw)
    return tuple(kept)


# A scanner is made for every log `diagnose` reads and every attempt the watcher follows, always with
# the same catalogue's keywords: reducing them and building the automata is ~8 ms, more than scanning a
# small log (a directory of 900 pasted logs spent 80% of its time here).  Both results are immutable.
_minimal_once = functools.lru_cache(maxsize=8)(minimal_keywords)


class _Automaton(Protocol):
    """What the scanner asks of an ahocorasick_rs automaton."""

    def find_matches_as_indexes(self, haystack: bytes | bytearray | memoryview) -> list[tuple[int, int, int]]: ...


@functools.lru_cache(maxsize=8)
def _automata_for(keywords: tuple[bytes, ...]) -> tuple[_Automaton, ...]:
    groups = -(-len(keywords) // AUTOMATON_KEYWORDS)
    size = -(-len(keywords) // groups)
    return tuple(_ahocorasick.BytesAhoCorasick(list(keywords[i : i + size]),
                                               matchkind=_ahocorasick.MatchKind.LeftmostFirst)
                 for i in range(0, len(keywords), size))


def _render(head: bytes, cut: int = 0, tail: bytes = b"") -> str:
    """Decoded, noise-stripped text of a (possibly shortened) raw line."""
    if not cut and not tail:
        return clean_line(head.decode("utf-8", "replace"))
    note = f" [… {cut} bytes cut …] " if cut else ""
    return clean_line(head.decode("utf-8", "replace") + note + tail.decode("utf-8", "replace"))


def _render_span(buf: bytearray, a: int, e: int) -> str:
    """Text of the raw line buf[a:e], shortened when longer than MAX_LINE."""
    if e - a <= MAX_LINE:
        return _render(bytes(buf[a:e]))
    tail = min(LONG_TAIL, e - a - MAX_LINE)
    return _render(bytes(buf[a : a + MAX_LINE]), e - a - MAX_LINE - tail, bytes(buf[e - tail : e]))


class _LazyBefore(Sequence[str]):
    """The lines before a candidate, decoded only if the hook looks at them.

    Most candidate lines are dismissed on their own text; decoding and cleaning
    six lines of context for each would cost more than the matching.  Valid
    only during the hook's ``on_line`` call (the buffer moves on afterwards):
    a hook that keeps context copies it (``tuple(before)``).
    """

    __slots__ = ("_last", "_lines", "_number", "_pos", "_scanner")

    def __init__(self, scanner: LineScanner, number: int, pos: int) -> None:
        self._scanner: LineScanner | None = scanner
        self._number = number
        self._pos = pos
        self._lines: tuple[str, ...] | None = None
        self._last: tuple[str, ...] | None = None  # just the line before (what most hooks look at)

    def _load(self, limit: int = CONTEXT_BEFORE) -> tuple[str, ...]:
        if self._lines is None:
            if limit == 1 and self._last is not None:
                return self._last
            if self._scanner is None:
                raise RuntimeError("context lines are only valid during on_line")
            lines = self._scanner._before(self._number, self._pos, limit)
            if limit == 1:
                self._last = lines
                return lines
            self._lines = lines
        return self._lines

    def expire(self) -> None:
        self._scanner = None

    def __bool__(self) -> bool:
        return bool(self._load(1))

    def __len__(self) -> int:
        return len(self._load())

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if index == -1:  # the line before: rendered without the five before it
            return self._load(1)[-1]
        return self._load()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())


class LineScanner:
    """Splits a byte stream into numbered lines and hands candidate lines to a hook.

    Used live by :class:`Watcher` and by ``diagnose`` on saved logs.
    """

    def __init__(self, hook: LineHook | None = None, *, accelerate: bool | None = None) -> None:
        """`accelerate`: use ahocorasick_rs (None: when installed)."""
        self._hook = hook
        self._keywords = _minimal_once(tuple(hook.keywords)) if hook is not None else ()
        if accelerate is None:
            accelerate = ACCELERATOR_AVAILABLE
        if accelerate and not ACCELERATOR_AVAILABLE:
            raise RuntimeError("ahocorasick_rs is not installed")
        # Leftmost-first, not the default "standard" semantics: with it the automaton runs behind a
        # SIMD prefilter (memchr/Teddy), ~20x faster on a build log where few lines hold a keyword.
        # Every line that holds a keyword still yields a match (keywords never span a newline, so
        # a match that overlaps an occurrence is on the same line), so the candidates are the same.
        # The prefilter takes at most 64 patterns and slows down well before that: the keywords are
        # split into automata of at most AUTOMATON_KEYWORDS each (the bundled catalogue's 82 in one
        # automaton: 1.7 ns a byte; in two: 0.5), and a line is a candidate when any of them finds it.
        self._automata: tuple[_Automaton, ...] = _automata_for(self._keywords) if accelerate and self._keywords else ()
        self._dismiss: re.Pattern[bytes] | None = getattr(hook, "raw_dismiss", None)
        self._overlap = max((len(k) for k in self._keywords), default=1) - 1
        self._buf = bytearray()  # the most recent output (at least KEEP bytes once that much arrived)
        self._trimmed = False  # bytes were dropped from the front of _buf
        self._ls = 0  # index in _buf where the current, incomplete line starts
        self._long_head: bytes | None = None  # first MAX_LINE bytes of an over-long current line
        self._long_len = 0  # bytes of that line seen so far
        self._long_hit = False  # a keyword occurred in it
        self._want = 0  # following lines the hook asked for (on_context)
        self._cache: dict[int, str] = {}  # line number -> cleaned text, for `before`
        self.lines_seen = 0

    # -- feeding -----------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Scan the next chunk of output; a partial last line is carried to the next call."""
        if not data:
            return
        buf = self._buf
        if len(buf) > 2 * KEEP:  # amortised trim: the front of a bytearray is cheap to drop
            cut = len(buf) - KEEP
            del buf[:cut]
            self._ls -= cut
            self._trimmed = True
        base = len(buf)
        buf += data
        end = len(buf)
        last = buf.rfind(b"\n", base)
        if last < 0:
            self._grow_line(base, end)
            return
        number = self.lines_seen + 1
        start = self._ls
        if self._long_head is not None:
            nl = buf.find(b"\n", base)
            hit = self._long_hit or self._any_keyword(max(base - self._overlap, 0), nl)
            if self._hook is not None and (hit or self._want):
                total = self._long_len + (nl - base)
                tail = min(LONG_TAIL, total - MAX_LINE)
                text = _render(self._long_head, total - MAX_LINE - tail, bytes(buf[nl - tail : nl]))
                self._cache[number] = text
                self._line_event(number, text, hit, -1)
            self._long_head = None
            self._long_hit = False
            start = nl + 1
            number += 1
        pos = start
        if self._hook is not None and start <= last:
            pos, number = self._scan(start, last + 1, number)
        # Lines up to `pos` were counted by the scan (line `number` starts there); count the rest once.
        self.lines_seen = number - 1 + buf.count(b"\n", pos, last + 1)
        self._ls = last + 1
        self._grow_line(last + 1, end)

    def close(self) -> None:
        """Flush a final line that has no ``\\n`` (harmless to call twice, or to feed on afterwards)."""
        if self._long_head is not None or self._ls < len(self._buf):
            self.feed(b"\n")

    def _grow_line(self, base: int, end: int) -> None:
        """The current line grew by buf[base:end] (no newline in it)."""
        if self._long_head is not None:
            if not self._long_hit and self._keywords:
                self._long_hit = self._any_keyword(max(base - self._overlap, 0), end)
            self._long_len += end - base
        elif end - self._ls > MAX_LINE:
            # From now on keep only the head; the rest of the line is counted and searched.
            self._long_head = bytes(self._buf[self._ls : self._ls + MAX_LINE])
            self._long_len = end - self._ls
            self._long_hit = bool(self._keywords) and self._any_keyword(self._ls, end)

    def _any_keyword(self, a: int, b: int) -> bool:
        buf = self._buf
        if self._automata:
            with memoryview(buf) as view, view[a:b] as region:
                return any(automaton.find_matches_as_indexes(region) for automaton in self._automata)
        return any(buf.find(kw, a, b) >= 0 for kw in self._keywords)

    def _candidates(self, start: int, stop: int) -> list[int]:
        """Sorted start offsets of the lines in buf[start:stop] that contain a keyword (and the hook wants).

        A line the hook's ``raw_dismiss`` takes is tested once, where its first keyword is found.
        """
        buf = self._buf
        dismiss = self._dismiss
        if self._automata:
            found: list[int] = []
            keep = found.append
            rfind, find = buf.rfind, buf.find  # bound once: a warning flood hits here ~100,000 times
            dismissed = dismiss.fullmatch if dismiss is not None else None
            with memoryview(buf) as view, view[start:stop] as region:
                for automaton in self._automata:
                    line_end = -1
                    for _, s, _ in automaton.find_matches_as_indexes(region):  # sorted; never spans lines
                        s += start
                        if s < line_end:
                            continue
                        a = rfind(b"\n", start, s) + 1 or start
                        line_end = find(b"\n", s, stop)
                        if dismissed is None or dismissed(buf, a, line_end) is None:
                            keep(a)
            return sorted(set(found)) if len(self._automata) > 1 else found
        hits: set[int] = set()
        for kw in self._keywords:
            i = buf.find(kw, start, stop)
            while i >= 0:
                p = buf.rfind(b"\n", start, i)
                hits.add(p + 1 if p >= 0 else start)
                i = buf.find(kw, buf.find(b"\n", i, stop) + 1, stop)
        starts = sorted(hits)
        if dismiss is None or not starts:
            return starts
        return [a for a in starts if dismiss.fullmatch(buf, a, buf.find(b"\n", a, stop)) is None]

    # -- candidates ----------------------------------------------------------------------------

    def _scan(self, start: int, stop: int, number: int) -> tuple[int, int]:
        """Deliver candidate and context lines among the complete lines buf[start:stop].

        Returns where it stopped and the number of the line that starts there.
        """
        buf = self._buf
        order = self._candidates(start, stop)
        if not order and not self._want:
            return start, number
        k = 0
        pos = start
        while True:
            if self._want > 0:
                if pos >= stop:
                    break
                e = buf.find(b"\n", pos, stop)
                is_hit = k < len(order) and order[k] == pos
                k += is_hit
                self._line_event(number, self._text(number, pos, e), is_hit, pos)
                pos = e + 1
                number += 1
            else:
                if k >= len(order):
                    break
                c = order[k]
                k += 1
                number += buf.count(b"\n", pos, c)
                e = buf.find(b"\n", c, stop)
                self._line_event(number, self._text(number, c, e), True, c)
                pos = e + 1
                number += 1
        return pos, number

    def _line_event(self, number: int, text: str, is_hit: bool, pos: int) -> None:
        hook = self._hook
        assert hook is not None
        if self._want > 0:
            self._want -= 1
            hook.on_context(number, text)
        if is_hit:
            before = _LazyBefore(self, number, pos)
            wanted = hook.on_line(number, text, before)
            before.expire()
            self._want = max(self._want, int(wanted or 0))
        if len(self._cache) > 64:
            floor = number - CONTEXT_BEFORE - 1
            for old in [n for n in self._cache if n < floor]:
                del self._cache[old]

    def _text(self, number: int, a: int, e: int) -> str:
        text = self._cache.get(number)
        if text is None:
            text = self._cache[number] = _render_span(self._buf, a, e)
        return text

    def _before(self, number: int, pos: int, limit: int = CONTEXT_BEFORE) -> tuple[str, ...]:
        """Up to `limit` cleaned lines before line `number`, which starts at buf[pos] (-1: unknown)."""
        out: list[str] = []
        buf = self._buf
        j = pos  # where line n + 1 starts in buf; -1 once positions are unknown
        n = number - 1
        while n >= 1 and len(out) < limit:
            cached = self._cache.get(n)
            if j > 0:
                p = buf.rfind(b"\n", 0, j - 1)  # the newline that ends line n - 1
                if p < 0 and self._trimmed and cached is None:
                    break  # the start of line n was dropped from the buffer
                out.append(cached if cached is not None else self._text(n, p + 1, j - 1))
                j = p + 1 if p >= 0 else -1
            elif cached is not None:  # e.g. a long line whose start is gone but whose text was kept
                out.append(cached)
                j = -1
            else:
                break
            n -= 1
        out.reverse()
        return tuple(out)

    # -- recent lines --------------------------------------------------------------------------

    def recent(self, n: int = 20) -> list[str]:
        """The last `n` non-empty cleaned lines, the current unfinished line included."""
        out: list[str] = []
        buf = self._buf
        pos = len(buf)
        if self._long_head is not None:
            tail = min(LONG_TAIL, self._long_len - MAX_LINE)
            text = _render(self._long_head, self._long_len - MAX_LINE - tail, bytes(buf[pos - tail :]))
            if text:
                out.append(text)
            pos = self._ls - 1
        elif pos and buf[pos - 1] == _NL:
            pos -= 1
        while pos >= 0 and len(out) < n:
            p = buf.rfind(b"\n", 0, pos)
            if p < 0 and self._trimmed:
                break
            text = _render_span(buf, p + 1, pos)
            if text:
                out.append(text)
            pos = p
        out.reverse()
        return out[-n:] if n > 0 else []


@dataclass(frozen=True)
class Progress:
    """How far a build got: ninja ``[N/M]`` (done/total), CMake ``[ NN%]`` (percent), pip phase."""

    done: int | None = None
    total: int | None = None
    percent: float | None = None
    phase: str | None = None

    def describe(self) -> str:
        parts = []
        if self.done is not None and self.total:
            parts.append(f"{self.done}/{self.total}")
        if self.percent is not None:
            parts.append(f"{self.percent:.1f}%")
        if self.phase:
            parts.append(self.phase)
        return " ".join(parts) if parts else "-"


# ninja's status (NINJA_STATUS may add fields after N/M: "[123/4567 12s] ") or CMake's "[ 45%]".
_STATUS = re.compile(rb"\[\s*(?:(\d+)/(\d+)(?:\]|\s[^\]\r\n]{0,80}\])|(\d{1,3})%\])")
_ANSI_ONLY = re.compile(rb"(?:\x1b\[[0-9;?]*[ -/]*[@-~]|\s)*")
_PHASES: tuple[tuple[bytes, str], ...] = (
    (b"Collecting ", "collecting"),
    (b"Building wheel", "building wheel"),
    (b"Building editable", "building wheel"),
    (b"Running setup.py develop", "setup.py develop"),
    (b"Running setup.py install", "setup.py install"),
    (b"Installing collected packages", "installing"),
    (b"Successfully installed", "installed"),
)
_PROBLEMS = (b"error", b"warning", b"FAILED")
_STATUS_TRIES = 64  # '[' characters examined per chunk when looking for the last status
_STRADDLE = 128  # longest status/phase/problem text that can straddle two chunks
_PHASE_WINDOW = 16384  # bytes at the end of a chunk searched for pip phases


class Watcher(LineScanner):
    """A LineScanner that also tracks progress and the last problem line."""

    def __init__(self, hook: LineHook | None = None, *, accelerate: bool | None = None) -> None:
        super().__init__(hook, accelerate=accelerate)
        self._progress = Progress()
        self._furthest = Progress()
        self._problem_raw: bytes | None = None
        self._problem: str | None = None

    @property
    def progress(self) -> Progress:
        return self._progress

    @property
    def furthest(self) -> Progress:
        """The progress with the highest percentage seen (the latest one until a percentage shows)."""
        return self._furthest

    @property
    def last_problem(self) -> str | None:
        """The last line containing "error", "warning" or "FAILED", cleaned."""
        if self._problem is None and self._problem_raw is not None:
            self._problem = _render(self._problem_raw)
        return self._problem

    def feed(self, data: bytes) -> None:
        super().feed(data)
        if data:
            # Start a little before the new bytes: a status or keyword may straddle two reads.
            self._parse(max(len(self._buf) - len(data) - _STRADDLE, 0), len(self._buf))

    def _parse(self, lo: int, hi: int) -> None:
        buf = self._buf
        done = total = None
        percent: float | None = None
        i = buf.rfind(b"[", lo, hi)
        tries = 0
        while i >= 0 and tries < _STATUS_TRIES:
            tries += 1
            if self._at_line_start(i):
                m = _STATUS.match(buf, i)
                if m is not None:
                    if m.group(3) is not None:
                        percent = float(m.group(3))
                    else:
                        done, total = int(m.group(1)), int(m.group(2))
                        percent = 100.0 * done / total if total else None
                    break
            i = buf.rfind(b"[", lo, i)
        phase = None
        where = -1
        plo = max(lo, hi - _PHASE_WINDOW)  # pip phases change seldom: the chunk's tail is enough
        for needle, name in _PHASES:
            p = buf.rfind(needle, plo, hi)
            if p > where:
                where, phase = p, name
        if percent is not None or phase is not None:
            old = self._progress
            if percent is None:
                new = Progress(old.done, old.total, old.percent, phase)
            else:
                new = Progress(done, total, percent, phase or old.phase)
            self._progress = new
            best = self._furthest
            if new.percent is not None:
                if best.percent is None or new.percent >= best.percent:
                    self._furthest = new
            elif best.percent is None:
                self._furthest = new
        where = max(buf.rfind(kw, lo, hi) for kw in _PROBLEMS)
        if where >= 0:
            a = buf.rfind(b"\n", 0, where) + 1
            e = buf.find(b"\n", where, hi)
            e = hi if e < 0 else e
            self._problem_raw = bytes(buf[a : min(e, a + MAX_LINE)])
            self._problem = None

    def _at_line_start(self, i: int) -> bool:
        """buf[i] begins a line, possibly after colour escapes (CMake colours its lines)."""
        buf = self._buf
        if i == 0:
            return not self._trimmed
        prev = buf[i - 1]
        if prev in (_NL, _CR):
            return True
        if prev != ord("m"):
            return False
        a = max(buf.rfind(b"\n", max(i - 64, 0), i), buf.rfind(b"\r", max(i - 64, 0), i))
        return a >= 0 and _ANSI_ONLY.fullmatch(buf, a + 1, i) is not None
