"""summary.json's one writer after the first (recorder.replace_summary), and notify going through it."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from rocmbuild.records import notify
from rocmbuild.records.journal import RunSummary
from rocmbuild.records.recorder import replace_summary


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    summary = RunSummary.begin("example", tmp_path / "src", ("gfx942",), run)
    (run / "summary.json").write_text(json.dumps(summary.to_json()) + "\n")
    return run


def test_the_summary_is_replaced_whole_and_private(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    replace_summary(run, '{"outcome": "failed"}\n')
    assert json.loads((run / "summary.json").read_text()) == {"outcome": "failed"}
    assert stat.S_IMODE((run / "summary.json").stat().st_mode) == 0o600
    assert not (run / ".summary.json.tmp").exists()


def test_when_the_temporary_file_cannot_be_written_the_summary_is_written_in_place(tmp_path: Path) -> None:
    # a full disk refuses a new file; here the temporary name is taken by a directory, which fails the same way
    run = _run_dir(tmp_path)
    (run / ".summary.json.tmp").mkdir()
    replace_summary(run, '{"outcome": "succeeded"}\n')
    assert json.loads((run / "summary.json").read_text()) == {"outcome": "succeeded"}


def test_notify_records_how_it_went_even_when_the_temporary_file_cannot_be_written(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    (run / ".summary.json.tmp").mkdir()
    notify._record(run, notify.NotifyResult("true", 0, False, 0.1, None, ""))
    recorded = json.loads((run / "summary.json").read_text())
    assert recorded["notify"]["exit_code"] == 0
    assert recorded["recipe"] == "example"  # the rest of the summary is kept
