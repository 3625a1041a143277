"""Decisive line to verdict: how long rocmbuild takes to stop an attempt whose outcome is already known.

Each scenario runs the installed ``rocmbuild`` on a recipe whose build prints one decisive line and
then keeps other "jobs" running (the way ninja keeps compiling after the first FAILED), some of
them ignoring SIGINT and SIGTERM.  The build writes the wall-clock time at which it printed the
line; the figure is the time from then until ``rocmbuild`` has exited with its verdict.

    stop_header      `fatal error: hipblas/hipblas.h: No such file or directory` (not retryable), 40 s of
                     jobs after it, two of them ignoring INT/TERM             goal < 5 s
    stop_spent       a retryable failure (`cannot find -lhipblas`) with --max-attempts 1: the ladder's
                     decision is to stop                                      goal < 5 s
    stop_nowhere     a missing library found nowhere: its ladder's one remedy has nothing to do, so the
                     decision is to stop                                       goal < 5 s
    silent_after     the decisive line, then 40 s of silence (no output to wake a check)  goal < 5 s

Usage: python benchmarks/verdict_latency.py [--json out.json] [--rows a,b]
Exit status 1 when a scenario misses its goal.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# BENCH_ROCMBUILD: another rocmbuild to compare (e.g. a wrapper running main's sources)
ROCMBUILD = os.environ.get("BENCH_ROCMBUILD") or str(Path(sys.executable).parent / "rocmbuild")
GOAL_S = 5.0

# The build: background "jobs" (some deaf to INT/TERM) keep running and printing; the decisive line
# is printed once, its time written to $MARK just before (so the figure errs long).
BUILD = r"""
for i in 1 2 3; do (trap '' INT TERM; n=0; while [ $n -lt {after} ]; do sleep 1; {chatty} n=$((n+1)); done) & done
sleep 0.5
echo '[12/80] Building HIP object CMakeFiles/_C.dir/csrc/attention.hip.o'
echo 'FAILED: CMakeFiles/_C.dir/csrc/gemm.hip.o'
date +%s.%N > "$MARK"; echo "{line}"
wait
exit 1
"""


@dataclass(frozen=True)
class Scenario:
    name: str
    line: str
    options: tuple[str, ...] = ()
    chatty: bool = True
    after_s: int = 40


SCENARIOS = (
    Scenario("stop_header", "/src/csrc/gemm.hip:3:10: fatal error: hipblas/hipblas.h: No such file or directory"),
    Scenario("stop_spent", "/usr/bin/ld: cannot find -lhipblas: No such file or directory", ("--max-attempts", "1")),
    Scenario("stop_nowhere", "/usr/bin/ld: cannot find -lrocmbuild_nowhere: No such file or directory"),
    Scenario("silent_after", "/src/csrc/gemm.hip:3:10: fatal error: hipblas/hipblas.h: No such file or directory",
             chatty=False),
)


def run(scenario: Scenario, tmp: Path) -> dict[str, object]:
    work = tmp / scenario.name
    (work / "tree").mkdir(parents=True)
    script = work / "build.sh"
    script.write_text(BUILD.format(line=scenario.line, after=scenario.after_s,
                                   chatty="echo \"[$n/80] Building HIP object other$n.o\";" if scenario.chatty else ""))
    recipe = work / "bench.toml"
    recipe.write_text(f'name = "bench"\n[steps]\nbuild = ["sh {script}"]\n[resources]\nmemory_per_job_gb = 1\n')
    mark = work / "mark"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_")}
    env.update(XDG_STATE_HOME=str(work / "state"), XDG_CACHE_HOME=str(work / "cache"), MARK=str(mark),
               HIP_PLATFORM="amd")
    started = time.time()
    result = subprocess.run([ROCMBUILD, str(recipe), "--source", str(work / "tree"), "--skip-preflight",
                             "--no-cache", "--arch", "gfx90a", "--run-dir", str(work / "run"), *scenario.options],
                            env=env, capture_output=True, text=True, timeout=scenario.after_s * 3)
    ended = time.time()
    line_at = float(mark.read_text()) if mark.is_file() else started
    summary = json.loads((work / "run" / "summary.json").read_text())
    attempt = summary["attempts"][-1] if summary.get("attempts") else {}
    return {"scenario": scenario.name, "verdict_s": round(ended - line_at, 2), "goal_s": GOAL_S,
            "exit_code": result.returncode, "outcome": summary.get("outcome"),
            "category": (attempt.get("diagnosis") or {}).get("category"),
            "stopped_early": attempt.get("stopped_early"), "total_s": round(ended - started, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--rows", default="")
    args = parser.parse_args()
    wanted = set(filter(None, args.rows.split(",")))
    rows = []
    with tempfile.TemporaryDirectory(prefix="rocmbuild-verdict-") as tmp:
        for scenario in SCENARIOS:
            if wanted and scenario.name not in wanted:
                continue
            row = run(scenario, Path(tmp))
            rows.append(row)
            ok = row["verdict_s"] < GOAL_S  # type: ignore[operator]
            print(f"{row['scenario']:<14} {row['verdict_s']:>6.2f} s  (goal < {GOAL_S:g} s) "
                  f"{'ok' if ok else 'MISSED'}  outcome={row['outcome']} category={row['category']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r["verdict_s"] < GOAL_S for r in rows) else 1  # type: ignore[operator]


if __name__ == "__main__":
    sys.exit(main())
