"""The workflow: load recipes, plan, preflight, run the ladder loop, report.

Everything the CLI does beyond parsing happens here, in this order:

    recipes -> host facts -> arch -> source -> environment -> plan
      (plan/--dry-run stop here)
    lock -> run dir -> preflight -> [attempt -> diagnosis -> ladder -> remedy]* -> summary

A failed attempt is a value; exceptions (RocmbuildError) mean "cannot go on"
and become exit codes in the CLI.  The attempts are driven by one tenacity
loop whose sleep is injectable, so tests never wait for backoff.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import filelock
import platformdirs
import tenacity

from rocmbuild import arch as archmod
from rocmbuild import host as hostmod
from rocmbuild import runner
from rocmbuild.catalogue import Catalogue, load_catalogue
from rocmbuild.classifier import Classifier, Diagnosis
from rocmbuild.environment import RocmDirs, base_changes, choose_jobs
from rocmbuild.errors import ExitCode, LockHeldError, Outcome, SourceError, UsageError
from rocmbuild.ladder import Decision, FailedAttempt, decide
from rocmbuild.options import BuildOptions
from rocmbuild.plan import BuildPlan, RocmSummary, render_plan
from rocmbuild.recipe import Recipe, find_recipe
from rocmbuild.records import RunRecorder, new_run_dir
from rocmbuild.remedies import REMEDIES, RemedyContext, RemedyResult
from rocmbuild.report import render_summary

# Failures decisive enough to stop the build the moment they are seen, even
# without --fail-fast: nothing that keeps compiling can change the verdict.
DECISIVE_CATEGORIES = frozenset({"unsupported_arch", "disk_full"})


@dataclass(frozen=True)
class Streams:
    """Where output goes: ``out`` gets --json objects, ``err`` human text."""

    out: TextIO
    err: TextIO


@dataclass(frozen=True)
class Services:
    """The outside world, replaceable in tests."""

    sleep: Callable[[float], None] = time.sleep
    run: Callable[..., runner.CommandResult] = runner.capture
    detect_arch: Callable[[], archmod.Detection | None] = archmod.detect_local_archs


# --- planning ---------------------------------------------------------------

def workspace_root() -> Path:
    return Path(platformdirs.user_cache_dir("rocmbuild")) / "src"


def _resolve_arch(recipe: Recipe, options: BuildOptions, environ: Mapping[str, str],
                  services: Services) -> tuple[tuple[str, ...], str, list[str]]:
    option = options.arch
    if archmod.is_auto(option):
        # A caller who exported the recipe's arch variable has already answered the question.
        for variable in recipe.arch.variables:
            if environ.get(variable, "").strip():
                resolved = archmod.ResolvedArch(archmod.parse_arch_list(environ[variable]), f"${variable}", ())
                break
        else:
            resolved = archmod.resolve_arch(option, detect=services.detect_arch)
    else:
        resolved = archmod.resolve_arch(option)
    warnings = list(resolved.warnings)
    if recipe.arch.plain:
        names, stripped = archmod.plain_names(resolved.targets)
        warnings += stripped
    else:
        names = tuple(dict.fromkeys(str(t) for t in resolved.targets))
    return names, resolved.origin, warnings


def _checkout_commands(recipe: Recipe, directory: Path) -> tuple[str, ...]:
    import shlex

    git, ref = recipe.source.git, recipe.source.ref
    assert git is not None
    d = shlex.quote(str(directory))
    marker = directory.parent / f".{recipe.name}.ref"
    current = marker.read_text().strip() if marker.is_file() else None
    if (directory / ".git").is_dir() and current == (ref or "HEAD"):
        return ()
    commands = []
    if not (directory / ".git").is_dir():
        commands.append(f"git clone --recurse-submodules {shlex.quote(git)} {d}")
    else:
        commands.append(f"git -C {d} fetch --tags --force origin")
    if ref:
        commands.append(f"git -C {d} checkout {shlex.quote(ref)}")
    commands.append(f"git -C {d} submodule update --init --recursive")
    commands.append(f"printf '%s\\n' {shlex.quote(ref or 'HEAD')} > {shlex.quote(str(marker))}")
    return tuple(commands)


def _resolve_source(recipe: Recipe, options: BuildOptions) -> tuple[Path, str, tuple[str, ...]]:
    if options.source is not None:
        source = options.source.expanduser()
        if not source.is_dir():
            raise SourceError(
                f"source directory {options.source} does not exist" if not source.exists()
                else f"--source {options.source} is not a directory",
                todo="pass --source pointing at the checked-out tree, or leave it out to use the recipe's checkout",
            )
        return source.resolve(), "--source", ()
    directory = workspace_root() / recipe.name
    bundled = recipe.source_path
    if bundled is not None:
        return directory, f"copy of the bundled source {bundled}", ()
    if recipe.source.git:
        return directory, f"workspace checkout of {recipe.source.git} at {recipe.source.ref or 'HEAD'}", \
            _checkout_commands(recipe, directory)
    raise SourceError(f"recipe '{recipe.name}' has no [source] and no --source was given",
                      todo="pass --source DIR, or add [source] git/ref to the recipe")


def _which_python(env: Mapping[str, str]) -> str:
    return shutil.which("python3", path=env.get("PATH")) or sys.executable


def make_plan(recipe: Recipe, options: BuildOptions, environ: Mapping[str, str],
              facts: hostmod.HostFacts, services: Services) -> BuildPlan:
    """The plan for one recipe (pure but for reading the recipe's workspace marker)."""
    archs, arch_origin, warnings = _resolve_arch(recipe, options, environ, services)
    source, source_origin, checkout = _resolve_source(recipe, options)
    rocm = facts.rocm
    rocm_dirs = None
    summary = RocmSummary(None, None, "not found")
    if rocm is not None:
        rocm_dirs = RocmDirs(str(rocm.root), tuple(map(str, rocm.bin_dirs)), tuple(map(str, rocm.lib_dirs)),
                             str(rocm.llvm_bin) if rocm.llvm_bin else None)
        summary = RocmSummary(str(rocm.root), rocm.version, rocm.origin, rocm.version_source, rocm.layout,
                              tuple(map(str, rocm.lib_dirs)), str(rocm.llvm_bin) if rocm.llvm_bin else None,
                              str(rocm.hipcc) if rocm.hipcc else None)
    else:
        warnings.append("no ROCm installation found: pass --rocm-path or set ROCM_PATH")
    job_vars = recipe.resources.job_variables
    caller_jobs = environ.get(job_vars[0], "").strip() if job_vars else ""
    if options.jobs is not None:
        jobs, jobs_reason = options.jobs, "--jobs"
    elif caller_jobs.isdigit() and int(caller_jobs) > 0:
        jobs, jobs_reason = int(caller_jobs), f"${job_vars[0]} from your environment"
    else:
        jobs, jobs_reason = choose_jobs(facts.cpus, facts.mem_available, recipe.resources.memory_per_job_gb)
    changes = base_changes(
        caller_env=environ, rocm=rocm_dirs, rocm_path_option=options.rocm_path is not None,
        arch_variables=recipe.arch.variables, arch_value=recipe.arch.separator.join(archs),
        job_variables=job_vars, jobs=jobs, jobs_option=options.jobs is not None, recipe_env=recipe.env,
    )
    plan = BuildPlan(
        recipe=recipe, source=source, source_origin=source_origin, rocm=summary, archs=archs,
        arch_origin=arch_origin, jobs=jobs, jobs_reason=jobs_reason, caller_env=dict(environ),
        changes=changes, python="", checkout=checkout, warnings=tuple(warnings),
    )
    return replace(plan, python=_which_python(plan.env))


def load_recipes(names: Sequence[str]) -> list[Recipe]:
    if not names:
        raise UsageError("no recipe given",
                         todo="name one, e.g. `rocmbuild vllm --arch gfx942` (see `rocmbuild recipes`)")
    return [find_recipe(name) for name in names]


def _installed(python: str, packages: Sequence[str], env: Mapping[str, str], run: Callable[..., Any]) -> bool:
    code = "import importlib.metadata as m, sys\nfor p in sys.argv[1:]: m.version(p)"
    return bool(run([python, "-c", code, *packages], env=env).ok)


def check_requires(plans: Sequence[BuildPlan], services: Services) -> list[str]:
    """Problems with ``requires``: a required recipe neither earlier in the list nor installed."""
    problems = []
    for index, plan in enumerate(plans):
        earlier = {p.recipe.name for p in plans[:index]}
        for required in plan.recipe.requires:
            if required in earlier:
                continue
            packages = find_recipe(required).packages or (required,)
            if not _installed(plan.python, packages, plan.env, services.run):
                problems.append(f"recipe '{plan.recipe.name}' requires '{required}', which is neither installed "
                                f"in {plan.python} nor built earlier in this run")
    return problems


def plan_all(names: Sequence[str], options: BuildOptions, environ: Mapping[str, str],
             services: Services) -> list[BuildPlan]:
    recipes = load_recipes(names)
    facts = hostmod.gather_host(options.rocm_path, environ, run=services.run)
    return [make_plan(recipe, options, environ, facts, services) for recipe in recipes]


def ladders(catalogue: Catalogue) -> dict[str, tuple[str, ...]]:
    return catalogue.category_ladders()


def show_plans(names: Sequence[str], options: BuildOptions, environ: Mapping[str, str], streams: Streams,
               services: Services = Services()) -> int:
    plans = plan_all(names, options, environ, services)
    catalogue = load_catalogue()
    for problem in check_requires(plans, services):
        plans = [p.with_changes(warnings=(*p.warnings, problem)) if problem.startswith(f"recipe '{p.recipe.name}'")
                 else p for p in plans]
    for plan in plans:
        if options.json:
            streams.out.write(json.dumps(plan.to_json(ladders(catalogue))) + "\n")
        else:
            streams.out.write(render_plan(plan, ladders(catalogue)) + "\n\n")
    return ExitCode.SUCCEEDED


# --- building ---------------------------------------------------------------

def _lock_for(source: Path) -> tuple[filelock.FileLock, Path]:
    digest = hashlib.sha256(str(source).encode()).hexdigest()[:16]
    directory = Path(platformdirs.user_state_dir("rocmbuild")) / "locks"
    directory.mkdir(parents=True, exist_ok=True)
    return filelock.FileLock(str(directory / f"{digest}.lock")), directory / f"{digest}.pid"


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
        end = time.monotonic() + seconds
        while not self.interrupted():
            remaining = end - time.monotonic()
            if remaining <= 0:
                break
            self.services.sleep(min(remaining, 0.5))
            if self.services.sleep is not time.sleep:
                break  # a test's fake sleep returns at once: do not spin

    def _wait(self, retry_state: tenacity.RetryCallState) -> float:
        decision = self.state.last_decision
        if decision is None or decision.remedy != "wait_and_retry":
            return 0.0
        self.state.waits += 1
        base = self.options.backoff_s
        # Exponential with jitter: base, 2*base, 4*base ... (capped at 16x), plus up to base/2 random.
        strategy = tenacity.wait_exponential_jitter(initial=base, exp_base=2, max=base * 16, jitter=base / 2)
        fake = type("S", (), {"attempt_number": self.state.waits})()
        seconds = float(strategy(fake))
        self.rec.event("retry.waiting", seconds=round(seconds, 1), reason="transient failure, backing off")
        self.say(f"waiting {seconds:.0f}s before retrying (transient failure)")
        return seconds

    # -- the loop
    def run(self) -> tuple[str, int]:
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.options.max_attempts),
            wait=self._wait,
            sleep=self._sleep,
            retry=tenacity.retry_if_result(lambda retry: bool(retry)),
            retry_error_callback=lambda _state: False,
            reraise=True,
        )
        retrying(self.attempt)
        if self.state.outcome is None:  # tenacity's own stop (a safety net behind the ladder's cap)
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
        number = len(state.history) + 1
        outcome, diagnosis, cache_stats = self._run_attempt(number, plan)
        record = self._attempt_record(number, plan, outcome, diagnosis, cache_stats)
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
        state.history.append(FailedAttempt(
            number=number, ended=outcome.ended, category=diagnosis.category,
            fingerprint=diagnosis.fingerprint(), retryable=diagnosis.retryable, ladder=diagnosis.remedies,
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
        last = state.history[-1]
        state.history[-1] = FailedAttempt(last.number, last.ended, last.category, last.fingerprint,
                                          last.retryable, last.ladder, (*last.remedies, decision.remedy))
        self.rec.set_remedies(list(state.history[-1].remedies))
        return True

    def _apply(self, name: str, diagnosis: Diagnosis) -> RemedyResult:
        ctx = RemedyContext(run=self.services.run, cache_in_use=self.cache is not None)
        result = REMEDIES[name](self.state.plan, diagnosis, ctx)
        if result.applied:
            self.rec.event("remedy.applied", remedy=name, detail=result.detail, removed=list(result.removed))
            for path in result.removed:
                self.rec.event("path.removed", remedy=name, path=str(self.state.plan.source / path))
            self.say(f"remedy {name}: {result.detail}")
        else:
            self.rec.event("remedy.skipped", remedy=name, detail=result.detail)
            self.say(f"remedy {name} does not apply: {result.detail}")
        if result.warning:
            self.rec.event("remedy.warning", remedy=name, message=result.warning)
            self.say(f"note: {result.warning}")
        return result

    # -- one attempt
    def _steps(self, plan: BuildPlan) -> list[runner.Step]:
        steps = []
        if plan.run_prepare:
            steps += [runner.Step("prepare", c) for c in plan.recipe.steps.prepare]
        steps += [runner.Step("build", c) for c in plan.recipe.steps.build]
        steps += [runner.Step("verify", c) for c in plan.recipe.steps.verify]
        return steps

    def _run_attempt(self, number: int, plan: BuildPlan) -> tuple[Any, Diagnosis | None, Any]:
        from rocmbuild.display import Display
        from rocmbuild.watcher import Watcher

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
            if fail_fast or current.category in DECISIVE_CATEGORIES:
                return f"fail-fast: {current.category} ({current.text})"
            return None

        limits = runner.Limits(stall_timeout_s=self.options.stall_timeout_s, deadline=self.deadline)
        stream = self.streams.err if self.options.json else sys.stdout
        with Display(stream, mode=self.options.verbosity, attempt=number,
                     max_attempts=self.options.max_attempts, recipe=plan.recipe.name) as display:
            outcome = None
            if plan.checkout:
                plan.source.parent.mkdir(parents=True, exist_ok=True)
                outcome = runner.run_attempt(
                    [runner.Step("checkout", c) for c in plan.checkout], cwd=plan.source.parent, env=plan.env,
                    log_path=log, watcher=watcher, limits=limits, display=display, stop_check=stop_check,
                    interrupted=self.interrupted)
                if outcome.succeeded:
                    plan = self.state.plan = replace(plan, checkout=())
            if outcome is None or outcome.succeeded:
                self._materialise_bundled_source(plan)
                outcome = runner.run_attempt(
                    self._steps(plan), cwd=plan.source, env=plan.env, log_path=log, watcher=watcher,
                    limits=limits, display=display, stop_check=stop_check, interrupted=self.interrupted)
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
        if outcome.step is not None and outcome.step.name == "prepare":
            pass  # prepare runs again next time: run_prepare stays True
        elif self.state.plan.run_prepare and outcome.step is not None:
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
        from rocmbuild.artifacts import verify_artifacts

        report = verify_artifacts(plan.source, plan.recipe.verify_artifacts, plan.archs,
                                  env=plan.env, llvm_bin=Path(plan.rocm.llvm_bin) if plan.rocm.llvm_bin else None)
        self.rec.event("artifacts.verified", ok=report.ok, detail=report.describe())
        with log.open("ab") as handle:
            handle.write(f"==> rocmbuild verify artifacts: {report.describe()}\n".encode())
        problem = report.problem_line()
        if problem is None:
            return None
        ladder = self.catalogue.category_ladders().get("arch_mismatch", ("clean_build",))
        return Diagnosis.simple("arch_mismatch", "artifact-missing-arch", text=problem,
                                fields=report.problem_fields(), retryable=True, remedies=ladder)

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
        return record


def _progress_json(progress: Any) -> dict[str, Any] | None:
    if progress is None:
        return None
    return {"done": progress.done, "total": progress.total, "percent": progress.percent, "phase": progress.phase}


def _preflight(plan: BuildPlan, options: BuildOptions, services: Services) -> list[Any]:
    from rocmbuild.checklist import plan_checks

    facts = hostmod.gather_host(options.rocm_path, plan.caller_env, run=services.run)
    return plan_checks(plan, facts.mem_available, run=services.run)


def _record_preflight_failure(rec: RunRecorder, plan: BuildPlan, failed: Sequence[Any]) -> None:
    first = failed[0]
    log = rec.run_dir / "preflight.log"
    log.write_text("\n".join(f"[{c.status}] {c.name}: {c.detail}" + (f"\n    what to do: {c.todo}" if c.todo else "")
                             for c in failed) + "\n", encoding="utf-8")
    diagnosis = {"category": first.category or "toolchain_missing", "signature": f"preflight-{first.name}",
                 "line": 1, "text": first.detail, "fields": dict(getattr(first, "fields", {}) or {}),
                 "retryable": False}
    rec.event("failure.diagnosed", attempt=1, preflight=True, **diagnosis, todo=first.todo,
              context=[f"[{c.status}] {c.name}: {c.detail}" for c in failed])
    rec.add_attempt({
        "number": 1, "started": datetime.now(UTC).isoformat(timespec="seconds"), "duration_s": 0.0,
        "ended": "exited", "exit_code": None, "log": log.name, "env": plan.env_set,
        "diagnosis": diagnosis, "remedies": [], "step": "preflight",
    })


def build(names: Sequence[str], options: BuildOptions, environ: Mapping[str, str], streams: Streams,
          services: Services = Services()) -> int:
    """``rocmbuild build``: every recipe in order, stopping at the first that fails."""
    if options.dry_run:
        return show_plans(names, options, environ, streams, services)
    plans = plan_all(names, options, environ, services)
    problems = check_requires(plans, services)
    if problems:
        raise UsageError(problems[0], why="nothing was built",
                         todo="build the required recipe first (list it before this one) or install it")
    catalogue = load_catalogue()
    deadline = time.monotonic() + options.budget_s if options.budget_s else None
    exit_code: int = ExitCode.SUCCEEDED
    with runner.InterruptFlag() as interrupted:
        for plan in plans:
            outcome, exit_code = _build_one(plan, options, streams, services, catalogue, interrupted,
                                            deadline, several=len(plans) > 1)
            if outcome != Outcome.SUCCEEDED:
                break
    return exit_code


def _build_one(plan: BuildPlan, options: BuildOptions, streams: Streams, services: Services,
               catalogue: Catalogue, interrupted: Callable[[], bool], deadline: float | None,
               several: bool) -> tuple[str, int]:
    lock, pid_file = _lock_for(plan.source)
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        holder = pid_file.read_text().strip() if pid_file.is_file() else "unknown"
        raise LockHeldError(f"another rocmbuild (PID {holder}) is building in {plan.source}",
                            why="two builds in one source tree would corrupt each other",
                            todo=f"wait for PID {holder} to finish, or stop it; then rerun") from None
    try:
        pid_file.write_text(str(os.getpid()))
        run_dir = new_run_dir(plan.recipe.name, options.run_dir, several)
        rec = RunRecorder(run_dir, plan.recipe.name, plan.source, plan.archs)
        try:
            return _run_recorded(plan, options, streams, services, catalogue, interrupted, deadline, rec)
        finally:
            rec.close()
    finally:
        pid_file.unlink(missing_ok=True)
        lock.release()


def _cache_for(plan: BuildPlan, options: BuildOptions, services: Services) -> tuple[BuildPlan, Any]:
    if options.no_cache:
        return plan, None
    from rocmbuild.cache import CompilerCache

    cache = CompilerCache.for_build(env=plan.env, source=plan.source, remote=options.cache_remote,
                                    run=services.run)
    if cache is None:
        return plan, None
    return plan.with_changes(*cache.changes()), cache


def _run_recorded(plan: BuildPlan, options: BuildOptions, streams: Streams, services: Services,
                  catalogue: Catalogue, interrupted: Callable[[], bool], deadline: float | None,
                  rec: RunRecorder) -> tuple[str, int]:
    plan, cache = _cache_for(plan, options, services)
    rec.extra["rocm"] = {"root": plan.rocm.root, "version": plan.rocm.version}
    rec.event("run.started", recipe=plan.recipe.name, source=str(plan.source), arch=list(plan.archs),
              rocm=plan.rocm.root, rocm_version=plan.rocm.version, jobs=plan.jobs, jobs_reason=plan.jobs_reason,
              env=plan.env_set, options={k: str(v) for k, v in vars(options).items()},
              cache=cache.describe() if cache is not None else None)
    for warning in (*plan.warnings, *(cache.warnings if cache is not None else ())):
        rec.event("plan.warning", message=warning)
        streams.err.write(f"rocmbuild: warning: {warning}\n")
    outcome: str
    if not options.skip_preflight:
        checks = _preflight(plan, options, services)
        for check in checks:
            rec.event("preflight.checked", name=check.name, status=check.status, detail=check.detail)
        failed = [c for c in checks if c.status == "fail" and c.fatal]
        if failed:
            _record_preflight_failure(rec, plan, failed)
            outcome, reason = Outcome.NOT_RETRYABLE, f"preflight: {failed[0].detail}"
            return _finish(rec, outcome, reason, options, streams)
    session = BuildSession(plan, options, rec, streams, services, catalogue, interrupted, deadline, cache)
    outcome, _ = session.run()
    return _finish(rec, outcome, session.state.reason, options, streams)


def _finish(rec: RunRecorder, outcome: str, reason: str, options: BuildOptions, streams: Streams) -> tuple[str, int]:
    exit_code = Outcome.EXIT_CODES[outcome]
    rec.event("run.finished", outcome=outcome, exit_code=exit_code, reason=reason)
    summary = rec.write_summary(outcome, exit_code)
    from rocmbuild.records import load_run

    _, events = load_run(rec.run_dir)
    streams.err.write(render_summary(summary, events))
    streams.err.flush()
    if options.json:
        streams.out.write(json.dumps(summary, default=str) + "\n")
        streams.out.flush()
    return outcome, exit_code

