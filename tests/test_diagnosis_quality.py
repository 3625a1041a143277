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


def _judge(directory: Path, *judges: dict[str, str]) -> None:
    """Write a first look of the _write_set batch (001 and 002 right) and the judges' verdicts."""
    right = {"001": True, "002": True, "003": False, "004": False}
    (directory / "firstlook.json").write_text(json.dumps({"cases": [{"id": k, "right": v} for k, v in right.items()]}))
    evidence = {"judges": [{"name": f"judge {n}", "verdicts": {k: {"verdict": v} for k, v in verdicts.items()}}
                           for n, verdicts in enumerate(judges)]}
    (directory / "evidence.json").write_text(json.dumps(evidence))


def test_the_ceiling_counts_other_and_evident_logs_and_splits_the_misses(tmp_path: Path) -> None:
    _write_set(tmp_path / "b01")
    # 002 is `other` (reachable whatever the judge says); 003 has its evidence and was missed; 004's is absent.
    _judge(tmp_path / "b01", {"001": "EVIDENT", "002": "ABSENT", "003": "EVIDENT", "004": "ABSENT"})
    proc = subprocess.run([sys.executable, str(CEILING), "--reallogs", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "| b01 | 4 | 1 | - | 3/4 = 75.0% | 2/4 = 50.0% | 1 | 1 |" in proc.stdout


def test_two_judges_must_agree_unless_lenient(tmp_path: Path) -> None:
    _write_set(tmp_path / "b01")
    _judge(tmp_path / "b01", {"001": "EVIDENT", "002": "EVIDENT", "003": "EVIDENT", "004": "ABSENT"},
           {"001": "EVIDENT", "002": "EVIDENT", "003": "AMBIGUOUS", "004": "EVIDENT"})
    strict = subprocess.run([sys.executable, str(CEILING), "--reallogs", str(tmp_path)],
                            capture_output=True, text=True, timeout=60)
    lenient = subprocess.run([sys.executable, str(CEILING), "--reallogs", str(tmp_path), "--lenient"],
                             capture_output=True, text=True, timeout=60)
    assert "| b01 | 4 | 2 | 2/4 | 2/4 = 50.0% | 2/4 = 50.0% | 0 | 2 |" in strict.stdout
    assert "| b01 | 4 | 2 | 2/4 | 4/4 = 100.0% | 2/4 = 50.0% | 2 | 0 |" in lenient.stdout


AUDIT = Path(__file__).parent.parent / "benchmarks" / "cited_before_first_look.py"


def test_the_audit_finds_a_case_whose_thread_was_cited_when_its_batch_was_scored(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                              capture_output=True, text=True, check=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "rocmbuild").mkdir()
    (tmp_path / "rocmbuild" / "signatures.toml").write_text('references = ["ROCm/hip#68"]\n')
    git("add", "-A")
    git("commit", "-qm", "catalogue")
    commit = git("rev-parse", "--short", "HEAD")
    batch = tmp_path / "benchmarks" / "reallogs" / "b01"
    batch.mkdir(parents=True)
    sources = {"001": "https://github.com/ROCm/HIP/issues/68", "002": "https://github.com/ROCm/hip/issues/69"}
    (batch / "labels.json").write_text(json.dumps([{"id": k, "source": v} for k, v in sources.items()]))
    (batch / "firstlook.json").write_text(json.dumps({"cases": [{"id": "001", "right": True},
                                                                {"id": "002", "right": False}]}))
    (tmp_path / "benchmarks" / "RESULTS.md").write_text(f"| b01 | 2 | 1/2 = 50.0% | 0 | {commit} | x |\n")
    proc = subprocess.run([sys.executable, str(AUDIT), "--root", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"b01 at {commit}: cited 001; first look 1/2 = 50.0%, without them 0/1 = 0.0%" in proc.stdout
    assert "cases cited before their first look: 1, right at first look: 1" in proc.stdout
