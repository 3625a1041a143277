"""The run-dir index (``runs.index`` in the state dir): how a run with ``--run-dir`` elsewhere is found again.

Every build run outside the runs root appends its dir here (``new_run_dir``); ``rocmbuild history``
(history.py) reads it.  Its own module so that a build's start does not import history's rows and
statistics.
"""

from __future__ import annotations

from pathlib import Path

from rocmbuild import paths

INDEX_NAME = "runs.index"


def index_path() -> Path:
    return paths.runs_root().parent / INDEX_NAME


def remember_run_dir(path: Path) -> None:
    """Append a run dir to the index (a line per run; a lost line only hides a --run-dir run from history)."""
    try:
        index = index_path()
        index.parent.mkdir(parents=True, exist_ok=True)
        with index.open("a", encoding="utf-8") as handle:
            handle.write(f"{path}\n")
    except OSError:
        pass
