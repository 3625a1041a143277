"""The fingerprint's walk (treehash.py), inputs (buildinputs.py) and outputs (outputs.py), without a build."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from rocmbuild.provisioning import buildinputs, outputs, treehash


def _old(path: Path) -> None:
    past = time.time() - 60  # outside the racy window: the stat cache may trust it
    os.utime(path, (past, past))


def test_rerun_reads_no_file_whose_stat_is_unchanged(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for i in range(50):
        (src / f"f{i}.c").write_text(f"int f{i};")
        _old(src / f"f{i}.c")
    cache_path = tmp_path / "cache.json"
    first = treehash.StatCache(cache_path)
    digest = treehash.snapshot(src, (), first).digest
    assert first.misses == 50 and first.hits == 0
    again = treehash.StatCache(cache_path)
    assert treehash.snapshot(src, (), again).digest == digest
    assert again.hits == 50 and again.misses == 0
    (src / "f3.c").write_text("int f3 = 1;")  # same second, other size: read again
    third = treehash.StatCache(cache_path)
    assert treehash.snapshot(src, (), third).digest != digest and third.misses == 1


def test_a_file_changed_just_before_the_walk_is_not_trusted_from_the_cache(tmp_path: Path) -> None:
    (tmp_path / "a.c").write_text("fresh")
    cache = treehash.StatCache(tmp_path.parent / f"{tmp_path.name}.cache.json")
    treehash.snapshot(tmp_path, (), cache)
    assert treehash.StatCache(cache.path).entries == {}


def test_special_files_are_never_opened_and_make_the_tree_uncacheable(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")  # opening it for reading would block forever
    os.mknod(tmp_path / "zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))  # reading it never ends
    (tmp_path / "a.c").write_text("int a;")
    snap = treehash.snapshot(tmp_path, ())
    assert not snap.cacheable
    assert sorted(snap.special) == ["pipe (a FIFO)", "zero (a character device)"]


def test_a_sparse_file_costs_its_data_not_its_size(tmp_path: Path) -> None:
    path = tmp_path / "sparse.img"
    with open(path, "wb") as f:
        f.truncate(64 << 30)
        f.seek(1 << 30)
        f.write(b"data")
    reads = []

    def count() -> None:
        reads.append(1)
        return None

    hashed = treehash.hash_file(str(path), count)
    assert hashed is not None and len(reads) < 10, f"{len(reads)} chunks read for 4 bytes of data"
    with open(path, "r+b") as g:
        g.seek(1 << 30)
        g.write(b"DATA")
    assert treehash.hash_file(str(path), lambda: None)[0] != hashed[0]  # type: ignore[index]


def test_symlinks_are_followed_by_content_and_loops_cut(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.h").write_text("v1")
    src = tmp_path / "src"
    src.mkdir()
    (src / "inc").symlink_to(outside)
    (src / "loop").symlink_to(src)
    (src / "dangling").symlink_to(tmp_path / "nowhere")
    before = treehash.snapshot(src, ())
    assert before.entries["inc/x.h"].startswith("f:") and before.entries["loop"].startswith("alias:")
    assert before.entries["dangling"].startswith("dangling:")
    (outside / "x.h").write_text("v2")
    assert treehash.snapshot(src, ()).digest != before.digest


def test_the_walk_stops_when_asked(tmp_path: Path) -> None:
    for i in range(200):
        (tmp_path / f"f{i}").write_text("x")
    with pytest.raises(treehash.Stopped) as stopped:
        treehash.snapshot(tmp_path, (), stop=lambda: "interrupted")
    assert stopped.value.reason == "interrupted"


def test_changed_between_counts_edits_and_removals_not_new_files() -> None:
    pyc = "m/__pycache__/m.cpython-311.pyc"
    before = treehash.TreeSnapshot({"a.c": "f:1", "b.c": "f:2", "c.c": "f:3", pyc: "f:5"}, ())
    after = treehash.TreeSnapshot({"a.c": "f:1", "b.c": "f:9", "new.o": "f:4", pyc: "f:6"}, ())
    assert treehash.changed_between(before, after) == ["b.c", "c.c"]  # bytecode follows its source


def test_the_environment_leaves_out_only_volatile_names() -> None:
    env = {"USE_FLASH_ATTENTION": "1", "PWD": "/x", "OLDPWD": "/y", "SHLVL": "2", "TERM": "xterm", "_": "/bin/x",
           "SSH_CONNECTION": "1 2 3", "DISPLAY": ":0", "SLURM_JOB_ID": "7", "MAX_JOBS": "4", "PATH": "/bin"}
    assert buildinputs.build_environment(env, ("MAX_JOBS",)) == {"USE_FLASH_ATTENTION": "1", "PATH": "/bin"}


def test_outputs_are_checked_by_size_and_mtime(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "lib.so").write_text("built")
    recorded = outputs.collect(tmp_path, (), ("build",))
    assert recorded.kind == "clean paths" and list(recorded.files) == ["build/lib.so"]
    assert outputs.differences(recorded, outputs.collect(tmp_path, (), ("build",))) is None
    os.utime(tmp_path / "build" / "lib.so", (1, 1))
    assert "changed: build/lib.so" in (outputs.differences(recorded, outputs.collect(tmp_path, (), ("build",))) or "")
    (tmp_path / "build" / "lib.so").unlink()
    assert "missing: build/lib.so" in (outputs.differences(recorded, outputs.collect(tmp_path, (), ("build",))) or "")
