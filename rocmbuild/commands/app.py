"""The workflow: plan, lock, preflight, run each recipe's ladder loop, report.

Everything the CLI does beyond parsing happens here, in this order:

    recipes -> host facts -> arch -> source -> environment -> plan      (planning.py)
      (plan/--dry-run stop here)
    lock -> run dir -> cache -> preflight -> ladder loop (session.py) -> summary

A failed attempt is a value; exceptions (RocmbuildError) mean "cannot go on"
and become exit codes in the CLI.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import filelock

from rocmbuild import paths
from rocmbuild.checks.checklist import find_hipcc, plan_checks, render_checks, toolchain_checks, wheel_step_check
from rocmbuild.checks.preflight import Check, Probing
from rocmbuild.commands import schedjob
from rocmbuild.commands.resumestate import save_resume_state
from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.diagnosis.classifier import Diagnosis
from rocmbuild.diagnosis.nextstep import (
    Required,
    exact_command,
    ordered,
    outcome_todo,
    preflight_todo,
    requires_todo,
    resume_command,
)
from rocmbuild.errors import ExitCode, LockHeldError, Outcome, RocmbuildError, UsageError
from rocmbuild.host import facts as hostmod
from rocmbuild.loop.context import RunContext
from rocmbuild.loop.forceclean import force_clean
from rocmbuild.loop.session import BuildSession
from rocmbuild.options import BuildOptions, run_limits
from rocmbuild.planning.plan import BuildPlan, render_plan
from rocmbuild.planning.planning import MissingRequire, at_its_turn, check_requires, plan_all
from rocmbuild.planning.torchadvice import torch_install
from rocmbuild.process import containment, runner
from rocmbuild.process.command import remember_versions
from rocmbuild.process.sidestep import Bounds, bounded_run
from rocmbuild.process.stoppolicy import Running, during_attempt
from rocmbuild.process.treelock import TreeLock
from rocmbuild.provisioning import provision, requirements, treehash
from rocmbuild.provisioning.requirements import Provided
from rocmbuild.provisioning.torchpin import keep_torch
from rocmbuild.provisioning.wheels import check_wheel_dir
from rocmbuild.records import detach
from rocmbuild.records.attempts import AttemptRecord, iso_seconds
from rocmbuild.records.journal import CheckEntry, Containment, Rocm, RunSummary
from rocmbuild.records.notify import notify_console, run_notify
from rocmbuild.records.recorder import RunRecorder, new_run_dir
from rocmbuild.records.recordfile import read_events
from rocmbuild.records.redact import redact, redact_text
from rocmbuild.records.report import render_summary
from rocmbuild.records.runfacts import FactsJob, start_facts
from rocmbuild.services import Services, Streams
from rocmbuild.toolchain.cache import CompilerCache
from rocmbuild.toolchain.joblimit import limit_only_changes
from rocmbuild.toolchain.launchshim import launcher_unavailable

DEFAULT_SERVICES = Services()


def show_plans(names: Sequence[str], options: BuildOptions, environ: Mapping[str, str], streams: Streams,
               services: Services = DEFAULT_SERVICES) -> int:
    """``plan`` / ``--dry-run``: print each plan, run the checks that need no build, exit as the run would.

    Exit 2 for a missing ``requires``, 4 for a fatal preflight failure, else 0; the plan
    is printed either way.  Nothing is built or deleted.
    """
    plans = plan_all(names, options, environ, services)
    catalogue = load_catalogue()
    ladders = catalogue.category_ladders()
    limits = run_limits(options)
    missing = check_requires(plans, services)
    provided = _requires_from(missing, plans, options, streams, install=False)
    if provided:
        missing = []
    checks: dict[int, list[Check]] = {}
    if not missing and not options.skip_preflight:
        for index, plan in enumerate(plans):
            # What --requires-from would install is not there yet: its checks wait for the install.
            later = index > 0 or any(p.recipe == plan.recipe.name for p in provided)
            checks[index] = _plan_mode_checks(_preflight(plan, options, services), later=later)
    # The refusal the run would give, decided before anything is printed: with --json it is part of the
    # refused recipe's one object (never a second document on stdout).
    refusals: dict[int, RocmbuildError] = {}
    if missing:
        at = next((i for i, p in enumerate(plans) if p.recipe.name == missing[0].recipe), 0)
        refusals[at] = _requires_error(missing, plans, names, services)
    for index, plan in enumerate(plans):
        failed = [c for c in checks.get(index, []) if c.failed and c.fatal]
        if failed:
            refusals[index] = PreflightRefusal(
                f"preflight would stop '{plan.recipe.name}' before the first attempt: {_failed_names(failed)}",
                why="; ".join(f"{c.name}: {c.detail}" for c in failed),
                todo=preflight_todo(failed, _torch_command(plan)))
    for index, plan in enumerate(plans):
        if options.json:
            data = plan.to_json(ladders, limits, catalogue.generic_ladder())
            data["signature_ladders"] = {c: {k: list(v) for k, v in sigs.items()}
                                         for c, sigs in catalogue.signature_ladders().items()}
            data["preflight"] = [CheckEntry.of(c).to_json() for c in checks.get(index, [])]
            data["requires_from"] = [p.to_json() for p in provided if p.recipe == plan.recipe.name]
            refusal = refusals.get(index)
            data["exit_code"] = int(refusal.exit_code) if refusal is not None else int(ExitCode.SUCCEEDED)
            data["refusal"] = ({"exit_code": int(refusal.exit_code), "error": refusal.what, "why": refusal.why,
                                "todo": refusal.todo} if refusal is not None else None)
            streams.out.write(json.dumps(redact(data)) + "\n")
        else:
            text = render_plan(plan, ladders, limits, catalogue.generic_ladder(), catalogue.signature_ladders())
            if index in checks:

                text += "\n\nPreflight (checks that need no build):\n" + render_checks(checks[index])
            streams.out.write(text + "\n\n")
    streams.out.flush()
    if refusals:  # the first (a missing `requires` before any preflight): on stderr, its exit code
        first = next(iter(refusals.values()))
        streams.err.write(first.render() + "\n")
        return int(first.exit_code)
    return ExitCode.SUCCEEDED


def _requires_from(missing: Sequence[MissingRequire], plans: Sequence[BuildPlan], options: BuildOptions,
                   streams: Streams, install: bool, bounds: Bounds | None = None) -> list[Provided]:
    """--requires-from: install (or, for a plan, resolve) what ``requires`` misses (requirements.py)."""
    if not missing or not options.requires_from:
        return []

    # pip runs as a contained step: the budget, the stall timeout and an interrupt stop it (an index that
    # never answers, or trickles a byte at a time, would hold it for its 3 h timeout), with its daemons.
    run = bounded_run("requires-from", bounds or Bounds(stall_timeout_s=options.stall_timeout_s))
    provided = requirements.satisfy(missing, plans, options.requires_from, install, run)
    for item in provided:
        streams.err.write(f"rocmbuild: {requirements.describe(item)}\n")
    streams.err.flush()
    return provided


def _torch_command(plan: BuildPlan) -> str | None:
    """The command that builds a ROCm torch before this recipe (for recipes that require torch)."""
    return exact_command(["torch", plan.recipe.name], plan.archs) if "torch" in plan.recipe.requires else None


def _failed_names(failed: Sequence[Check]) -> str:
    return f"{len(failed)} check{'s' if len(failed) > 1 else ''} failed ({', '.join(c.name for c in failed)})"


class PreflightRefusal(RocmbuildError):
    """What ``plan`` prints when preflight would refuse (exit 4, like the run)."""

    exit_code = ExitCode.NOT_RETRYABLE


# Checks of a later recipe that an earlier recipe in the same run can still satisfy (it installs torch
# or modules): the run checks them when that recipe's turn comes, so the plan only warns.
_AFTER_EARLIER_RECIPES = ("torch (ROCm)", "python modules", "torch HIP version", "torch arch list",
                          "torch companions", "setuptools")


def _plan_mode_checks(checks: list[Check], later: bool) -> list[Check]:
    if not later:
        return checks
    return [replace(c, status="warn", fatal=False, detail=f"{c.detail} (checked again when its turn comes)")
            if c.failed and c.name in _AFTER_EARLIER_RECIPES else c for c in checks]


def _requires_error(missing: Sequence[MissingRequire], plans: Sequence[BuildPlan], names: Sequence[str],
                    services: Services) -> UsageError:
    """The refusal for a missing ``requires``: what blocks the build before it (a ROCm too old for the
    arch, the toolchain) first, then the torch the source pins for this host's ROCm."""
    first = missing[0]
    archs = plans[0].archs if plans else ()
    recipes = [p.recipe.name for p in plans] or list(names)
    plan = next((p for p in plans if p.recipe.name == first.recipe), plans[0] if plans else None)
    blockers: list[str] = []
    install = None
    if plan is not None:
        install = torch_install(first.python, plan.source, plan.rocm_version)
        blockers = [c.todo for c in ordered(_toolchain_blockers(plan, services)) if c.todo]
    return UsageError(first.message, why="nothing was built: it builds against the installed "
                      f"'{first.required}'",
                      todo=requires_todo(Required(name=first.required, python=first.python, packages=first.packages),
                                         recipes, archs, torch_install=install, blockers=blockers))


