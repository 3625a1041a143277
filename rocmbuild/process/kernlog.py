"""OOM kills in the kernel log: did the kernel kill one of the build's processes, and which.

"Killed" in a build log says a process died of SIGKILL, not who sent it; under cgroups the kernel's
own report is the only place that names the victim (EESSI software-layer#1147: the job log says
"Killed", Slurm's "Detected 1 oom_kill event"; opensim-core#3303: "check dmesg").  Owns:

* ``parse_oom_line`` (pure): the kernel's OOM lines as mm/oom_kill.c prints them, in every shape
  seen in real reports: ``Out of memory: Killed process PID (NAME) total-vm:..kB, anon-rss:..kB,
  file-rss:..kB, shmem-rss:..kB`` (mlpack#2213), the memcg twin ``Memory cgroup out of memory:
  Killed process ...`` (aws-efs-csi-driver#1218), the summary ``oom-kill:constraint=...,
  task_memcg=/path,task=NAME,pid=PID,uid=UID`` (Linux >= 4.19), and pre-4.19's ``Out of memory:
  Kill process PID (NAME) score N or sacrifice child`` / ``Killed process PID (NAME) ...``;
* ``read_kmsg`` (``/dev/kmsg`` read without blocking: one record per read, EAGAIN at the end) and
  ``read_dmesg`` (the ``dmesg`` command, same permission) as ``(seconds since boot, text)``;
* ``find_oom_kills``: the kills of given PIDs (or in given cgroups) inside a time window.

Timestamps are the kernel's clock since boot, which is what ``time.monotonic()`` counts on Linux.
Reading needs CAP_SYSLOG where ``kernel.dmesg_restrict=1``; without it the answer is None (unknown),
never "no OOM".
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

KMSG = Path("/dev/kmsg")
KERNEL_LOG_ENV = "ROCMBUILD_KERNEL_LOG"
MAX_RECORDS = 200_000   # the ring buffer holds a few MB: a bound, not an expected size

_KILLED = re.compile(r"(?:(?P<memcg>Memory cgroup out of memory): |Out of memory: )?Kill(?:ed)? process (?P<pid>\d+)"
                     r"(?:, UID \d+,)? \((?P<name>[^)]*)\)(?P<rest>.*)")
_RSS = re.compile(r"\b(anon|file|shmem)-rss:(\d+)kB")
_SUMMARY = re.compile(r"\boom-kill:(?P<fields>\S*task=[^,]*,pid=\d+\S*)")


@dataclass(frozen=True)
class OomKill:
    """One process the kernel's OOM killer chose, as its log line says."""

    pid: int
    name: str
    rss: int | None = None          # bytes: anon + file + shmem RSS when the line states them
    memcg: str | None = None        # task_memcg from the oom-kill: summary line
    scope: str = "machine"          # "machine" or "cgroup" (Memory cgroup out of memory / CONSTRAINT_MEMCG)
    time: float | None = None       # seconds since boot
    line: str = ""


def parse_oom_line(text: str, time: float | None = None) -> OomKill | None:
    """The OOM kill a kernel log line reports, else None (pure).  ``text`` without the timestamp."""
    summary = _SUMMARY.search(text)
    if summary is not None:
        fields = dict(part.split("=", 1) for part in summary.group("fields").split(",") if "=" in part)
        try:
            pid = int(fields["pid"])
        except (KeyError, ValueError):
            return None
        scope = "cgroup" if fields.get("constraint") == "CONSTRAINT_MEMCG" else "machine"
        return OomKill(pid, fields.get("task", "?"), None, fields.get("task_memcg"), scope, time, text.strip())
    killed = _KILLED.search(text)
    if killed is None or "reaped process" in text:
        return None
    rss = {kind: int(kb) for kind, kb in _RSS.findall(killed.group("rest"))}
    return OomKill(int(killed.group("pid")), killed.group("name"),
                   sum(rss.values()) * 1024 if rss else None, None,
                   "cgroup" if killed.group("memcg") else "machine", time, text.strip())


_KMSG_RECORD = re.compile(r"^\d+,\d+,(?P<usec>\d+),[^;]*;(?P<text>.*)$")
_DMESG_LINE = re.compile(r"^\[\s*(?P<sec>\d+\.\d+)\]\s?(?P<text>.*)$")


