"""The source tree's content digest: what the build reads from its tree, taken conservatively.

Owns: walking a tree (every file but the recipe's clean paths and VCS metadata, untracked and
ignored files included, symlinks followed by content, no skipping by name at depth), hashing each
regular file streamed in bounded chunks, never opening a special file (a FIFO, device or socket
makes the tree not cacheable), and the per-tree stat cache (size, mtime_ns, ctime_ns, inode ->
digest) that turns a rerun over an unchanged tree into stat calls.

A clean path is what the clean remedy deletes: a glob relative to the tree's root (effects.py), so
``build`` excludes ``./build`` and not ``tools/build``.
"""

from __future__ import annotations

import errno
import glob as globlib
import hashlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

# VCS metadata, a directory or (a submodule's, a worktree's) file: never what a build compiles.
VCS_NAMES = frozenset({".git", ".hg", ".svn", ".bzr"})
CHUNK = 1 << 20  # bytes read at a time: the memory a file of any size (a 6 GB sparse one) costs
# A cache entry for a file changed this close to the walk is not trusted next time: its mtime could
# stay the same through another edit within the file system's timestamp granularity ("racy git").
RACY_NS = 2_000_000_000
_STOP_EVERY = 64  # entries between checks of the stop callable (a Ctrl-C, the budget)


class Stopped(Exception):
    """The walk was stopped (``reason``: "interrupted" or "budget") before it finished."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class TreeSnapshot:
    """The tree as the walk found it: an entry per path, their digest, and what made it uncacheable."""

    entries: Mapping[str, str]  # rel path -> "f<x>:<sha>", "dangling:<link>", "alias:<rel>", ...
    special: tuple[str, ...]  # "<rel> (a FIFO)": never opened; any makes the tree not cacheable

    @property
    def cacheable(self) -> bool:
        return not self.special

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for rel in sorted(self.entries):
            h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + self.entries[rel].encode() + b"\n")
        return h.hexdigest()[:16]


def changed_between(before: TreeSnapshot, after: TreeSnapshot) -> list[str]:
    """Paths that were in ``before`` and are gone or different in ``after``. Pure.

    New paths are what the build wrote; a path that existed and changed is either a source edited
    during the build or an output the build rewrote: the two cannot be told apart, so both count."""
    return sorted(rel for rel, entry in before.entries.items()
                  if after.entries.get(rel) != entry and not _bytecode(rel))


def _bytecode(rel: str) -> bool:
    """Python's own cache, rewritten by any import of a changed module (a verify step's): what changed is
    the module's source, and that is compared.  Still part of the digest like any other file."""
    return rel.endswith(".pyc") and "__pycache__" in rel.split("/")[:-1]


def clean_matches(root: Path, patterns: Iterable[str]) -> set[str]:
    """The tree-relative paths the clean paths name now (the globs the clean remedy expands)."""
    found: set[str] = set()
    for pattern in patterns:
        if os.path.isabs(pattern) or ".." in Path(pattern).parts:
            continue
        try:
            found.update(p.rstrip("/") for p in globlib.glob(pattern, root_dir=root, recursive=True,
                                                             include_hidden=True))
        except OSError:
            continue
    return found


_KIND = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
         stat.S_IFSOCK: "a socket"}


class StatCache:
    """rel path -> (size, mtime_ns, ctime_ns, inode, digest); a file whose stat is unchanged is not read."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, list[object]] = {}
        self.hits = 0
        self.misses = 0
        if path is None:
            return
        try:
            data = json.loads(path.read_bytes())
            entries = data["entries"] if isinstance(data, dict) and data.get("version") == 1 else {}
            self.entries = entries if isinstance(entries, dict) else {}
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            self.entries = {}  # a lost or damaged cache costs one full read, never a wrong digest

    @staticmethod
    def _key(st: os.stat_result) -> list[object]:
        return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]

    def lookup(self, rel: str, st: os.stat_result) -> str | None:
        entry = self.entries.get(rel)
        if isinstance(entry, list) and len(entry) == 5 and entry[:4] == self._key(st) and isinstance(entry[4], str):
            self.hits += 1
            return entry[4]
        self.misses += 1
        return None

    def save(self, seen: Mapping[str, tuple[list[object], int]], started_ns: int) -> None:
        """Keep what this walk hashed, but not a file changed too close to the walk to trust its stat."""
        if self.path is None:
            return
        fresh = {rel: entry for rel, (entry, mtime_ns) in seen.items() if mtime_ns < started_ns - RACY_NS}
        if fresh == self.entries:  # a rerun over an unchanged tree writes nothing
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out:  # dumps, not dump: the C encoder in one go (~5x faster)
                out.write(json.dumps({"version": 1, "entries": fresh}, separators=(",", ":")).encode())
            os.replace(tmp, self.path)
        except OSError:
            pass  # only speed is lost


def hash_file(path: str, stop: Callable[[], str | None]) -> tuple[str, os.stat_result] | None:
    """sha256 of a regular file's data read in CHUNK-sized pieces, and of where its holes are; None when
    it is not a regular file once open.

    Opened non-blocking and checked again after opening: a file swapped for a FIFO between the walk's
    stat and the open neither blocks nor is read.  A sparse file's holes are skipped (SEEK_DATA), not
    read as zeros: its layout is hashed instead, so a 6 GB sparse image costs what its data costs."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        data = hashlib.sha256()
        layout: list[str] = []
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        pos = 0
        while True:
            start = _next_data(fd, pos, st.st_size)
            if start != pos:
                layout.append(f"{pos}+{start - pos}")
                pos = start
                os.lseek(fd, pos, os.SEEK_SET)
            n = os.readv(fd, [buf])
            if not n:
                break
            data.update(view[:n])
            pos += n
            reason = stop()
            if reason:
                raise Stopped(reason)
        return hashlib.sha256(f"{data.hexdigest()} holes:{','.join(layout)}".encode()).hexdigest()[:32], st
    finally:
        os.close(fd)