def _toolchain_blockers(plan: BuildPlan, services: Services) -> list[Check]:
    """Failed toolchain checks (ROCm root, compiler, arch): they come before installing torch."""
    probing = Probing(env=plan.env, run=services.run, cache=services.probes)
    checks = toolchain_checks(rocm=plan.rocm, hipcc=find_hipcc(plan.rocm_hipcc, plan.env), archs=plan.targets,
                              probing=probing, compiler=plan.hip_compiler)
    return [c for c in checks if c.failed]


# --- building ---------------------------------------------------------------

def _lock_for(source: Path) -> tuple[filelock.FileLock, Path]:
    digest = hashlib.sha256(str(source).encode()).hexdigest()[:16]
    directory = paths.state_dir("locks")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _state_dir_error(directory, exc) from None
    return filelock.FileLock(directory / f"{digest}.lock"), directory / f"{digest}.pid"


@contextlib.contextmanager
def source_locked(source: Path) -> Iterator[None]:
    """Hold both locks on a source tree (a build or a resume): one per path in the user's state dir
    (with the holder's PID, for the message a second run gets), one on the tree itself (flock)."""
    lock, pid_file = _lock_for(source)
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        holder = pid_file.read_text().strip() if pid_file.is_file() else "unknown"
        raise LockHeldError(f"another rocmbuild (PID {holder}) is building in {source}",
                            why="two builds in one source tree would corrupt each other",
                            todo=f"wait for PID {holder} to finish, or stop it; then rerun") from None
    except OSError as exc:
        raise _state_dir_error(pid_file.parent, exc) from None
    tree_lock: TreeLock | None = None
    try:
        try:
            pid_file.write_text(str(os.getpid()))
        except OSError as exc:
            raise _state_dir_error(pid_file.parent, exc) from None
        # The lock above is keyed by the path under this user's state dir; this one by the tree itself.
        tree_lock = TreeLock(source).acquire() if source.is_dir() else None
        yield
    finally:
        if tree_lock is not None:
            tree_lock.release()
        with contextlib.suppress(OSError):
            pid_file.unlink(missing_ok=True)
        lock.release()


