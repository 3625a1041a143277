"""The one stop policy: each moment's question, the order of its limits, and the words a stop is recorded with."""

from __future__ import annotations

from rocmbuild.errors import Outcome
from rocmbuild.process.stoppolicy import (
    GO_ON,
    Act,
    Due,
    Ended,
    Next,
    Running,
    after_attempt,
    before_attempt,
    during_attempt,
    verdict_due,
)


def test_a_running_attempt_stops_for_an_interrupt_then_the_budget_then_a_stall() -> None:
    every = Running(interrupted=True, budget_left_s=-1.0, quiet_s=60.0, stall_timeout_s=30.0)
    assert during_attempt(every).ended == "interrupted"
    assert during_attempt(Running(interrupted=False, budget_left_s=0.0, quiet_s=60.0, stall_timeout_s=30.0)).ended \
        == "budget"
    stalled = during_attempt(Running(interrupted=False, budget_left_s=5.0, quiet_s=30.0, stall_timeout_s=30.0))
    assert (stalled.act, stalled.ended) == (Act.STOP_ATTEMPT, "stalled")
    assert during_attempt(Running(interrupted=False, budget_left_s=5.0, quiet_s=29.9, stall_timeout_s=30.0)) == GO_ON
    assert during_attempt(Running(interrupted=False, quiet_s=1e9)) == GO_ON  # no budget, no stall timeout


def test_a_verdict_stops_the_attempt_once_its_wait_is_over() -> None:
    assert verdict_due(Due(stop_after_s=None, waited_s=1e9, reason="r")) == GO_ON  # go on: never stops
    assert verdict_due(Due(stop_after_s=180.0, waited_s=179.0, reason="r")) == GO_ON
    due = verdict_due(Due(stop_after_s=0.0, waited_s=0.0, reason="fail-fast: unsupported_arch"))
    assert (due.act, due.ended, due.reason) == (Act.STOP_ATTEMPT, "verdict", "fail-fast: unsupported_arch")


def test_after_an_attempt_an_interrupt_or_the_budget_stops_the_run() -> None:
    assert after_attempt(Ended(ended="interrupted")).outcome == Outcome.INTERRUPTED
    # A signal the build saw before rocmbuild did: the step exited, an interrupt is pending.
    pending = after_attempt(Ended(ended="exited", interrupted=True))
    assert (pending.act, pending.outcome, pending.reason) == (Act.STOP_RUN, Outcome.INTERRUPTED, "interrupted")
    assert after_attempt(Ended(ended="exited", succeeded=True, interrupted=True)) == GO_ON  # built is built
    budget = after_attempt(Ended(ended="budget"))
    assert (budget.outcome, budget.reason) == (Outcome.BUDGET_EXHAUSTED, "the time budget ran out during the attempt")
    assert after_attempt(Ended(ended="stalled")) == GO_ON  # the ladder decides: a stall has its own rungs
    assert after_attempt(Ended(ended="exited")) == GO_ON


def test_before_an_attempt_max_attempts_then_an_interrupt_then_the_budget() -> None:
    spent = before_attempt(Next(attempts_left=0, max_attempts=3, interrupted=True, budget_left_s=-1.0))
    assert (spent.outcome, spent.reason) == (Outcome.FAILED, "--max-attempts 3 reached")
    ladder = before_attempt(Next(attempts_left=0, max_attempts=3, remedy="reduce_jobs", stalled=True))
    assert (ladder.outcome, ladder.reason) == (Outcome.BUDGET_EXHAUSTED,
                                               "--max-attempts 3 reached (next would have been reduce_jobs)")
    interrupted = before_attempt(Next(attempts_left=1, max_attempts=3, interrupted=True, budget_left_s=-1.0))
    assert (interrupted.outcome, interrupted.reason) == (Outcome.INTERRUPTED, "interrupted")
    budget = before_attempt(Next(attempts_left=1, max_attempts=3, budget_left_s=0.0))
    assert (budget.outcome, budget.reason) == (Outcome.BUDGET_EXHAUSTED, "the time budget is spent: no new attempt")
    assert before_attempt(Next(attempts_left=1, max_attempts=3, budget_left_s=0.1)) == GO_ON
    assert not GO_ON.stops and spent.stops
