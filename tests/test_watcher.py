"""watcher: line splitting, keyword prefilter, context, progress, last problem, long lines."""

from __future__ import annotations

import os
import random
import re
import shlex
import sys
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

import pytest

from rocmbuild.process.attempt import AttemptHooks, AttemptRequest
from rocmbuild.process.runner import Limits, Step, run_attempt
from rocmbuild.process.watcher import (
    ACCELERATOR_AVAILABLE,
    CONTEXT_BEFORE,
    MAX_LINE,
    LineScanner,
    Progress,
    Watcher,
    minimal_keywords,
)

CHILDREN = Path(__file__).parent / "children"
# Candidate finding: one `find` per keyword always; Aho-Corasick too where ahocorasick_rs is installed.
FINDERS = [False, True] if ACCELERATOR_AVAILABLE else [False]


class Hook:
    def __init__(self, *keywords: bytes, want: dict[str, int] | None = None) -> None:
        self.keywords = keywords
        self.want = want or {}
        self.lines: list[tuple[int, str]] = []
        self.befores: dict[int, tuple[str, ...]] = {}
        self.context: list[tuple[int, str]] = []

    def on_line(self, number: int, text: str, before: Sequence[str]) -> int:
        self.lines.append((number, text))
        self.befores[number] = tuple(before)  # context is only valid during the call
        return next((n for k, n in self.want.items() if k in text), 0)

    def on_context(self, number: int, text: str) -> None:
        self.context.append((number, text))


def feed_in_pieces(scanner: LineScanner, data: bytes, size: int) -> None:
    for i in range(0, len(data), size):
        scanner.feed(data[i : i + size])
    scanner.close()


LOG = (
    b"-- configuring\n"
    b"[1/3] Building CXX object a.o\n"
    b"\x1b[1ma.cpp:1:2: \x1b[31merror:\x1b[0m no member named 'x'\n"
    b"note: here\n"
    b"[2/3] Building CXX object b.o\n"
    b"FAILED: b.o \n"
    b"ninja: build stopped: subcommand failed.\n"
    b"tail line without newline error"
)


@pytest.mark.parametrize("accelerate", FINDERS)
@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 10_000])
def test_candidates_and_line_numbers_whatever_the_read_size(size: int, accelerate: bool) -> None:
    hook = Hook(b"error", b"FAILED")
    scanner = LineScanner(hook, accelerate=accelerate)
    feed_in_pieces(scanner, LOG, size)
    assert hook.lines == [
        (3, "a.cpp:1:2: error: no member named 'x'"),
        (6, "FAILED: b.o"),
        (8, "tail line without newline error"),
    ]
    assert scanner.lines_seen == 8
    assert hook.befores[3] == ("-- configuring", "[1/3] Building CXX object a.o")
    assert hook.befores[8] == (
        "[1/3] Building CXX object a.o", "a.cpp:1:2: error: no member named 'x'", "note: here",
        "[2/3] Building CXX object b.o", "FAILED: b.o", "ninja: build stopped: subcommand failed.",
    )
    assert len(hook.befores[8]) == CONTEXT_BEFORE


@pytest.mark.parametrize("accelerate", FINDERS)
def test_a_candidate_line_is_delivered_once_even_with_several_keywords(accelerate: bool) -> None:
    hook = Hook(b"error", b"cannot", b"find")
    feed_in_pieces(LineScanner(hook, accelerate=accelerate), b"x\nerror: cannot find error\ny\nerror\n", 5)
    assert hook.lines == [(2, "error: cannot find error"), (4, "error")]


@pytest.mark.parametrize("accelerate", FINDERS)
def test_context_lines_after_a_candidate(accelerate: bool) -> None:
    hook = Hook(b"Traceback", b"Error", want={"Traceback": 3})
    data = b"a\nTraceback (most recent call last):\n  File x\n  File y\nImportError: no\nlater\nmore\n"
    feed_in_pieces(LineScanner(hook, accelerate=accelerate), data, 4)
    assert hook.context == [(3, "File x"), (4, "File y"), (5, "ImportError: no")]
    assert hook.lines == [(2, "Traceback (most recent call last):"), (5, "ImportError: no")]


def test_no_hook_only_counts_lines() -> None:
    scanner = LineScanner()
    feed_in_pieces(scanner, LOG, 5)
    assert scanner.lines_seen == 8
    assert scanner.recent(2) == ["ninja: build stopped: subcommand failed.", "tail line without newline error"]