def _state_dir_error(where: Path, exc: OSError) -> UsageError:
    return UsageError(f"cannot write rocmbuild's state directory ({where})", why=exc.strerror or str(exc),
                      todo="free space there or make it writable, or point XDG_STATE_HOME at a writable directory")


def _outcome_of(exc: BaseException) -> tuple[Outcome, int]:
    """The outcome and exit code a run ended by this exception is recorded with."""
    if isinstance(exc, KeyboardInterrupt):
        return Outcome.INTERRUPTED, int(ExitCode.INTERRUPTED)
    code = exc.exit_code if isinstance(exc, RocmbuildError) else int(ExitCode.INTERNAL)
    return Outcome.for_exit_code(code), code


def _preflight(plan: BuildPlan, options: BuildOptions, services: Services) -> list[Check]:
    # Measured now, not at planning: `rocmbuild torch vllm` preflights vllm with what torch left free.
    mem_available, _reason = hostmod.memory_available()
    checks = plan_checks(plan, mem_available, run=services.run, probes=services.probes)
    if options.wheel_dir is not None:
        checks.append(wheel_step_check(plan, services.run))
    return checks


def _record_preflight_failure(rec: RunRecorder, plan: BuildPlan, failed: Sequence[Check]) -> None:

    first = failed[0]
    todo = preflight_todo(failed, _torch_command(plan))
    log = rec.run_dir / "preflight.log"
    log.write_text("\n".join(f"[{c.status}] {c.name}: {c.detail}" + (f"\n    what to do: {c.todo}" if c.todo else "")
                             for c in failed) + "\n", encoding="utf-8")
    found = Diagnosis.simple(first.category or "toolchain_missing", f"preflight-{first.name}", text=first.detail,
                             fields=dict(getattr(first, "fields", {}) or {}), retryable=False)
    diagnosis = replace(found, line=1).summary_json()  # preflight.log's first line
    rec.event("failure.diagnosed", attempt=1, preflight=True, **diagnosis, todo=todo,
              context=[f"[{c.status}] {c.name}: {c.detail}" for c in failed])
    rec.add_attempt(AttemptRecord(number=1, started=iso_seconds(datetime.now(UTC)), duration_s=0.0, ended="exited",
                                  exit_code=None, log=log.name, env=plan.env_set, diagnosis=diagnosis,
                                  step="preflight", kind="preflight", todo=todo))


