"""process/statelock.py: the per-source lock in the state dir, one non-blocking flock."""

from __future__ import annotations

from pathlib import Path

import filelock
import pytest

from rocmbuild.process.statelock import Held, StateLock


def test_a_held_lock_refuses_a_second_holder_until_released(tmp_path: Path) -> None:
    path = str(tmp_path / "tree.lock")
    first, second = StateLock(path), StateLock(path)
    first.acquire()
    with pytest.raises(Held):
        second.acquire()  # another open file: as another rocmbuild process would hold it
    first.release()
    second.acquire()
    second.release()


def test_it_is_the_same_lock_filelock_takes(tmp_path: Path) -> None:
    """An older rocmbuild (filelock.FileLock on the same file) and this one exclude each other."""
    path = str(tmp_path / "tree.lock")
    old = filelock.FileLock(path)
    with old.acquire(timeout=0), pytest.raises(Held):
        StateLock(path).acquire()
    mine = StateLock(path)
    mine.acquire()
    with pytest.raises(filelock.Timeout):
        filelock.FileLock(path).acquire(timeout=0)
    mine.release()


def test_an_unwritable_directory_is_an_os_error_not_a_held_lock(tmp_path: Path) -> None:
    with pytest.raises(OSError) as caught:
        StateLock(str(tmp_path / "missing" / "tree.lock")).acquire()
    assert not isinstance(caught.value, Held)