def parse_kmsg_record(record: str) -> tuple[float, str] | None:
    """``PRIO,SEQ,USEC,FLAGS;text`` (/dev/kmsg's format) -> (seconds since boot, text) (pure)."""
    match = _KMSG_RECORD.match(record)
    return (int(match.group("usec")) / 1e6, match.group("text")) if match else None


def parse_dmesg_line(line: str) -> tuple[float, str] | None:
    """``[ 1234.567890] text`` (dmesg's default format) -> (seconds since boot, text) (pure)."""
    match = _DMESG_LINE.match(line)
    return (float(match.group("sec")), match.group("text")) if match else None


def read_kmsg(path: Path = KMSG) -> list[tuple[float, str]] | None:
    """Every record of the kernel ring buffer (None when it cannot be read: no permission, no file).

    Opened non-blocking: /dev/kmsg returns one record per read and EAGAIN after the last, so this
    never waits for the next kernel message; EPIPE means records were overwritten while reading
    (skip on).  A regular file or a FIFO in the same format reads the same way (tests).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    records: list[tuple[float, str]] = []
    pending = b""
    try:
        for _ in range(MAX_RECORDS):
            try:
                chunk = os.read(fd, 16384)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    continue
                if not records and not pending:
                    return None  # EPERM/EINVAL on the first read: not readable here
                break
            if not chunk:
                break
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                parsed = parse_kmsg_record(raw.decode("utf-8", "replace"))
                if parsed is not None:
                    records.append(parsed)
    finally:
        os.close(fd)
    if pending:
        parsed = parse_kmsg_record(pending.decode("utf-8", "replace"))
        if parsed is not None:
            records.append(parsed)
    return records


def read_dmesg(timeout: float = 10.0) -> list[tuple[float, str]] | None:
    """The ``dmesg`` command's lines (for hosts where /dev/kmsg is missing); None when it fails."""
    try:
        result = subprocess.run(["dmesg"], capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    lines = result.stdout.decode("utf-8", "replace").splitlines()
    return [p for p in (parse_dmesg_line(line) for line in lines) if p is not None]


def find_oom_kills(records: Iterable[tuple[float, str]], *, pids: Collection[int] = (),
                   memcgs: Collection[str] = (), since: float | None = None,
                   until: float | None = None) -> list[OomKill]:
    """The OOM kills of ``pids`` (or of tasks in ``memcgs``) between ``since`` and ``until`` (pure).

    The kernel prints a kill twice (the ``oom-kill:`` summary and the ``Killed process`` line): they
    are merged per PID, the summary giving the cgroup, the other line the RSS.
    """
    found: dict[int, OomKill] = {}
    for when, text in records:
        if (since is not None and when < since) or (until is not None and when > until):
            continue
        kill = parse_oom_line(text, when)
        if kill is None:
            continue
        ours = kill.pid in pids or (kill.memcg is not None and any(
            kill.memcg == m or kill.memcg.startswith(m.rstrip("/") + "/") for m in memcgs if m and m != "/"))
        earlier = found.get(kill.pid)
        if not ours and earlier is None:
            continue
        if earlier is not None:
            kill = OomKill(kill.pid, earlier.name if earlier.name != "?" else kill.name,
                           earlier.rss or kill.rss, earlier.memcg or kill.memcg,
                           "cgroup" if "cgroup" in (earlier.scope, kill.scope) else "machine",
                           earlier.time, earlier.line)
        found[kill.pid] = kill
    return list(found.values())


def kernel_log(kmsg: Path | None = None) -> tuple[list[tuple[float, str]] | None, str]:
    """The kernel log and where it came from ("/dev/kmsg", "dmesg"), or (None, why not).

    ``ROCMBUILD_KERNEL_LOG`` names a file or FIFO in /dev/kmsg's format instead (a container whose
    host forwards its kernel log; the tests): then only that is read.
    """
    forwarded = os.environ.get(KERNEL_LOG_ENV)
    if kmsg is None and forwarded:
        records = read_kmsg(Path(forwarded))
        return (records, forwarded) if records is not None else (None, f"{forwarded} is not readable")
    kmsg = kmsg or KMSG
    records = read_kmsg(kmsg)
    if records is not None:
        return records, str(kmsg)
    records = read_dmesg()
    if records is not None:
        return records, "dmesg"
    return None, f"neither {kmsg} nor dmesg is readable (kernel.dmesg_restrict needs CAP_SYSLOG)"
