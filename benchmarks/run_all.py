"""rocmbuild's performance, measured side by side in one run (`make bench`).

Every row compares rocmbuild with a baseline measured in the same run, on the
same machine, interleaved where noise matters:

    retry_after_clean   rocmbuild attempt 1 (cold cache, 40-TU HIP project)  vs  attempt 2 after clean_build
                        (both read from summary.json of ONE real rocmbuild run; goal <= 0.25)
    wrapper_overhead    `make -j2` of the same 40-TU HIP project run directly  vs  the same under
                        `rocmbuild --no-cache` (wall, median of 3 interleaved pairs; goal <= 1.03)
    relay_throughput    `script -q -c 'cat LOG'`  vs  rocmbuild's runner + watcher relaying the same ~90 MB
                        (throughput ratio; goal >= 0.90)
    diagnose_clean / diagnose_errors
                        `rocmbuild diagnose` on a ~1 GB build log: MB/s (goal >= 100) and peak RSS (< 100 MB)
    diagnose_warnings   `grep -c -F` with the catalogue's keywords  vs  `rocmbuild diagnose` on a log where one
                        line in 50 is a `[-Wpass-failed=transform-warning]` warning (ratio of speeds; goal >= 0.5)
    interactive         `python -c pass`  vs  the slowest of `rocmbuild --help`, `diagnose` (small log), `history`
                        and `report` (median of interleaved runs; goal < 0.3 s; interactive.py shows every row)
    diagnosis_quality   right / total on a directory of real pasted logs (../shared/reallogs when present,
                        or $ROCMBUILD_REALLOGS); goal >= 0.97 with <= 1 confidently wrong

Usage: python benchmarks/run_all.py [--quick] [--tus 40] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import diagnose as diagnose_bench  # noqa: E402
import diagnosis_quality  # noqa: E402
import genproject  # noqa: E402
import interactive as interactive_bench  # noqa: E402
import relay as relay_bench  # noqa: E402

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")


@dataclass(frozen=True)
class Row:
    name: str
    baseline: str
    measured: str
    ratio: float
    goal: str
    ok: bool
    note: str = ""


def _env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_")}
    env.update(HIP_PLATFORM="amd", XDG_STATE_HOME=str(work / "state"), XDG_CACHE_HOME=str(work / "cache"),
               XDG_CONFIG_HOME=str(work / "config"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return env


FLAKY_VERIFY = """
import pathlib, sys
marker = pathlib.Path(sys.argv[1])
if not marker.exists():
    marker.write_text("seen")
    # The shape of a stale CMake cache (tests/fixtures/logs/stale_build): the ladder answers with clean_build.
    print("CMake Error: The current CMakeCache.txt directory /src/build/CMakeCache.txt is different than the "
          "directory /old/src/build where CMakeCache.txt was created. This may result in binaries being created "
          "in the wrong place. If you are not sure, reedit the CMakeCache.txt")
    sys.exit(1)
