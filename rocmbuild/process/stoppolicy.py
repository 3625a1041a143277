"""The one stop policy: stop the run, stop the running attempt, or go on (pure).

Whether the run's limits (an interrupt, --budget, the stall timeout, --max-attempts) stop the run
or the running attempt is asked here, at each moment, with a frozen value in and a
``StopDecision`` out:

- ``during_attempt`` (the PTY engine every tick, a fingerprint's walk): an interrupt, the
  --budget spent, no output for the stall timeout stop the attempt;
- ``verdict_due`` (the session, whenever the log moves): the ladder's verdict on the failure
  recognised so far stops the attempt once its wait is over (verdict.py says how long);
- ``after_attempt`` (the session, then the ladder): an attempt an interrupt cut short stops the
  run at once (no diagnosis), one the budget ended stops it once diagnosed;
- ``before_attempt`` (the session before each attempt, the ladder before it plans a retry):
  --max-attempts spent, an interrupt, the budget spent stop the run, in that order.

What the ladder decides from a diagnosis (which remedy, a spent ladder, not retryable, fail-fast)
stays the ladder's (loop/ladder.py, loop/verdict.py), and what a stop means to a caller (a side
step's BudgetSpent, a refused resume) the caller's; this module holds the limits, their order and
the words a stop is recorded with (summary.json's ``stop_reason``, docs/reference-records.md).
It sits in the process layer so the runner can ask it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rocmbuild.errors import Outcome

BUDGET_SPENT = "the time budget is spent: no new attempt"
BUDGET_RAN_OUT = "the time budget ran out during the attempt"
INTERRUPTED = "interrupted"


class Act(StrEnum):
    GO_ON = "go_on"
    STOP_ATTEMPT = "stop_attempt"  # the running attempt ends; the ladder decides what follows
    STOP_RUN = "stop_run"  # no further attempt: the run ends with ``outcome``


@dataclass(frozen=True)
class StopDecision:
    """Go on, or stop the attempt (``ended`` says how: interrupted, budget, stalled, verdict) or the run
    (with ``outcome`` and the ``reason`` it is recorded with)."""

    act: Act
    reason: str = ""
    ended: str | None = None
    outcome: Outcome | None = None

    @property
    def stops(self) -> bool:
        return self.act is not Act.GO_ON


GO_ON = StopDecision(Act.GO_ON)


def _stop_attempt(ended: str, reason: str = "") -> StopDecision:
    return StopDecision(Act.STOP_ATTEMPT, reason or ended, ended=ended)


def _stop_run(outcome: Outcome, reason: str) -> StopDecision:
    return StopDecision(Act.STOP_RUN, reason, outcome=outcome)


# -- while an attempt runs -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Running:
    """An attempt (or a step, or a walk of the tree) as it runs: the interrupt flag, the budget left
    (None: no --budget), seconds since its last output and the stall timeout (None: no stall check)."""

    interrupted: bool
    budget_left_s: float | None = None
    quiet_s: float = 0.0
    stall_timeout_s: float | None = None


def during_attempt(now: Running) -> StopDecision:
    """Stop the attempt when interrupted, out of budget or stalled (in that order), else go on."""
    if now.interrupted:
        return _stop_attempt("interrupted")
    if now.budget_left_s is not None and now.budget_left_s <= 0:
        return _stop_attempt("budget")
    if now.stall_timeout_s is not None and now.quiet_s >= now.stall_timeout_s:
        return _stop_attempt("stalled")
    return GO_ON


@dataclass(frozen=True, kw_only=True)
class Due:
    """The ladder's verdict on a running attempt: stop after ``stop_after_s`` (0: now; None: never) of the
    ``waited_s`` since the failure was first recognised, recorded as ``reason``."""

    stop_after_s: float | None
    waited_s: float
    reason: str


def verdict_due(verdict: Due) -> StopDecision:
    """Stop the attempt once the verdict's wait is over (running jobs had their bounded while)."""
    if verdict.stop_after_s is None or verdict.waited_s < verdict.stop_after_s:
        return GO_ON
    return _stop_attempt("verdict", verdict.reason)


# -- after an attempt ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Ended:
    """How an attempt ended (``ended``: exited, stalled, budget, interrupted), whether it succeeded, and
    whether an interrupt is pending now (a signal may reach the build before rocmbuild sees it)."""

    ended: str
    succeeded: bool = False
    interrupted: bool = False


def after_attempt(attempt: Ended) -> StopDecision:
    """Stop the run after an attempt an interrupt cut short (exit 130) or the budget ended (exit 5)."""
    if not attempt.succeeded and (attempt.ended == "interrupted" or attempt.interrupted):
        return _stop_run(Outcome.INTERRUPTED, INTERRUPTED)
    if attempt.ended == "budget":
        return _stop_run(Outcome.BUDGET_EXHAUSTED, BUDGET_RAN_OUT)
    return GO_ON


# -- before an attempt ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Next:
    """Before an attempt starts, or the ladder plans one: attempts left of ``max_attempts``, the interrupt
    flag, the budget left (None: no --budget); ``remedy``, the rung the next attempt would follow, and
    ``stalled``, whether the last attempt stalled (then running out of attempts is running out of time)."""

    attempts_left: int
    max_attempts: int
    interrupted: bool = False
    budget_left_s: float | None = None
    remedy: str | None = None
    stalled: bool = False


def before_attempt(upcoming: Next) -> StopDecision:
    """Stop the run when --max-attempts is spent, an interrupt is pending or the budget is spent."""
    if upcoming.attempts_left <= 0:
        outcome = Outcome.BUDGET_EXHAUSTED if upcoming.stalled else Outcome.FAILED
        next_one = f" (next would have been {upcoming.remedy})" if upcoming.remedy else ""
        return _stop_run(outcome, f"--max-attempts {upcoming.max_attempts} reached{next_one}")
    if upcoming.interrupted:
        return _stop_run(Outcome.INTERRUPTED, INTERRUPTED)
    if upcoming.budget_left_s is not None and upcoming.budget_left_s <= 0:
        return _stop_run(Outcome.BUDGET_EXHAUSTED, BUDGET_SPENT)
    return GO_ON
