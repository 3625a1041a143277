"""Ladder policy, pure."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.loop.ladder import FailedAttempt, compiled_anything, decide

LIB = ("add_library_paths", "clean_build")
OOM = ("reduce_jobs", "reduce_jobs", "reduce_jobs")
GENERIC = load_catalogue(user=False).generic_ladder()


def test_the_stop_policy_is_stated_in_the_catalogue() -> None:
    """Issue 10, item 6: decisive categories, the generic and the stall ladder come from signatures.toml."""
    catalogue = load_catalogue(user=False)
    assert catalogue.decisive_categories() == {"unsupported_arch", "disk_full"}
    assert GENERIC == ("clean_build", "uninstall_packages", "lower_optimization", "reduce_jobs")
    assert catalogue.stall_ladder() == ("reduce_jobs",)
    assert decide([failed(1, "unknown")], max_attempts=6, escalate_unknown=True).outcome == "failed", \
        "without a generic ladder there is nothing to escalate to"


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


def test_repeated_rungs_then_stop_without_generic_fall_through() -> None:
    h = [failed(1, "out_of_memory", ladder=OOM, remedies=("reduce_jobs",)),
         failed(2, "out_of_memory", ladder=OOM, remedies=("reduce_jobs",)),
         failed(3, "out_of_memory", ladder=OOM)]
    assert decide(h, max_attempts=9).remedy == "reduce_jobs"
    h[2] = failed(3, "out_of_memory", ladder=OOM, remedies=("reduce_jobs",))
    h.append(failed(4, "out_of_memory", ladder=OOM))
    d = decide(h, max_attempts=9)
    assert d.outcome == "failed" and d.remedy is None      # no clean_build / uninstall after the ladder
    assert "out_of_memory ladder is spent" in d.reason and "reduce_jobs" in d.reason


def test_an_unknown_the_catalogue_names_as_the_projects_bug_is_never_escalated() -> None:
    # hip-platform-undefined (category unknown): no generic remedy can fix a project's build bug
    named = replace(failed(1, "unknown"), named_unknown="hip-platform-undefined")
    d = decide([named], max_attempts=6, escalate_unknown=True, generic_ladder=GENERIC)
    assert (d.remedy, d.outcome) == (None, "unrecognised") and "hip-platform-undefined" in d.reason
    assert decide([failed(1, "unknown")], max_attempts=6, escalate_unknown=True,
                  generic_ladder=GENERIC).remedy == "clean_build"


def test_unavailable_remedies_are_skipped() -> None:
    d = decide([failed(1, "missing_library", ladder=LIB)], max_attempts=6, unavailable=frozenset({"add_library_paths"}))
    assert d.remedy == "clean_build"


def test_stops() -> None:
    assert decide([failed(1, "unsupported_arch", retryable=False)], max_attempts=6).outcome == "not_retryable"
    assert decide([failed(1, "unknown")], max_attempts=6).outcome == "unrecognised"
    assert decide([failed(1, "unknown")], max_attempts=6, escalate_unknown=True,
                  generic_ladder=GENERIC).remedy == "clean_build"
    assert decide([failed(6, "missing_library", ladder=LIB)], max_attempts=6).outcome == "failed"
    assert decide([failed(1, "missing_library", ladder=LIB)], max_attempts=6, budget_left_s=0).outcome \
        == "budget_exhausted"
    assert decide([failed(1, "x", ended="interrupted")], max_attempts=6).outcome == "interrupted"
    assert decide([failed(1, "x", ended="budget")], max_attempts=6).outcome == "budget_exhausted"


def test_stalled_reduces_jobs_once_then_gives_up() -> None:
    stall = load_catalogue(user=False).stall_ladder()
    assert decide([failed(1, "stalled", ladder=stall, ended="stalled")], max_attempts=6).remedy == "reduce_jobs"
    h = [failed(1, "stalled", ladder=stall, ended="stalled", remedies=("reduce_jobs",)),
         failed(2, "stalled", ladder=stall, ended="stalled")]
    assert decide(h, max_attempts=6).outcome == "budget_exhausted"


def test_everything_tried_is_failed() -> None:
    all_generic = ("clean_build", "uninstall_packages", "lower_optimization", "reduce_jobs")
    h = [failed(1, "stale_build", ladder=("clean_build",), remedies=all_generic), failed(2, "stale_build",
                                                                                       ladder=("clean_build",))]
    d = decide(h, max_attempts=9)
    assert d.outcome == "failed" and "ladder is spent" in d.reason


def test_spent_ladder_stops_instead_of_generic_remedies() -> None:
    """Issue 12: a network failure that outlasts its 3 waits stops; no clean_build or lower_optimization."""
    net = ("wait_and_retry",) * 3
    h = [failed(n, "network", ladder=net, remedies=("wait_and_retry",)) for n in (1, 2, 3)]
    h.append(failed(4, "network", ladder=net))
    d = decide(h, max_attempts=9)
    assert d.outcome == "failed" and "network ladder is spent" in d.reason


def test_library_nowhere_to_be_found_stops_after_one_attempt() -> None:
    """add_library_paths and clean_build found nothing to do: the run stops, no generic rungs."""
    d = decide([failed(1, "missing_runtime_library", ladder=LIB, retryable=True)], max_attempts=6,
               unavailable=frozenset({"add_library_paths", "clean_build"}))
    assert d.outcome == "failed" and "nothing to do for add_library_paths, clean_build" in d.reason


def test_no_compile_remedies_before_anything_compiled() -> None:
    crash = ("lower_optimization", "reduce_jobs")
    before = FailedAttempt(1, "exited", "compiler_crash", "x", True, crash, (), compiled=False)
    d = decide([before], max_attempts=6)
    assert d.outcome == "failed" and "before anything compiled" in d.reason
    unknown = FailedAttempt(1, "exited", "unknown", "u", False, (), (), compiled=False)
    h = [replace(unknown, remedies=("clean_build",)), replace(unknown, number=2, remedies=("uninstall_packages",)),
         replace(unknown, number=3)]
    assert decide(h, max_attempts=9, escalate_unknown=True, generic_ladder=GENERIC).outcome == "failed"
    stalled = FailedAttempt(1, "stalled", "stalled", "s", True, ("reduce_jobs",), (), compiled=False)
    assert decide([stalled], max_attempts=6).outcome == "budget_exhausted"


@pytest.mark.parametrize(("step", "done", "percent", "category", "expected"), [
    ("prepare", 5, None, "compiler_crash", False),
    ("checkout", None, None, "network", False),
    ("build", None, None, "missing_runtime_library", False),   # `import torch` in setup.py
    ("build", None, None, "network", False),
    ("build", 3, None, "network", True),
    ("build", None, 12, "missing_python_dependency", True),
    ("build", None, None, "compiler_crash", True),
    ("verify", None, None, "missing_library", True),
])
def test_compiled_anything(step: str, done: int | None, percent: int | None, category: str, expected: bool) -> None:
    assert compiled_anything(step, done, percent, category) is expected


def test_backoff_doubles_caps_and_jitters() -> None:
    from rocmbuild.loop.ladder import backoff_s

    assert [backoff_s(n, 2.0, 0.0) for n in (1, 2, 3, 4, 5, 6)] == [2.0, 4.0, 8.0, 16.0, 32.0, 32.0]
    assert backoff_s(1, 2.0, 1.0) == 3.0 and backoff_s(9, 2.0, 1.0) == 32.0
    assert backoff_s(1, 0.0, 0.5) == 0.0
