"""What a retry costs with rocmbuild's compiler cache, measured side by side in one run.

Each row compares a baseline with a measured build of the same generated HIP
project (benchmarks/genproject.py: N translation units of templated kernels,
a Makefile driving hipcc, hipcc's clang wrapped through rocmbuild.toolchain.cache):

    retry_after_clean   cold build (empty cache)  vs  rebuild after deleting build/ (= clean_build)
    fresh_clone         cold build                vs  the same sources copied to another path, same cache
    fleet_remote        cold build                vs  another path with an EMPTY local cache and a redis
                                                      remote that a first node filled (skipped w/o redis)
    cold_overhead       plain hipcc, no cache     vs  a miss through the cache, per file (goal: <= 10% slower)
    lower_optimization  cold build                vs  rebuild after -O3 -> -O2 (informational: expected cold)

Rows are functions ``Bench -> Row`` in ROWS; add more (e.g. the lead's wrapper
overhead row) by appending to the list.  Usage:

    python benchmarks/retry_cost.py [--tus 40] [--jobs 2] [--rows a,b] [--json out.json] [--keep]

Exit status 1 when a row with a goal misses it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))       # rocmbuild
sys.path.insert(0, str(Path(__file__).resolve().parent))              # genproject

import genproject

from rocmbuild.toolchain import cache
from rocmbuild.toolchain.cache import CacheConfig, CacheStats, CacheTool


@dataclass(frozen=True)
class Row:
    name: str
    baseline_s: float
    measured_s: float
    goal: float | None          # ratio measured/baseline must be <= goal; None = informational
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.measured_s / self.baseline_s if self.baseline_s > 0 else float("inf")

    @property
    def verdict(self) -> str:
        if self.goal is None:
            return "info"
        return "pass" if self.ratio <= self.goal else "FAIL"

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "baseline_s": round(self.baseline_s, 3),
                "measured_s": round(self.measured_s, 3), "ratio": round(self.ratio, 4),
                "goal": self.goal, "verdict": self.verdict, "note": self.note}


@dataclass
class Build:
    seconds: float
    stats: CacheStats | None

    def describe(self) -> str:
        s = self.stats
        if s is None:
            return "stats n/a"
        rate = "n/a" if s.hit_rate is None else f"{s.hit_rate:.0%}"
        return f"hits {s.hits} (remote {s.remote_hits}), misses {s.misses}, hit rate {rate}"


@dataclass
class Bench:
    """Shared state of one benchmark run: the work dir, the tool, the memoised cold build."""

    work: Path
    tus: int
    jobs: int
    tool: CacheTool
    wrapper_dir: Path
    base_env: dict[str, str]
    redis_url: str | None = None
    _cold: Build | None = field(default=None, repr=False)

    def project(self, name: str) -> Path:
        """The generated project at work/<name> (another path = another clone)."""
        root = self.work / name
        if not (root / "Makefile").exists():
            genproject.generate(root, self.tus)
        return root

    def build(self, project: Path, cache_dir: Path, *, remote: str | None = None, opt: str = "-O3",
              extra_env: dict[str, str] | None = None) -> Build:
        """`make -jN` from scratch (build/ removed) with rocmbuild's cache environment."""
        shutil.rmtree(project / "build", ignore_errors=True)
        env = {**self.base_env,
               **cache.cache_env(CacheConfig(self.tool, cache_dir, remote), recipe_uses_cmake=False,
                                 caller_env=self.base_env, wrapper_dir=self.wrapper_dir, source=project),
               **(extra_env or {})}
        cache.zero_stats(env, tool=self.tool)
        start = time.monotonic()
        proc = subprocess.run(["make", f"-j{self.jobs}", f"OPT={opt}"], cwd=project, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        seconds = time.monotonic() - start
        if proc.returncode != 0:
            raise RuntimeError(f"build of {project} failed:\n{proc.stdout[-3000:]}")
        return Build(seconds, cache.read_stats(env, tool=self.tool))

    def cold(self) -> Build:
        """The baseline every row compares with: project p1, empty cache c1."""
        if self._cold is None:
            self._cold = self.build(self.project("p1"), self.work / "c1")
            print(f"  cold build: {self._cold.seconds:.1f}s ({self._cold.describe()})", flush=True)
        return self._cold


def row_retry_after_clean(b: Bench) -> Row:
    cold = b.cold()
    warm = b.build(b.project("p1"), b.work / "c1")      # build() deletes build/ first
    return Row("retry_after_clean", cold.seconds, warm.seconds, 0.25, warm.describe())


def row_fresh_clone(b: Bench) -> Row:
    cold = b.cold()
    warm = b.build(b.project("p2-another-clone"), b.work / "c1")
    return Row("fresh_clone", cold.seconds, warm.seconds, 0.25, warm.describe())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def redis_server() -> Iterator[str | None]:
    if shutil.which("redis-server") is None:
        yield None
        return
    port = _free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    break
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def row_fleet_remote(b: Bench) -> Row | None:
    if b.redis_url is None:
        print("  fleet_remote: skipped (no redis-server)")
        return None
    cold = b.cold()
    # Node A: its warm local cache pushes everything to the remote (reshare = write
    # remote even on local hits), standing in for "A built it with the remote on".
    b.build(b.project("p3-node-a"), b.work / "c1", remote=b.redis_url, extra_env={"CCACHE_RESHARE": "1"})
    node_b = b.build(b.project("p4-node-b"), b.work / "c4-empty", remote=b.redis_url)
    return Row("fleet_remote", cold.seconds, node_b.seconds, 0.25, node_b.describe())


def row_cold_overhead(b: Bench, sample: int = 6) -> Row:
    """What the cache costs when it cannot help: plain hipcc vs a miss through the cache.

    Measured per file, plain and cached compiles interleaved (each cached one
    with a new empty cache), so that load from elsewhere on the machine hits
    both sides alike; two whole builds one after the other differ by +-30% here.
    """
    project = b.project("p5-overhead")
    (project / "build").mkdir(exist_ok=True)
    sources = sorted((project / "src").glob("*.hip"))[:sample]
    plain_s = cached_s = 0.0
    for i, src in enumerate(sources):
        argv = ["hipcc", "-O3", "--offload-arch=gfx90a", "-fPIC", "-Iinclude", "-MMD", "-MP", "-c",
                str(src.relative_to(project)), "-o", f"build/{src.stem}.o"]
        cache_dir = b.work / f"c5-{i}"
        env = {**b.base_env,
               **cache.cache_env(CacheConfig(b.tool, cache_dir), recipe_uses_cmake=False,
                                 caller_env=b.base_env, wrapper_dir=b.wrapper_dir, source=project)}
        for cached in (False, True):
            start = time.monotonic()
            subprocess.run(argv, cwd=project, env=env if cached else b.base_env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
            took = time.monotonic() - start
            if cached:
                cached_s += took
            else:
                plain_s += took
        shutil.rmtree(cache_dir, ignore_errors=True)
    return Row("cold_overhead", plain_s, cached_s, 1.10,
               f"{len(sources)} files: plain hipcc vs miss through the cache, interleaved")


def row_lower_optimization(b: Bench) -> Row:
    cold = b.cold()
    o2 = b.build(b.project("p1"), b.work / "c1", opt="-O2")
    warning = cache.invalidates_cache("lower_optimization") or ""
    return Row("lower_optimization", cold.seconds, o2.seconds, None,
               f"{o2.describe()}; expected: {warning.split(':')[0]}")


ROWS: list[Callable[[Bench], Row | None]] = [
    row_retry_after_clean,
    row_fresh_clone,
    row_fleet_remote,
    row_cold_overhead,
    row_lower_optimization,
]


def render(rows: list[Row]) -> str:
    head = f"{'row':<20} {'baseline s':>10} {'measured s':>10} {'ratio':>7} {'goal':>7} {'result':>6}  note"
    lines = [head, "-" * len(head)]
    for r in rows:
        goal = f"<={r.goal:.2f}" if r.goal is not None else "-"
        lines.append(f"{r.name:<20} {r.baseline_s:>10.1f} {r.measured_s:>10.1f} {r.ratio:>7.3f} "
                     f"{goal:>7} {r.verdict:>6}  {r.note}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="retry cost with rocmbuild's compiler cache")
    parser.add_argument("--tus", type=int, default=40, help="translation units (default 40)")
    parser.add_argument("--jobs", type=int, default=2, help="make -j (default 2)")
    parser.add_argument("--rows", default="",
                        help="comma-separated row names, e.g. retry_after_clean (default: all)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the work dir")
    args = parser.parse_args(argv)

    base_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("CCACHE_", "CMAKE_")) and k != "HIP_CLANG_PATH"}
    base_env["HIP_PLATFORM"] = "amd"   # nvcc may be installed too: hipcc would pick it
    tool = cache.detect_cache(base_env)
    real_clang = cache.find_real_clang_dir(base_env)
    if tool is None or shutil.which("hipcc") is None or real_clang is None:
        print("retry_cost: needs ccache and hipcc (apt-get install ccache hipcc)", file=sys.stderr)
        return 2
    wanted = {n.strip() for n in args.rows.split(",") if n.strip()}
    rows_to_run = [f for f in ROWS if not wanted or f.__name__.removeprefix("row_") in wanted]

    work = Path(tempfile.mkdtemp(prefix="rocmbuild-retry-cost-"))
    print(f"retry_cost: {args.tus} TUs, make -j{args.jobs}, {tool.name} {tool.version}, work dir {work}")
    results: list[Row] = []
    try:
        wrapper_dir = work / "wrappers"
        cache.write_wrappers(wrapper_dir, real_clang, tool.path)
        with redis_server() as redis_url:
            bench = Bench(work, args.tus, args.jobs, tool, wrapper_dir, base_env, redis_url)
            for fn in rows_to_run:
                print(f"running {fn.__name__.removeprefix('row_')} ...", flush=True)
                row = fn(bench)
                if row is not None:
                    results.append(row)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print(render(results))
    if args.json:
        args.json.write_text(json.dumps([r.to_json() for r in results], indent=2) + "\n")
    return 1 if any(r.verdict == "FAIL" for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
