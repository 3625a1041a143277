"""OOM confirmation and MAX_JOBS from the peak per job.

The kernel-log lines below are written in the shape of real reports: mlpack/mlpack#2213 (``Out of
memory: Killed process 26958 (cc1plus) total-vm:3970108kB, anon-rss:3090636kB, file-rss:0kB,
shmem-rss:0kB`` and the ``oom_reaper: reaped process`` line after it),
kubernetes-sigs/aws-efs-csi-driver#1218 (``Memory cgroup out of memory: Killed process ...
UID:0 pgtables:88kB oom_score_adj:-997``), cPanelSSP/SSP#76 (the old ``Killed process 11726, UID
498, (mysqld)`` form), opensim-core#3303 (a build's ``Killed signal terminated program cc1plus`` is
only explained by ``dmesg``), EESSI/software-layer#1147 (the build log says ``Killed``; only the
cgroup's ``oom_kill`` event says why), and the ``oom-kill:constraint=...,task=...,pid=...,uid=...``
summary mm/oom_kill.c prints since Linux 4.19.  Nothing here provokes the real OOM killer: the
"kernel log" of the end-to-end test is a real file in /dev/kmsg's format that the build writes to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from rocmbuild.loop.jobsizing import MemoryEvidence, evidence, memory_related, next_jobs, size_jobs
from rocmbuild.process.kernlog import (
    find_oom_kills,
    parse_dmesg_line,
    parse_kmsg_record,
    parse_oom_line,
    read_kmsg,
)
from rocmbuild.process.memguard import MIB, MemoryGuard, OomScope, confirm_oom, looks_killed
from tests.test_e2e_ladder import ROCMBUILD, base_env

ALLOC = Path(__file__).parent / "children" / "alloc.py"
GB = 10 ** 9

GLOBAL = ("Out of memory: Killed process 26958 (cc1plus) total-vm:3970108kB, anon-rss:3090636kB, "
          "file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:6100kB oom_score_adj:0")
MEMCG = ("Memory cgroup out of memory: Killed process 137879 (clang++) total-vm:154460kB, anon-rss:25192kB, "
         "file-rss:8968kB, shmem-rss:0kB, UID:0 pgtables:340kB oom_score_adj:-997")
SUMMARY = ("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
           "oom_memcg=/rocmbuild/tree-64768-1234/run-77-100-1,task_memcg=/rocmbuild/tree-64768-1234/run-77-100-1,"
           "task=clang++,pid=137879,uid=0")
OLD = "Killed process 11726, UID 498, (mysqld) total-vm:7823732kB, anon-rss:2539268kB, file-rss:768kB"
REAPED = "oom_reaper: reaped process 26958 (cc1plus), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB"


def test_kernel_oom_lines_in_every_real_shape() -> None:
    kill = parse_oom_line(GLOBAL, 13236.245467)
    assert kill is not None and (kill.pid, kill.name, kill.scope) == (26958, "cc1plus", "machine")
    assert kill.rss == 3090636 * 1024 and kill.time == 13236.245467
    memcg = parse_oom_line(MEMCG)
    assert memcg is not None and (memcg.pid, memcg.name, memcg.scope, memcg.rss) == (
        137879, "clang++", "cgroup", (25192 + 8968) * 1024)
    summary = parse_oom_line(SUMMARY)
    assert summary is not None and (summary.pid, summary.name, summary.scope) == (137879, "clang++", "cgroup")
    assert summary.memcg == "/rocmbuild/tree-64768-1234/run-77-100-1" and summary.rss is None
    old = parse_oom_line(OLD)
    assert old is not None and (old.pid, old.name, old.rss) == (11726, "mysqld", (2539268 + 768) * 1024)
    legacy = parse_oom_line("Out of memory: Kill process 4242 (cc1plus) score 912 or sacrifice child")
    assert legacy is not None and (legacy.pid, legacy.name) == (4242, "cc1plus")
    # Near misses: the reaper's follow-up, a build's own "Killed", a segfault line.
    assert parse_oom_line(REAPED) is None
    assert parse_oom_line("c++: fatal error: Killed signal terminated program cc1plus") is None
    assert parse_oom_line("chrome[29335]: segfault at 40 ip 000055be50362aee sp 00007ffe74ff5420 error 4") is None


def test_kmsg_and_dmesg_line_formats() -> None:
    assert parse_kmsg_record(f"3,1234,13236245467,-;{GLOBAL}") == (13236.245467, GLOBAL)
    assert parse_kmsg_record(" SUBSYSTEM=memory") is None  # /dev/kmsg's continuation lines
    assert parse_dmesg_line(f"[13236.245467] {GLOBAL}") == (13236.245467, GLOBAL)
    assert parse_dmesg_line("no timestamp") is None


def test_kills_of_the_builds_pids_in_its_window_merged_per_pid() -> None:
    log = [(99.0, GLOBAL.replace("26958", "500")),     # ours, but before the attempt
           (120.0, SUMMARY), (120.0, MEMCG),           # ours by cgroup; the two lines of one kill merged
           (121.0, GLOBAL), (121.1, REAPED),           # ours by PID
           (122.0, OLD)]                               # someone else's (mysqld)
    kills = find_oom_kills(log, pids={26958, 500}, memcgs={"/rocmbuild/tree-64768-1234"}, since=110.0, until=130.0)
    assert [(k.pid, k.name, k.scope) for k in kills] == [(137879, "clang++", "cgroup"), (26958, "cc1plus", "machine")]
    assert kills[0].rss == (25192 + 8968) * 1024 and kills[0].memcg == "/rocmbuild/tree-64768-1234/run-77-100-1"
    assert find_oom_kills(log, pids={1}, memcgs={"/"}, since=0, until=200) == [], "the root cgroup matches nothing"


@pytest.mark.integration
def test_the_reader_on_a_real_file_and_a_real_fifo(tmp_path: Path) -> None:
    records = f"6,1,1000000,-;boot\n3,2,120000000,-;{GLOBAL}\n SUBSYSTEM=x\n3,3,121000000,-;{REAPED}"
    log = tmp_path / "kmsg"
    log.write_text(records)
    assert read_kmsg(log) == [(1.0, "boot"), (120.0, GLOBAL), (121.0, REAPED)]
    assert read_kmsg(tmp_path / "absent") is None
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer_ready = threading.Event()

    def write() -> None:  # a writer that stays open: the reader must not wait for its end of file
        fd = os.open(fifo, os.O_WRONLY)
        os.write(fd, records.encode() + b"\n")
        writer_ready.set()
        time.sleep(3)
        os.close(fd)

    thread = threading.Thread(target=write)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer's open return
    thread.start()
    assert writer_ready.wait(5)
    started = time.monotonic()
    assert read_kmsg(fifo) == [(1.0, "boot"), (120.0, GLOBAL), (121.0, REAPED)]
    assert time.monotonic() - started < 1.0, "non-blocking: EAGAIN ends the read"
    os.close(reader)
    thread.join()


def test_confirmed_from_the_kernel_log_or_the_cgroup_else_unconfirmed() -> None:
    log = [(120.0, GLOBAL)]
    build = OomScope(pids={26958}, memcgs=(), since=110, until=130)
    by_log = confirm_oom(None, log, "/dev/kmsg", scope=build)
    assert by_log["status"] == "confirmed" and by_log["source"] == "kernel log (/dev/kmsg)"
    assert (by_log["victim"], by_log["pid"], by_log["rss"]) == ("cc1plus", 26958, 3090636 * 1024)
    both = confirm_oom(1, log, "dmesg", scope=build)
    assert both["source"] == "kernel log (dmesg), cgroup oom_kill count +1"
    by_cgroup = confirm_oom(1, None, "neither is readable", scope=build)
    assert by_cgroup["status"] == "confirmed" and by_cgroup["source"] == "cgroup oom_kill count +1"
    assert by_cgroup["victim"] is None and "not readable" in by_cgroup["detail"]
    unread = confirm_oom(0, None, "neither /dev/kmsg nor dmesg is readable",
                         scope=OomScope(pids={1}, memcgs=(), since=0, until=1))
    assert unread["status"] == "unconfirmed" and "neither /dev/kmsg nor dmesg" in unread["detail"]
    other = confirm_oom(0, log, "/dev/kmsg", scope=OomScope(pids={1}, memcgs=(), since=110, until=130))
    assert other["status"] == "unconfirmed" and "no OOM kill of the build's processes" in other["detail"]


def test_what_looks_like_a_kill() -> None:
    assert looks_killed(9, None, "unknown", None) and looks_killed(None, 137, "unknown", None)
    assert looks_killed(None, 1, "out_of_memory", None)
    assert looks_killed(None, 1, "compiler_crash", "c++: fatal error: Killed signal terminated program cc1plus")
    assert not looks_killed(None, 1, "missing_library", "ld: cannot find -lhipblas")


def test_the_guard_samples_the_largest_compile_job_of_a_real_tree() -> None:
    guard = MemoryGuard(reserve=1, emit=lambda *args, **fields: None)  # a reserve it never reaches: no pause
    shell = subprocess.Popen(["sh", "-c", f"{sys.executable} {ALLOC} 60 --hold-s 1 --name cc1plus & wait"],
                             stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while shell.poll() is None and time.monotonic() < deadline:
        guard.poll(shell.pid)
        time.sleep(0.05)
    shell.wait(timeout=20)
    assert guard.peak_job is not None and guard.peak_job.name == "cc1plus" and guard.peak_job.rss >= 60 * MIB
    assert guard.peak_total >= guard.peak_job.rss and guard.seen[guard.peak_job.pid] == "cc1plus"
    assert guard.memcgs == set(), "the shell shares this process's cgroups: they name strangers too"
    assert guard.pauses == 0


# --- MAX_JOBS from the peak per job --------------------------------------------------------------------

def test_jobs_from_the_peak_never_above_halving() -> None:
    # 9.1 GB available, 1 GB reserved, 2.9 GB per job: 2 fit (halving 16 would give 8).
    jobs, reason = size_jobs(16, int(2.9 * GB), int(9.1 * GB), 1 * GB)
    assert jobs == 2 and reason == ("2 from a 2.9 GB peak per compile job and 9.1 GB available, "
                                    "1.0 GB reserved (halving would give 8)")
    assert size_jobs(8, 300 * 10 ** 6, 800 * 10 ** 6, 0)[1] == ("2 from a 300 MB peak per compile job and "
                                                                "800 MB available (halving would give 4)")
    assert size_jobs(16, int(2.9 * GB), int(9.1 * GB), 0)[0] == 3
    # More would fit than halving gives: halving, so the ladder still converges.
    jobs, reason = size_jobs(8, 1 * GB, 64 * GB, 4 * GB)
    assert jobs == 4 and reason.startswith("halved from 8 by reduce_jobs (60 would fit")
    assert size_jobs(8, 3 * GB, 1 * GB, 2 * GB)[0] == 1, "at least one job, even below the reserve"
    assert size_jobs(8, None, 64 * GB, 0) == (4, "halved from 8 by reduce_jobs")
    assert size_jobs(1, 1 * GB, 64 * GB, 0)[0] == 1


def test_only_memory_failures_size_from_the_peak() -> None:
    assert memory_related("out_of_memory", {})
    assert memory_related("compiler_crash", {"oom": {"status": "confirmed"}})
    assert memory_related("stalled", {"pauses": 3, "reserve": GB, "min_available": 2 * GB})
    assert memory_related("stalled", {"pauses": 0, "reserve": GB, "min_available": GB // 2})
    assert not memory_related("stalled", {"pauses": 0, "reserve": GB, "min_available": 2 * GB})
    assert not memory_related("missing_library", {"oom": {"status": "unconfirmed"}})
    found = evidence("out_of_memory", {"peak_rss_per_job": 3 * GB, "peak_rss_job": "cc1plus", "reserve": GB}, 10 * GB)
    assert found == MemoryEvidence(3 * GB, "cc1plus", 10 * GB, GB, True)
    assert next_jobs(16, found)[0] == 3
    network = evidence("network", {"peak_rss_per_job": 3 * GB}, 10 * GB)
    assert next_jobs(16, network) == (8, "halved from 16 by reduce_jobs")
    assert next_jobs(16, None)[0] == 8


VICTIM = """
import os, signal, subprocess, sys, time
import psutil
if os.environ["MAX_JOBS"] != "8":
    print("built with MAX_JOBS=" + os.environ["MAX_JOBS"]); sys.exit(0)