print("verified")
"""


def retry_after_clean(work: Path, tus: int) -> list[Row]:
    """One real rocmbuild run: a cold build, a stale-build failure, clean_build, a rebuild from the cache."""
    project = work / "retry" / "project"
    genproject.generate(project, tus)
    (work / "retry" / "verify.py").write_text(FLAKY_VERIFY)
    recipe = work / "retry" / "bench.toml"
    recipe.write_text(
        'name = "bench"\n[steps]\nbuild = ["make -j2"]\n'
        f'verify = ["{sys.executable} {work / "retry" / "verify.py"} {work / "retry" / "marker"}"]\n'
        '[clean]\npaths = ["build"]\n')
    run_dir = work / "retry" / "run"
    proc = subprocess.run([ROCMBUILD, str(recipe), "--source", str(project), "--arch", "gfx90a", "--run-dir",
                           str(run_dir), "--skip-preflight", "--quiet"], env=_env(work / "retry"),
                          capture_output=True, text=True)
    summary = json.loads((run_dir / "summary.json").read_text())
    if proc.returncode != 0 or len(summary["attempts"]) != 2:
        raise RuntimeError(f"retry benchmark run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    cold, retry = summary["attempts"]
    ratio = retry["duration_s"] / cold["duration_s"]
    cache = retry.get("cache") or {}
    note = (f"{tus} TUs; attempt 2 after {cold['remedies']}: {cache.get('hits')} hits / "
            f"{cache.get('misses')} misses")
    return [Row("retry_after_clean", f"{cold['duration_s']:.1f}s cold", f"{retry['duration_s']:.1f}s retry",
                ratio, "<= 0.25", ratio <= 0.25, note)]


def wrapper_overhead(work: Path, tus: int, pairs: int) -> list[Row]:
    """The same hipcc build, directly and under rocmbuild (no cache on either side)."""
    project = work / "overhead" / "project"
    genproject.generate(project, tus)
    recipe = work / "overhead" / "make.toml"
    recipe.write_text('name = "make"\n[steps]\nbuild = ["make -j2"]\n[clean]\npaths = ["build"]\n')
    env = _env(work / "overhead")
    direct: list[float] = []
    wrapped: list[float] = []
    for pair in range(pairs):  # interleaved, so drifting load hits both sides alike
        shutil.rmtree(project / "build", ignore_errors=True)
        start = time.monotonic()
        subprocess.run(["make", "-j2"], cwd=project, env=env, check=True, capture_output=True)
        direct.append(time.monotonic() - start)
        shutil.rmtree(project / "build", ignore_errors=True)
        start = time.monotonic()
        subprocess.run([ROCMBUILD, str(recipe), "--source", str(project), "--arch", "gfx90a", "--no-cache",
                        "--skip-preflight", "--quiet", "--run-dir", str(work / "overhead" / f"run{pair}")],
                       env=env, check=True, capture_output=True)
        wrapped.append(time.monotonic() - start)
    ratio = statistics.median(w / d for w, d in zip(wrapped, direct, strict=True))
    return [Row("wrapper_overhead", f"{statistics.median(direct):.1f}s direct",
                f"{statistics.median(wrapped):.1f}s rocmbuild", ratio, "<= 1.03", ratio <= 1.03,
                f"{tus} TUs, median of {pairs} interleaved pairs (includes rocmbuild's start-up and records)")]


def relay_throughput(work: Path, size_mb: float, runs: int) -> list[Row]:
    log = work / "relay.log"
    size = relay_bench.make_log(log, size_mb)
    hook = relay_bench.CountingHook(relay_bench.KEYWORDS)
    ours: list[float] = []
    floor: list[float] = []
    for _ in range(runs):
        ours.append(relay_bench.time_rocmbuild(log, work, hook, relay_bench.ACCELERATOR_AVAILABLE)[0])
        floor.append(relay_bench.time_script(log))
    mb = size / 1e6
    ours_rate, floor_rate = mb / statistics.median(ours), mb / statistics.median(floor)
    ratio = ours_rate / floor_rate
    return [Row("relay_throughput", f"{floor_rate:.0f} MB/s script", f"{ours_rate:.0f} MB/s rocmbuild", ratio,
                ">= 0.90", ratio >= 0.9, f"{mb:.0f} MB, {len(relay_bench.KEYWORDS)} keywords, median of {runs}")]


def interactive(work: Path, runs: int) -> list[Row]:
    with interactive_bench.bytecode(interactive_bench.package_dir()):  # as installed: from .pyc
        times = interactive_bench.measure(work / "interactive", runs)["this"]
    base = statistics.median(times["python -c pass"])
    slowest = max((n for n in times if n.startswith("rocmbuild")), key=lambda n: statistics.median(times[n]))
    worst = statistics.median(times[slowest])
    goal = interactive_bench.GOAL_S
    return [Row("interactive", f"{base * 1000:.0f} ms python -c pass", f"{worst * 1000:.0f} ms {slowest}",
                worst / base, f"< {goal * 1000:.0f} ms", worst < goal,
                f"slowest of --help, diagnose, history, report; median of {runs} interleaved runs")]


def diagnose_throughput(work: Path, size_mb: int) -> list[Row]:
    rows = []
    for name, errors in (("clean", False), ("errors", True)):
        path = work / f"diagnose-{name}.log"
        size = diagnose_bench.generate(path, size_mb, errors)
        result = diagnose_bench.measure(path)
        rate = size / 1e6 / float(result["scan_s"])  # type: ignore[arg-type]
        rss = int(result["rss_kb"]) / 1024  # type: ignore[call-overload]
        path.unlink()
        rows.append(Row(f"diagnose_{name}", "100 MB/s goal", f"{rate:.0f} MB/s, {rss:.0f} MB RSS", rate / 100,
                        ">= 1.00 and RSS < 100 MB", rate >= 100 and rss < 100,
                        f"{size / 1e6:.0f} MB log; {result['category']}"))
    return rows


def diagnose_warnings(work: Path, size_mb: int) -> list[Row]:
    path = work / "diagnose-warnings.log"
    size = diagnose_bench.generate_warnings(path, size_mb)
    grep_s = diagnose_bench.grep_seconds(path, diagnose_bench.catalogue_keywords())
    result = diagnose_bench.measure(path)
    scan_s = float(result["scan_s"])  # type: ignore[arg-type]
    path.unlink()
    ratio = grep_s / scan_s
    return [Row("diagnose_warnings", f"{size / 1e6 / grep_s:.0f} MB/s grep -F",
                f"{size / 1e6 / scan_s:.0f} MB/s diagnose", ratio, ">= 0.50", ratio >= 0.5,
                f"{size / 1e6:.0f} MB, 1 line in 50 a transform warning")]


def quality(_work: Path) -> list[Row]:
    directory = Path(os.environ.get("ROCMBUILD_REALLOGS", str(diagnosis_quality.DEFAULT_DIR)))
    if not (directory / "labels.json").is_file():
        print(f"  diagnosis_quality: no real-log set at {directory} (set ROCMBUILD_REALLOGS)", flush=True)
        return []
    cases = diagnosis_quality.classify_dir(directory)
    right = sum(c.right for c in cases)
    wrong = sum(c.confidently_wrong for c in cases)
    ratio = right / max(len(cases), 1)
    return [Row("diagnosis_quality", f"{len(cases)} real logs", f"{right} right, {wrong} confidently wrong",
                ratio, ">= 0.97, <= 1 wrong", ratio >= 0.97 and wrong <= 1, str(directory))]


def render(rows: list[Row]) -> str:
    header = f"{'row':<20} {'baseline':<20} {'measured':<28} {'ratio':>6}  {'goal':<24} {'ok':<4} note"
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(f"{r.name:<20} {r.baseline:<20} {r.measured:<28} {r.ratio:6.3f}  {r.goal:<24} "
                     f"{'yes' if r.ok else 'NO':<4} {r.note}")
    return "\n".join(lines)


def machine() -> str:
    load = os.getloadavg()[0]
    return (f"{platform.node()}: {platform.machine()}, {os.cpu_count()} CPUs, "
            f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, Python "
            f"{platform.python_version()}, load average {load:.2f} at start")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs (for a smoke run)")
    parser.add_argument("--tus", type=int, default=40)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    quick = args.quick
    print(machine(), flush=True)
    sections: list[Callable[[Path], list[Row]]] = [
        lambda w: retry_after_clean(w, 8 if quick else args.tus),
        # The same >= 40-TU project as the retry row: a real build, long enough that the fixed
        # start-up (~0.6 s of imports, discovery, records) is measured in proportion.
        lambda w: wrapper_overhead(w, 4 if quick else args.tus, 1 if quick else 3),
        lambda w: relay_throughput(w, 10 if quick else 90, 1 if quick else 3),
        lambda w: interactive(w, 1 if quick else 5),
        lambda w: diagnose_throughput(w, 64 if quick else 1024),
        lambda w: diagnose_warnings(w, 30 if quick else 300),
        quality,
    ]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="rocmbuild-bench-") as tmp:
        for section in sections:
            section_rows = section(Path(tmp))
            for row in section_rows:
                print(f"  {row.name}: ratio {row.ratio:.3f} ({row.measured} vs {row.baseline})", flush=True)
            rows += section_rows
    print()
    print(render(rows))
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in rows], indent=2))
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
