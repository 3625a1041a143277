"""process/logscan.py: saved logs and line lists go through the one line scanner, as live output does."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

from rocmbuild.diagnosis.classifier import classify, classify_stream
from rocmbuild.process.logscan import CHUNK_SIZE, scan_lines, scan_log, scan_stream
from rocmbuild.process.progress import tail_lines
from rocmbuild.process.watcher import Watcher
from rocmbuild.records.provenance import downloaded_urls, urls_in_log
from rocmbuild.verification.archtruth import downgrades, downgrades_in_log

FIXTURE = Path(__file__).parent / "fixtures" / "logs" / "missing_library" / "bazel_ld_gold_cannot_find_numa.log"


class Recorder:
    """A LineHook that writes down what it is handed; asks for one following line after each hit."""

    keywords: tuple[bytes, ...] = (b"error",)

    def __init__(self) -> None:
        self.events: list[tuple[str, int, str, tuple[str, ...]]] = []

    def on_line(self, number: int, text: str, before: Sequence[str]) -> int:
        self.events.append(("line", number, text, tuple(before)))
        return 1

    def on_context(self, number: int, text: str) -> None:
        self.events.append(("context", number, text, ()))


LOG = ["[1/3] Building a.o", "\x1b[31merror: one\x1b[0m", "after one", "[2/3] 40%\r[2/3] 80%",
       "2024-01-02T03:04:05Z error: two"]


def test_lines_stream_file_and_live_watcher_deliver_the_same_lines(tmp_path: Path) -> None:
    data = "".join(f"{line}\n" for line in LOG).encode()
    (tmp_path / "attempt-1.log").write_bytes(data)
    from_lines, from_stream, from_file, live = Recorder(), Recorder(), Recorder(), Recorder()
    scan_lines(LOG, from_lines)
    scan_stream(io.BytesIO(data), from_stream)
    scan_log(tmp_path / "attempt-1.log", from_file)
    watcher = Watcher(live)
    for byte in range(0, len(data), 7):                  # the PTY hands output over in odd pieces
        watcher.feed(data[byte:byte + 7])
    watcher.close()
    assert from_lines.events == from_stream.events == from_file.events == live.events
    assert from_lines.events == [
        ("line", 2, "error: one", ("[1/3] Building a.o",)),
        ("context", 3, "after one", ()),
        ("line", 5, "error: two", ("[1/3] Building a.o", "error: one", "after one", "[2/3] 80%")),
    ]


def test_an_unreadable_log_feeds_nothing(tmp_path: Path) -> None:
    hook = Recorder()
    scan_log(tmp_path / "missing.log", hook)
    assert hook.events == []


def test_more_lines_than_one_chunk_keep_their_numbers() -> None:
    filler = "x" * 1000
    count = CHUNK_SIZE // 1000 + 50
    hook = Recorder()
    scan_lines([*([filler] * count), "error: at the end"], hook)
    assert hook.events == [("line", count + 1, "error: at the end", (filler,) * 6)]


def test_classify_on_lines_and_on_the_saved_log_agree() -> None:
    text = FIXTURE.read_text(encoding="utf-8")
    from_lines = classify(text.splitlines())
    from_stream = classify_stream(io.BytesIO(FIXTURE.read_bytes()))
    assert from_lines.category == "missing_library"
    assert from_lines.to_json() == from_stream.to_json()


def test_provenance_and_downgrades_read_saved_logs_through_the_scanner(tmp_path: Path) -> None:
    log = tmp_path / "attempt-1.log"
    log.write_bytes(b"\x1b[32mDownloading https://user:pw@files.example/x.whl\x1b[0m\n"
                    b"see https://docs.example/help for help\n"
                    b"-- gfx1030 NOT SUPPORTED by CK: disabling it\n"
                    b"-- Unsupported target gfx906, skipping\n")
    lines = log.read_text().splitlines()
    assert urls_in_log(log) == downloaded_urls(lines) == ["https://<redacted>@files.example/x.whl"]
    assert downgrades_in_log(log) == downgrades(lines) == [
        "configure disabled something for gfx1030: gfx1030 NOT SUPPORTED by CK: disabling it",
        "configure disabled something for gfx906: Unsupported target gfx906, skipping",
    ]


def test_report_tail_of_a_running_log_is_the_scanners_recent_lines(tmp_path: Path) -> None:
    log = tmp_path / "attempt-1.log"
    log.write_bytes(b"".join(f"line {n}\n".encode() for n in range(30_000))      # more than the 64 KiB read
                    + b"\x1b[32m[12/40] Building a.o\x1b[0m\n[13/40] 10%\r[13/40] 90%\n\nstill writ")
    assert tail_lines(log, 4) == ("line 29999", "[12/40] Building a.o", "[13/40] 90%", "still writ")
    assert tail_lines(tmp_path / "gone.log") == ()
