"""Start-up: how long rocmbuild takes before it does anything useful.

Times, interleaved in one run so that machine load hits every row alike, each as
a fresh process (wall time, median of ``--runs``):

* ``python -c pass``: the interpreter alone (the baseline of every ratio);
* ``import rocmbuild.cli`` and ``import rocmbuild.commands.app``: what the modules cost;
* ``rocmbuild --help`` and ``rocmbuild build --help``;
* ``rocmbuild plan RECIPE --skip-preflight``: planning (host facts, arch, environment);
* build start to first attempt: ``rocmbuild build RECIPE`` with a one-step recipe whose
  step writes the time it started; measured from just before the process is spawned
  to that time (lock, run dir, records, catalogue, up-to-date check, PTY spawn);
* the whole of that build, records and exit included.

The recipe is a throw-away TOML in a temporary directory, with its own state,
cache and config directories (nothing of the user's is read or written).
Goals (issue 10): build start to first attempt < 0.15 s; ``--help`` no slower.

Bytecode: an installed rocmbuild runs from ``.pyc`` files (pip compiles them at install; an
editable install writes them at first import).  With ``PYTHONDONTWRITEBYTECODE`` set (as in
some CI and sandbox shells) an editable install never gets them, and every run compiles ~70
modules from source first (~0.1 s).  So the package is byte-compiled before measuring (into
its own ``__pycache__``, which git ignores); ``--source-only`` measures without ``.pyc`` files
(they are moved aside for the run and put back).  Every row in a run is measured the same way.

Before/after: ``--against DIR`` (another checkout: the directory holding its ``rocmbuild/``) measures
both in the same loop, each probe for one tree and then the other (which goes first alternates by run),
each with its own state, cache and config dirs.  Two invocations run one after the other differ by the
machine's drifting load as much as by the code (2 CPUs shared with other work: ±15 ms between
invocations); alternating per probe and run, the drift hits both columns alike.

    .venv/bin/python benchmarks/startup.py [--runs 5] [--source-only] [--against DIR]
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")
STARTED = "started.txt"
GOAL_FIRST_ATTEMPT_S = 0.15
FIRST_ATTEMPT = "build: start to first attempt"


@dataclass(frozen=True)
class Probe:
    name: str
    argv: list[str]
    first_attempt: bool = False  # measure to the step's own start time, not to the process's exit


def probes(work: Path) -> list[Probe]:
    recipe = work / "startup.toml"
    # `date +%s.%N` is the step's first action: its time is when the first attempt's process started.
    recipe.write_text('name = "startup"\ndescription = "start-up probe"\n'
                      f'[steps]\nbuild = ["date +%s.%N > {work / STARTED}"]\n')
    source = work / "src"
    source.mkdir(exist_ok=True)
    common = [str(recipe), "--source", str(source), "--arch", "gfx942", "--skip-preflight", "--no-cache"]
    py = sys.executable
    return [
        Probe("python -c pass", [py, "-c", "pass"]),
        Probe("import rocmbuild.cli", [py, "-c", "import rocmbuild.cli"]),
        Probe("import rocmbuild.commands.app", [py, "-c", "import rocmbuild.commands.app"]),
        Probe("rocmbuild --help", [ROCMBUILD, "--help"]),
        Probe("rocmbuild build --help", [ROCMBUILD, "build", "--help"]),
        Probe("rocmbuild plan (no preflight)", [ROCMBUILD, "plan", *common]),
        Probe(FIRST_ATTEMPT, [ROCMBUILD, "build", *common, "--force", "--quiet"], True),
        Probe("build: whole run (1 trivial step)", [ROCMBUILD, "build", *common, "--force", "--quiet"]),
    ]


def environment(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_")}
    env.update(XDG_STATE_HOME=str(work / "state"), XDG_CACHE_HOME=str(work / "cache"),
               XDG_CONFIG_HOME=str(work / "config"), HIP_PLATFORM="amd")
    return env


def time_once(probe: Probe, work: Path, env: dict[str, str], run: int) -> float:
    argv = list(probe.argv)
    if argv[:2] == [ROCMBUILD, "build"] and "--help" not in argv:
        argv += ["--run-dir", str(work / "runs" / f"{probe.first_attempt}-{run}-{time.monotonic_ns()}")]
    (work / STARTED).unlink(missing_ok=True)
    t0 = time.time()
    # cwd: the work dir, so that `python -c` imports rocmbuild from the environment, not from the cwd
    proc = subprocess.run(argv, env=env, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    t1 = time.time()
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    if probe.first_attempt:
        return float((work / STARTED).read_text()) - t0
    return t1 - t0


def measure(work: Path, runs: int, against: Path | None = None) -> dict[str, dict[str, list[float]]]:
    """Seconds per tree ("this", and "against" when given) and probe name, ``runs`` each, interleaved
    (after one uncounted warm-up round)."""
    work.mkdir(parents=True, exist_ok=True)
    envs = {"this": environment(work / "this")}
    if against is not None:
        envs["against"] = {**environment(work / "against"), "PYTHONPATH": str(against)}
    rows = probes(work)
    times: dict[str, dict[str, list[float]]] = {tree: {p.name: [] for p in rows} for tree in envs}
    for probe in rows:  # warm the page cache and .pyc files first; not counted
        for env in envs.values():
            time_once(probe, work, env, -1)
    for run in range(runs):  # interleaved: drifting load hits every row (and both trees) alike
        order = list(envs) if run % 2 == 0 else list(envs)[::-1]
        for probe in rows:
            for tree in order:
                times[tree][probe.name].append(time_once(probe, work, envs[tree], run))
    return times


def package_dir(pythonpath: Path | None = None) -> Path:
    """The rocmbuild package the measured commands import (PYTHONPATH or the environment's)."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)} if pythonpath is not None else None
    found = subprocess.run([sys.executable, "-c", "import rocmbuild, os; print(os.path.dirname(rocmbuild.__file__))"],
                           capture_output=True, text=True, check=True, cwd=tempfile.gettempdir(), env=env)
    return Path(found.stdout.strip())


@contextlib.contextmanager
def bytecode(package: Path, source_only: bool) -> Iterator[str]:
    """The package byte-compiled (as installed), or with its ``__pycache__`` dirs moved aside for the run."""
    if not source_only:
        compileall.compile_dir(str(package), quiet=1)
        yield "from .pyc files (byte-compiled first, as an installed package runs)"
        return
    moved = [(d, d.with_name("__pycache__.startup-aside")) for d in package.rglob("__pycache__")]
    for cache, aside in moved:
        cache.rename(aside)
    try:
        yield ("from source (no .pyc files: every module compiled at each start"
               + (", PYTHONDONTWRITEBYTECODE set)" if os.environ.get("PYTHONDONTWRITEBYTECODE") else ")"))
    finally:
        for cache, aside in moved:
            shutil.rmtree(cache, ignore_errors=True)  # what the measured runs wrote, when they could
            aside.rename(cache)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--source-only", action="store_true", help="measure without .pyc files")
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="also measure the rocmbuild in DIR (another checkout), interleaved, in a second column")
    args = parser.parse_args()
    package = package_dir()
    other = package_dir(args.against.resolve()) if args.against is not None else None
    if other is not None and other == package:
        sys.exit(f"--against {args.against}: that is the rocmbuild measured already ({package})")
    if args.source_only:  # also when the shell does not say so: no run may leave .pyc files for the next
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    with contextlib.ExitStack() as stack:
        how = stack.enter_context(bytecode(package, args.source_only))
        if other is not None:
            stack.enter_context(bytecode(other, args.source_only))
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="rocmbuild-startup-"))
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
        first = statistics.median(times[tree][FIRST_ATTEMPT])
        print(f"goal ({tree}): build start to first attempt < {GOAL_FIRST_ATTEMPT_S * 1000:.0f} ms: "
              f"{'met' if first < GOAL_FIRST_ATTEMPT_S else 'NOT met'} ({first * 1000:.0f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
