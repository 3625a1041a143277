"""process/versionstore.py: `TOOL --version` answers remembered across runs until the toolchain changes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmbuild.process import command
from rocmbuild.process.command import capture, remember_versions


def _tool(directory: Path, version: str, name: str = "faketool") -> Path:
    """A real program that counts its runs (calls.txt) and prints its version."""
    path = directory / name
    path.write_text(f'#!/bin/sh\necho x >> "{directory / "calls.txt"}"\necho "{name} version {version}"\n')
    path.chmod(0o755)
    return path


def _calls(directory: Path) -> int:
    return len((directory / "calls.txt").read_text().splitlines())


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    """A store, and a fresh process: each capture below stands for a new rocmbuild run."""
    where = tmp_path / "probes"
    remember_versions(where)
    yield where
    remember_versions(None)


def _new_run() -> None:
    command._VERSIONS.clear()  # what a new process starts with


def _env(bin_dir: Path, **extra: str) -> dict[str, str]:
    return {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", **extra}


def test_a_later_run_reuses_the_answer_without_running_the_tool(tmp_path: Path, store: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _tool(bin_dir, "1.0")
    first = capture(["faketool", "--version"], env=_env(bin_dir))
    _new_run()
    again = capture(["faketool", "--version"], env=_env(bin_dir, PWD="/elsewhere", MAX_JOBS="7"))
    assert again == first and first.output == "faketool version 1.0\n"
    assert _calls(bin_dir) == 1  # PWD and MAX_JOBS differ between runs and never change a version


def test_a_replaced_tool_is_asked_again(tmp_path: Path, store: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _tool(bin_dir, "1.0")
    capture(["faketool", "--version"], env=_env(bin_dir))
    _new_run()
    _tool(bin_dir, "2.0.1")  # a pip install / apt upgrade: another file
    assert capture(["faketool", "--version"], env=_env(bin_dir)).output == "faketool version 2.0.1\n"
    assert _calls(bin_dir) == 2


def test_a_changed_companion_directory_or_environment_is_asked_again(tmp_path: Path, store: Path) -> None:
    bin_dir, llvm = tmp_path / "bin", tmp_path / "llvm"
    bin_dir.mkdir()
    llvm.mkdir()
    _tool(bin_dir, "1.0")
    env = _env(bin_dir, HIP_CLANG_PATH=str(llvm))
    capture(["faketool", "--version"], env=env)
    _new_run()
    # hipcc's answer comes from the clang it finds: a clang installed or replaced there changes it.
    (llvm / "clang").write_text("")
    capture(["faketool", "--version"], env=env)
    assert _calls(bin_dir) == 2
    _new_run()
    capture(["faketool", "--version"], env={**env, "ROCM_PATH": "/opt/rocm-6.4"})
    assert _calls(bin_dir) == 3


def test_failures_are_not_remembered_and_nothing_is_stored_without_a_store(tmp_path: Path, store: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    path = bin_dir / "broken"
    path.write_text(f'#!/bin/sh\necho x >> "{bin_dir / "calls.txt"}"\nexit 3\n')
    path.chmod(0o755)
    for _ in range(2):
        _new_run()
        assert capture(["broken", "--version"], env=_env(bin_dir)).returncode == 3
    assert _calls(bin_dir) == 2
    remember_versions(None)
    other = tmp_path / "other"
    other.mkdir()
    _tool(other, "1.0")
    for _ in range(2):
        _new_run()
        capture(["faketool", "--version"], env=_env(other))
    assert _calls(other) == 2
    assert not list(store.glob("*.json"))  # the broken tool's exit 3 was not kept either


def test_a_corrupt_entry_is_a_miss(tmp_path: Path, store: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _tool(bin_dir, "1.0")
    capture(["faketool", "--version"], env=_env(bin_dir))
    for entry in store.glob("*.json"):
        entry.write_text("{not json")
    _new_run()
    assert capture(["faketool", "--version"], env=_env(bin_dir)).output == "faketool version 1.0\n"
    assert _calls(bin_dir) == 2
