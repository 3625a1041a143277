"""Clean never leaves the tree: bind mounts, a concurrent dir<->symlink swapper, errors."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmbuild.loop.effects import safe_remove


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def bind_mounted(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """src/build/mnt is a bind mount of outside/ (same filesystem: st_dev alone cannot see it)."""
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "precious.txt").write_text("keep")
    (outside / "deep" / "also.txt").write_text("keep")
    src = tmp_path / "src"
    mnt = src / "build" / "mnt"
    mnt.mkdir(parents=True)
    (src / "build" / "obj.o").write_text("")
    subprocess.run(["mount", "--bind", str(outside), str(mnt)], check=True)
    try:
        yield src, outside
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_clean_does_not_descend_into_a_bind_mount(bind_mounted: tuple[Path, Path]) -> None:
    src, outside = bind_mounted
    before = _files(outside)
    removed, refused = safe_remove(src, ["build"])
    assert _files(outside) == before, "nothing outside the tree is deleted"
    assert removed == ["build"], "the rest of build/ goes"
    assert refused and refused[0].startswith("build/mnt (") and "mount point" in refused[0]
    assert not (src / "build" / "obj.o").exists()


def test_a_bind_mount_as_the_clean_path_itself_is_refused(bind_mounted: tuple[Path, Path]) -> None:
    src, outside = bind_mounted
    before = _files(outside)
    removed, refused = safe_remove(src, ["build/mnt", "build/mnt/deep"])
    assert _files(outside) == before
    assert removed == []
    assert {r.split(" (")[0] for r in refused} == {"build/mnt", "build/mnt/deep"}


def test_a_tmpfs_mounted_inside_a_clean_path_is_not_entered(tmp_path: Path) -> None:
    src = tmp_path / "src"
    mnt = src / "build" / "scratch"
    mnt.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", str(mnt)], check=True)
    try:
        (mnt / "data").write_text("on another filesystem")
        _removed, refused = safe_remove(src, ["build"])
        assert (mnt / "data").read_text() == "on another filesystem"
        assert any(r.startswith("build/scratch (") for r in refused)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.integration
def test_a_writer_swapping_the_clean_path_between_dir_and_symlink_never_gets_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for i in range(200):
        (outside / f"keep-{i}").write_text("keep")
    (outside / "sub").mkdir()
    (outside / "sub" / "keep").write_text("keep")
    before = _files(outside)
    src = tmp_path / "src"
    src.mkdir()
    stop = threading.Event()
    swaps = [0]

    def swapper() -> None:
        build = src / "build"
        while not stop.is_set():
            swaps[0] += 1
            try:
                if build.is_symlink():
                    build.unlink()
                    build.mkdir()
                    for i in range(20):
                        (build / f"o{i}").mkdir()
                        (build / f"o{i}" / "x").symlink_to(outside)
                    (build / "sub").symlink_to(outside / "sub")
                else:
                    # the real directory moves aside and a symlink to outside takes its name
                    tmp = src / "build.tmp"
                    tmp.unlink(missing_ok=True)
                    tmp.symlink_to(outside)
                    if build.is_dir():
                        os.rename(build, src / f"old-{time.monotonic_ns()}")
                    os.replace(tmp, build)
            except OSError:
                continue

    (src / "build").symlink_to(outside)
    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 3
        rounds = 0
        while time.monotonic() < deadline:
            safe_remove(src, ["build", "build/*", "build/*/x", "old-*", "build/sub/keep"])
            rounds += 1
    finally:
        stop.set()
        thread.join(5)
    assert rounds >= 2 and swaps[0] >= 10, "clean and swapper really ran at the same time"
    assert _files(outside) == before, "a deletion reached outside the tree"


def test_errors_become_refusals_not_exceptions(tmp_path: Path) -> None:
    src = tmp_path / "src"
    locked = src / "build" / "locked"
    locked.mkdir(parents=True)
    (locked / "f").write_text("")
    subprocess.run(["chattr", "+i", str(locked / "f")], check=True)
    try:
        _removed, refused = safe_remove(src, ["build"])
    finally:
        subprocess.run(["chattr", "-i", str(locked / "f")], check=False)
    assert any(r.startswith("build/locked/f (") for r in refused), refused


@pytest.mark.integration
def test_a_clean_build_through_the_cli_records_the_refusal_and_spares_the_mount(
        bind_mounted: tuple[Path, Path]) -> None:
    import json

    from test_e2e_ladder import ROCMBUILD, base_env

    src, outside = bind_mounted
    tmp = src.parent
    before = _files(outside)
    stale = ("CMake Error: The current CMakeCache.txt directory /a/CMakeCache.txt is different than the directory"
             " /b where CMakeCache.txt was created.")
    recipe = tmp / "stale.toml"
    recipe.write_text(f'name = "stale"\n[steps]\nbuild = ["echo \'{stale}\'; false"]\n[clean]\npaths = ["build"]\n')
    proc = subprocess.run([ROCMBUILD, str(recipe), "--source", str(src), "--run-dir", str(tmp / "run"), "--arch",
                           "gfx90a", "--skip-preflight", "--no-cache", "--max-attempts", "2"],
                          env=base_env(tmp), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr
    assert _files(outside) == before
    events = [json.loads(line) for line in (tmp / "run" / "events.jsonl").read_text().splitlines()]
    applied = [e for e in events if e["event"] == "remedy.applied" and e["remedy"] == "clean_build"]
    assert applied and "refused: build/mnt" in applied[0]["detail"]
    assert not [e for e in events if e["event"] == "remedy.skipped" and e["remedy"] == "clean_build"]
    refused = [e["path"] for e in events if e["event"] == "path.refused"]
    assert refused and refused[0].startswith("build/mnt (") and "mount point" in refused[0]
