"""The compile launcher: one slot of the run's global job limit per compile, and its record.

Run as ``python -I -S launcher.py COMMAND ARGS...`` (through the shim ``launchshim.install_launcher``
writes) by CMake's ``CMAKE_<LANG>_COMPILER_LAUNCHER`` and by the hipcc clang wrapper, before ccache
or the compiler.  Owns the hot path of every compile, so it imports only the standard library:

* with ``ROCMBUILD_JOB_SLOTS=DIR`` set (per attempt, by the session) it takes one of the ``limit``
  slot files in DIR with ``flock`` before it starts COMMAND and keeps it until COMMAND exits, so
  nested builds (pip -> setup.py -> CMake -> several ninjas, each with its own ``-j``) never run
  more compiles at once than the plan's job count.  The kernel drops a flock when its holder dies,
  so a SIGKILLed launcher never leaks a slot (a jobserver FIFO would lose its token);
* a compile started by a compile that already holds a slot (hipcc -> clang wrapper -> launcher)
  passes straight through (``ROCMBUILD_JOB_SLOT_HELD``), or nested launchers would deadlock;
* it appends two lines to ``DIR/compiles.tsv`` (one ``write`` each, O_APPEND: atomic between
  processes): ``start`` after taking the slot and ``end`` before freeing it, with the child's peak
  RSS (``wait4``'s ``ru_maxrss`` covers every descendant it waited for: cc1plus under the gcc
  driver, clang under ccache) and how it ended.  ``joblimit.parse_compiles`` turns them into peak
  concurrency and the peak RSS per compile job.

Without ``ROCMBUILD_JOB_SLOTS`` (repro.sh, a build outside rocmbuild) it just runs COMMAND.
"""

from __future__ import annotations

import _signal as signal  # the C module: ``signal`` imports enum, ~4 ms of every compile's start
import fcntl
import os
import sys
import time

SLOTS_ENV = "ROCMBUILD_JOB_SLOTS"
HELD_ENV = "ROCMBUILD_JOB_SLOT_HELD"
LIMIT_FILE = "limit"
RECORDS = "compiles.tsv"
CACHE_TOOLS = ("ccache", "sccache")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# Python ignores these at startup; a compiler must get the defaults back (as subprocess does).
RESTORED = (signal.SIGPIPE, signal.SIGXFSZ, *FORWARDED)
MAX_WAIT_S = 0.25   # a waiter blocks on one slot at most this long before looking at all of them again


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Timeout  # aborts the blocking flock (PEP 475 would retry it after a handler that returns)


def read_limit(directory: str) -> int | None:
    try:
        with open(os.path.join(directory, LIMIT_FILE), "rb") as handle:
            value = int(handle.read().strip() or b"0")
    except (OSError, ValueError):
        return None
    return value if value > 0 else None


def acquire(directory: str, limit: int) -> tuple[int, int, float]:
    """(fd holding the slot, slot number, seconds waited): any free slot, else wait for one."""
    t0 = time.monotonic()
    first = os.getpid() % limit  # waiters spread over the slots, so a freed slot has a waiter soon
    order = [(first + i) % limit for i in range(limit)]
    fds: dict[int, int] = {}
    try:
        wait = 0.01
        while True:
            for slot in order:
                if slot not in fds:
                    fds[slot] = os.open(os.path.join(directory, f"slot-{slot}"),
                                        os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                try:
                    fcntl.flock(fds[slot], fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                return fds.pop(slot), slot, time.monotonic() - t0
            # Every slot is taken: block on our own slot, but not for long, since another may free first.
            previous = signal.signal(signal.SIGALRM, _alarm)
            try:
                # Armed inside the try: under load the alarm can fire before the next bytecode runs.
                signal.setitimer(signal.ITIMER_REAL, wait)
                fcntl.flock(fds[first], fcntl.LOCK_EX)
                signal.setitimer(signal.ITIMER_REAL, 0)
                return fds.pop(first), first, time.monotonic() - t0
            except _Timeout:
                pass
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
            wait = min(MAX_WAIT_S, wait * 2)
    finally:
        for fd in fds.values():
            os.close(fd)


def job_name(argv: list[str]) -> str:
    """The compiler (not ccache) and its output file: ``clang++ -o kernel.o``, for the record."""
    words = argv[1:] if os.path.basename(argv[0]) in CACHE_TOOLS and len(argv) > 1 else argv
    name = os.path.basename(words[0])
    if "-o" in words[:-1]:
        name += " " + os.path.basename(words[words.index("-o") + 1])
    return name.replace("\t", " ").replace("\n", " ")[:200]


def _record(fd: int, *fields: object) -> None:
    # Not contextlib.suppress: importing contextlib costs every compile's start another ~2 ms.
    try:  # noqa: SIM105
        os.write(fd, ("\t".join(str(f) for f in fields) + "\n").encode("utf-8", "replace"))
    except OSError:
        pass  # a full disk must not fail a compile: the record is a report


def _cannot_run(program: str, exc: OSError) -> int:
    sys.stderr.write(f"rocmbuild launcher: cannot run {program}: {exc.strerror or exc}\n")
    return 127


def run(argv: list[str]) -> int:
    directory = os.environ.get(SLOTS_ENV, "")
    limit = read_limit(directory) if directory and os.environ.get(HELD_ENV) != directory else None
    if limit is None:  # no limit in force, or the compile that started this one holds the slot
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # ignored by Python's start-up; exec keeps SIG_IGN
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:  # as with the limit: the shell's 127 and one line, never a traceback
            return _cannot_run(argv[0], exc)
    assert limit is not None
    slot_fd, slot, waited = acquire(directory, limit)
    try:
        records = os.open(os.path.join(directory, RECORDS), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                          0o600)
    except OSError:
        records = -1
    name = job_name(argv)
    env = dict(os.environ)
    env[HELD_ENV] = directory
    child = 0

    def forward(signum: int, frame: object) -> None:
        if child:
            os.kill(child, signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    try:
        child = os.posix_spawnp(argv[0], argv, env, setsigdef=RESTORED)
    except OSError as exc:
        return _cannot_run(argv[0], exc)
    _record(records, "start", f"{time.time():.6f}", os.getpid(), slot, f"{waited:.6f}", child, name)
    _, status, usage = os.wait4(child, 0)
    killed = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + killed
    _record(records, "end", f"{time.time():.6f}", os.getpid(), usage.ru_maxrss * 1024, code, killed)
    os.close(slot_fd)  # the slot is free the moment the compile is done, before this process exits
    if killed:  # die the same way, so the build tool (ninja, make) sees what the compiler saw
        if killed not in (signal.SIGKILL, signal.SIGSTOP):  # these two have no handler to reset
            signal.signal(killed, signal.SIG_DFL)
        os.kill(os.getpid(), killed)
    return code


def main() -> None:
    if len(sys.argv) < 2:
        sys.stderr.write("usage: launcher.py COMMAND [ARGS...]\n")
        sys.exit(2)
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
