"""Resource samples of a run (``samples.jsonl`` in the run dir): the file, its bound, and reading it back.

Owns the format of one sample (a flat JSON object per line: when, which attempt, the memory
available and the build's cgroup usage, the load, the compile jobs running and paused by the memory
guard, the build's progress N/M or percent), appending while a build runs, and keeping the file
bounded for a build of any length: when it holds ``MAX_SAMPLES`` lines the older half is thinned to
every other pair, keeping of each pair the sample with the *least* memory available (a dip that
preceded an OOM kill must survive thinning) and the most jobs paused.  Old samples get coarser
geometrically, recent ones keep full resolution: a 10-hour build at one sample every
``INTERVAL_S`` (process/sampler.py) stays under ``MAX_SAMPLES`` lines (~150 KB).

Readers (the HTML report) never trust the file: bounded size, lines of the wrong shape skipped.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from rocmbuild.records.recorder import PRIVATE_FILE, write_private

SAMPLES_FILE = "samples.jsonl"
MAX_SAMPLES = 1200        # the file is thinned when it reaches this many lines
MAX_READ_BYTES = 8 << 20  # a reader reads at most this much (the writer keeps it far smaller)

# key -> type of each field (all but ``t`` optional: a host without cgroups has no ``cg``).
FIELDS: dict[str, type | tuple[type, ...]] = {
    "t": (int, float),        # seconds since the epoch
    "attempt": int,
    "avail": int,             # bytes the build can still get (machine, or its cgroup if less)
    "total": int,             # the machine's memory (or the cgroup's limit if less)
    "cg": int,                # the step's cgroup usage (memory.current)
    "load": (int, float),     # 1-minute load average
    "jobs": int,              # compile jobs running (not paused)
    "paused": int,            # jobs paused by the memory guard
    "done": int,              # ninja/make N of N/M
    "of": int,                # ... and M
    "pct": (int, float),      # CMake's [ NN%]
}


# One sample: every field a number (``valid`` and ``load_samples`` see to that).
Sample = dict[str, float]


def thin(samples: Sequence[Mapping[str, float]]) -> list[Sample]:
    """The older half merged pairwise (pure): least ``avail`` kept, most ``paused``/``jobs`` kept."""
    half = len(samples) // 2
    half -= half % 2
    merged: list[Sample] = []
    for i in range(0, half, 2):
        a, b = samples[i], samples[i + 1]
        low = a if a.get("avail", math.inf) <= b.get("avail", math.inf) else b
        keep = dict(low)
        for key in ("paused", "jobs"):
            values = [s[key] for s in (a, b) if isinstance(s.get(key), int)]
            if values:
                keep[key] = max(values)
        merged.append(keep)
    return merged + [dict(s) for s in samples[half:]]


def valid(sample: object) -> bool:
    """Whether a parsed line is a sample (every known field of its type; bool is not an int here)."""
    if not isinstance(sample, dict) or not isinstance(sample.get("t"), (int, float)):
        return False
    for key, kind in FIELDS.items():
        value = sample.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
            return False
    # NaN and Infinity parse as floats: a chart cannot place them (a hostile or damaged line)
    return all(math.isfinite(v) for v in sample.values() if isinstance(v, float))


def load_samples(run_dir: Path) -> list[Sample]:
    """The run's samples in time order ([] when there are none or the file is unreadable)."""
    try:
        with (run_dir / SAMPLES_FILE).open("rb") as handle:
            data = handle.read(MAX_READ_BYTES)
    except OSError:
        return []
    samples: list[Sample] = []
    for line in data.splitlines():
        try:
            sample: object = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(sample, dict) and valid(sample):  # the known fields, each a number
            samples.append({k: v for k in FIELDS if isinstance(v := sample.get(k), int | float)})
    return sorted(samples, key=lambda s: s["t"])


class SampleLog:
    """Appends samples to the run dir's file, thinning it when it reaches ``limit`` lines."""

    def __init__(self, run_dir: Path, limit: int = MAX_SAMPLES) -> None:
        self.path = run_dir / SAMPLES_FILE
        self.limit = limit
        self.samples = load_samples(run_dir)  # a resumed run goes on from what is there

    def add(self, sample: Mapping[str, float | None]) -> None:
        """Record one sample; a write that fails (disk full) loses the sample, never the build."""
        row = {k: v for k, v in sample.items() if v is not None}
        self.samples.append(row)
        with contextlib.suppress(OSError):
            if len(self.samples) >= self.limit:
                self.samples = thin(self.samples)
                tmp = self.path.with_name(f".{SAMPLES_FILE}.tmp")
                write_private(tmp, "".join(json.dumps(s) + "\n" for s in self.samples))
                os.replace(tmp, self.path)
            else:  # records are private, whatever the umask (like every file of the run dir)
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, PRIVATE_FILE)
                with os.fdopen(fd, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(row) + "\n")
