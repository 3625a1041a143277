"""One recipe's ladder loop: attempts, diagnoses, remedies, records (the heart of a build).

``BuildSession.run`` drives attempts with one plain loop: attempt, decide,
wait (``ladder.backoff_s``, slept through the context's services, so tests
never wait), attempt again.  One turn of the loop is a pipeline of values::

    BuildPlan --attempt_requests--> AttemptRequest(s) --services.attempt--> AttemptOutcome
      --_diagnose / _verify_artifacts--> Diagnosis | None --ladder.decide--> Decision
      --remedy--> RemedyResult (next plan + effects) --effects applied--> applied or not
      --> AttemptRecord, written once; plan_after_attempt + the remedy's plan = the next BuildPlan

Everything but the plan and the recorder comes from the frozen ``RunContext``
(context.py): limits, policy switches, streams, services, catalogue, deadline, cache.
"""

from __future__ import annotations

import random
import shutil
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rocmbuild.checks.checklist import after_prepare_command
from rocmbuild.diagnosis.catalogue import RemedyName
from rocmbuild.diagnosis.classifier import Classifier, Diagnosis
from rocmbuild.errors import Outcome
from rocmbuild.loop import effects
from rocmbuild.loop.context import RunContext
from rocmbuild.loop.jobsizing import evidence
from rocmbuild.loop.ladder import FailedAttempt, backoff_s, compiled_anything, decide, named_unknown
from rocmbuild.loop.remedies import REMEDIES, RemedyContext
from rocmbuild.loop.verdict import Recognised, Standing, early_verdict
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.process import runner, stoppolicy
from rocmbuild.process.attempt import AttemptHooks, AttemptRequest
from rocmbuild.process.display import Caption, Display
from rocmbuild.process.memguard import attempt_guard, looks_killed, read_memory
from rocmbuild.process.runner import AttemptOutcome
from rocmbuild.process.sampler import ResourceSampler
from rocmbuild.process.stoppolicy import Due, Ended, Next, after_attempt, before_attempt, verdict_due
from rocmbuild.process.watcher import Progress, Watcher
from rocmbuild.records import provenance
from rocmbuild.records.attempts import AttemptRecord, RunFacts, attempt_end, iso_seconds, step_name
from rocmbuild.records.recorder import RunRecorder
from rocmbuild.records.samples import SampleLog
from rocmbuild.services import pause
from rocmbuild.toolchain.joblimit import AttemptSlots
from rocmbuild.verification import archtruth
from rocmbuild.verification.archtruth import beyond_request
from rocmbuild.verification.artifacts import ArtifactReport, Lister, verify_artifacts

if TYPE_CHECKING:
    from rocmbuild.loop import effects
    from rocmbuild.loop.ladder import Decision, FailedAttempt
    from rocmbuild.records.attempts import AttemptRecord


@dataclass(frozen=True)
class AttemptResult:
    """What one attempt produced, before the ladder decides."""

    number: int
    plan: BuildPlan  # the plan the attempt ran (plan_after_attempt makes the next one from it)
    outcome: AttemptOutcome
    diagnosis: Diagnosis | None  # None: built and verified
    checked_out: bool  # the checkout step ran and succeeded in this attempt
    cache: Mapping[str, object] | None = None
    memory: Mapping[str, object] | None = None
    provenance: Mapping[str, object] | None = None
    jobs: Mapping[str, object] | None = None  # the global job limit and what its slots saw (joblimit.py)
    # Cut short by SIGINT/SIGTERM/SIGHUP: not a failure, so no diagnosis and no rung of the ladder.
    interrupted: bool = False


def plan_after_attempt(plan: BuildPlan, outcome: AttemptOutcome, checked_out: bool) -> BuildPlan:
    """The plan the next attempt starts from, before any remedy (pure).

    A checkout that succeeded is not run again; prepare ran to completion only if the attempt got
    past it (a success, or a failure in build or verify): a failed checkout or prepare runs again.
    """
    if checked_out:
        plan = replace(plan, checkout=())
    if outcome.succeeded or (outcome.step is not None and outcome.step.name in ("build", "verify")):
        plan = replace(plan, run_prepare=False)
    return plan


