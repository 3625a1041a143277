"""The global job limit: real nested makes through the real launcher, real flock, real
SIGKILL; the records' arithmetic; and a real rocmbuild run whose nested build obeys --jobs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocmbuild.toolchain import launcher
from rocmbuild.toolchain.joblimit import (
    AttemptSlots,
    Compile,
    parse_compiles,
    peak_concurrency,
    summarise,
)
from rocmbuild.toolchain.launchshim import install_launcher, launcher_env
from tests.test_cache import needs_ccache
from tests.test_e2e_ladder import ROCMBUILD, base_env

ALLOC = Path(__file__).parent / "children" / "alloc.py"

# A compiler stand-in: records when it ran (start and end, one file per job), works a little, exits.
STANDIN = """#!/bin/sh
out="$1"
date +%s.%N > "$out.start"
sleep 0.15
date +%s.%N > "$out.end"
"""


def max_overlap(directory: Path) -> tuple[int, int]:
    """(most stand-ins running at one instant, how many ran), from their own timestamp files."""
    intervals = []
    for start in directory.glob("*.start"):
        end = start.with_suffix(".end")
        intervals.append((float(start.read_text()), float(end.read_text())))
    return peak_concurrency(intervals), len(intervals)


def nested_makefiles(tmp: Path, shim: Path) -> Path:
    """make -> two sub-makes at once (-j8 each), 8 compile stand-ins each, every one through the launcher."""
    tmp.mkdir(exist_ok=True)
    (tmp / "cc.sh").write_text(STANDIN)
    (tmp / "cc.sh").chmod(0o755)
    (tmp / "out").mkdir()
    for sub in ("a", "b"):
        (tmp / sub).mkdir()
        targets = " ".join(f"{sub}{i}" for i in range(8))
        rules = "".join(f"{sub}{i}:\n\t{shim} {tmp / 'cc.sh'} {tmp / 'out' / f'{sub}{i}'}\n" for i in range(8))
        (tmp / sub / "Makefile").write_text(f".PHONY: all {targets}\nall: {targets}\n{rules}")
    (tmp / "Makefile").write_text(".PHONY: all a b\nall: a b\na:\n\t$(MAKE) -j8 -C a\nb:\n\t$(MAKE) -j8 -C b\n")
    return tmp


def test_nested_makes_never_run_more_compiles_than_the_limit(tmp_path: Path) -> None:
    shim = install_launcher(None, directory=tmp_path / "bin")
    tree = nested_makefiles(tmp_path / "tree", shim)
    slots = AttemptSlots(tmp_path / "run", 1, 2)
    subprocess.run(["make", "-j8", "-C", str(tree)], env={**os.environ, **slots.env}, check=True,
                   capture_output=True, timeout=60)
    overlap, ran = max_overlap(tree / "out")
    assert ran == 16 and overlap == 2, (ran, overlap)  # 2 at once: limited, and not serialised to 1
    summary = slots.finish(time.time())
    assert summary["limit"] == 2 and summary["compiles"] == 16 and summary["peak_concurrency"] == 2
    assert summary["waited_s"] > 0 and summary["killed"] == 0
    assert not list((tmp_path / "run" / "jobs-1").glob("slot-*")), "slot files go after the attempt"


def test_without_the_limit_the_same_build_runs_wide(tmp_path: Path) -> None:
    """The control: the stand-ins do overlap beyond 2 when no limit is in force (the test can see it)."""
    shim = install_launcher(None, directory=tmp_path / "bin")
    tree = nested_makefiles(tmp_path / "tree", shim)
    env = {k: v for k, v in os.environ.items() if k != launcher.SLOTS_ENV}
    subprocess.run(["make", "-j8", "-C", str(tree)], env=env, check=True, capture_output=True, timeout=60)
    overlap, ran = max_overlap(tree / "out")
    assert ran == 16 and overlap > 2


def run_launcher(shim: Path, slots: AttemptSlots, *argv: str, **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(shim), *argv], env={**os.environ, **slots.env}, **kw)  # type: ignore[call-overload]


def test_a_sigkilled_launcher_or_compiler_never_keeps_its_slot(tmp_path: Path) -> None:
    shim = install_launcher(None, directory=tmp_path / "bin")
    slots = AttemptSlots(tmp_path / "run", 1, 1)
    started = tmp_path / "holder-started"
    # The launcher runs its compiler only once it holds the slot: the file says the slot is taken.
    holder = run_launcher(shim, slots, "sh", "-c", f"touch {started}; exec sleep 30", start_new_session=True)
    deadline = time.monotonic() + 30
    while not started.exists():
        assert time.monotonic() < deadline and holder.poll() is None, "the first compile never started"
        time.sleep(0.02)
    waiter = run_launcher(shim, slots, "true")
    time.sleep(0.5)
    assert waiter.poll() is None, "limit 1: the second compile waits for the slot"
    os.kill(holder.pid, signal.SIGKILL)  # the launcher dies; the kernel drops its flock
    assert waiter.wait(timeout=5) == 0
    os.killpg(holder.pid, signal.SIGKILL)
    holder.wait()
    # A compiler SIGKILLed (as by the OOM killer): the launcher dies the same way and frees the slot.
    killed = run_launcher(shim, slots, "sh", "-c", "kill -9 $$")
    assert killed.wait(timeout=5) == -signal.SIGKILL
    assert run_launcher(shim, slots, "sh", "-c", "exit 3").wait(timeout=5) == 3
    summary = slots.finish(time.time())
    assert summary["compiles"] == 4 and summary["killed"] == 2  # the SIGKILLed launcher, the SIGKILLed compiler


def test_a_compile_inside_a_compile_does_not_take_a_second_slot(tmp_path: Path) -> None:
    """hipcc (CMake launcher) -> clang wrapper -> launcher again: with limit 1 that must not deadlock."""
    shim = install_launcher(None, directory=tmp_path / "bin")
    slots = AttemptSlots(tmp_path / "run", 1, 1)
    inner = run_launcher(shim, slots, str(shim), "sh", "-c", "echo inner")
    assert inner.wait(timeout=10) == 0
    assert slots.finish(time.time())["compiles"] == 1


def test_the_launcher_records_the_peak_rss_of_the_compile_it_ran(tmp_path: Path) -> None:
    shim = install_launcher(None, directory=tmp_path / "bin")
    slots = AttemptSlots(tmp_path / "run", 1, 2)
    proc = run_launcher(shim, slots, sys.executable, str(ALLOC), "60", "--hold-s", "0", stdout=subprocess.DEVNULL)
    assert proc.wait(timeout=30) == 0
    summary = slots.finish(time.time())
    assert summary["peak_rss_per_job"] >= 60 * 1024 * 1024
    assert summary["peak_rss_job"].startswith("python")


def test_records_parse_into_compiles_and_peak_concurrency() -> None:
    lines = ["start\t10.0\t100\t0\t0.0\t5000\tclang++ a.o\n", "start\t10.5\t101\t1\t0.2\t5001\tcc1plus\n",
             "end\t11.0\t100\t2000000000\t0\t0\n", "start\t11.0\t102\t0\t0.5\t5002\tclang++ c.o\n",
             "end\t12.0\t102\t3000000000\t1\t0\n", "garbage\n", "start\t12.5\t103\t0\t0\t5003\n"]
    compiles = parse_compiles(lines)
    assert [c.pid for c in compiles] == [5000, 5001, 5002]
    assert compiles[1].end is None and compiles[1].peak_rss is None  # its launcher never said: killed
    assert peak_concurrency([(0, 1), (1, 2), (1.5, 3)]) == 2, "an end at t comes before a start at t"
    summary = summarise(compiles, 2, ended_at=13.0)
    assert summary == {"limit": 2, "peak_concurrency": 2, "compiles": 3, "waited_s": 0.7, "killed": 1,
                       "peak_rss_per_job": 3000000000, "peak_rss_job": "clang++ c.o"}
    assert summarise([], 4, 0.0)["peak_concurrency"] == 0


def test_job_names_skip_the_cache_tool() -> None:
    assert launcher.job_name(["/usr/bin/ccache", "/usr/bin/clang++", "-c", "x.cpp", "-o", "obj/x.o"]) == "clang++ x.o"
    assert launcher.job_name(["gcc", "-c", "y.c"]) == "gcc"


def test_launcher_env_leaves_the_callers_launcher_and_spaces_alone(tmp_path: Path) -> None:
    env = launcher_env(Path("/c/rocmbuild-launch"), {"CMAKE_CXX_COMPILER_LAUNCHER": "distcc", "CMAKE_ARGS": "-DX=1"})
    assert "CMAKE_CXX_COMPILER_LAUNCHER" not in env and env["CMAKE_C_COMPILER_LAUNCHER"] == "/c/rocmbuild-launch"
    assert env["CMAKE_ARGS"].startswith("-DX=1 -DCMAKE_C_COMPILER_LAUNCHER=/c/rocmbuild-launch")
    assert "CMAKE_ARGS" not in launcher_env(Path("/my tools/rocmbuild-launch"), {})


@pytest.mark.parametrize("cache", ["--no-cache", pytest.param("cache", marks=needs_ccache)])
@pytest.mark.integration
def test_a_real_run_limits_a_nested_build_to_its_jobs(tmp_path: Path, cache: str) -> None:
    """rocmbuild --jobs 2: the recipe's nested makes (-j8 twice) go through $CMAKE_CXX_COMPILER_LAUNCHER,
    the launcher rocmbuild installed (limit-only with --no-cache, limit + ccache otherwise)."""
    source = tmp_path / "src"
    source.mkdir()
    nested_makefiles(source, Path("$(CMAKE_CXX_COMPILER_LAUNCHER)"))
    recipe = tmp_path / "nested.toml"
    recipe.write_text('name = "nested"\npackages = []\n[steps]\nbuild = ["make -j8"]\n')
    argv = [ROCMBUILD, str(recipe), "--source", str(source), "--run-dir", str(tmp_path / "run"), "--arch", "gfx90a",
            "--skip-preflight", "--jobs", "2", "--json", *(["--no-cache"] if cache == "--no-cache" else [])]
    proc = subprocess.run(argv, env=base_env(tmp_path), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    overlap, ran = max_overlap(source / "out")
    assert ran == 16 and overlap <= 2
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    jobs = summary["attempts"][0]["jobs"]
    assert jobs["limit"] == 2 and jobs["compiles"] == 16 and jobs["peak_concurrency"] == 2
    launcher_path = summary["attempts"][0]["env"]["CMAKE_CXX_COMPILER_LAUNCHER"]
    assert Path(launcher_path).name == ("rocmbuild-launch" if cache == "--no-cache" else "rocmbuild-launch-ccache")


def test_compile_records_are_frozen_values() -> None:
    record = Compile(1.0, 2.0, 0, 0.0, 7, "cc1plus", 10, 0, 0)
    with pytest.raises(AttributeError):
        record.pid = 8  # type: ignore[misc]


@pytest.mark.hip
def test_without_a_cache_hipcc_device_compiles_take_slots_too(tmp_path: Path) -> None:
    """--no-cache: hipcc's clang is wrapped with the limit-only shim, so its compiles take slots."""
    from rocmbuild.process.command import capture
    from rocmbuild.toolchain.joblimit import limit_only_changes

    base = {k: v for k, v in base_env(tmp_path).items() if k != "HIP_CLANG_PATH"}
    values = {change.name: change.value for change in limit_only_changes(base, capture)}
    assert "HIP_CLANG_PATH" in values and "ccache" not in (Path(values["HIP_CLANG_PATH"]) / "clang++").read_text()
    (tmp_path / "k.hip").write_text("#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[0] = 1.0f; }\n")
    slots = AttemptSlots(tmp_path / "run", 1, 1)
    subprocess.run(["hipcc", "--offload-arch=gfx90a", "-c", "k.hip", "-o", "k.o"], cwd=tmp_path,
                   env={**base, **values, **slots.env}, check=True, capture_output=True, timeout=300)
    summary = slots.finish(time.time())
    assert summary["compiles"] >= 1 and summary["peak_concurrency"] == 1 and summary["killed"] == 0
    assert summary["peak_rss_job"].startswith("clang")
    # The next run remembers hipcc's answers (no ~0.4 s of perl before its first attempt): no probe runs.
    def no_probe(*args: object, **kw: object) -> object:
        raise AssertionError("hipcc probed again")

    again = {change.name: change.value for change in limit_only_changes(base, no_probe)}
    assert again["HIP_CLANG_PATH"] == values["HIP_CLANG_PATH"]