launcher = os.environ["CMAKE_CXX_COMPILER_LAUNCHER"]
job = subprocess.Popen([launcher, sys.executable, {alloc!r}, "{mb}", "--hold-s", "30"])
time.sleep(2.5)  # grown to {mb} MB, seen by the guard's samples
victim = psutil.Process(job.pid).children()[0]
line = ("Out of memory: Killed process %d (cc1plus) total-vm:%dkB, anon-rss:%dkB, file-rss:0kB, "
        "shmem-rss:0kB, UID:0 pgtables:300kB oom_score_adj:0" % (victim.pid, {mb} * 1100, {mb} * 1024))
with open({kmsg!r}, "a") as log:   # what the kernel would have written, at the kernel's clock
    log.write("3,777,%d,-;%s\\n" % (int(time.monotonic() * 1e6), line))
victim.send_signal(signal.SIGKILL)
job.wait()
print("c++: fatal error: Killed signal terminated program cc1plus", flush=True)
sys.exit(1)
"""


@pytest.mark.integration
def test_a_real_run_confirms_the_kill_and_sizes_the_next_attempt_from_the_peak(tmp_path: Path) -> None:
    """A compile job that really holds 100 MB is SIGKILLed; the kernel log (a real kmsg-format file)
    names it: the attempt says "confirmed" with victim, PID and RSS, and attempt 2's MAX_JOBS comes
    from the measured peak (about 2 fit above the reserve) instead of halving 8 to 4."""
    mb = 100
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("6,1,1000,-;boot\n")
    script = tmp_path / "victim.py"
    script.write_text(VICTIM.format(alloc=str(ALLOC), mb=mb, kmsg=str(kmsg)))
    recipe = tmp_path / "oom.toml"
    recipe.write_text(f'name = "oom"\npackages = []\n[steps]\nbuild = ["{sys.executable} {script}"]\n')
    (tmp_path / "src").mkdir()
    reserve_mb = psutil.virtual_memory().available // MIB - 250  # room for ~2 jobs of 100 MB above it
    proc = subprocess.run([ROCMBUILD, str(recipe), "--source", str(tmp_path / "src"), "--run-dir",
                           str(tmp_path / "run"), "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--jobs", "8",
                           "--memory-reserve", f"{reserve_mb}M", "--json"],
                          env=base_env(tmp_path, ROCMBUILD_KERNEL_LOG=str(kmsg), PYTHONPATH=os.pathsep.join(sys.path)),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    first, second = summary["attempts"]
    oom = first["memory"]["oom"]
    assert oom["status"] == "confirmed" and oom["source"] == f"kernel log ({kmsg})", oom
    assert oom["victim"] == "cc1plus" and oom["rss"] == mb * MIB
    assert first["diagnosis"]["category"] == "out_of_memory" and first["diagnosis"]["oom"] == "confirmed"
    assert first["memory"]["peak_rss_per_job"] >= mb * MIB  # the launcher's ru_maxrss, or the guard's sample
    assert first["jobs"]["limit"] == 8 and first["jobs"]["killed"] == 1
    jobs = int(second["env"]["MAX_JOBS"])
    assert 1 <= jobs < 4, second["env"]
    applied = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()
               if '"remedy.applied"' in line]
    assert applied[0]["remedy"] == "reduce_jobs" and f"MAX_JOBS 8 -> {jobs} ({jobs} from a " in applied[0]["detail"]
    assert "MB peak per compile job" in applied[0]["detail"] and "(halving would give 4)" in applied[0]["detail"]
    checked = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()
               if '"memory.oom_checked"' in line]
    assert checked and checked[0]["pid"] == oom["pid"]


@pytest.mark.integration
def test_a_kill_that_was_no_oom_is_unconfirmed(tmp_path: Path) -> None:
    """The same "Killed", but the kernel log has no OOM kill of the build: unconfirmed, not guessed."""
    kmsg = tmp_path / "kmsg"
    kmsg.write_text(f"6,1,1000,-;boot\n3,2,2000,-;{GLOBAL}\n")  # someone else's kill, long ago
    recipe = tmp_path / "k.toml"
    recipe.write_text('name = "k"\npackages = []\n[steps]\nbuild = ["echo '
                      "'c++: fatal error: Killed signal terminated program cc1plus'; sh -c 'kill -9 $$'\"]\n")
    (tmp_path / "src").mkdir()
    proc = subprocess.run([ROCMBUILD, str(recipe), "--source", str(tmp_path / "src"), "--run-dir",
                           str(tmp_path / "run"), "--arch", "gfx90a", "--skip-preflight", "--no-cache",
                           "--max-attempts", "1", "--json"],
                          env=base_env(tmp_path, ROCMBUILD_KERNEL_LOG=str(kmsg)), capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    attempt = summary["attempts"][0]
    assert proc.returncode == 1 and attempt["diagnosis"]["oom"] == "unconfirmed", proc.stderr
    assert "no OOM kill of the build's processes" in attempt["memory"]["oom"]["detail"]