def attempt_steps(plan: BuildPlan) -> tuple[runner.Step, ...]:
    """The steps of one attempt in the source tree: prepare (when due), build, verify (pure)."""
    steps: list[runner.Step] = []
    if plan.run_prepare and plan.recipe.steps.prepare:
        steps += [runner.Step("prepare", c) for c in plan.recipe.steps.prepare]
        # Modules a prepare step installs are checked once it ran, not refused before.

        if (check := after_prepare_command(plan)) is not None:
            steps.append(runner.Step("prepare", check))
    steps += [runner.Step("build", c) for c in plan.recipe.steps.build]
    steps += [runner.Step("verify", c) for c in plan.recipe.steps.verify]
    return tuple(steps)


def attempt_requests(plan: BuildPlan, log: Path, limits: runner.Limits) -> tuple[AttemptRequest | None,
                                                                                  AttemptRequest]:
    """What the PTY engine runs for one attempt (pure): the checkout from the workspace when the plan
    has one, then the steps in the source tree; both logged to ``log``, both in the tree's cgroup."""
    checkout = AttemptRequest(tuple(runner.Step("checkout", c) for c in plan.checkout), cwd=plan.source.parent,
                              env=plan.env, log_path=log, limits=limits, tree=plan.source) if plan.checkout else None
    steps = AttemptRequest(attempt_steps(plan), cwd=plan.source, env=plan.env, log_path=log, limits=limits,
                           tree=plan.source)
    return checkout, steps


def _progress_json(progress: Progress | None) -> dict[str, object] | None:
    if progress is None:
        return None
    return {"done": progress.done, "total": progress.total, "percent": progress.percent, "phase": progress.phase}


@dataclass
class _LoopState:
    plan: BuildPlan
    history: list[FailedAttempt] = field(default_factory=list)
    waits: int = 0
    outcome: Outcome | None = None
    reason: str = ""
    last_decision: Decision | None = None


