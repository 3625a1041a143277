"""Ladder policy, pure (issue 5, item 2)."""

from __future__ import annotations

from rocmbuild.ladder import FailedAttempt, decide

LIB = ("add_library_paths", "clean_build")
OOM = ("reduce_jobs", "reduce_jobs", "reduce_jobs")


def failed(n: int, category: str, fp: str = "", ladder: tuple[str, ...] = (), remedies: tuple[str, ...] = (),
           retryable: bool = True, ended: str = "exited") -> FailedAttempt:
    return FailedAttempt(n, ended, category, fp or category, retryable, ladder, remedies)


def test_first_rung_then_escalate_on_same_fingerprint() -> None:
    first = decide([failed(1, "missing_library", ladder=LIB)], max_attempts=6)
    assert first.remedy == "add_library_paths"
    again = decide([failed(1, "missing_library", ladder=LIB, remedies=("add_library_paths",)),
                    failed(2, "missing_library", ladder=LIB)], max_attempts=6)
    assert again.remedy == "clean_build" and "came back" in again.reason


def test_different_failure_starts_its_own_ladder() -> None:
    history = [failed(1, "missing_library", ladder=LIB, remedies=("add_library_paths",)),
               failed(2, "compiler_crash", ladder=("lower_optimization", "reduce_jobs"))]
    assert decide(history, max_attempts=6).remedy == "lower_optimization"


def test_repeated_rungs_and_then_generic_order_skipping_done() -> None:
    h = [failed(1, "out_of_memory", ladder=OOM, remedies=("reduce_jobs",)),
         failed(2, "out_of_memory", ladder=OOM, remedies=("reduce_jobs",)),
         failed(3, "out_of_memory", ladder=OOM)]
    assert decide(h, max_attempts=9).remedy == "reduce_jobs"
    h[2] = failed(3, "out_of_memory", ladder=OOM, remedies=("reduce_jobs",))
    h.append(failed(4, "out_of_memory", ladder=OOM))
    assert decide(h, max_attempts=9).remedy == "clean_build"


def test_unavailable_remedies_are_skipped() -> None:
    d = decide([failed(1, "missing_library", ladder=LIB)], max_attempts=6, unavailable=frozenset({"add_library_paths"}))
    assert d.remedy == "clean_build"


def test_stops() -> None:
    assert decide([failed(1, "unsupported_arch", retryable=False)], max_attempts=6).outcome == "not_retryable"
    assert decide([failed(1, "unknown")], max_attempts=6).outcome == "unrecognised"
    assert decide([failed(1, "unknown")], max_attempts=6, escalate_unknown=True).remedy == "clean_build"
    assert decide([failed(6, "missing_library", ladder=LIB)], max_attempts=6).outcome == "failed"
    assert decide([failed(1, "missing_library", ladder=LIB)], max_attempts=6, budget_left_s=0).outcome \
        == "budget_exhausted"
    assert decide([failed(1, "x", ended="interrupted")], max_attempts=6).outcome == "interrupted"
    assert decide([failed(1, "x", ended="budget")], max_attempts=6).outcome == "budget_exhausted"


def test_stalled_reduces_jobs_once_then_gives_up() -> None:
    assert decide([failed(1, "stalled", ended="stalled")], max_attempts=6).remedy == "reduce_jobs"
    h = [failed(1, "stalled", ended="stalled", remedies=("reduce_jobs",)), failed(2, "stalled", ended="stalled")]
    assert decide(h, max_attempts=6).outcome == "budget_exhausted"


def test_everything_tried_is_failed() -> None:
    all_generic = ("clean_build", "uninstall_packages", "lower_optimization", "reduce_jobs")
    h = [failed(1, "stale_build", ladder=("clean_build",), remedies=all_generic), failed(2, "stale_build",
                                                                                       ladder=("clean_build",))]
    d = decide(h, max_attempts=9)
    assert d.outcome == "failed" and "every remedy" in d.reason
