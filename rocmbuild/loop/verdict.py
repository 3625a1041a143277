"""The verdict on an attempt while it still runs: stop now, let running jobs finish a bounded while, or go on.

A failure the classifier has recognised is the ladder's input already; once its decision is
known there is nothing to wait for:
- the decision is to stop (not retryable, a decisive category, --fail-fast, the category's ladder
  spent, --max-attempts reached): stop the attempt at once; under --fail-fast a named unknown (the
  project's own bug, known by its wording) stops it too, while without it an unknown never does;
- a remedy follows: jobs still compiling help the next attempt only when their objects survive
  the remedy (kept in the build tree, or reaching the compiler cache across a clean); then they get
  up to ``RUNNING_JOBS_BOUND_S``, otherwise the attempt stops at once too.
Pure policy over values (ladder.decide does the deciding); the session measures the time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rocmbuild.diagnosis.catalogue import Category, known_remedies
from rocmbuild.loop.ladder import FailedAttempt, compiled_anything, decide

# How long jobs already running may go on after the decisive line when a remedy follows and their
# objects are kept: long enough for the translation units in flight (minutes for heavy HIP files),
# short enough that a verdict is never an hour late.
RUNNING_JOBS_BOUND_S = 180.0

# Remedies after which objects compiled now are of no use: every flag changes (all misses).
_DISCARDS_OBJECTS = frozenset({"lower_optimization"})
# Remedies that delete the build tree: its objects survive only in a compiler cache.
_CLEANS_TREE = frozenset({"clean_build"})


@dataclass(frozen=True)
class Verdict:
    """``stop_after_s``: 0 = stop now; > 0 = let running jobs finish that long; None = do not stop."""

    stop_after_s: float | None
    reason: str
    remedy: str | None = None  # the remedy that follows, when the decision is a retry


GO_ON = Verdict(None, "")


def continuing_helps(remedy: str | None, cache_on: bool) -> bool:
    """Whether objects that running jobs finish now are used by the attempt after ``remedy``. Pure."""
    if remedy is None or remedy in _DISCARDS_OBJECTS:
        return False
    if remedy in _CLEANS_TREE:
        return cache_on
    return True


@dataclass(frozen=True, kw_only=True)
class Recognised:
    """The failure recognised so far in the running attempt, as the ladder will see it."""

    category: Category
    text: str
    fingerprint: str
    retryable: bool
    ladder: Sequence[str]  # the category's (or signature's) remedies
    category_retryable: bool = True
    decisive: bool = False  # a category the catalogue stops at whatever the ladder says
    progress_done: int | None = None  # the furthest progress so far (did anything compile?)
    progress_percent: float | None = None
    named: str | None = None  # an unknown the catalogue names (its signature): the project's own bug


@dataclass(frozen=True, kw_only=True)
class Standing:
    """Where the run stands: the ladder's history, this attempt's number, the switches that decide.

    ``unavailable``: remedies already known to have nothing to do for this failure (the session asks
    each remedy's read-only decision), so a ladder whose every rung is of no use is a stop now."""

    history: Sequence[FailedAttempt]
    number: int
    max_attempts: int
    fail_fast: bool
    cache_on: bool
    generic_ladder: Sequence[str] = ()
    unavailable: frozenset[str] = frozenset()
    bound_s: float = RUNNING_JOBS_BOUND_S


def early_verdict(failure: Recognised, standing: Standing) -> Verdict:
    """What the ladder will decide about this attempt, given the failure recognised so far. Pure."""
    category, text, retryable = failure.category, failure.text, failure.retryable
    bound_s = standing.bound_s
    if category == "unknown":
        if failure.named and standing.fail_fast:  # asked to stop at the first recognised failure: this is one
            return Verdict(0.0, f"fail-fast: {failure.named}, the project's own bug ({text})")
        return GO_ON  # nothing recognised yet, or only weakly: a later line may still be the cause
    what = f"{category} ({text})" if text else category
    if standing.fail_fast or not retryable or failure.decisive:
        return Verdict(0.0, f"fail-fast: {what}")
    attempt = FailedAttempt(number=standing.number, ended="exited", category=category,
                            fingerprint=failure.fingerprint, retryable=retryable, ladder=known_remedies(failure.ladder),
                            compiled=compiled_anything(None, failure.progress_done, failure.progress_percent,
                                                       category),
                            category_retryable=failure.category_retryable)
    decision = decide([*standing.history, attempt], max_attempts=standing.max_attempts,
                      generic_ladder=known_remedies(standing.generic_ladder), unavailable=standing.unavailable)
    if not decision.retry:
        return Verdict(0.0, f"verdict: {what}: {decision.reason}")
    if continuing_helps(decision.remedy, standing.cache_on):
        return Verdict(bound_s, f"verdict: {what}; next: {decision.remedy} (jobs already running had up to "
                                f"{bound_s:g}s to finish: their objects are kept for the next attempt)",
                       decision.remedy)
    return Verdict(0.0, f"verdict: {what}; next: {decision.remedy} (objects compiled now would not be used)",
                   decision.remedy)

