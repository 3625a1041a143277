"""Benchmark: does a log's reading survive the ways a paste or a CI changes its text?

The same failure reaches ``diagnose`` through many hands: GCC in a UTF-8 locale prints ``‘x’``, a forum
turns ``"x"`` into ``“x”``, TheRock, Nix, TeamCity, docker compose, vLLM and GitHub Actions put their own
prefix on every line, a terminal copy hard-wraps long lines, an install lives in ``/opt/rocm-6.3.1``.
For each such change, applied to every labelled log in the given directories (the ``reallogs``
format, as ``diagnosis_quality.py`` reads them), this prints how many readings changed and how many
right ones were lost, against the unchanged logs read in the same run (the baseline).  A change the
classifier should not care about has a ratio of 1.00 and 0 lost.

    python benchmarks/paste_robustness.py [DIR ...] [--only NAME ...]

DIR defaults to ``../shared/reallogs`` (when present) and ``benchmarks/reallogs``.  A measurement, not
a test: exit 0.  Wrapping at a fixed width is the one change rocmbuild does not undo (a wrapped line
cannot be rejoined from one line alone; RESULTS.md has the measure of a join heuristic).
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from diagnosis_quality import DEFAULT_DIR, OTHER, load_cases  # noqa: E402

from rocmbuild.diagnosis.catalogue import load_catalogue  # noqa: E402
from rocmbuild.diagnosis.classifier import classify_stream  # noqa: E402


def _each_line(prefix: str) -> Callable[[str], str]:
    return lambda text: re.sub(r"(?m)^", prefix, text)


def _typographic(single: str, double: str) -> Callable[[str], str]:
    """Quotes as a smart-quote editor sets them: a quote after a word character closes (``can't`` -> ``can’t``)."""
    def change(text: str) -> str:
        def curly(m: re.Match[str]) -> str:
            quote = m[1] or m[2]
            return (single if quote == "'" else double)[0 if m[2] else 1]
        return re.sub(r"""(?<=\w)(['"])|(['"])""", curly, text)
    return change


def _wrap(width: int) -> Callable[[str], str]:
    def wrap(text: str) -> str:
        out = []
        for line in text.split("\n"):
            while len(line) > width:
                out.append(line[:width])
                line = line[width:]
            out.append(line)
        return "\n".join(out)
    return wrap


CHANGES: dict[str, Callable[[str], str]] = {
    "typographic quotes (English)": _typographic("\u2018\u2019", "\u201c\u201d"),
    "typographic quotes (German)": _typographic("\u201a\u2018", "\u201e\u201c"),
    "CRLF line ends": lambda text: text.replace("\n", "\r\n"),
    "ANSI colour on error lines": lambda text: re.sub(r"(?m)^(.*(?i:error).*)$", "\x1b[1;31m\\1\x1b[0m", text),
    "markdown list indent (4 spaces)": _each_line("    "),
    "GitHub Actions timestamp": _each_line("2025-03-01T12:01:08.1400866Z "),
    "TheRock component prefix": _each_line("[hipBLASLt] "),
    "Nix builder prefix": _each_line("python3.12-torch> "),
    "TeamCity prefix (copied)": _each_line("[20:54:59][Step 2/2] "),
    "TeamCity prefix (downloaded log)": _each_line("[14:36:30]E:\t [Step 2/2] "),
    "docker compose prefix": _each_line("vllm-1  | "),
    "compose service name + vLLM process prefix": _each_line("vllm-server  | (EngineCore_DP0 pid=217) "),
    "versioned ROCm path": lambda text: text.replace("/opt/rocm/", "/opt/rocm-6.3.1/"),
    "another Python in paths": lambda text: re.sub(r"python3\.\d+", "python3.13", text),
    "another home directory": lambda text: re.sub(r"/home/[^/\s]+", "/home/ci-runner", text),
    "hard wrap at 120 columns": _wrap(120),
}


@dataclass(frozen=True)
class Log:
    name: str
    expected: str
    text: str


def load_logs(directories: list[Path]) -> list[Log]:
    logs = []
    for directory in directories:
        batches = [directory] if (directory / "labels.json").is_file() else sorted(
            p for p in directory.iterdir() if (p / "labels.json").is_file())
        for batch in batches:
            for entry in load_cases(batch):
                path = batch / f"{entry['id']}.log"
                if path.is_file():
                    expected = "unknown" if entry["label"] == OTHER else entry["label"]
                    text = path.read_bytes().decode("utf-8", "replace")
                    logs.append(Log(f"{batch.name}/{entry['id']}", expected, text))
    return logs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="*", type=Path)
    parser.add_argument("--only", nargs="*", default=None, help="names of the changes to apply")
    parser.add_argument("--show", action="store_true", help="list every log whose reading changed")
    args = parser.parse_args(argv)
    dirs = args.dirs or [d for d in (DEFAULT_DIR, HERE / "reallogs") if d.is_dir()]
    logs = load_logs(dirs)
    if not logs:
        print("error: no labelled logs found in " + ", ".join(map(str, dirs)), file=sys.stderr)
        return 2
    catalogue = load_catalogue(user=False)

    def read(text: str) -> str:
        return classify_stream(io.BytesIO(text.encode("utf-8", "surrogateescape")), catalogue).category

    baseline = [read(log.text) for log in logs]
    base_right = sum(got == log.expected for got, log in zip(baseline, logs, strict=True))
    print(f"{len(logs)} labelled logs; unchanged: {base_right}/{len(logs)} right\n")
    print("| change | readings changed | right answers lost | gained | right | ratio to unchanged |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, change in CHANGES.items():
        if args.only is not None and name not in args.only:
            continue
        changed = lost = gained = right = 0
        for before, log in zip(baseline, logs, strict=True):
            after = read(change(log.text))
            right += after == log.expected
            if after != before:
                changed += 1
                lost += before == log.expected
                gained += after == log.expected
                if args.show:
                    print(f"    {name}: {log.name} ({log.expected}) {before} -> {after}")
        print(f"| {name} | {changed} | {lost} | {gained} | {right}/{len(logs)} | {right / base_right:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
