"""Interactive commands: how long ``--help``, ``diagnose``, ``history`` and ``report`` take.

A person waits for these at the terminal (a build takes hours; its start-up is no goal).  Times,
interleaved in one run so that machine load hits every row alike, each as a fresh process (wall
time, median of ``--runs``):

* ``python -c pass``: the interpreter alone (the baseline of every ratio);
* ``rocmbuild --help`` and ``rocmbuild build --help``;
* ``rocmbuild diagnose`` on a small saved log (a real fixture: a cc1plus killed for memory);
* ``rocmbuild history`` and ``rocmbuild report`` of a run made (untimed) before measuring.

Goal: every ``rocmbuild`` row under 0.3 s.  The state, cache and config directories are
throw-away ones in a temporary directory (nothing of the user's is read or written).

Bytecode: an installed rocmbuild runs from ``.pyc`` files (pip compiles them at install), so the
package is byte-compiled before measuring (into its own ``__pycache__``, which git ignores).

Before/after: ``--against DIR`` (another checkout: the directory holding its ``rocmbuild/``) measures
both in the same loop, each probe for one tree and then the other (which goes first alternates by run).

    .venv/bin/python benchmarks/interactive.py [--runs 5] [--against DIR]
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")
GOAL_S = 0.3
SMALL_LOG = (Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "logs" / "out_of_memory"
             / "chinese_killed_cc1plus_after_assembler_errors.log")


@dataclass(frozen=True)
class Probe:
    name: str
    argv: list[str]


def probes(work: Path) -> list[Probe]:
    py = sys.executable
    run_dir = work / "runs" / "made"
    return [
        Probe("python -c pass", [py, "-c", "pass"]),
        Probe("rocmbuild --help", [ROCMBUILD, "--help"]),
        Probe("rocmbuild build --help", [ROCMBUILD, "build", "--help"]),
        Probe("rocmbuild diagnose (small log)", [ROCMBUILD, "diagnose", str(SMALL_LOG)]),
        Probe("rocmbuild history", [ROCMBUILD, "history"]),
        Probe("rocmbuild report", [ROCMBUILD, "report", str(run_dir)]),
    ]


def make_run(work: Path, env: dict[str, str]) -> None:
    """One finished run of a one-step recipe, for ``history`` and ``report`` to read (untimed)."""
    recipe = work / "one.toml"
    recipe.write_text('name = "one"\n[steps]\nbuild = ["true"]\n')
    source = work / "src"
    source.mkdir(exist_ok=True)
    subprocess.run([ROCMBUILD, "build", str(recipe), "--source", str(source), "--arch", "gfx942",
                    "--skip-preflight", "--no-cache", "--quiet", "--run-dir", str(work / "runs" / "made")],
                   env=env, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)


def environment(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_")}
    env.update(XDG_STATE_HOME=str(work / "state"), XDG_CACHE_HOME=str(work / "cache"),
               XDG_CONFIG_HOME=str(work / "config"), HIP_PLATFORM="amd")
    return env


def time_once(probe: Probe, work: Path, env: dict[str, str]) -> float:
    t0 = time.time()
    # cwd: the work dir, so that `python -c` imports rocmbuild from the environment, not from the cwd
    proc = subprocess.run(probe.argv, env=env, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    t1 = time.time()
    if proc.returncode not in (0, 1):  # diagnose exits 1 for an unrecognised log; anything else is wrong
        sys.exit(f"{' '.join(probe.argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return t1 - t0


def measure(work: Path, runs: int, against: Path | None = None) -> dict[str, dict[str, list[float]]]:
    """Seconds per tree ("this", and "against" when given) and probe name, ``runs`` each, interleaved
    (after one uncounted warm-up round)."""
    work.mkdir(parents=True, exist_ok=True)
    envs = {"this": environment(work / "this")}
    if against is not None:
        envs["against"] = {**environment(work / "against"), "PYTHONPATH": str(against)}
    make_run(work, envs["this"])  # read by both trees' `report`; `history` lists each tree's own state dir
    rows = probes(work)
    times: dict[str, dict[str, list[float]]] = {tree: {p.name: [] for p in rows} for tree in envs}
    for probe in rows:  # warm the page cache and .pyc files first; not counted
        for env in envs.values():
            time_once(probe, work, env)
    for run in range(runs):  # interleaved: drifting load hits every row (and both trees) alike
        order = list(envs) if run % 2 == 0 else list(envs)[::-1]
        for probe in rows:
            for tree in order:
                times[tree][probe.name].append(time_once(probe, work, envs[tree]))
    return times


def package_dir(pythonpath: Path | None = None) -> Path:
    """The rocmbuild package the measured commands import (PYTHONPATH or the environment's)."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)} if pythonpath is not None else None
    found = subprocess.run([sys.executable, "-c", "import rocmbuild, os; print(os.path.dirname(rocmbuild.__file__))"],
                           capture_output=True, text=True, check=True, cwd=tempfile.gettempdir(), env=env)
    return Path(found.stdout.strip())


@contextlib.contextmanager
def bytecode(package: Path) -> Iterator[str]:
    """The package byte-compiled, as an installed one runs."""
    compileall.compile_dir(str(package), quiet=1)
    yield "from .pyc files (byte-compiled first, as an installed package runs)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="also measure the rocmbuild in DIR (another checkout), interleaved, in a second column")
    args = parser.parse_args()
    package = package_dir()
    other = package_dir(args.against.resolve()) if args.against is not None else None
    if other is not None and other == package:
        sys.exit(f"--against {args.against}: that is the rocmbuild measured already ({package})")
    with contextlib.ExitStack() as stack:
        how = stack.enter_context(bytecode(package))
        if other is not None:
            stack.enter_context(bytecode(other))
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="rocmbuild-interactive-"))
        times = measure(Path(tmp), args.runs, args.against.resolve() if args.against is not None else None)
    print(f"rocmbuild from {package}, {how}" + (f"; against {other}" if other is not None else ""))
    print(f"load average {os.getloadavg()[0]:.2f}; {args.runs} runs each, median (min-max), wall time")
    trees = list(times)
    print(f"{'what':<36} " + " ".join(f"{tree + ' ms':>10} {'min-max':>9} {'x pass':>6}" for tree in trees))
    for name in times["this"]:
        cells = []
        for tree in trees:
            values = times[tree][name]
            median = statistics.median(values)
            base = statistics.median(next(iter(times[tree].values())))
            span = f"{min(values) * 1000:.0f}-{max(values) * 1000:.0f}"
            cells.append(f"{median * 1000:>10.0f} {span:>9} {median / base:>6.1f}")
        print(f"{name:<36} " + " ".join(cells))
    for tree in trees:
        medians = {name: statistics.median(values) for name, values in times[tree].items()
                   if name.startswith("rocmbuild")}
        slowest = max(medians, key=medians.__getitem__)
        worst = medians[slowest]
        print(f"goal ({tree}): every command < {GOAL_S * 1000:.0f} ms: "
              f"{'met' if worst < GOAL_S else 'NOT met'} (slowest: {slowest}, {worst * 1000:.0f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
