"""Benchmark: the memory guard (``--memory-reserve``) on compile-like jobs that allocate for real.

Runs the same build twice through the real ``rocmbuild`` (PTY, runner, guard): JOBS processes named
``cc1plus`` (tests/children/alloc.py) each write SIZE MB of pages, started 0.1 s apart, held briefly,
then exit.  The reserve is set relative to what is available right now, to ``available - EAT`` where
EAT < JOBS x SIZE, so that the jobs together would eat into it:

* without the guard (``--memory-reserve off``): they do; the table shows how far below the reserve
  available memory went (scaled so that this is still many GB above zero: never near the real OOM
  killer on a shared machine);
* with the guard (``--memory-reserve RESERVE``): the newest jobs are paused (SIGSTOP) and resumed
  (SIGCONT) as the older ones finish; every job completes and available memory stays above the reserve.

A sampler thread reads ``psutil.virtual_memory().available`` every 10 ms during each run.  Other work on
the machine moves available memory too, so each mode runs ROUNDS times, interleaved.

    python benchmarks/memory_guard.py                      # 6 x 300 MB, reserve = available - 1 GiB
    python benchmarks/memory_guard.py --jobs 4 --size-mb 200 --eat-mb 500 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
ALLOC = ROOT / "tests" / "children" / "alloc.py"
ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")
MIB = 1024 * 1024


@dataclass(frozen=True)
class Result:
    mode: str
    reserve_mb: int
    start_available_mb: int
    min_available_mb: int
    margin_mb: int          # min available - reserve: negative = the reserve was eaten into
    pauses: int
    max_paused: int
    jobs_done: int
    wall_s: float
    exit_code: int


class Sampler(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.minimum = psutil.virtual_memory().available
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.minimum = min(self.minimum, psutil.virtual_memory().available)
            time.sleep(0.01)


def run_once(workdir: Path, mode: str, jobs: int, size_mb: int, eat_mb: int) -> Result:
    start = psutil.virtual_memory().available
    reserve_mb = start // MIB - eat_mb
    if reserve_mb < 1024 or start // MIB - jobs * size_mb < 2048:
        raise SystemExit(f"not enough memory available ({start // MIB} MB) to run this safely; scale down")
    run_dir = workdir / f"run-{mode}-{time.monotonic_ns()}"
    recipe = workdir / "alloc.toml"
    commands = " ".join(f"{sys.executable} {ALLOC} {size_mb} --tag {i} --hold-s 0.5 & sleep 0.1;"
                        for i in range(jobs))
    recipe.write_text(f'name = "alloc"\npackages = []\n[steps]\nbuild = ["{commands} wait"]\n')
    (workdir / "src").mkdir(exist_ok=True)
    reserve = "off" if mode == "without guard" else f"{reserve_mb}M"
    sampler = Sampler()
    sampler.start()
    t0 = time.monotonic()
    proc = subprocess.run([ROCMBUILD, str(recipe), "--source", str(workdir / "src"), "--run-dir", str(run_dir),
                           "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--memory-reserve", reserve,
                           "--quiet"], capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
                          env={**__import__("os").environ, "XDG_STATE_HOME": str(workdir / "state")})
    wall = time.monotonic() - t0
    sampler.stop.set()
    sampler.join()
    summary = json.loads((run_dir / "summary.json").read_text())
    memory = (summary["attempts"][0].get("memory") or {}) if summary["attempts"] else {}
    log = (run_dir / "attempt-1.log").read_text(errors="replace") if (run_dir / "attempt-1.log").exists() else ""
    return Result(mode, reserve_mb, start // MIB, sampler.minimum // MIB, sampler.minimum // MIB - reserve_mb,
                  int(memory.get("pauses", 0)), int(memory.get("max_paused", 0)),
                  sum(f"job {i} done" in log for i in range(jobs)), round(wall, 2), proc.returncode)


def render(results: list[Result], jobs: int, size_mb: int, eat_mb: int) -> str:
    lines = [f"memory guard: {jobs} compile-like jobs x {size_mb} MB ({jobs * size_mb} MB together), "
             f"reserve = available at start - {eat_mb} MB",
             f"{'mode':<15} {'start avail':>11} {'reserve':>9} {'min avail':>10} {'min-reserve':>11} "
             f"{'pauses':>6} {'max paused':>10} {'jobs done':>9} {'wall':>7} {'exit':>4}"]
    for r in results:
        lines.append(f"{r.mode:<15} {r.start_available_mb:>9}MB {r.reserve_mb:>7}MB {r.min_available_mb:>8}MB "
                     f"{r.margin_mb:>9}MB {r.pauses:>6} {r.max_paused:>10} {r.jobs_done:>6}/{jobs} "
                     f"{r.wall_s:>6.1f}s {r.exit_code:>4}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=6)
    parser.add_argument("--size-mb", type=int, default=300)
    parser.add_argument("--eat-mb", type=int, default=1024, help="reserve = available at start - this")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args()
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="rocmbuild-memguard-") as tmp:
        for _ in range(args.rounds):
            for mode in ("without guard", "with guard"):
                results.append(run_once(Path(tmp), mode, args.jobs, args.size_mb, args.eat_mb))
    print(render(results, args.jobs, args.size_mb, args.eat_mb))
    guarded = [r for r in results if r.mode == "with guard"]
    ok = all(r.margin_mb >= 0 and r.jobs_done == args.jobs and r.exit_code == 0 for r in guarded)
    print(f"goal: with the guard every job finishes and available memory stays above the reserve: "
          f"{'met' if ok else 'NOT met'}")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
