"""benchmarks/diagnosis_quality.py works on any directory in the reallogs format."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "benchmarks" / "diagnosis_quality.py"


def _write_set(directory: Path) -> None:
    directory.mkdir()
    logs = {
        "001": ("missing_library", "[3/9] Linking CXX shared library libx.so\n/usr/bin/ld: cannot find -lrocblas\n"),
        "002": ("other", "test_sum ... FAILED\nAssertionError: 3 != 4\n"),
        "003": ("network", "/usr/bin/ld: cannot find -lhipfft\n"),  # labelled wrong on purpose: a confident miss
        "004": ("disk_full", "nothing to see here\n"),
    }
    labels = []
    for case_id, (label, text) in logs.items():
        (directory / f"{case_id}.log").write_text(text)
        labels.append({"id": case_id, "label": label, "source": "https://example.invalid/t/1", "fix": "", "note": ""})
    (directory / "labels.json").write_text(json.dumps(labels))


def test_scores_a_directory_it_was_never_tuned_on(tmp_path: Path) -> None:
    _write_set(tmp_path / "set")
    out = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "set"), "--json", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "right: 2/4 = 50.0%" in proc.stdout
    assert "confidently wrong: 1" in proc.stdout
    assert "WRONG 003: network -> missing_library [ld-cannot-find-library] line 1" in proc.stdout
    assert "004: disk_full -> unknown" in proc.stdout
    data = json.loads(out.read_text())
    assert (data["total"], data["right"], data["confidently_wrong"]) == (4, 2, 1)


def test_a_directory_not_in_the_format_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for target in (tmp_path / "empty", tmp_path / "missing"):
        proc = subprocess.run([sys.executable, str(SCRIPT), str(target)], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        assert "labels.json" in proc.stderr and "Traceback" not in proc.stderr


def test_a_directory_of_batches_is_scored_batch_by_batch_with_a_total(tmp_path: Path) -> None:
    (tmp_path / "batches").mkdir()
    _write_set(tmp_path / "batches" / "b01")
    _write_set(tmp_path / "batches" / "b02")
    out = tmp_path / "all.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "batches"), "--quiet", "--json", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "| b01 | 4 | 2/4 = 50.0% | 1 (25.0%) |" in proc.stdout
    assert "| all | 8 | 4/8 = 50.0% | 2 (25.0%) |" in proc.stdout
    data = json.loads(out.read_text())
    assert [Path(s["dir"]).name for s in data["sets"]] == ["b01", "b02"] and data["right"] == 4