def build(names: Sequence[str], options: BuildOptions, environ: Mapping[str, str], streams: Streams,
          services: Services = DEFAULT_SERVICES) -> int:
    """``rocmbuild build``: every recipe in order, stopping at the first that fails."""
    # The up-to-date check asks the HIP compiler's version before the first attempt: hipcc takes
    # 0.2-0.5 s to say what it said last run (process/versionstore.py says when it is asked again).

    remember_versions(paths.state_dir("probes"))
    if options.dry_run:
        return show_plans(names, options, environ, streams, services)
    # The budget counts from here: installing requires (--requires-from) is part of the command's time.
    deadline = services.clock() + options.budget_s if options.budget_s else None
    plans = plan_all(names, options, environ, services)
    if options.wheel_dir is not None:  # before hours of build, not after them
        check_wheel_dir(options.wheel_dir)
    exit_code: int = ExitCode.SUCCEEDED
    run_dirs: list[Path] = []  # for --notify: the last run dir holds the outcome of the whole command
    try:
        with runner.InterruptFlag() as interrupted:
            missing = check_requires(plans, services)
            provided = _requires_from(missing, plans, options, streams, install=True,
                                      bounds=Bounds(deadline, options.stall_timeout_s, interrupted))
            if provided:
                missing = check_requires(plans, services)
            if missing:
                raise _requires_error(missing, plans, names, services)
            ctx = RunContext.for_options(
                options, streams=streams, services=services, catalogue=load_catalogue(), interrupted=interrupted,
                deadline=deadline)
            for index, plan in enumerate(plans):
                if index > 0:  # sized when its turn comes: what the recipes before it left free
                    plan = at_its_turn(plan, options, environ)
                outcome, exit_code = _build_one(
                    plan, options, ctx, several=len(plans) > 1,
                    provided=[p.to_json() for p in provided if p.recipe == plan.recipe.name], run_dirs=run_dirs)
                if outcome not in (Outcome.SUCCEEDED, Outcome.UP_TO_DATE):
                    break
    finally:
        if options.notify and run_dirs:  # any outcome, also an interrupt or an error after the run began

            notify_console(run_notify(options.notify, run_dirs[-1], environ,
                                               options.notify_timeout_s), streams.err)
    return exit_code