def test_carriage_return_progress_keeps_the_last_redraw() -> None:
    hook = Hook(b"Downloading")
    w = Watcher(hook)
    feed_in_pieces(w, b"Downloading  10%\rDownloading  50%\rDownloading 100%\ndone\n", 3)
    assert hook.lines == [(1, "Downloading 100%")]
    assert w.recent(5) == ["Downloading 100%", "done"]


def test_invalid_utf8_becomes_replacement_characters() -> None:
    hook = Hook(b"error")
    feed_in_pieces(LineScanner(hook), b"bad \xff\xfe bytes error\ncaf\xc3\xa9 error\n", 2)
    assert hook.lines == [(1, "bad \ufffd\ufffd bytes error"), (2, "café error")]


def test_minimal_keywords_drops_keywords_containing_others() -> None:
    assert minimal_keywords((b"internal compiler error", b"error", b"Killed", b"", b"error")) == (
        b"error", b"Killed",
    )


@pytest.mark.parametrize("accelerate", FINDERS)
def test_a_10_mb_line_costs_neither_time_nor_memory(accelerate: bool) -> None:
    hook = Hook(b"fatal error")
    w = Watcher(hook, accelerate=accelerate)
    block = b"x" * 65536
    tracemalloc.start()
    t0 = time.perf_counter()
    for _ in range(160):  # 10.5 MB without a newline
        w.feed(block)
    w.feed(b" fatal error at the end\nnext\n")
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 1.0
    assert peak < 2_000_000
    assert w.lines_seen == 2
    [(number, text)] = hook.lines
    assert number == 1
    assert text.startswith("x" * 100) and "bytes cut" in text and text.endswith("fatal error at the end")
    assert len(text) < MAX_LINE + 1000
    assert w.recent(1) == ["next"]


def test_unfinished_long_line_shows_in_recent() -> None:
    w = Watcher()
    w.feed(b"done\n" + b"\r[1/9] x" * 2000 + b"\r[7/9] Linking libfoo.so")
    [_, last] = w.recent(2)
    assert last == "[7/9] Linking libfoo.so"
    assert (w.progress.done, w.progress.total) == (7, 9)


def test_ninja_progress_plain_and_with_ninja_status_fields() -> None:
    w = Watcher()
    w.feed(b"[1/4567] Building CXX object a.o\n[12/4567] Building")
    assert (w.progress.done, w.progress.total, w.progress.phase) == (12, 4567, None)
    assert w.progress.percent == pytest.approx(100 * 12 / 4567)
    w.feed(b" CXX object b.o\n[123/4567 12s] Linking\n")
    assert (w.progress.done, w.progress.total) == (123, 4567)


def test_ninja_smart_terminal_status_and_status_split_across_reads() -> None:
    w = Watcher()
    for piece in (b"\r[5/10] CXX a\x1b[K", b"\r[6/1", b"0] CXX b\x1b[K"):
        w.feed(piece)
    assert (w.progress.done, w.progress.total, w.progress.percent) == (6, 10, 60.0)


def test_brackets_that_are_not_status_are_ignored() -> None:
    w = Watcher()
    w.feed(b"[3/10] ok\nfoo.cpp:3: x[1/2] = y; [5/6]\n")
    assert (w.progress.done, w.progress.total) == (3, 10)


def test_cmake_percent_plain_and_coloured() -> None:
    w = Watcher()
    w.feed(b"[ 10%] Building CXX object a.o\n")
    assert w.progress.percent == 10.0 and w.progress.done is None
    w.feed(b"\x1b[32m[ 45%] \x1b[32mBuilding CXX object b.o\x1b[0m\n")
    assert w.progress.percent == 45.0


def test_pip_phases() -> None:
    w = Watcher()
    w.feed(b"Obtaining file:///src\n  Collecting numpy\n")
    assert w.progress.phase == "collecting"
    w.feed(b"Running setup.py develop for vllm\n")
    assert w.progress.phase == "setup.py develop"
    w.feed(b"[2/8] Building\n")
    assert w.progress == Progress(2, 8, 25.0, "setup.py develop")
    w.feed(b"Building wheel for vllm (pyproject.toml) ... done\nInstalling collected packages: vllm\n")
    assert w.progress.phase == "installing"
    w.feed(b"Successfully installed vllm-0.11\n")
    assert w.progress.phase == "installed"
    assert w.furthest.done == 2


