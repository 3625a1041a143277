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


CEILING = Path(__file__).parent.parent / "benchmarks" / "evidence_ceiling.py"


def _judge(directory: Path, *judges: dict[str, str], right: dict[str, bool] | None = None) -> None:
    """Write a first look of the _write_set batch (001 and 002 right unless told) and the judges' verdicts."""
    right = right or {"001": True, "002": True, "003": False, "004": False}
    (directory / "firstlook.json").write_text(json.dumps({"cases": [{"id": k, "right": v} for k, v in right.items()]}))
    evidence = {"judges": [{"name": f"judge {n}", "verdicts": {k: {"verdict": v} for k, v in verdicts.items()}}
                           for n, verdicts in enumerate(judges)]}
    (directory / "evidence.json").write_text(json.dumps(evidence))


def _ceiling(root: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CEILING), "--reallogs", str(root), *flags],
                          capture_output=True, text=True, timeout=60)


def test_the_ceiling_counts_other_and_evident_logs_and_splits_the_misses(tmp_path: Path) -> None:
    _write_set(tmp_path / "b01")
    # 002 is `other` (reachable whatever the judge says); 003 has its evidence and was missed; 004's is absent.
    _judge(tmp_path / "b01", {"001": "EVIDENT", "002": "ABSENT", "003": "EVIDENT", "004": "ABSENT"})
    proc = _ceiling(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "| b01 | 4 | 1 | 4/4 | 3/4 = 75.0% | 1 | 2/4 = 50.0% | 1 | 1 |" in proc.stdout


def test_an_other_log_read_as_a_category_is_a_miss_within_reach(tmp_path: Path) -> None:
    _write_set(tmp_path / "b01")
    # 002 (`other`) was read as a category: abstaining would have been right, whatever the judges saw.
    _judge(tmp_path / "b01", {"001": "EVIDENT", "002": "AMBIGUOUS", "003": "ABSENT", "004": "ABSENT"},
           right={"001": True, "002": False, "003": False, "004": False})
    assert "| b01 | 4 | 1 | 4/4 | 2/4 = 50.0% | 1 | 1/4 = 25.0% | 1 | 2 |" in _ceiling(tmp_path).stdout


def test_two_judges_must_agree_unless_lenient(tmp_path: Path) -> None:
    _write_set(tmp_path / "b01")
    _judge(tmp_path / "b01", {"001": "EVIDENT", "002": "EVIDENT", "003": "EVIDENT", "004": "ABSENT"},
           {"001": "EVIDENT", "002": "EVIDENT", "003": "AMBIGUOUS", "004": "EVIDENT"})
    assert "| b01 | 4 | 2 | 2/4 | 2/4 = 50.0% | 1 | 2/4 = 50.0% | 0 | 2 |" in _ceiling(tmp_path).stdout
    assert "| b01 | 4 | 2 | 2/4 | 4/4 = 100.0% | 1 | 2/4 = 50.0% | 2 | 0 |" in _ceiling(tmp_path, "--lenient").stdout


def test_malformed_evidence_is_exit_2_and_a_case_without_verdict_is_left_out_by_name(tmp_path: Path) -> None:
    _write_set(tmp_path / "b01")
    _judge(tmp_path / "b01", {"001": "Evident", "002": "ABSENT", "003": "EVIDENT", "004": "ABSENT"})
    proc = _ceiling(tmp_path)
    assert proc.returncode == 2 and "'Evident'" in proc.stderr and "Traceback" not in proc.stderr
    _judge(tmp_path / "b01")
    proc = _ceiling(tmp_path)
    assert proc.returncode == 2 and "no judges" in proc.stderr
    _judge(tmp_path / "b01", {"001": "EVIDENT", "002": "ABSENT", "003": "EVIDENT"})
    proc = _ceiling(tmp_path)
    assert proc.returncode == 0 and "b01 004: left out (a judge has no verdict)" in proc.stderr
    assert "| b01 | 3 | 1 | 3/3 | 3/3 = 100.0% | 1 | 2/3 = 66.7% | 1 | 0 |" in proc.stdout


AUDIT = Path(__file__).parent.parent / "benchmarks" / "cited_before_first_look.py"


def test_the_audit_finds_a_case_whose_thread_was_cited_when_its_batch_was_scored(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                              capture_output=True, text=True, check=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "rocmbuild").mkdir()
    (tmp_path / "rocmbuild" / "signatures.toml").write_text('references = ["ROCm/hip#68"]\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("# the shape of TheRock#997 (a short reference)\n")
    git("add", "-A")
    git("commit", "-qm", "catalogue")
    commit = git("rev-parse", "--short", "HEAD")
    batch = tmp_path / "benchmarks" / "reallogs" / "b01"
    batch.mkdir(parents=True)
    sources = {"001": "https://github.com/ROCm/HIP/issues/68", "002": "https://github.com/ROCm/hip/issues/69"}
    (batch / "labels.json").write_text(json.dumps([{"id": k, "source": v} for k, v in sources.items()]))
    (batch / "firstlook.json").write_text(json.dumps({"cases": [{"id": "001", "right": True},
                                                                {"id": "002", "right": False}]}))
    every = tmp_path / "benchmarks" / "reallogs" / "b02"
    every.mkdir()
    (every / "labels.json").write_text(json.dumps([{"id": "001", "source": "https://github.com/ROCm/TheRock/issues/997"}]))
    (every / "firstlook.json").write_text(json.dumps({"cases": [{"id": "001", "right": False}]}))
    (tmp_path / "benchmarks" / "RESULTS.md").write_text(f"| b01 | 2 | 1/2 = 50.0% | 0 | {commit} | x |\n"
                                                         f"| b02 | 1 | 0/1 = 0.0% | 0 | {commit} | x |\n"
                                                         "| b03 | 1 | 0/1 = 0.0% | 0 | 0123456 | x |\n")
    (tmp_path / "benchmarks" / "reallogs" / "b03").mkdir()
    for name in ("labels.json", "firstlook.json"):
        (tmp_path / "benchmarks" / "reallogs" / "b03" / name).write_text((every / name).read_text())
    proc = subprocess.run([sys.executable, str(AUDIT), "--root", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"b01 at {commit}: cited 001; first look 1/2 = 50.0%, without them 0/1 = 0.0%" in proc.stdout
    assert f"b02 at {commit}: cited 001; first look 0/1 = 0.0%, without them no case left" in proc.stdout
    assert "b03: commit 0123456 is not in this repository's history; skipped" in proc.stderr
    assert "cases cited before their first look: 2, right at first look: 1" in proc.stdout


def test_a_judged_batch_without_its_first_look_is_exit_2_not_a_traceback(tmp_path: Path) -> None:
    _write_set(tmp_path / "b01")
    _judge(tmp_path / "b01", {"001": "EVIDENT", "002": "ABSENT", "003": "EVIDENT", "004": "ABSENT"})
    (tmp_path / "b01" / "firstlook.json").unlink()
    proc = _ceiling(tmp_path)
    assert proc.returncode == 2 and "firstlook.json" in proc.stderr and "Traceback" not in proc.stderr
