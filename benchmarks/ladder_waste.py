"""Attempts the ladder spends on the scripted failures, against the fewest that could decide each.

Runs every scenario of tests/fakebuild.py that a real ROCm build can show
through the installed ``rocmbuild`` command (real runner, PTY, records), with
``--max-attempts 8`` so that the cap never hides waste, and counts attempts.
"Fewest" is what the failure itself justifies: one attempt per remedy that
changes the outcome (a transient network failure's waits included), plus the
attempt that decides (success, or the stop).  A rung that cannot matter
(clean_build with nothing to clean, -O2 for a library missing at import time,
a fourth wait for a dead mirror) is waste.  Goal: 0 wasted.

    python benchmarks/ladder_waste.py [--json out.json]

Exit status 1 when any attempt was wasted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAKEBUILD = ROOT / "tests" / "fakebuild.py"
ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")

RECIPE = """
name = "waste"
packages = ["rocmbuild-bench-nonexistent"]
[steps]
build = ["{python} {fakebuild} {build}"]
verify = [{verify}]
[clean]
paths = ["build", "*.egg-info"]
[resources]
memory_per_job_gb = 1
"""


@dataclass(frozen=True)
class Scenario:
    name: str
    build: str
    fewest: int          # attempts that could decide it
    why: str
    verify: str | None = None
    setup: Callable[[Path], None] | None = None
    extra: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


def _lib(sub: str, name: str) -> Callable[[Path], None]:
    def make(src: Path) -> None:
        (src / sub).mkdir(parents=True)
        (src / sub / name).write_text("")
    return make


def _stale(src: Path) -> None:
    (src / "build").mkdir(parents=True)
    (src / "build" / "arch.stamp").write_text("gfx908")


SCENARIOS = (
    Scenario("link", "link", 2, "add_library_paths, then success", setup=_lib("third_party/lib", "libfakeblas.so")),
    Scenario("load", "ok", 2, "add_library_paths (LD_LIBRARY_PATH), then success", verify="load",
             setup=_lib("vendor/rt", "libfakert.so.1")),
    Scenario("crash", "crash", 2, "-O3 -> -O2, then success", env=(("CXXFLAGS", "-O3"),)),
    Scenario("oom", "oom", 3, "MAX_JOBS 8 -> 4 -> 2, then success", extra=("--jobs", "8")),
    Scenario("stale_arch", "stale_arch", 2, "clean_build, then success", setup=_stale),
    Scenario("network", "network", 3, "two waits, then success"),
    Scenario("link_then_crash", "link_then_crash", 3, "add_library_paths, -O2, success",
             setup=_lib("third_party/lib", "libfakeblas.so"), env=(("CXXFLAGS", "-O3"),)),
    Scenario("unknown", "unknown", 1, "not recognised: stop"),
    Scenario("unsupported", "unsupported", 1, "not retryable: stop"),
    Scenario("import_missing", "import_missing", 1,
             "library at import time found nowhere, nothing to clean, nothing compiled: stop"),
    Scenario("network_down", "network_down", 4, "the network ladder's three waits, then stop"),
    Scenario("broken_ssl", "broken_ssl", 1, "a broken interpreter is not the network: stop at once"),
    Scenario("crash_always", "crash_always", 3, "-O2, fewer jobs, then stop (its ladder is spent)",
             env=(("CXXFLAGS", "-O3"),), extra=("--jobs", "4")),
)


def run(scenario: Scenario, tmp: Path) -> dict[str, object]:
    src = tmp / "src"
    src.mkdir()
    if scenario.setup:
        scenario.setup(src)
    recipe = tmp / "waste.toml"
    recipe.write_text(RECIPE.format(
        python=sys.executable, fakebuild=FAKEBUILD, build=scenario.build,
        verify=f'"{sys.executable} {FAKEBUILD} {scenario.verify}"' if scenario.verify else ""))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_") and k != "CXXFLAGS"}
    env.update(XDG_STATE_HOME=str(tmp / "state"), XDG_CACHE_HOME=str(tmp / "cache"),
               XDG_CONFIG_HOME=str(tmp / "config"), HIP_PLATFORM="amd", **dict(scenario.env))
    argv = [ROCMBUILD, str(recipe), "--source", str(src), "--run-dir", str(tmp / "run"), "--arch", "gfx90a",
            "--skip-preflight", "--no-cache", "--backoff", "0.01", "--stall-timeout", "5s",
            "--max-attempts", "8", "--json", *scenario.extra]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    summary = json.loads((tmp / "run" / "summary.json").read_text())
    attempts = summary["attempts"]
    return {
        "scenario": scenario.name, "exit_code": proc.returncode, "attempts": len(attempts),
        "fewest": scenario.fewest, "wasted": max(0, len(attempts) - scenario.fewest), "why": scenario.why,
        "remedies": [r for a in attempts for r in a["remedies"]],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    rows = []
    for scenario in SCENARIOS:
        with tempfile.TemporaryDirectory(prefix=f"waste-{scenario.name}-") as tmp:
            rows.append(run(scenario, Path(tmp)))
        row = rows[-1]
        print(f"{row['scenario']:<16} exit {row['exit_code']:>3}  attempts {row['attempts']}  fewest {row['fewest']}"
              f"  wasted {row['wasted']}  remedies: {', '.join(row['remedies']) or '-'}", flush=True)  # type: ignore[arg-type]
    spent = sum(int(r["attempts"]) for r in rows)  # type: ignore[call-overload]
    fewest = sum(int(r["fewest"]) for r in rows)  # type: ignore[call-overload]
    wasted = sum(int(r["wasted"]) for r in rows)  # type: ignore[call-overload]
    print(f"total: {spent} attempts spent, {fewest} the fewest that could decide, {wasted} wasted (goal 0)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "spent": spent, "fewest": fewest, "wasted": wasted}, indent=2))
    return 1 if wasted else 0


if __name__ == "__main__":
    sys.exit(main())