def test_furthest_keeps_the_highest_percentage() -> None:
    w = Watcher()
    w.feed(b"[90/100] a\n")
    w.feed(b"[1/20] another extension\n")
    assert (w.progress.done, w.progress.total) == (1, 20)
    assert (w.furthest.done, w.furthest.total) == (90, 100)


def test_last_problem_line() -> None:
    w = Watcher()
    assert w.last_problem is None
    w.feed(b"ok\nfoo.cpp:1: warning: unused\nfine\n")
    assert w.last_problem == "foo.cpp:1: warning: unused"
    w.feed(b"x\n\x1b[31mFAILED: \x1b[0mb.o\nmore ")
    w.feed(b"text\n")
    assert w.last_problem == "FAILED: b.o"
    w.feed(b"err")
    w.feed(b"or: split across reads\n")
    assert w.last_problem == "error: split across reads"


def test_both_finders_agree_on_a_realistic_log() -> None:
    keywords = (b"error", b"rror", b"FAILED: ", b"cannot find -l", b"warning", b"Killed")
    lines = []
    for i in range(3000):
        lines.append(f"[{i}/3000] Building CXX object o{i}.o\n".encode())
        if i % 7 == 0:
            lines.append(f"f{i}.cpp:1:2: warning: unused [-Werror=unused] error x\n".encode())
        if i % 101 == 0:
            lines.append(b"ld: cannot find -lhipblas\nc++: fatal error: Killed signal\n")
    data = b"".join(lines)
    results = []
    for accelerate in FINDERS:
        hook = Hook(*keywords)
        feed_in_pieces(LineScanner(hook, accelerate=accelerate), data, 4093)
        results.append(hook.lines)
    expected = [(n, line.decode().strip()) for n, line in enumerate(data.splitlines(keepends=True), 1)
                if any(k in line for k in keywords)]
    assert all(r == expected for r in results)
    assert len(expected) > 400


def test_asking_for_a_missing_accelerator_fails_loudly() -> None:
    if ACCELERATOR_AVAILABLE:
        assert LineScanner(Hook(b"x"), accelerate=True)._automata
    else:
        with pytest.raises(RuntimeError, match="ahocorasick_rs"):
            LineScanner(Hook(b"x"), accelerate=True)


def test_feeding_after_close_continues() -> None:
    hook = Hook(b"error")
    w = Watcher(hook)
    w.feed(b"one\ntwo error")
    w.close()
    w.close()
    w.feed(b"three error\n")
    assert hook.lines == [(2, "two error"), (3, "three error")]
    assert w.lines_seen == 3


def test_partial_lines_and_progress_through_a_real_pty(tmp_path: Path) -> None:
    hook = Hook(b"line")
    w = Watcher(hook)
    cmd = f"{shlex.quote(sys.executable)} {CHILDREN / 'emit.py'} partial; {shlex.quote(sys.executable)} " \
          f"{CHILDREN / 'emit.py'} ninja; {shlex.quote(sys.executable)} {CHILDREN / 'emit.py'} pip"
    out = run_attempt(AttemptRequest((Step("build", cmd),), cwd=tmp_path, env=dict(os.environ),
                                     log_path=tmp_path / "a.log", limits=Limits(stall_timeout_s=10)),
                      AttemptHooks(watcher=w))
    assert out.succeeded
    assert hook.lines == [(2, "partial line one"), (3, "line two")]
    assert (w.progress.done, w.progress.total, w.progress.phase) == (3, 4, "building wheel")
    assert w.lines_seen == 8


@pytest.mark.parametrize("accelerate", FINDERS)
def test_many_keywords_stay_cheap(accelerate: bool) -> None:
    """A firehose chunk with 30 keywords: work is per chunk (a loose bound, not a benchmark)."""
    keywords = tuple(f"keyword{i}".encode() for i in range(30))
    hook = Hook(*keywords)
    w = Watcher(hook, accelerate=accelerate)
    chunk = b"[12/3456] Building CXX object caffe2/CMakeFiles/torch.dir/a/b/c.cpp.o\n" * 3000
    t0 = time.perf_counter()
    for _ in range(20):  # ~4 MB
        w.feed(chunk)
    w.feed(b"keyword7 here\n")
    assert time.perf_counter() - t0 < 2.0
    assert hook.lines == [(60001, "keyword7 here")]