def _build_one(plan: BuildPlan, options: BuildOptions, ctx: RunContext, several: bool,
               provided: Sequence[Mapping[str, object]] = (), run_dirs: list[Path] | None = None
               ) -> tuple[Outcome, int]:
    """One recipe: its locks, run dir and records around ``_run_recorded``; the record always ends."""
    streams = ctx.streams
    with source_locked(plan.source):
        base_plan = plan  # the fingerprint is of the command's plan, before the cache's launchers
        plan, cache = cache_for(plan, options, ctx.services)  # a bad --cache-remote stops before any record
        run_dir = new_run_dir(plan.recipe.name, options.run_dir, several)
        if run_dirs is not None:
            run_dirs.append(run_dir)
        rec = open_recorder(run_dir, plan, options, streams)
        if provided:  # what --requires-from installed for this recipe before its run
            rec.journal = replace(rec.journal, requires_from=tuple(provided))
        plan = keep_torch(plan, run_dir, ctx.services.run)  # pip in prepare/remedies cannot replace torch

        save_resume_state(run_dir, plan, options)  # what `rocmbuild resume` needs if this run is killed
        facts: list[FactsJob] = []  # started by _run_recorded; waited for before the final summary
        try:
            return _run_recorded(plan, options, ctx.with_cache(cache), rec, base_plan, facts)
        except BaseException as exc:
            _wait_for_facts(facts, rec)
            record_abrupt_end(rec, exc)
            raise
        finally:
            rec.close()



def open_recorder(run_dir: Path, plan: BuildPlan, options: BuildOptions, streams: Streams,
                  resumed: RunSummary | None = None) -> RunRecorder:
    """The run's recorder (a new run, or ``resumed``'s); a run dir it cannot write is a usage error."""
    try:
        return RunRecorder(run_dir, plan.recipe.name, plan.source, plan.archs, resumed=resumed,
                           echo=streams.err if options.verbosity == "verbose" else None)
    except OSError as exc:
        raise UsageError(f"cannot write the run directory {run_dir}", why=exc.strerror or str(exc),
                         todo="free space there or make it writable, or pass --run-dir DIR") from None

def record_abrupt_end(rec: RunRecorder, exc: BaseException) -> None:
    """Whatever exception ends a run (a build's or a resumed one's), the record says it ended, and how,
    instead of "running": its outcome and exit code, the exception as the reason, and what to do.
    A run whose end is already recorded (the exception came while its summary was being shown) keeps it."""
    if rec.journal.end.outcome != "running":
        return
    outcome, code = _outcome_of(exc)
    reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"{type(exc).__name__}: {exc}"
    rec.event("run.finished", outcome=outcome, exit_code=code, reason=reason)
    rec.end(outcome, code, reason, exc.todo if isinstance(exc, RocmbuildError) and exc.todo
            else resume_command(rec.run_dir) if outcome == Outcome.INTERRUPTED
            else "see the crash log named on the console and report it")
    rec.write_summary()


def cache_for(plan: BuildPlan, options: BuildOptions, services: Services) -> tuple[BuildPlan, CompilerCache | None]:

    clang = bool(plan.hip_compiler and plan.hip_compiler.is_clang)

    def limit_only() -> BuildPlan:
        try:
            return plan.with_changes(*limit_only_changes(plan.env, services.run, hip_compiler_is_clang=clang))
        except OSError as exc:  # the shim cannot be written: the build runs without the limit, and says so
            return replace(plan, warnings=(*plan.warnings, launcher_unavailable(exc)))

    if options.no_cache:  # no cache, but the global job limit still needs its launcher (joblimit.py)
        return limit_only(), None

    cache = CompilerCache.for_build(env=plan.env, source=plan.source, remote=options.cache_remote,
                                    run=services.run, hip_compiler_is_clang=bool(
                                        plan.hip_compiler and plan.hip_compiler.is_clang))
    if cache is None:
        return limit_only(), None
    return plan.with_changes(*cache.changes()), cache


