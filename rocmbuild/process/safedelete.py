"""Deleting inside a source tree without ever leaving it.

The one dangerous thing rocmbuild does is ``clean_build``; this module owns
how it deletes.  Everything is done relative to open directory descriptors
(``dir_fd``), never through path strings that the kernel would re-resolve, so
that a concurrent writer swapping a directory for a symlink cannot redirect a
deletion outside the tree:

* every directory is opened with ``O_NOFOLLOW | O_DIRECTORY``: a symlink in
  place of a directory fails to open (and is unlinked as the link it is);
* every opened directory must be on the tree's mount (the ``mnt_id`` of its
  descriptor, from ``/proc/self/fdinfo``, and its ``st_dev``): a bind mount
  inside a clean path is refused, not descended into -- ``st_dev`` alone cannot
  see a bind mount of the same filesystem;
* the directory opened must be the one that was looked at (same device and
  inode), or it is left alone;
* nothing raises: every failure becomes a refusal with its reason, for the
  record.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class Removal:
    """What one removal did: entries removed (counted) and refusals (path relative to the tree, reason)."""

    removed: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)


def _mount_id(fd: int) -> int | None:
    """The mount a descriptor is on (Linux); None where /proc cannot tell."""
    try:
        with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as f:
            for line in f:
                if line.startswith("mnt_id:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


@dataclass(frozen=True)
class _Fence:
    """The tree's device and mount: a directory elsewhere is not entered."""

    dev: int
    mnt: int | None

    def holds(self, fd: int) -> bool:
        return os.fstat(fd).st_dev == self.dev and _mount_id(fd) == self.mnt


def _open_dir(name: str, parent: int) -> int:
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


def remove_paths(root: Path, relpaths: list[str]) -> tuple[list[str], list[str]]:
    """Remove each relative path inside ``root``; returns (removed, refused with reasons)."""
    removed: list[str] = []
    refused: list[str] = []
    try:
        root_fd = os.open(root, _DIR_FLAGS)
    except OSError as exc:
        return [], [f"{rel} (cannot open the tree: {exc.strerror or exc})" for rel in relpaths]
    try:
        fence = _Fence(os.fstat(root_fd).st_dev, _mount_id(root_fd))
        for rel in relpaths:
            result = remove_one(root_fd, fence, rel)
            refused.extend(f"{path} ({why})" for path, why in result.refused)
            if result.removed:  # partly, when something inside was refused (and recorded as such)
                removed.append(rel)
    finally:
        os.close(root_fd)
    return removed, refused


def remove_one(root_fd: int, fence: _Fence, rel: str) -> Removal:
    """Remove ``rel`` (relative, no ``..``) below the directory ``root_fd``, never leaving the fence."""
    result = Removal()
    parts = [p for p in Path(rel).parts if p not in ("", ".")]
    if not parts or ".." in parts or os.path.isabs(rel):
        result.refused.append((rel, "not a path inside the tree"))
        return result
    fds: list[int] = []
    parent = root_fd
    try:
        for i, part in enumerate(parts[:-1]):
            try:
                parent = _open_dir(part, parent)
            except OSError as exc:
                if exc.errno == errno.ENOENT:
                    return result
                where = "/".join(parts[: i + 1])
                why = f"through a symlink: {where}" if exc.errno in (errno.ELOOP, errno.ENOTDIR) else exc.strerror
                result.refused.append((rel, str(why)))
                return result
            fds.append(parent)
            if not fence.holds(parent):
                result.refused.append((rel, f"across a mount point: {'/'.join(parts[: i + 1])}"))
                return result
        _remove_entry(parent, parts[-1], rel, fence, result)
    finally:
        for fd in fds:
            os.close(fd)
    return result


def _remove_entry(parent: int, name: str, rel: str, fence: _Fence, result: Removal, depth: int = 0) -> None:
    """Remove one directory entry of ``parent``: a file or link is unlinked, a directory emptied first."""
    for _ in range(3):  # an entry swapped under us between look and act is looked at again
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        except OSError as exc:
            result.refused.append((rel, exc.strerror or str(exc)))
            return
        if not stat.S_ISDIR(st.st_mode):
            try:
                os.unlink(name, dir_fd=parent)  # a symlink goes, what it points to stays
            except FileNotFoundError:
                return
            except IsADirectoryError:
                continue  # became a directory
            except OSError as exc:
                if exc.errno == errno.EPERM and _is_dir_now(parent, name):
                    continue
                result.refused.append((rel, exc.strerror or str(exc)))
                return
            result.removed += 1
            return
        if st.st_dev != fence.dev:
            result.refused.append((rel, "a mount point: not entered"))
            return
        try:
            fd = _open_dir(name, parent)
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                continue  # became a symlink or a file: look again, then unlink it
            result.refused.append((rel, exc.strerror or str(exc)))
            return
        try:
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
                continue  # swapped between lstat and open: look again
            if not fence.holds(fd):
                result.refused.append((rel, "a mount point: not entered"))
                return
            _empty(fd, rel, fence, result, depth)
        finally:
            os.close(fd)
        try:
            os.rmdir(name, dir_fd=parent)
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno == errno.ENOTEMPTY and any(r.startswith(rel) for r, _ in result.refused):
                return  # it holds what was refused; that is already recorded
            if exc.errno == errno.ENOTDIR:
                continue
            result.refused.append((rel, exc.strerror or str(exc)))
            return
        result.removed += 1
        return
    result.refused.append((rel, "kept changing while being removed"))


def _is_dir_now(parent: int, name: str) -> bool:
    with contextlib.suppress(OSError):
        return stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    return False


def _empty(fd: int, rel: str, fence: _Fence, result: Removal, depth: int) -> None:
    if depth > 256:
        result.refused.append((rel, "nested too deep"))
        return
    try:
        names = os.listdir(fd)
    except OSError as exc:
        result.refused.append((rel, exc.strerror or str(exc)))
        return
    for name in names:
        _remove_entry(fd, name, f"{rel}/{name}", fence, result, depth + 1)