class DismissingHook(Hook):
    raw_dismiss = re.compile(rb"skip me[^\n]*")


@pytest.mark.parametrize("accelerate", FINDERS)
@pytest.mark.parametrize("size", [3, 10_000])
def test_raw_dismissed_candidates_are_not_delivered_but_still_counted_and_seen_as_context(
        size: int, accelerate: bool) -> None:
    hook = DismissingHook(b"error", want={"first": 1})
    data = (b"skip me: error\n"          # dismissed unseen
            b"first error\n"             # wants one more line...
            b"skip me: error again\n"    # ...which is context although it would be dismissed as a candidate
            b"skip me: error 3\n"
            b"x\nlast error\n")
    feed_in_pieces(LineScanner(hook, accelerate=accelerate), data, size)
    assert hook.lines == [(2, "first error"), (6, "last error")]
    assert hook.context == [(3, "skip me: error again")]
    assert hook.befores[6] == ("skip me: error", "first error", "skip me: error again", "skip me: error 3", "x")


@pytest.mark.parametrize("size", [5, 4093])
def test_keywords_beyond_one_automaton_find_the_same_lines(size: int) -> None:
    """More keywords than one Aho-Corasick automaton takes: split, every keyword still finds its lines."""
    keywords = (*(f"kw{i:03d}x".encode() for i in range(130)), b"ailed", b"rror")
    rng = random.Random(3)
    lines = []
    for i in range(3000):
        words = [rng.choice(keywords).decode() if rng.random() < 0.1 else f"w{i}" for _ in range(rng.randint(0, 4))]
        lines.append(" ".join(words) + ("\n" if i < 2999 else ""))
    data = "".join(lines).encode()
    results = []
    for accelerate in FINDERS:
        hook = DismissingHook(*keywords)
        scanner = LineScanner(hook, accelerate=accelerate)
        if accelerate:
            assert len(scanner._automata) == 3
        feed_in_pieces(scanner, data, size)
        results.append(hook.lines)
    expected = [(n, line.strip()) for n, line in enumerate(lines, 1)
                if any(k.decode() in line for k in keywords) and not line.startswith("skip me")]
    assert all(r == expected for r in results)
    assert len(expected) > 500


def test_the_line_before_alone_is_the_last_of_the_context() -> None:
    """bool(before) and before[-1] read one line; the same as the whole context's last."""
    seen: list[tuple[bool, str | None, tuple[str, ...]]] = []

    class Peeking(Hook):
        def on_line(self, number: int, text: str, before: Sequence[str]) -> int:
            last = before[-1] if before else None
            seen.append((bool(before), last, tuple(before)))
            return 0

    data = b"error first\na\nb\nerror second\n" + b"x" * (MAX_LINE + 50) + b"\nerror after a long line\n"
    for size in (3, 10_000):
        seen.clear()
        feed_in_pieces(LineScanner(Peeking(b"error")), data, size)
        assert [s[0] for s in seen] == [False, True, True]
        assert all(s[1] == (s[2][-1] if s[2] else None) for s in seen)
        assert seen[1][2] == ("error first", "a", "b")


@pytest.mark.parametrize("accelerate", FINDERS)
def test_lines_seen_after_every_feed_whatever_the_candidates(accelerate: bool) -> None:
    """lines_seen counts every completed line once: with candidates, wanted context and long lines."""
    rng = random.Random(5)
    parts = []
    for i in range(400):
        r = rng.random()
        parts.append(b"x" * (MAX_LINE + 100) if r < 0.03 else b"error here" if r < 0.2 else b"want more"
                     if r < 0.25 else f"plain {i}".encode())
    data = b"\n".join(parts) + b"\n"
    for size in (1, 7, 100, 5000, 70_000):
        hook = Hook(b"error", b"want", want={"want": 3})
        scanner = LineScanner(hook, accelerate=accelerate)
        completed = 0  # newlines fed so far, counted as they are fed (not recounted from the start)
        for i in range(0, len(data), size):
            chunk = data[i : i + size]
            scanner.feed(chunk)
            completed += chunk.count(b"\n")
            assert scanner.lines_seen == completed, (size, i + len(chunk))
        assert [n for n, _ in hook.lines] == [n for n, p in enumerate(parts, 1) if b"error" in p or b"want" in p]