class BuildSession:
    """Runs one recipe's plan through the ladder loop, recording everything."""

    def __init__(self, plan: BuildPlan, ctx: RunContext, recorder: RunRecorder, *,
                 history: tuple[FailedAttempt, ...] = (), number_offset: int = 0, uncounted: int = 0) -> None:
        self.ctx = ctx
        self.rec = recorder
        self.state = _LoopState(plan, list(history))
        # The running attempt's verdict: (fingerprint, first seen (monotonic), stop after s, reason).
        self._verdict: tuple[str, float, float | None, str] | None = None
        self._artifact_warnings: list[str] = []  # the last verification's (a later one replaces them)
        # `rocmbuild resume` (commands/resumestate.py): attempts recorded but not in the ladder's history (a killed one)
        self.number_offset = number_offset
        # ... of which this many were cut short by an interrupt: numbered, but not spent of --max-attempts
        self.uncounted = uncounted

    # -- helpers
    def say(self, text: str) -> None:
        self.ctx.say(text)

    def _sleep(self, seconds: float) -> None:
        """Interruptible, budget-aware sleep through the injected sleep."""
        left = self.ctx.budget_left()
        if left is not None:
            seconds = min(seconds, max(0.0, left))
        pause(seconds, sleep=self.ctx.services.sleep, interrupted=self.ctx.interrupted)

    def _wait(self) -> float:
        decision = self.state.last_decision
        if decision is None or decision.remedy != "wait_and_retry":
            return 0.0
        self.state.waits += 1

        seconds = backoff_s(self.state.waits, self.ctx.limits.backoff_s, random.random())
        self.rec.event("retry.waiting", seconds=round(seconds, 1), reason="transient failure, backing off")
        self.say(f"waiting {seconds:.0f}s before retrying (transient failure)")
        return seconds

    # -- the loop
    def run(self) -> tuple[Outcome, int]:
        # A resumed run has attempts behind it: --max-attempts counts them too.
        max_attempts = self.ctx.limits.max_attempts
        left = max(1, max_attempts - len(self.state.history) - (self.number_offset - self.uncounted))
        while True:
            # The stop policy before each attempt: its cap here is a safety net behind the ladder's.
            stop = before_attempt(Next(attempts_left=left, max_attempts=max_attempts,
                                       interrupted=self.ctx.interrupted(), budget_left_s=self.ctx.budget_left()))
            if stop.outcome is not None:
                self.state.outcome, self.state.reason = stop.outcome, stop.reason
                break
            left -= 1
            if not self.attempt():
                break
            seconds = self._wait() if left > 0 else 0.0  # no wait for an attempt that will not start
            if seconds > 0:
                self._sleep(seconds)
        assert self.state.outcome is not None
        return self.state.outcome, self.state.outcome.exit_code

    def attempt(self) -> bool:
        """One attempt, its diagnosis and the remedy for the next; True = retry."""
        state = self.state
        number = len(state.history) + 1 + self.number_offset
        result = self._run_attempt(number, state.plan)
        state.plan = plan_after_attempt(result.plan, result.outcome, result.checked_out)
        outcome, diagnosis = result.outcome, result.diagnosis
        if result.interrupted:
            return self._cut_short(result)
        if diagnosis is None:
            self.rec.event("attempt.finished", attempt=number, ended=outcome.ended, exit_code=outcome.exit_code,
                           duration_s=round(outcome.duration_s, 3), succeeded=True)
            self.rec.add_attempt(self._attempt_record(result, remedies=()))
            state.outcome, state.reason = Outcome.SUCCEEDED, "built and verified"
            return False
        self.rec.event("attempt.finished", attempt=number, ended=outcome.ended, exit_code=outcome.exit_code,
                       duration_s=round(outcome.duration_s, 3), succeeded=False,
                       stopped_early=outcome.stopped_early)
        self.rec.event("failure.diagnosed", attempt=number, **diagnosis.to_json(),
                       fingerprint=diagnosis.fingerprint(),
                       runners_up=[str(r) for r in diagnosis.runners_up][:5])
        where = f" at line {diagnosis.line}" if diagnosis.line is not None else ""  # a verification has no line
        self.say(f"attempt {number} failed: {diagnosis.category}" + (f"{where}: {diagnosis.text}" if diagnosis.text
                                                                     else ""))
        progress = outcome.progress
        # The ladder's modules are imported at the first failure: a build that succeeds never needs them.

        state.history.append(FailedAttempt(
            number=number, ended=attempt_end(outcome.ended), category=diagnosis.category,
            fingerprint=diagnosis.fingerprint(), retryable=diagnosis.retryable, ladder=diagnosis.remedies,
            category_retryable=self.ctx.catalogue.category(diagnosis.category).retryable,
            named_unknown=named_unknown(diagnosis.category, diagnosis.signature),
            compiled=compiled_anything(outcome.step.name if outcome.step else None,
                                       progress.done if progress else None,
                                       progress.percent if progress else None, diagnosis.category),
        ))
        retry = self._next(diagnosis)
        # Written once the ladder has decided: the record holds the remedies applied after it.
        self.rec.add_attempt(self._attempt_record(result, remedies=state.history[-1].remedies))
        return retry

    def _cut_short(self, result: AttemptResult) -> bool:
        """An attempt stopped by an interrupt: recorded as ``interrupted``, never diagnosed, no remedy.

        The plan it leaves (prepare done or not, the checkout done) is recorded as ``plan.changed``
        with no remedy, so ``rocmbuild resume`` continues the same rung with the same environment.
        """
        state, outcome = self.state, result.outcome
        self.rec.event("attempt.finished", attempt=result.number, ended="interrupted", exit_code=outcome.exit_code,
                       duration_s=round(outcome.duration_s, 3), succeeded=False)
        self.rec.event("plan.changed", env=state.plan.env_set, jobs=state.plan.jobs, prepare=state.plan.run_prepare,
                       opt_level=state.plan.opt_level, arch=list(state.plan.archs), remedy=None)
        self.rec.add_attempt(replace(self._attempt_record(result, remedies=()), ended="interrupted"))
        state.outcome, state.reason = Outcome.INTERRUPTED, stoppolicy.INTERRUPTED
        return False

    def _next(self, diagnosis: Diagnosis) -> bool:
        state = self.state
        unavailable: set[str] = set()

        while True:
            decision = decide(state.history, max_attempts=self.ctx.limits.max_attempts,
                              escalate_unknown=self.ctx.policy.escalate_unknown,
                              generic_ladder=self.ctx.catalogue.generic_ladder(),
                              budget_left_s=self.ctx.budget_left(), unavailable=frozenset(unavailable))
            state.last_decision = decision
            if not decision.retry:
                state.outcome, state.reason = decision.outcome, decision.reason
                return False
            assert decision.remedy is not None
            result = self._apply(decision.remedy, diagnosis)
            if result.applied:
                break
            unavailable.add(decision.remedy)
        state.plan = result.plan
        # Where the plan stands after the remedy, so `rocmbuild resume` can continue from here.
        self.rec.event("plan.changed", env=state.plan.env_set, jobs=state.plan.jobs,
                       prepare=state.plan.run_prepare, opt_level=state.plan.opt_level, arch=list(state.plan.archs),
                       remedy=decision.remedy)
        last = state.history[-1]
        state.history[-1] = replace(last, remedies=(*last.remedies, decision.remedy))
        return True

    def _apply(self, name: str, diagnosis: Diagnosis) -> effects.Applied:
        """The remedy decides (pure or read-only), the one executor carries its effects out, then the record."""

        plan = self.state.plan
        ctx = RemedyContext(run=self.ctx.services.run, cache_in_use=self.ctx.cache is not None,
                            detect_archs=self.ctx.services.detect_arch)
        result = effects.carry_out(REMEDIES[name](plan, diagnosis, ctx), source=plan.source,
                                   run=self.ctx.services.run)
        if result.applied:
            self.rec.event("remedy.applied", remedy=name, detail=result.detail, removed=list(result.removed))
            self.say(f"remedy {name}: {result.detail}")
        else:
            self.rec.event("remedy.skipped", remedy=name, detail=result.detail)
            self.say(f"remedy {name} does not apply: {result.detail}")
        effects.record(self.rec, result, plan.source)
        if result.warning:
            self.rec.event("remedy.warning", remedy=name, message=result.warning)
            self.say(f"note: {result.warning}")
        return result

    # -- one attempt
    def _stop_check(self, classifier: Classifier, watcher: Watcher | None = None) -> str | None:
        """Why to stop the attempt now, or None: the ladder's verdict on the failure recognised so far
        (verdict.py).  Asked whenever the log moves and on every tick while it does not."""
        # --fail-fast stops at the first recognised failure, a named unknown (the project's own bug) included
        current = classifier.current(named=self.ctx.policy.fail_fast)
        if current is None:
            return None
        fingerprint = current.fingerprint()
        now = time.monotonic()
        if self._verdict is None or self._verdict[0] != fingerprint:
            progress = watcher.furthest if watcher is not None else None
            unavailable: set[str] = set()
            while True:
                verdict = early_verdict(Recognised(
                    category=current.category, text=current.text or "", fingerprint=fingerprint,
                    named=named_unknown(current.category, current.signature),
                    retryable=current.retryable, ladder=current.remedies,
                    category_retryable=self.ctx.catalogue.category(current.category).retryable,
                    decisive=current.category in self.ctx.catalogue.decisive_categories(),
                    progress_done=progress.done if progress else None,
                    progress_percent=progress.percent if progress else None,
                ), Standing(
                    history=self.state.history, number=len(self.state.history) + 1 + self.number_offset,
                    max_attempts=self.ctx.limits.max_attempts, fail_fast=self.ctx.policy.fail_fast,
                    cache_on=self.ctx.cache is not None, generic_ladder=self.ctx.catalogue.generic_ladder(),
                    unavailable=frozenset(unavailable)))
                # A remedy whose own (read-only) decision is "nothing to do" (a library that is nowhere)
                # will not be the next rung: ask the ladder again without it, as _next will.
                if verdict.remedy is None or verdict.remedy in unavailable or self._applies(verdict.remedy, current):
                    break
                unavailable.add(verdict.remedy)
            self._verdict = (fingerprint, now, verdict.stop_after_s, verdict.reason)
        _, seen, after, reason = self._verdict
        due = verdict_due(Due(stop_after_s=after, waited_s=now - seen, reason=reason))
        return due.reason if due.stops else None

    def _applies(self, name: str, diagnosis: Diagnosis) -> bool:
        """A remedy's own decision, without its effects (remedies are pure or read-only)."""
        ctx = RemedyContext(run=self.ctx.services.run, cache_in_use=self.ctx.cache is not None,
                            detect_archs=self.ctx.services.detect_arch)
        try:
            return REMEDIES[name](self.state.plan, diagnosis, ctx).applied
        except Exception:  # a verdict must never break the attempt: the ladder decides after it anyway
            return True

    def _run_attempt(self, number: int, plan: BuildPlan) -> AttemptResult:

        ctx = self.ctx
        log = self.rec.attempt_log(number)
        self.rec.event("attempt.started", attempt=number, env=plan.env_set,
                       prepare=plan.run_prepare, jobs=plan.jobs, arch=list(plan.archs))
        self.say(f"attempt {number}/{ctx.limits.max_attempts}: {plan.recipe.name} in {plan.source} "
                 f"(MAX_JOBS={plan.jobs}, arch {';'.join(plan.archs)})")
        if ctx.cache is not None:
            ctx.cache.zero(plan.env)
        # A build that found its ROCm runs on a ROCm host: readings that hold only there need no proof in the log.
        classifier = Classifier(ctx.catalogue, host="rocm" if plan.rocm is not None else "",
                                rocm_version=plan.rocm_version or "")
        watcher = Watcher(classifier)
        self._verdict = None
        memory = attempt_guard(ctx.limits.memory_reserve, self.rec, number)
        slots = AttemptSlots(self.rec.run_dir, number, plan.jobs)  # every compile takes one (launcher.py)
        # The guard and, around it, the samples the HTML report draws (records/samples.py).
        sampler = ResourceSampler(SampleLog(self.rec.run_dir).add, number, watcher,
                                  memory.guard if memory is not None else None)
        limits = runner.Limits(stall_timeout_s=ctx.limits.stall_timeout_s, deadline=ctx.deadline,
                               monitor=sampler)
        stream = ctx.streams.err if ctx.console.json else sys.stdout
        checked_out = False
        caption = Caption(attempt=number, max_attempts=ctx.limits.max_attempts, recipe=plan.recipe.name)
        with Display(stream, mode=ctx.console.verbosity, caption=caption) as display:
            hooks = AttemptHooks(watcher=watcher, display=display,
                                 stop_check=lambda: self._stop_check(classifier, watcher), interrupted=ctx.interrupted)
            checkout, steps = attempt_requests(plan, log, limits)
            # The slot dir is per attempt, so not in the plan (nor in repro.sh, where the launcher just runs).
            steps = replace(steps, env={**steps.env, **slots.env})
            checkout = replace(checkout, env={**checkout.env, **slots.env}) if checkout is not None else None
            outcome = None
            if checkout is not None:
                checkout.cwd.mkdir(parents=True, exist_ok=True)
                outcome = ctx.services.attempt(checkout, hooks)
                checked_out = outcome.succeeded
            if outcome is None or outcome.succeeded:
                self._materialise_bundled_source(plan)
                outcome = ctx.services.attempt(steps, hooks)
        watcher.close()
        cache_stats = self._cache_stats(number, plan)
        jobs = slots.finish(time.time())  # the limit in force, the peak concurrency the slots saw
        self._write_repro(number, plan, outcome)
        # The signal may reach the build's processes too (a scheduler signals the whole job): whatever the
        # step did on its way down, an attempt that did not succeed while an interrupt is pending was cut.
        ended = after_attempt(Ended(ended=outcome.ended, succeeded=outcome.succeeded, interrupted=ctx.interrupted()))
        if ended.outcome is Outcome.INTERRUPTED:  # cut short: never diagnosed (the budget's end is, first)
            memory_figures = memory.finish(killed=False, compiles=slots.compiles) if memory is not None else None
            return AttemptResult(number=number, plan=plan, outcome=outcome, diagnosis=None, checked_out=checked_out,
                                 cache=cache_stats, memory=memory_figures, jobs=jobs, interrupted=True)
        diagnosis = self._verify_artifacts(plan, log) if outcome.succeeded else self._diagnose(outcome, classifier)
        memory_figures = None
        if memory is not None:  # the guard's figures, the peak per job, an OOM kill confirmed or not
            memory_figures = memory.finish(killed=diagnosis is not None and looks_killed(
                outcome.signal, outcome.exit_code, diagnosis.category, diagnosis.text), compiles=slots.compiles)
            diagnosis = with_memory(diagnosis, memory_figures)
        return AttemptResult(number=number, plan=plan, outcome=outcome, diagnosis=diagnosis, checked_out=checked_out,
                             cache=cache_stats, memory=memory_figures, provenance=self._provenance(plan, outcome),
                             jobs=jobs)

    def _cache_stats(self, number: int, plan: BuildPlan) -> dict[str, object] | None:
        cache = self.ctx.cache
        if cache is None:
            return None
        stats = cache.stats(plan.env)
        if stats is None:
            return None
        if number > 1 and stats.misses and stats.hit_rate == 0:
            message = (f"attempt {number} was a retry but got 0% compiler-cache hits "
                       f"({stats.misses} misses): flags or paths changed, or the cache is not reached")
            self.rec.event("cache.warning", attempt=number, message=message)
            self.say(f"note: {message}")
        return stats.to_json()

    def _materialise_bundled_source(self, plan: BuildPlan) -> None:
        bundled = plan.bundled_copy
        if bundled is not None and not plan.source.exists():
            shutil.copytree(bundled, plan.source, symlinks=True)
            self.rec.event("source.copied", origin=str(bundled), source=str(plan.source))

    def _diagnose(self, outcome: AttemptOutcome, classifier: Classifier) -> Diagnosis:
        exit_status = outcome.exit_code if outcome.exit_code is not None else (
            -outcome.signal if outcome.signal else None)
        diagnosis = classifier.finish(exit_status=exit_status)
        if outcome.ended == "stalled":
            return Diagnosis.simple(
                "stalled", "runner-stall", text=f"no output for {self.ctx.limits.stall_timeout_s:g}s "
                f"(step {outcome.step.name if outcome.step else '?'}); process tree snapshot in the log",
                retryable=True, remedies=self.ctx.catalogue.stall_ladder())
        return diagnosis

    def _verify_artifacts(self, plan: BuildPlan, log: Path) -> Diagnosis | None:
        if not plan.recipe.verify_artifacts:
            return None

        report = verify_artifacts(plan.source, plan.recipe.verify_artifacts, plan.targets, Lister(
                                  env=plan.env, llvm_bin=Path(plan.tools_llvm_bin) if plan.tools_llvm_bin else None))
        self.rec.event("artifacts.verified", ok=report.ok, detail=report.describe())
        # The code objects are a fact of the result: on the console and in summary.json, not only in events.
        self.rec.journal = replace(self.rec.journal, code_objects=code_objects_json(report))
        self.say(f"code objects: {report.describe()}")
        # What an earlier attempt's artifacts carried (stale gfx objects a clean then removed) is no longer
        # true: only the latest verification's warnings stay.
        current = beyond_request(report)
        stale = [w for w in self._artifact_warnings if w not in current]
        if stale:
            self.rec.journal = self.rec.journal.with_warnings(
                tuple(w for w in self.rec.journal.warnings or () if w not in stale))
        self._artifact_warnings = current
        self._warn(current)
        with log.open("ab") as handle:
            handle.write(f"==> rocmbuild verify artifacts: {report.describe()}\n".encode())
        problem = report.problem_line()
        if problem is None:
            return None
        return Diagnosis.simple("arch_mismatch", "artifact-missing-arch", text=problem,
                                fields=report.problem_fields(), retryable=True,
                                remedies=self.ctx.catalogue.category("arch_mismatch").remedies)

    def _provenance(self, plan: BuildPlan, outcome: AttemptOutcome) -> dict[str, object]:
        """Issue 17 (additive summary fields): the attempt's provenance; configure-time arch downgrades warned."""

        compiler = plan.hip_compiler.path if plan.hip_compiler else plan.rocm_hipcc
        tools = provenance.Tools(python=plan.python or "python3", rocm_version=plan.rocm_version, hip_compiler=compiler)
        collected = provenance.collect(source=plan.source, log=Path(outcome.log), env=plan.env, tools=tools,
                                       run=self.ctx.services.run)
        self._warn(archtruth.downgrades_in_log(Path(outcome.log)))
        return collected

    def _warn(self, messages: list[str]) -> None:
        """Warnings in summary.json's ``warnings`` (each once), an event and a console line each."""
        known = list(self.rec.journal.warnings or ())
        for message in messages:
            if message not in known:
                known.append(message)
                self.rec.event("build.warning", message=message)
                self.say(f"warning: {message}")
        self.rec.journal = self.rec.journal.with_warnings(tuple(known))

    def _write_repro(self, number: int, plan: BuildPlan, outcome: AttemptOutcome) -> None:
        # The failing step; after a success, the build step (the one worth re-running by hand).
        builds = [s for s in attempt_steps(plan) if s.name == "build"]
        step = outcome.step or (builds[-1] if builds else None)
        if step is None:
            return
        cwd = plan.source.parent if step.name == "checkout" else plan.source
        self.rec.write_repro(cwd=cwd, env_set=plan.env_set, command=step.command, step=step.name, attempt=number)

    @staticmethod
    def _attempt_record(result: AttemptResult, remedies: tuple[RemedyName, ...]) -> AttemptRecord:

        outcome, diagnosis = result.outcome, result.diagnosis
        summary = diagnosis.summary_json() if diagnosis is not None else None
        oom = (result.memory or {}).get("oom")
        if summary is not None and isinstance(oom, Mapping):
            summary["oom"] = oom["status"]  # "confirmed" / "unconfirmed" (additive)
        return AttemptRecord(
            number=result.number, started=iso_seconds(outcome.started), duration_s=round(outcome.duration_s, 3),
            ended=attempt_end(outcome.ended), exit_code=outcome.exit_code, log=outcome.log.name,
            env=result.plan.env_set, diagnosis=summary, remedies=remedies,
            step=step_name(outcome.step.name) if outcome.step else None,
            ran=RunFacts(outcome.signal, outcome.stopped_early, _progress_json(outcome.progress), outcome.lines_seen),
            cache=result.cache, memory=result.memory, provenance=result.provenance, jobs=result.jobs)


def code_objects_json(report: ArtifactReport) -> dict[str, object]:
    """summary.json's ``code_objects``: what the last verification found, per artifact."""
    return {"ok": report.ok, "requested": list(report.archs), "detail": report.describe(),
            "artifacts": [{"file": c.name, "archs": list(c.archs), "missing": list(c.missing),
                           "readable": c.listing.readable} for c in report.artifacts],
            "unmatched": list(report.unmatched)}


def with_memory(diagnosis: Diagnosis | None, memory: Mapping[str, object]) -> Diagnosis | None:
    """The diagnosis with what the attempt measured about memory, for reduce_jobs (jobsizing.py)."""
    if diagnosis is None:
        return None

    return replace(diagnosis, memory=evidence(diagnosis.category, memory, read_memory().available))