def _next_data(fd: int, pos: int, size: int) -> int:
    """Where the file's data resumes at or after ``pos`` (``pos`` itself when not in a hole, or when the
    file system cannot say)."""
    if pos >= size or not hasattr(os, "SEEK_DATA"):
        return pos
    try:
        return os.lseek(fd, pos, os.SEEK_DATA)
    except OSError as exc:
        return size if exc.errno == errno.ENXIO else pos  # ENXIO: only a hole up to the end


def snapshot(root: Path, clean_paths: Iterable[str] = (), cache: StatCache | None = None,
             stop: Callable[[], str | None] = lambda: None) -> TreeSnapshot:
    """Every path of the tree but the clean paths and VCS metadata, each with what it holds."""
    started = time.time_ns()
    excluded = clean_matches(root, clean_paths)
    entries: dict[str, str] = {}
    special: list[str] = []
    seen: dict[str, tuple[list[object], int]] = {}  # rel -> (cache entry, mtime_ns); not the stat result
    walked: dict[tuple[int, int], str] = {}  # real directory -> the rel path it was walked under
    count = 0
    try:
        top = os.stat(root)
    except OSError:
        return TreeSnapshot({}, ())
    walked[(top.st_dev, top.st_ino)] = ""
    pending: list[tuple[str, str]] = [(str(root), "")]
    while pending:
        directory, prefix = pending.pop()
        try:
            with os.scandir(directory) as it:
                names = sorted(e.name for e in it)
        except OSError as exc:
            entries[prefix or "."] = f"unreadable:{exc.errno}"
            continue
        for name in names:
            count += 1
            if count % _STOP_EVERY == 0 and (reason := stop()):
                raise Stopped(reason)
            rel = prefix + name
            if name in VCS_NAMES or rel in excluded:
                continue
            path = os.path.join(directory, name)
            link = ""
            try:
                st = os.lstat(path)
                if stat.S_ISLNK(st.st_mode):
                    link = os.readlink(path)
                    st = os.stat(path)  # followed: what the build reads through the link
            except OSError:
                entries[rel] = f"dangling:{link}" if link else "unreadable"
                continue
            linked = f"->{link}" if link else ""
            if stat.S_ISDIR(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if key in walked:  # a loop or a second way to one directory: walked once, named here
                    entries[rel] = f"alias:{walked[key]}{linked}"
                    continue
                walked[key] = rel
                entries[rel] = f"dir{linked}"
                pending.append((path, rel + "/"))
            elif stat.S_ISREG(st.st_mode):
                digest = cache.lookup(rel, st) if cache is not None else None
                if digest is None:
                    try:
                        hashed = hash_file(path, stop)
                    except OSError as exc:
                        entries[rel] = f"unreadable:{exc.errno}"
                        continue
                    if hashed is None:
                        special.append(f"{rel} (not a regular file once opened)")
                        continue
                    digest, st = hashed
                seen[rel] = ([*StatCache._key(st), digest], st.st_mtime_ns)
                executable = "x" if st.st_mode & 0o111 else ""
                entries[rel] = f"f{executable}:{digest}{linked}"
            else:
                special.append(f"{rel} ({_KIND.get(stat.S_IFMT(st.st_mode), 'a special file')})")
    if cache is not None:
        cache.save(seen, started)
    return TreeSnapshot(entries, tuple(special))