def _wait_for_facts(facts: Sequence[FactsJob], rec: RunRecorder) -> None:
    """facts.json complete before the run's final summary; an unwritable one is noted, as events are."""
    for job in facts:
        if not job.wait():
            rec.write_error = rec.write_error or f"facts.json: {job.error or 'probes did not finish'}"


def _run_recorded(plan: BuildPlan, options: BuildOptions, ctx: RunContext, rec: RunRecorder,
                  base_plan: BuildPlan | None = None, facts: list[FactsJob] | None = None) -> tuple[Outcome, int]:
    """One recipe inside its run dir: leftovers, up-to-date check, preflight, the ladder loop, provisioning.

    ``options`` is read here only for what is the app's own (the fingerprint and wheels of
    provision.py, the options recorded in ``run.started``); the loop gets ``ctx``.
    """

    streams, cache = ctx.streams, ctx.cache
    base_plan = base_plan or plan
    job = schedjob.job_identity(os.environ)  # a batch scheduler's job (Slurm): which one, which restart
    rec.journal = replace(rec.journal, rocm=Rocm(plan.rocm_root, plan.rocm_version), job=job or None)
    rec.event("run.started", **job, recipe=plan.recipe.name, source=str(plan.source), arch=list(plan.archs),
              rocm=plan.rocm_root, rocm_version=plan.rocm_version, jobs=plan.jobs, jobs_reason=plan.jobs_reason,
              env=plan.env_set, options={k: str(v) for k, v in vars(options).items()},
              cache=cache.describe() if cache is not None else None, pid=os.getpid())
    record_containment(rec, streams)
    for leftover in containment.end_leftovers(plan.source):  # a killed run's processes, still going
        rec.event("leftovers.stopped", **leftover)
        streams.err.write(f"rocmbuild: stopped {leftover['count']} process(es) left running in "
                          f"{plan.source} by a killed run (PID {leftover['owner_pid']})\n")
    for warning in (*plan.warnings, *(cache.warnings if cache is not None else ())):
        rec.event("plan.warning", message=warning)
        streams.err.write(f"rocmbuild: warning: {redact_text(warning)}\n")
    outcome: Outcome
    stop = fingerprint_stop(ctx)
    facts = facts if facts is not None else []
    bounds = Bounds(ctx.deadline, ctx.limits.stall_timeout_s, ctx.interrupted)  # for the wheel step
    try:
        verdict = provision.up_to_date(base_plan, options, rec, streams, stop=stop, bounds=bounds)
    except treehash.Stopped as exc:
        return finish_run(rec, Outcome.INTERRUPTED if exc.reason == "interrupted" else Outcome.BUDGET_EXHAUSTED,
                       f"stopped ({exc.reason}) while fingerprinting the tree, before any attempt",
                       options, streams, facts)
    # What `report --diff` compares with the last good run, gathered beside the run from here on (the
    # fingerprint's version answers are remembered by now, so its probes do not run twice) and complete
    # before the summary is final (finish_run): the toolchain as the command's plan sees it, without
    # rocmbuild's own launcher/cache variables.
    facts.append(start_facts(rec.run_dir, base_plan, ctx.services.run))
    if verdict.ok:
        return finish_run(rec, Outcome.UP_TO_DATE, "the tree's last success has the same fingerprint, its outputs "
                       "are as it left them and they still verify: nothing was run", options, streams, facts)
    if options.force:  # the build system rebuilds too: its outputs and CMake caches go first
        said = force_clean(base_plan, rec)
        if options.verbosity != "quiet":
            streams.err.write(f"rocmbuild: {said}\n")
            streams.err.flush()
    if not options.skip_preflight and (stopped := run_preflight(plan, options, ctx, rec)) is not None:
        return finish_run(rec, *stopped, options, streams, facts)
    detach.passed()  # past its refusals: a --detach foreground waiting for this word may go
    session = BuildSession(plan, ctx, rec)
    outcome, _ = session.run()
    reason = session.state.reason
    if outcome == Outcome.SUCCEEDED:
        built = provision.Built(base_plan=base_plan, final_plan=session.state.plan, reason=reason,
                                before=verdict.fingerprint)
        outcome, reason = provision.after_success(built, options, rec, streams, stop=stop, bounds=bounds)
    return finish_run(rec, outcome, reason, options, streams, facts)