def test_a_run_dir_that_cannot_hold_the_slots_runs_without_the_limit(tmp_path: Path) -> None:
    blocker = tmp_path / "run"
    blocker.write_text("a file where the run dir's jobs-1 should go")
    slots = AttemptSlots(blocker, 1, 4)
    assert slots.env == {}, "no ROCMBUILD_JOB_SLOTS: the launcher just runs the compiler"
    assert slots.finish(time.time())["limit"] is None


@pytest.mark.integration
def test_an_unwritable_user_cache_dir_runs_the_build_without_the_limit_and_says_so(tmp_path: Path) -> None:
    """--no-cache writes nothing but the launcher shim to the user cache dir: when that cannot be written
    (XDG_CACHE_HOME a file, read-only, full) the build still runs, without the limit, with a warning;
    never an internal error (exit 70)."""
    (tmp_path / "src").mkdir()
    (tmp_path / "not-a-dir").write_text("")
    recipe = tmp_path / "r.toml"
    recipe.write_text('name = "r"\npackages = []\n[steps]\nbuild = ["echo built"]\n')
    argv = [ROCMBUILD, str(recipe), "--source", str(tmp_path / "src"), "--run-dir", str(tmp_path / "run"),
            "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--json"]
    proc = subprocess.run(argv, env=base_env(tmp_path, XDG_CACHE_HOME=str(tmp_path / "not-a-dir")),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert "internal error" not in proc.stderr and "global job limit is off" in proc.stderr
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    assert any(e["event"] == "plan.warning" and "global job limit is off" in e["message"] for e in events)


@needs_ccache
def test_the_cache_without_its_launcher_shim_still_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher shim cannot be written: the cache is set up as before the limit (ccache itself as
    CMake's launcher), with a warning, instead of failing the command."""
    from rocmbuild.toolchain import cache as cachemod

    def unwritable(*args: object, **kw: object) -> Path:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cachemod, "install_launcher", unwritable)
    env = {k: v for k, v in base_env(tmp_path).items() if k != "HIP_CLANG_PATH"}
    found = cachemod.CompilerCache.for_build(env=env, source=tmp_path, remote=None)
    assert found is not None
    variables = dict(found.variables)
    assert Path(variables["CMAKE_CXX_COMPILER_LAUNCHER"]).name == "ccache"
    assert any("global job limit is off" in w for w in found.warnings)
    if "HIP_CLANG_PATH" in variables:  # hipcc's clang wrapper: through ccache itself, as before the limit
        assert "ccache" in (Path(variables["HIP_CLANG_PATH"]) / "clang++").read_text()


def ignored_signals(shim: Path, env: dict[str, str]) -> int:
    """The SigIgn mask of a compile the launcher ran (grep reads its own /proc status)."""
    out = subprocess.run([str(shim), "grep", "SigIgn", "/proc/self/status"], env=env, capture_output=True,
                         text=True, check=True, timeout=10).stdout
    return int(out.split()[1], 16)


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs /proc")
def test_every_compile_gets_the_default_sigpipe_and_sigxfsz_back(tmp_path: Path) -> None:
    """Python ignores SIGPIPE and SIGXFSZ at start-up and exec keeps SIG_IGN: the compile must not inherit
    that, with a slot (posix_spawn), without a limit (repro.sh) or nested under a compile (hipcc's clang)."""
    shim = install_launcher(None, directory=tmp_path / "bin")
    slots = AttemptSlots(tmp_path / "run", 1, 2)
    plain = {k: v for k, v in os.environ.items() if k not in (launcher.SLOTS_ENV, launcher.HELD_ENV)}
    nested = {**plain, **slots.env, launcher.HELD_ENV: slots.env[launcher.SLOTS_ENV]}
    mask = (1 << (signal.SIGPIPE - 1)) | (1 << (signal.SIGXFSZ - 1))
    for env in ({**plain, **slots.env}, plain, nested):
        assert ignored_signals(shim, env) & mask == 0


def test_a_compiler_that_is_not_there_is_one_line_and_127_with_or_without_a_limit(tmp_path: Path) -> None:
    shim = install_launcher(None, directory=tmp_path / "bin")
    slots = AttemptSlots(tmp_path / "run", 1, 1)
    plain = {k: v for k, v in os.environ.items() if k not in (launcher.SLOTS_ENV, launcher.HELD_ENV)}
    for env in ({**plain, **slots.env}, plain):
        proc = subprocess.run([str(shim), str(tmp_path / "no-such-cc"), "-c", "x.c"], env=env, capture_output=True,
                              text=True, timeout=10)
        assert proc.returncode == 127 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.startswith("rocmbuild launcher: cannot run ")
