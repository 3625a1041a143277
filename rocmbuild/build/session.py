"""One recipe's ladder loop: attempts, diagnoses, remedies, records (the heart of a build).

``BuildSession.run`` drives attempts with one plain loop: attempt, decide,
wait (``ladder.backoff_s``, slept through Services' sleep, so tests never
wait), attempt again.  Each attempt runs the plan's steps
through the runner with a watcher and the live classifier, verifies the
artifacts after a success, and turns a failure into a Diagnosis; the pure
ladder decides the next remedy, which turns this plan into the next.
"""

from __future__ import annotations

import random
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC
from pathlib import Path
from typing import Any

from rocmbuild.process import runner
from rocmbuild.diagnosis.catalogue import Catalogue
from rocmbuild.build.checklist import after_prepare_command
from rocmbuild.diagnosis.classifier import Classifier, Diagnosis
from rocmbuild.errors import Outcome
from rocmbuild.build.ladder import Decision, FailedAttempt, backoff_s, compiled_anything, decide
from rocmbuild.options import BuildOptions
from rocmbuild.build.plan import BuildPlan
from rocmbuild.records.recorder import RunRecorder
from rocmbuild.build.remedies import REMEDIES, RemedyContext, RemedyResult
from rocmbuild.services import Services, Streams, pause

# Besides every non-retryable failure (docs/design.md: "a non-retryable one always stops it at
# once"), failures decisive enough to stop the build the moment they are seen, even without
# --fail-fast: nothing that keeps compiling can change the verdict.
DECISIVE_CATEGORIES = frozenset({"unsupported_arch", "disk_full"})


@dataclass
class _LoopState:
    plan: BuildPlan
    history: list[FailedAttempt] = field(default_factory=list)
    waits: int = 0
    outcome: str | None = None
    reason: str = ""
    last_decision: Decision | None = None


