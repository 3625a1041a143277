"""The memory guard: size parsing, cgroup reading, the pause/resume policy, and real jobs
that allocate for real under a real rocmbuild (SIGSTOP/SIGCONT, events).  Allocations stay at a few
hundred MB and the reserve is set relative to what is available now, so nothing nears the real OOM killer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from rocmbuild.errors import UsageError
from rocmbuild.process.memguard import (
    GIB,
    MIB,
    CgroupMemory,
    TreeProc,
    cgroup_memory,
    choose_to_pause,
    choose_to_resume,
    default_reserve,
    effective_available,
    oom_kills,
    parse_size,
)
from tests.test_e2e_ladder import ROCMBUILD, base_env

ALLOC = Path(__file__).parent / "children" / "alloc.py"


def test_sizes() -> None:
    assert parse_size("4G") == 4 * GIB and parse_size("512M") == 512 * MIB and parse_size("1.5GiB") == int(1.5 * GIB)
    assert parse_size("off") == 0
    with pytest.raises(UsageError, match="has no unit"):
        parse_size("4")
    with pytest.raises(UsageError, match="is not a size"):
        parse_size("lots")
    assert default_reserve(24 * GIB) == int(2.4 * GIB) and default_reserve(64 * GIB) == 4 * GIB


def test_the_cgroup_limit_lowers_available_memory() -> None:
    limited = CgroupMemory(Path("/sys/fs/cgroup/memory/x"), 1, limit=2 * GIB, usage=GIB + 512 * MIB)
    assert effective_available(20 * GIB, 24 * GIB, limited) == (512 * MIB, 2 * GIB, "cgroup v1 /sys/fs/cgroup/memory/x")
    unlimited = CgroupMemory(Path("/x"), 2, limit=None, usage=GIB)
    assert effective_available(20 * GIB, 24 * GIB, unlimited) == (20 * GIB, 24 * GIB, "machine")


def test_reads_this_machines_memory_cgroup(tmp_path: Path) -> None:
    # This machine: cgroup v1 memory controller (the test process is in some memory cgroup).
    cgroup = cgroup_memory()
    assert cgroup is not None and (cgroup.directory / ("memory.limit_in_bytes" if cgroup.version == 1
                                                       else "memory.max")).is_file()
    assert isinstance(oom_kills(), int)
    # A v2 layout (here under hybrid's unified/): memory.max and memory.current of the process's path.
    directory = tmp_path / "unified" / "build.slice"
    directory.mkdir(parents=True)
    (directory / "memory.max").write_text("1073741824\n")
    (directory / "memory.current").write_text("536870912\n")
    found = cgroup_memory(root=tmp_path, membership="1:name=systemd:/\n0::/build.slice\n")
    assert found is not None and (found.version, found.limit, found.usage) == (2, GIB, GIB // 2)
    (directory / "memory.max").write_text("max\n")
    found = cgroup_memory(root=tmp_path, membership="0::/build.slice\n")
    assert found is not None and found.limit is None


def proc(pid: int, name: str, created: float, rss_mb: int, leaf: bool = True) -> TreeProc:
    return TreeProc(pid, name, created, rss_mb * MIB, leaf)


def test_pause_the_newest_compile_job_never_the_largest_never_the_last() -> None:
    tree = [proc(1, "ninja", 0, 10, leaf=False), proc(2, "cc1plus", 1, 900), proc(3, "cc1plus", 2, 300),
            proc(4, "python3", 4, 100), proc(5, "ld.lld", 3, 200), proc(7, "sleep", 6, 2)]
    assert [p.pid for p in choose_to_pause(tree, frozenset())] == [5], "compile jobs first (ld.lld), newest"
    assert [p.pid for p in choose_to_pause(tree, frozenset({5}))] == [3]
    third = choose_to_pause(tree, frozenset({5, 3}))
    assert [p.pid for p in third] == [4], "then other big leaves; never a parent (ninja), never sleep"
    assert choose_to_pause(tree, frozenset({5, 3, 4})) == (), "the largest (pid 2) keeps running"
    # Deeper into the band, more at once; at the reserve, every candidate (still not the largest).
    assert [p.pid for p in choose_to_pause(tree, frozenset(), depth=0.5)] == [5, 3]
    assert [p.pid for p in choose_to_pause(tree, frozenset(), depth=1.7)] == [5, 3, 4]
    # The newest job is also the largest: it is spared, the next newest goes.
    big_new = [proc(2, "cc1plus", 1, 100), proc(3, "cc1plus", 5, 800), proc(6, "cc1plus", 3, 100)]
    assert [p.pid for p in choose_to_pause(big_new, frozenset())] == [6]


def test_resume_the_oldest_when_memory_is_back_or_nothing_else_runs() -> None:
    paused = [proc(3, "cc1plus", 2, 300), proc(5, "cc1plus", 3, 200)]
    assert choose_to_resume(paused, running_leaves=1, available=GIB, resume_above=2 * GIB) is None
    back = choose_to_resume(paused, running_leaves=1, available=3 * GIB, resume_above=2 * GIB)
    assert back is not None and back.pid == 3
    alone = choose_to_resume(paused, running_leaves=0, available=GIB, resume_above=2 * GIB)
    assert alone is not None and alone.pid == 3, "never all paused: with nothing running, one goes on"


@pytest.mark.integration
def test_real_jobs_are_paused_and_resumed_and_all_finish(tmp_path: Path) -> None:
    jobs, size_mb = 4, 150
    # Reserve: what is available now minus 350 MB, so the jobs (600 MB together) would eat into it.
    reserve_mb = psutil.virtual_memory().available // MIB - 350
    recipe = tmp_path / "alloc.toml"
    commands = " ".join(f"{sys.executable} {ALLOC} {size_mb} --tag {i} --hold-s 0.5 & sleep 0.2;"
                        for i in range(jobs))
    recipe.write_text(f'name = "alloc"\npackages = []\n[steps]\nbuild = ["{commands} wait"]\n')
    (tmp_path / "src").mkdir()
    proc_ = subprocess.run([ROCMBUILD, str(recipe), "--source", str(tmp_path / "src"), "--run-dir",
                            str(tmp_path / "run"), "--arch", "gfx90a", "--skip-preflight", "--no-cache",
                            "--memory-reserve", f"{reserve_mb}M", "--json"],
                           env=base_env(tmp_path), capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
    assert proc_.returncode == 0, proc_.stderr
    log = (tmp_path / "run" / "attempt-1.log").read_text()
    assert all(f"job {i} done: {size_mb} MB" in log for i in range(jobs))
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    paused = [e for e in events if e["event"] == "memory.paused"]
    resumed = [e for e in events if e["event"] == "memory.resumed"]
    assert paused and resumed, [e["event"] for e in events]
    assert all(e["names"] == ["cc1plus"] and e["reserve"] == reserve_mb * MIB for e in paused)
    assert {pid for e in paused for pid in e["pids"]} <= {pid for e in resumed for pid in e["pids"]}
    assert max(e["paused_now"] for e in paused) < jobs, "never all"
    memory = json.loads((tmp_path / "run" / "summary.json").read_text())["attempts"][0]["memory"]
    assert memory["pauses"] == len(paused) and memory["oom_kills"] == 0


def test_memory_reserve_off_and_a_bad_size(tmp_path: Path) -> None:
    bad = subprocess.run([ROCMBUILD, "example", "--memory-reserve", "4"], env=base_env(tmp_path),
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert bad.returncode == 2 and "--memory-reserve '4' has no unit" in bad.stderr and "Traceback" not in bad.stderr


def test_a_guard_below_its_line_with_every_job_paused_still_resumes_one() -> None:
    """Progress: when memory stays low and only paused jobs are left, the oldest goes on (no deadlock)."""
    import time

    from rocmbuild.process.memguard import MemoryGuard, MemoryReading, tree_procs

    shell = subprocess.Popen(["/bin/sh", "-c", "sleep 30 & sleep 30 & wait"])
    try:
        deadline = time.monotonic() + 10
        while len(psutil.Process(shell.pid).children()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        jobs = psutil.Process(shell.pid).children()
        events: list[tuple[str, dict[str, object]]] = []
        low = MemoryReading(available=100 * MIB, total=1024 * MIB, limited_by="machine", psi_some_avg10=None)
        ticks = iter(range(1000))
        guard = MemoryGuard(512 * MIB, lambda name, **kw: events.append((name, kw)), read=lambda: low,
                            clock=lambda: float(next(ticks)))
        for job in jobs:  # as if the guard had paused both earlier (sleep is not a job that matters)
            job.suspend()
            guard.paused[job.pid] = next(p for p in tree_procs(shell.pid) if p.pid == job.pid)
        guard.poll(shell.pid)
        assert [name for name, _ in events] == ["memory.resumed"]
        assert len(guard.paused) == 1
        assert psutil.Process(min(jobs, key=lambda p: p.create_time()).pid).status() != psutil.STATUS_STOPPED
    finally:
        for child in psutil.Process(shell.pid).children():
            child.resume()
            child.kill()
        shell.kill()
        shell.wait()
