"""process.command.capture: `TOOL --version` is asked once per program file and environment."""

from __future__ import annotations

import os
from pathlib import Path

from rocmbuild.process.command import capture, capture_many


def _tool(directory: Path, version: str) -> Path:
    """A real program that counts how often it was run (in calls.txt) and prints its version."""
    path = directory / "faketool"
    path.write_text(f'#!/bin/sh\necho x >> "{directory / "calls.txt"}"\necho "faketool version {version}"\n')
    path.chmod(0o755)
    return path


def _calls(directory: Path) -> int:
    return len((directory / "calls.txt").read_text().splitlines())


def test_version_answers_are_remembered_until_the_program_file_changes(tmp_path: Path) -> None:
    _tool(tmp_path, "1.0")
    env = {"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    first = capture(["faketool", "--version"], env=env)
    again = capture(["faketool", "--version"], env=env)
    assert first.ok and again.output == first.output == "faketool version 1.0\n"
    assert _calls(tmp_path) == 1
    capture(["faketool", "--version"], env={**env, "OTHER": "1"})  # another environment is asked again
    assert _calls(tmp_path) == 2
    _tool(tmp_path, "2.0.1")  # replaced (a pip install in a prepare step): a different file
    assert capture(["faketool", "--version"], env=env).output == "faketool version 2.0.1\n"
    assert _calls(tmp_path) == 3


def test_other_commands_are_always_run(tmp_path: Path) -> None:
    _tool(tmp_path, "1.0")
    env = {"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    for _ in range(2):
        assert capture(["faketool"], env=env).ok
    assert _calls(tmp_path) == 2


def test_capture_many_runs_each_command_and_names_the_results(tmp_path: Path) -> None:
    results = capture_many(capture, {"echo": (["echo", "hi"], None, 10), "missing": (["no-such-tool-x"], None, 10),
                                     "fails": (["sh", "-c", "exit 3"], None, 10)})
    assert results["echo"].output == "hi\n" and results["echo"].ok
    assert results["missing"].missing and results["fails"].returncode == 3
