"""Relay throughput: rocmbuild's runner versus `script` (the PTY relay floor).

Generates a ~90 MB build-like log (ninja lines, compiler warnings, occasional
errors) in a temporary directory, then times, several runs each:

* rocmbuild: ``run_attempt`` running ``cat FILE`` under its PTY (read into the raw log by
  the relay process, ptyrelay.py), with a Watcher whose hook has ~30 keywords and a Display
  relaying to /dev/null, both following the log;
* script: ``script -q -c 'cat FILE' /dev/null`` with stdout to /dev/null;
* with ``--cli``, also the whole command, start-up included: ``python -m rocmbuild build``
  of a one-step recipe ``cat FILE`` (real classifier, records, display to /dev/null,
  ``--skip-preflight --no-cache --force``), timed from just before the process is spawned
  to the end of its attempt (``attempt.started`` in events.jsonl plus the attempt's
  ``duration_s``); what rocmbuild does after the attempt (provenance, arch warnings,
  summary) is reported apart.  One uncounted run comes first (the first run in fresh XDG
  dirs parses the catalogue and asks every tool its ``--version``, once per machine).  The
  package is byte-compiled first, as an installed rocmbuild runs (see startup.py: with
  ``PYTHONDONTWRITEBYTECODE`` set, an editable install would compile every module from
  source at each start).

Prints the median throughputs (MB/s) and their ratio, for each way of
finding keyword candidates available (one ``find`` per keyword; Aho-Corasick
when ``ahocorasick_rs`` is installed).  The goal is a ratio of
at least 0.9 with the watcher active.  ``--catalogue`` uses the real
classifier (the whole bundled catalogue) as the hook instead.

    .venv/bin/python benchmarks/relay.py [--size-mb 90] [--runs 5] [--catalogue] [--cli]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from rocmbuild.process.attempt import AttemptHooks, AttemptRequest
from rocmbuild.process.display import Display
from rocmbuild.process.runner import Limits, Step, run_attempt
from rocmbuild.process.watcher import ACCELERATOR_AVAILABLE, LineHook, Watcher

# Realistic catalogue keywords (what a classifier would prefilter on).
KEYWORDS: tuple[bytes, ...] = (
    b"error:", b"Error", b"FAILED: ", b"cannot find -l", b"undefined reference to", b"undefined symbol",
    b"No space left on device", b"Killed", b"signal terminated program", b"out of memory",
    b"internal compiler error", b"LLVM ERROR", b"Stack dump", b"No module named",
    b"error while loading shared libraries", b"cannot open shared object file", b"invalid device function",
    b"No binary for GPU", b"nsupported", b"is not a supported", b"HSA_STATUS_ERROR", b"Could not resolve host",
    b"Connection reset by peer", b"Read timed out", b"Temporary failure in name resolution",
    b"GLIBCXX_", b"compiled against", b"CMake Error", b"ninja: build stopped", b"Traceback",
)


class CountingHook:
    """A LineHook that only counts candidates (the classifier's work is not what is measured)."""

    def __init__(self, keywords: tuple[bytes, ...]) -> None:
        self.keywords = keywords
        self.candidates = 0

    def on_line(self, number: int, text: str, before: Sequence[str]) -> int:
        self.candidates += 1
        return 0

    def on_context(self, number: int, text: str) -> None:
        pass


def make_log(path: Path, size_mb: float, seed: int = 7) -> int:
    rng = random.Random(seed)
    target = int(size_mb * 1_000_000)
    total_edges = target // 110
    parts: list[bytes] = []
    size = 0
    edge = 0
    while size < target:
        r = rng.random()
        if r < 0.86:
            edge += 1
            line = (f"[{edge}/{total_edges}] Building HIPCC object caffe2/CMakeFiles/torch_hip.dir/__/aten/src/"
                    f"ATen/native/hip/torch_hip_generated_Op{edge}.hip.o\n")
        elif r < 0.995:
            line = (f"/src/pytorch/aten/src/ATen/native/hip/Op{edge}.hip:{rng.randint(1, 900)}:7: warning: "
                    f"loop not unrolled: the optimizer was unable to perform the requested transformation "
                    f"[-Wpass-failed=transform-warning]\n")
        elif r < 0.999:
            line = f"/src/pytorch/aten/src/ATen/native/hip/Op{edge}.hip:12:3: error: use of undeclared identifier 'x'\n"
        else:
            line = "FAILED: caffe2/CMakeFiles/torch_hip.dir/__/aten/src/ATen/native/hip/Op.hip.o \n"
        data = line.encode()
        parts.append(data)
        size += len(data)
    path.write_bytes(b"".join(parts))
    return size


def time_rocmbuild(log: Path, work: Path, hook: LineHook, accelerate: bool) -> tuple[float, int]:
    attempt_log = work / "attempt-1.log"
    attempt_log.unlink(missing_ok=True)
    watcher = Watcher(hook, accelerate=accelerate)
    with open(os.devnull, "wb") as sink, Display(sink, mode="normal", is_tty=False) as display:
        t0 = time.perf_counter()
        outcome = run_attempt(
            AttemptRequest((Step("build", f"cat {log}"),), cwd=work, env=dict(os.environ), log_path=attempt_log,
                           limits=Limits(stall_timeout_s=120)),
            AttemptHooks(watcher=watcher, display=display),
        )
        elapsed = time.perf_counter() - t0
    if not outcome.succeeded:
        sys.exit(f"rocmbuild run failed: {outcome}")
    if attempt_log.stat().st_size < log.stat().st_size:
        sys.exit("the attempt log is shorter than the input: bytes were lost")
    return elapsed, watcher.lines_seen


def time_cli(log: Path, work: Path, run: int) -> tuple[float, float]:
    """``rocmbuild build`` relaying ``cat LOG``: (spawn to the attempt's end, the rest of the command)."""
    recipe = work / "flood.toml"
    recipe.write_text(f'name = "flood"\ndescription = "relay benchmark"\n[steps]\nbuild = ["cat {log}"]\n')
    (work / "src").mkdir(exist_ok=True)
    run_dir = work / "runs" / str(run)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_")}
    env.update(XDG_STATE_HOME=str(work / "state"), XDG_CACHE_HOME=str(work / "cache"),
               XDG_CONFIG_HOME=str(work / "config"), HIP_PLATFORM="amd")
    t0 = time.time()
    subprocess.run([sys.executable, "-m", "rocmbuild", "build", str(recipe), "--source", str(work / "src"),
                    "--arch", "gfx942", "--skip-preflight", "--no-cache", "--force", "--run-dir", str(run_dir)],
                   env=env, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)  # cwd: `-m` imports from the cwd first
    t1 = time.time()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    started = next(e for e in events if e["event"] == "attempt.started")["timestamp"]
    attempt = json.loads((run_dir / "summary.json").read_text())["attempts"][0]
    end = datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp() + attempt["duration_s"]
    return end - t0, t1 - end


def time_script(log: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(["script", "-q", "-c", f"cat {log}", "/dev/null"], stdout=subprocess.DEVNULL,
                   stdin=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=90)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--catalogue", action="store_true", help="use the real classifier as the hook")
    parser.add_argument("--cli", action="store_true", help="also time the whole `rocmbuild build` command")
    args = parser.parse_args()
    if shutil.which("script") is None:
        sys.exit("`script` (util-linux) is needed for the comparison")
    with tempfile.TemporaryDirectory(prefix="rocmbuild-bench-") as tmp:
        work = Path(tmp)
        log = work / "build.log"
        size = make_log(log, args.size_mb)
        if args.catalogue:
            from rocmbuild.diagnosis.classifier import Classifier

            hook: LineHook = Classifier()
            label = f"rocmbuild (watcher + classifier, {len(hook.keywords)} keywords)"
        else:
            hook = CountingHook(KEYWORDS)
            label = f"rocmbuild (watcher, {len(KEYWORDS)} keywords)"
        # Candidate finding: one `find` per keyword (stdlib), and Aho-Corasick where ahocorasick_rs is installed.
        finders = {False: "find per keyword"} | ({True: "Aho-Corasick"} if ACCELERATOR_AVAILABLE else {})
        ours: dict[bool, list[float]] = {f: [] for f in finders}
        floor: list[float] = []
        cli: list[tuple[float, float]] = []
        if args.cli:
            import compileall

            import rocmbuild

            compileall.compile_dir(os.path.dirname(rocmbuild.__file__), quiet=1)
            # Not counted, as in startup.py: the first run in fresh XDG dirs pays what a machine pays
            # once (the catalogue's parse, every `TOOL --version` probe, competing with the relay).
            time_cli(log, work, -1)
        lines = 0
        for run in range(args.runs):  # interleaved, so drifting machine load hits all alike
            for accelerate in finders:
                elapsed, lines = time_rocmbuild(log, work, hook, accelerate)
                ours[accelerate].append(elapsed)
            floor.append(time_script(log))
            if args.cli:
                cli.append(time_cli(log, work, run))
        mb = size / 1e6
        floor_s = statistics.median(floor)
        print(f"input: {mb:.1f} MB, {lines} lines; {args.runs} runs each, median")
        print(f"{'relay':<70} {'MB/s':>8} {'median s':>9} {'ratio':>6}")
        for accelerate, name in finders.items():
            median = statistics.median(ours[accelerate])
            print(f"{label + ', ' + name:<70} {mb / median:>8.1f} {median:>9.2f} {floor_s / median:>6.2f}")
        if cli:
            relay_s = statistics.median(c[0] for c in cli)
            rest_s = statistics.median(c[1] for c in cli)
            ratios = sorted(f / c[0] for f, c in zip(floor, cli, strict=True))
            print(f"{'rocmbuild build (CLI, start-up + classifier + records)':<70} {mb / relay_s:>8.1f} "
                  f"{relay_s:>9.2f} {floor_s / relay_s:>6.2f}")
            print(f"  (per-run ratios {' '.join(f'{r:.2f}' for r in ratios)}; after the attempt: {rest_s:.2f} s)")
        print(f"{'script -q -c cat (PTY relay floor)':<70} {mb / floor_s:>8.1f} {floor_s:>9.2f} {1:>6.2f}")
        if not ACCELERATOR_AVAILABLE:
            print("(ahocorasick_rs is not installed: only the stdlib finder was measured)")
        print("goal: ratio rocmbuild/script >= 0.90")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