def record_containment(rec: RunRecorder, streams: Streams) -> None:
    """How this run's steps are contained, in summary.json's ``containment``; said on the console when
    it is not a cgroup (without one a daemon is found through the subreaper and the step's sessions)."""
    how = containment.mode()
    rec.journal = replace(rec.journal, containment=Containment(how.kind, how.detail))
    rec.event("containment", kind=how.kind, detail=how.detail)
    if how.kind != "cgroup":
        streams.err.write(f"rocmbuild: warning: containment is off (no cgroup): {how.detail}\n")


def run_preflight(plan: BuildPlan, options: BuildOptions, ctx: RunContext,
                  rec: RunRecorder) -> tuple[Outcome, str] | None:
    """The checks before the first attempt, recorded; how the run stops when they stop it, else None."""
    checks = _preflight(plan, options, ctx.services)
    rec.journal = replace(rec.journal, preflight=tuple(CheckEntry.of(c) for c in checks))
    for check in checks:
        rec.event("preflight.checked", name=check.name, status=check.status, detail=check.detail)
    if ctx.interrupted():  # a probe killed by the same Ctrl-C is not a failed check
        return Outcome.INTERRUPTED, "interrupted during preflight"
    failed = [c for c in checks if c.status == "fail" and c.fatal]
    if failed:
        _record_preflight_failure(rec, plan, failed)
        return Outcome.NOT_RETRYABLE, f"preflight: {_failed_names(failed)}"
    return None


def fingerprint_stop(ctx: RunContext) -> Callable[[], str | None]:
    """What ends a fingerprint's walk early: a Ctrl-C/SIGTERM/SIGHUP, or the --budget spent."""
    def stop() -> str | None:  # the stop policy's, as for a running attempt (no stall: the walk prints nothing)
        return during_attempt(Running(interrupted=ctx.interrupted(), budget_left_s=ctx.budget_left())).ended
    return stop


def finish_run(rec: RunRecorder, outcome: Outcome, reason: str, options: BuildOptions,
            streams: Streams, facts: Sequence[FactsJob] = ()) -> tuple[Outcome, int]:
    _wait_for_facts(facts, rec)
    exit_code = outcome.exit_code
    rec.event("run.finished", outcome=outcome, exit_code=exit_code, reason=reason)
    last = rec.attempts[-1] if rec.attempts else None
    diagnosis = last.diagnosis if last else None
    wheels = rec.journal.wheels
    known = wheels.todo if wheels is not None and outcome != Outcome.SUCCEEDED else None
    # An interrupt is not a failure: what it leaves to do is the exact command that continues the run.
    rec.end(outcome, exit_code, reason, resume_command(rec.run_dir) if outcome == Outcome.INTERRUPTED
            else outcome_todo(outcome, diagnosis, last.todo if last is not None and diagnosis else None, reason,
                              known))
    summary = rec.write_summary()
    events = read_events(rec.run_dir / "events.jsonl")  # for the rendering only (context lines, the reason)

    streams.err.write(render_summary(summary, events))
    streams.err.flush()
    if options.json:
        streams.out.write(json.dumps(summary, default=str) + "\n")
        streams.out.flush()
    return outcome, exit_code

