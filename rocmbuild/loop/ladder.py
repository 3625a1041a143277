"""Ladder policy: after a failed attempt, which remedy next, or stop (pure).

Policy (docs/reference-categories.md, "Remedies and the ladder"):
- take the diagnosed category's next untried remedy; when the same failure
  (same fingerprint) comes back, the next rung is taken, so it escalates;
- a different failure starts its own category's ladder;
- when a category's ladder is spent, the run stops (failed, exit 1) with a
  reason: no fall-through to remedies that cannot matter for it;
- a failure before anything compiled never gets lower_optimization or
  reduce_jobs (they change only compiles);
- non-retryable categories stop at once (not_retryable, exit 4);
- ``unknown`` stops (unrecognised, exit 3) unless --escalate-unknown, which
  uses the generic ladder (the catalogue's, passed in: clean_build ->
  uninstall_packages -> lower_optimization -> reduce_jobs);
- ``stalled`` tries its ladder (the catalogue's: reduce_jobs, swap thrash is
  the usual cause), then stops as budget_exhausted (exit 5);
- --max-attempts caps everything, and no attempt starts once the budget is spent.

A ladder may repeat a remedy (out_of_memory halves MAX_JOBS more than once):
the n-th occurrence counts as tried once it has been applied n times for
this failure.  A remedy that found nothing to do is "unavailable" and does
not spend an attempt (the session asks again without it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rocmbuild.diagnosis.catalogue import Category, RemedyName
from rocmbuild.errors import Outcome
from rocmbuild.process import stoppolicy
from rocmbuild.records.attempts import AttemptEnd

# Remedies that change only how code is compiled: pointless before anything compiled.
COMPILE_REMEDIES = frozenset({"lower_optimization", "reduce_jobs"})

# Categories that are themselves evidence of compiling (or linking) having started.
COMPILE_CATEGORIES = frozenset({
    "compiler_crash", "out_of_memory", "missing_library", "arch_mismatch", "stale_build", "unsupported_arch",
    "stalled",
})


def backoff_s(wait_number: int, base_s: float, jitter: float) -> float:
    """Seconds before the ``wait_number``-th wait_and_retry (1, 2, ...): ``base_s`` doubled each time,
    capped at 16x, plus ``jitter`` (0..1) times ``base_s / 2`` so that parallel runs do not retry in step."""
    exponential = base_s * 2 ** (max(1, wait_number) - 1)
    return max(0.0, min(exponential + jitter * base_s / 2, base_s * 16))


def compiled_anything(step: str | None, progress_done: int | None, progress_percent: float | None,
                      category: str) -> bool:
    """Whether the failed attempt got as far as compiling (decides if compile remedies can matter).

    checkout and prepare steps never compile; in the build step, ninja/CMake progress or a
    compile-stage category says it did.  A load-time or pip failure with no progress did not.
    """
    if step in ("checkout", "prepare"):
        return False
    if (progress_done or 0) > 0 or (progress_percent or 0) > 0:
        return True
    return category in COMPILE_CATEGORIES


@dataclass(frozen=True)
class FailedAttempt:
    """What the ladder needs to know about one failed attempt."""

    number: int
    ended: AttemptEnd
    category: Category
    fingerprint: str
    retryable: bool
    ladder: tuple[RemedyName, ...]  # the category's remedies from the catalogue
    remedies: tuple[RemedyName, ...] = ()  # applied after this attempt
    compiled: bool = True  # got as far as compiling (compiled_anything)
    # The category's own retryability: False where only this signature has a ladder (module-not-found's
    # install_build_requirements); when none of it could do anything, no remedy can help (exit 4).
    category_retryable: bool = True
    # An unknown the catalogue still names (a signature of category unknown: the project's own bug): no remedy of
    # ours, generic or not, can fix it, so --escalate-unknown does not run the generic ladder on it.
    named_unknown: str | None = None


def named_unknown(category: object, signature: object) -> str | None:
    """The signature of an unknown the catalogue names (a signature of category unknown), else None."""
    return signature if category == "unknown" and isinstance(signature, str) and signature else None


@dataclass(frozen=True)
class Decision:
    """Retry after ``remedy``, or stop with ``outcome``."""

    remedy: RemedyName | None
    outcome: Outcome | None
    reason: str

    @property
    def retry(self) -> bool:
        return self.outcome is None


def _stop(outcome: Outcome, reason: str) -> Decision:
    return Decision(None, outcome, reason)


def next_remedy(
    ladder: Sequence[RemedyName],
    done_for_this_failure: Mapping[str, int],
    unavailable: frozenset[str],
    generic: Sequence[RemedyName] = (),
) -> RemedyName | None:
    """The first rung not yet used as often as the ladder lists it; then the first untried ``generic`` one."""
    seen: Counter[str] = Counter()
    for remedy in ladder:
        seen[remedy] += 1
        if remedy not in unavailable and done_for_this_failure.get(remedy, 0) < seen[remedy]:
            return remedy
    for remedy in generic:
        if remedy not in unavailable and remedy not in done_for_this_failure:
            return remedy
    return None


def decide(
    history: Sequence[FailedAttempt],
    *,
    max_attempts: int,
    escalate_unknown: bool = False,
    generic_ladder: Sequence[RemedyName] = (),
    budget_left_s: float | None = None,
    unavailable: frozenset[str] = frozenset(),
) -> Decision:
    """What to do after the last attempt in ``history`` failed.

    ``unavailable`` names remedies that reported "not applicable" for this
    failure, so that the ladder moves past them; ``generic_ladder`` is the
    catalogue's ladder for unrecognised failures (used with ``escalate_unknown``).
    A stall's ladder is the attempt's own (the catalogue's ``stalled`` remedies).
    """
    last = history[-1]
    if not last.compiled:
        unavailable = unavailable | COMPILE_REMEDIES
    ended = stoppolicy.after_attempt(stoppolicy.Ended(ended=last.ended))  # an interrupt, the budget
    if ended.outcome is not None:
        return _stop(ended.outcome, ended.reason)
    done: Counter[str] = Counter()
    for attempt in history[:-1]:
        if attempt.fingerprint == last.fingerprint:
            done.update(attempt.remedies)
    if last.ended == "stalled" or last.category == "stalled":
        remedy = next_remedy(last.ladder, done, unavailable)
        if remedy is None:
            return _stop(Outcome.BUDGET_EXHAUSTED,
                         "the build stalled again after reducing jobs" if done.get("reduce_jobs")
                         else "the build stalled before anything compiled: fewer jobs cannot help")
        return _gate(Decision(remedy, None, "the build stalled (no output); swap thrash is the usual cause"),
                     last, max_attempts, budget_left_s)
    if last.category == "unknown" and last.named_unknown:
        return _stop(Outcome.UNRECOGNISED, f"recognised as the project's own bug ({last.named_unknown}), which no "
                     "remedy fixes: not retried, not even with --escalate-unknown")
    if last.category == "unknown":
        if not escalate_unknown:
            return _stop(Outcome.UNRECOGNISED, "the failure is not in the catalogue; not retried "
                         "(--escalate-unknown applies the generic ladder)")
        remedy = next_remedy((), done, unavailable, generic=generic_ladder)
        reason = "unrecognised failure, generic ladder (--escalate-unknown)"
    elif not last.retryable:
        return _stop(Outcome.NOT_RETRYABLE, f"{last.category} is not something a retry can fix")
    else:
        remedy = next_remedy(last.ladder, done, unavailable)
        repeated = sum(1 for a in history[:-1] if a.fingerprint == last.fingerprint)
        reason = (f"the same {last.category} failure came back ({repeated + 1} times): escalating"
                  if repeated else f"{last.category}: first remedy of its ladder")
    if remedy is None:
        if not last.category_retryable and not any(done.values()):
            return _stop(Outcome.NOT_RETRYABLE, f"{_spent_reason(last, done, unavailable)}: no remedy can help")
        return _stop(Outcome.FAILED, _spent_reason(last, done, unavailable))
    return _gate(Decision(remedy, None, reason), last, max_attempts, budget_left_s)


def _spent_reason(last: FailedAttempt, done: Mapping[str, int], unavailable: frozenset[str]) -> str:
    """Why the ladder stops here: what was tried, and what could not apply."""
    if last.category == "unknown":
        return "every generic remedy has been tried (--escalate-unknown)"
    tried = [r for r in dict.fromkeys(last.ladder) if done.get(r)]
    skipped = [r for r in dict.fromkeys(last.ladder) if r in unavailable and not done.get(r)]
    parts = [f"the {last.category} ladder is spent"]
    if tried:
        parts.append(f"tried {', '.join(tried)}")
    if skipped:
        parts.append(f"nothing to do for {', '.join(skipped)}")
    if not last.compiled:
        parts.append("the failure came before anything compiled, so lowering -O or jobs cannot help")
    return "; ".join(parts)


def _gate(decision: Decision, last: FailedAttempt, max_attempts: int, budget_left_s: float | None) -> Decision:
    """Caps that apply to any retry: the stop policy's, before an attempt (--max-attempts, the budget)."""
    stop = stoppolicy.before_attempt(stoppolicy.Next(
        attempts_left=max_attempts - last.number, max_attempts=max_attempts, budget_left_s=budget_left_s,
        remedy=decision.remedy, stalled=last.ended == "stalled"))
    if stop.outcome is not None:
        return _stop(stop.outcome, stop.reason)
    return decision