class BuildSession:
    """Runs one recipe's plan through the ladder loop, recording everything."""

    def __init__(self, plan: BuildPlan, options: BuildOptions, recorder: RunRecorder, streams: Streams,
                 services: Services, catalogue: Catalogue, interrupted: Callable[[], bool],
                 deadline: float | None, cache: Any = None) -> None:
        self.options = options
        self.rec = recorder
        self.streams = streams
        self.services = services
        self.catalogue = catalogue
        self.interrupted = interrupted
        self.deadline = deadline
        self.cache = cache
        self.state = _LoopState(plan)
        # `rocmbuild resume` (resume.py): attempts recorded but not in the ladder's history (a killed one)
        self.number_offset = 0
        self.memory: Any = None  # this attempt's memory guard (memguard.AttemptMemory), None when off

    # -- helpers
    def budget_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def say(self, text: str) -> None:
        if self.options.verbosity != "quiet" or text.startswith("rocmbuild: error"):
            self.streams.err.write(f"rocmbuild: {text}\n")
            self.streams.err.flush()

    def _sleep(self, seconds: float) -> None:
        """Interruptible, budget-aware sleep through the injected sleep."""
        left = self.budget_left()
        if left is not None:
            seconds = min(seconds, max(0.0, left))
        pause(seconds, sleep=self.services.sleep, interrupted=self.interrupted)

    def _wait(self) -> float:
        decision = self.state.last_decision
        if decision is None or decision.remedy != "wait_and_retry":
            return 0.0
        self.state.waits += 1
        seconds = backoff_s(self.state.waits, self.options.backoff_s, random.random())
        self.rec.event("retry.waiting", seconds=round(seconds, 1), reason="transient failure, backing off")
        self.say(f"waiting {seconds:.0f}s before retrying (transient failure)")
        return seconds

    # -- the loop
    def run(self) -> tuple[str, int]:
        # A resumed run has attempts behind it: --max-attempts counts them too.
        allowed = max(1, self.options.max_attempts - len(self.state.history) - self.number_offset)
        for number in range(1, allowed + 1):
            if not self.attempt() or number == allowed:
                break
            seconds = self._wait()
            if seconds > 0:
                self._sleep(seconds)
        if self.state.outcome is None:  # the loop's own cap (a safety net behind the ladder's)
            self.state.outcome = Outcome.FAILED
            self.state.reason = f"--max-attempts {self.options.max_attempts} reached"
        return self.state.outcome, Outcome.EXIT_CODES[self.state.outcome]

    def attempt(self) -> bool:
        """One attempt, its diagnosis and the remedy for the next; True = retry."""
        state = self.state
        plan = state.plan
        if self.interrupted():
            state.outcome, state.reason = Outcome.INTERRUPTED, "interrupted"
            return False
        left = self.budget_left()
        if left is not None and left <= 0:
            state.outcome, state.reason = Outcome.BUDGET_EXHAUSTED, "the time budget is spent: no new attempt"
            return False
        number = len(state.history) + 1 + self.number_offset
        outcome, diagnosis, cache_stats = self._run_attempt(number, plan)
        record = self._attempt_record(number, plan, outcome, diagnosis, cache_stats)
        self._annotate(plan, outcome, record)
        self.rec.add_attempt(record)
        if diagnosis is None:
            self.rec.event("attempt.finished", attempt=number, ended=outcome.ended, exit_code=outcome.exit_code,
                           duration_s=round(outcome.duration_s, 3), succeeded=True)
            state.outcome, state.reason = Outcome.SUCCEEDED, "built and verified"
            return False
        self.rec.event("attempt.finished", attempt=number, ended=outcome.ended, exit_code=outcome.exit_code,
                       duration_s=round(outcome.duration_s, 3), succeeded=False,
                       stopped_early=outcome.stopped_early)
        self.rec.event("failure.diagnosed", attempt=number, **diagnosis.to_json(),
                       fingerprint=diagnosis.fingerprint(),
                       runners_up=[str(r) for r in diagnosis.runners_up][:5])
        self.say(f"attempt {number} failed: {diagnosis.category}"
                 + (f" at line {diagnosis.line}: {diagnosis.text}" if diagnosis.text else ""))
        progress = outcome.progress
        state.history.append(FailedAttempt(
            number=number, ended=outcome.ended, category=diagnosis.category,
            fingerprint=diagnosis.fingerprint(), retryable=diagnosis.retryable, ladder=diagnosis.remedies,
            compiled=compiled_anything(outcome.step.name if outcome.step else None,
                                       progress.done if progress else None,
                                       progress.percent if progress else None, diagnosis.category),
        ))
        return self._next(diagnosis)

    def _next(self, diagnosis: Diagnosis) -> bool:
        state = self.state
        unavailable: set[str] = set()
        while True:
            decision = decide(state.history, max_attempts=self.options.max_attempts,
                              escalate_unknown=self.options.escalate_unknown,
                              budget_left_s=self.budget_left(), unavailable=frozenset(unavailable))
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
                       prepare=state.plan.run_prepare, opt_level=state.plan.opt_level, remedy=decision.remedy)
        last = state.history[-1]
        state.history[-1] = replace(last, remedies=(*last.remedies, decision.remedy))
        self.rec.set_remedies(list(state.history[-1].remedies))
        return True

    def _apply(self, name: str, diagnosis: Diagnosis) -> RemedyResult:
        ctx = RemedyContext(run=self.services.run, cache_in_use=self.cache is not None,
                            detect_archs=self.services.detect_arch)
        result = REMEDIES[name](self.state.plan, diagnosis, ctx)
        if result.applied:
            self.rec.event("remedy.applied", remedy=name, detail=result.detail, removed=list(result.removed))
            for path in result.removed:
                self.rec.event("path.removed", remedy=name, path=str(self.state.plan.source / path))
            self.say(f"remedy {name}: {result.detail}")
        else:
            self.rec.event("remedy.skipped", remedy=name, detail=result.detail)
            self.say(f"remedy {name} does not apply: {result.detail}")
        for refusal in result.refused:  # a clean that would leave the tree (symlink, mount point) says so
            self.rec.event("path.refused", remedy=name, path=refusal)
        if result.warning:
            self.rec.event("remedy.warning", remedy=name, message=result.warning)
            self.say(f"note: {result.warning}")
        return result

    # -- one attempt
    def _steps(self, plan: BuildPlan) -> list[runner.Step]:
        steps = []
        if plan.run_prepare:
            steps += [runner.Step("prepare", c) for c in plan.recipe.steps.prepare]
            # Modules a prepare step installs are checked once it ran (issue 12), not refused before.
            if (check := after_prepare_command(plan)) is not None:
                steps.append(runner.Step("prepare", check))
        steps += [runner.Step("build", c) for c in plan.recipe.steps.build]
        steps += [runner.Step("verify", c) for c in plan.recipe.steps.verify]
        return steps

    def _run_attempt(self, number: int, plan: BuildPlan) -> tuple[Any, Diagnosis | None, Any]:
        from rocmbuild.process.display import Display
        from rocmbuild.process.watcher import Watcher

        log = self.rec.attempt_log(number)
        self.rec.event("attempt.started", attempt=number, env=plan.env_set,
                       prepare=plan.run_prepare, jobs=plan.jobs)
        self.say(f"attempt {number}/{self.options.max_attempts}: {plan.recipe.name} in {plan.source} "
                 f"(MAX_JOBS={plan.jobs}, arch {';'.join(plan.archs)})")
        if self.cache is not None:
            self.cache.zero(plan.env)
        classifier = Classifier(self.catalogue)
        watcher = Watcher(classifier)
        fail_fast = self.options.fail_fast

        def stop_check() -> str | None:
            current = classifier.current()
            if current is None or current.category == "unknown":
                return None
            if fail_fast or not current.retryable or current.category in DECISIVE_CATEGORIES:
                return f"fail-fast: {current.category} ({current.text})"
            return None

        from rocmbuild.process.memguard import attempt_guard

        self.memory = attempt_guard(self.options.memory_reserve, self.rec, number)
        limits = runner.Limits(stall_timeout_s=self.options.stall_timeout_s, deadline=self.deadline,
                               monitor=self.memory.guard if self.memory is not None else None)
        stream = self.streams.err if self.options.json else sys.stdout
        with Display(stream, mode=self.options.verbosity, attempt=number,
                     max_attempts=self.options.max_attempts, recipe=plan.recipe.name) as display:
            outcome = None
            if plan.checkout:
                plan.source.parent.mkdir(parents=True, exist_ok=True)
                outcome = self.services.attempt(
                    [runner.Step("checkout", c) for c in plan.checkout], cwd=plan.source.parent, env=plan.env,
                    log_path=log, watcher=watcher, limits=limits, display=display, stop_check=stop_check,
                    interrupted=self.interrupted, tree=plan.source)
                if outcome.succeeded:
                    plan = self.state.plan = replace(plan, checkout=())
            if outcome is None or outcome.succeeded:
                self._materialise_bundled_source(plan)
                outcome = self.services.attempt(
                    self._steps(plan), cwd=plan.source, env=plan.env, log_path=log, watcher=watcher,
                    limits=limits, display=display, stop_check=stop_check, interrupted=self.interrupted,
                    tree=plan.source)
        watcher.close()
        cache_stats = None
        if self.cache is not None:
            stats = self.cache.stats(plan.env)
            if stats is not None:
                cache_stats = stats.to_json()
                if number > 1 and stats.misses and stats.hit_rate == 0:
                    message = (f"attempt {number} was a retry but got 0% compiler-cache hits "
                               f"({stats.misses} misses): flags or paths changed, or the cache is not reached")
                    self.rec.event("cache.warning", attempt=number, message=message)
                    self.say(f"note: {message}")
        self._write_repro(number, plan, outcome)
        if outcome.succeeded:
            self.state.plan = replace(self.state.plan, run_prepare=False)
            return outcome, self._verify_artifacts(plan, log), cache_stats
        # prepare ran to completion only if the attempt got past it (a failed checkout or prepare
        # means it must run again next time).
        if outcome.step is not None and outcome.step.name in ("build", "verify"):
            self.state.plan = replace(self.state.plan, run_prepare=False)
        return outcome, self._diagnose(outcome, classifier), cache_stats

    def _materialise_bundled_source(self, plan: BuildPlan) -> None:
        bundled = plan.recipe.source_path
        if bundled is not None and self.options.source is None and not plan.source.exists():
            shutil.copytree(bundled, plan.source, symlinks=True)
            self.rec.event("source.copied", origin=str(bundled), source=str(plan.source))

    def _diagnose(self, outcome: Any, classifier: Classifier) -> Diagnosis:
        exit_status = outcome.exit_code if outcome.exit_code is not None else (
            -outcome.signal if outcome.signal else None)
        diagnosis = classifier.finish(exit_status=exit_status)
        if outcome.ended == "stalled":
            return Diagnosis.simple(
                "stalled", "runner-stall", text=f"no output for {self.options.stall_timeout_s:g}s "
                f"(step {outcome.step.name if outcome.step else '?'}); process tree snapshot in the log",
                retryable=True, remedies=("reduce_jobs",))
        return diagnosis

    def _verify_artifacts(self, plan: BuildPlan, log: Path) -> Diagnosis | None:
        if not plan.recipe.verify_artifacts:
            return None
        from rocmbuild.build.artifacts import verify_artifacts

        report = verify_artifacts(plan.source, plan.recipe.verify_artifacts, plan.targets,
                                  env=plan.env, llvm_bin=Path(plan.tools_llvm_bin) if plan.tools_llvm_bin else None)
        self.rec.event("artifacts.verified", ok=report.ok, detail=report.describe())
        from rocmbuild.build.archtruth import beyond_request

        self._warn(beyond_request(report))
        with log.open("ab") as handle:
            handle.write(f"==> rocmbuild verify artifacts: {report.describe()}\n".encode())
        problem = report.problem_line()
        if problem is None:
            return None
        ladder = self.catalogue.category_ladders().get("arch_mismatch", ("clean_build",))
        return Diagnosis.simple("arch_mismatch", "artifact-missing-arch", text=problem,
                                fields=report.problem_fields(), retryable=True, remedies=ladder)

    def _annotate(self, plan: BuildPlan, outcome: Any, record: dict[str, Any]) -> None:
        """Issue 17 (additive summary fields): the attempt's provenance, configure-time arch downgrades."""
        from rocmbuild.build import archtruth
        from rocmbuild.records import provenance

        compiler = plan.hip_compiler.path if plan.hip_compiler else plan.rocm_hipcc
        record["provenance"] = provenance.collect(
            source=plan.source, log=Path(outcome.log), python=plan.python or "python3", env=plan.env,
            rocm_version=plan.rocm_version, hip_compiler=compiler, run=self.services.run)
        self._warn(archtruth.downgrades_in_log(Path(outcome.log)))

    def _warn(self, messages: list[str]) -> None:
        """Warnings in summary.json's ``warnings`` (each once), an event and a console line each."""
        known = self.rec.extra.setdefault("warnings", [])
        for message in messages:
            if message not in known:
                known.append(message)
                self.rec.event("build.warning", message=message)
                self.say(f"warning: {message}")

    def _write_repro(self, number: int, plan: BuildPlan, outcome: Any) -> None:
        # The failing step; after a success, the build step (the one worth re-running by hand).
        builds = [s for s in self._steps(plan) if s.name == "build"]
        step = outcome.step or (builds[-1] if builds else None)
        if step is None:
            return
        cwd = plan.source.parent if step.name == "checkout" else plan.source
        self.rec.write_repro(cwd=cwd, env_set=plan.env_set, command=step.command, step=step.name, attempt=number)

    def _attempt_record(self, number: int, plan: BuildPlan, outcome: Any, diagnosis: Diagnosis | None,
                        cache_stats: Any) -> dict[str, Any]:
        record: dict[str, Any] = {
            "number": number,
            "started": outcome.started.astimezone(UTC).isoformat(timespec="seconds"),
            "duration_s": round(outcome.duration_s, 3),
            "ended": outcome.ended,
            "exit_code": outcome.exit_code,
            "log": outcome.log.name,
            "env": plan.env_set,
            "diagnosis": diagnosis.summary_json() if diagnosis is not None else None,
            "remedies": [],
            "step": outcome.step.name if outcome.step else None,
            "signal": outcome.signal,
            "stopped_early": outcome.stopped_early,
            "progress": _progress_json(outcome.progress),
            "lines": outcome.lines_seen,
        }
        if cache_stats is not None:
            record["cache"] = cache_stats
        if self.memory is not None:
            record["memory"] = self.memory.finish()  # the guard's figures and a confirmed OOM kill count
        return record


def _progress_json(progress: Any) -> dict[str, Any] | None:
    if progress is None:
        return None
    return {"done": progress.done, "total": progress.total, "percent": progress.percent, "phase": progress.phase}
