"""``rocmbuild resume RUN_DIR``: the workflow of ``app.build`` entered with a run's recorded state.

What a run needs to be continued and how its state is rebuilt from the records is resumestate.py;
this module runs it: the same locks, cache, session and finish as a build (app.py), with the ladder's
history, the attempt numbering and the plan state the run had reached, what is left of its
``--budget``, and after a success the same fingerprint and wheel step as a build.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from rocmbuild.commands import app
from rocmbuild.commands.app import run_preflight
from rocmbuild.commands.resumestate import (
    check_resumable,
    counted,
    killed_attempt,
    ladder_history,
    last_plan_state,
    load_options,
    restored_plan,
    time_spent,
)
from rocmbuild.commands.schedjob import job_identity
from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.errors import Outcome, UsageError
from rocmbuild.host.trust import check_trusted
from rocmbuild.loop.context import RunContext
from rocmbuild.loop.session import BuildSession
from rocmbuild.planning.planning import plan_all
from rocmbuild.process import containment, runner
from rocmbuild.process.sidestep import Bounds
from rocmbuild.provisioning import fingerprint, provision, treehash
from rocmbuild.records.notify import notify_console, run_notify
from rocmbuild.records.recorder import load_journal
from rocmbuild.records.recordfile import as_object
from rocmbuild.services import Services, Streams


def resume_run(run_dir_arg: str, environ: Mapping[str, str], streams: Streams, services: Services | None = None
               ) -> int:
    """``rocmbuild resume RUN_DIR``: the workflow of app.build, entered with the recorded state."""
    services = services or app.DEFAULT_SERVICES
    run_dir = Path(run_dir_arg).expanduser()
    if not (run_dir / "summary.json").is_file():
        raise UsageError(f"{run_dir_arg} is not a rocmbuild run directory (no summary.json)",
                         todo="pass the run dir a build printed (or `rocmbuild history` lists)")
    run_dir = run_dir.resolve()
    # A run dir another user can write could name any recipe and source: refused before it is read.
    check_trusted(run_dir / "summary.json", "run dir")
    check_trusted(run_dir / "resume.json", "resume state")
    summary, events = load_journal(run_dir)
    data = check_resumable(run_dir, summary, events)
    options = load_options(data, run_dir, summary.source)
    saved_notify = as_object(data.get("options")).get("notify")
    if isinstance(saved_notify, str) and saved_notify and not options.notify:
        # Records hold no secrets, so notification URLs were saved redacted: say so rather than go silent.
        streams.err.write("rocmbuild: warning: the run's --notify was saved without its URLs' secrets; set "
                          "ROCMBUILD_NOTIFY to notify when this resume ends\n")
    cwd = data.get("cwd")
    if isinstance(cwd, str) and Path(cwd).is_dir():
        os.chdir(cwd)  # relative paths in the recipe and options meant what they meant then
    base_plan = plan_all([str(data["recipe"])], options, environ, services)[0]
    attempts = list(summary.attempts)
    killed = killed_attempt(attempts, events)
    if killed is not None:  # a killed one (ended "interrupted") stays out of the ladder's history
        attempts.append(killed)
    history = ladder_history(attempts, events)
    done, spent = len(attempts), counted(attempts)
    if spent >= options.max_attempts:
        raise UsageError(f"the run in {run_dir} has used all {options.max_attempts} attempts",
                         why="--max-attempts counts the attempts before the resume too",
                         todo="start a new run (with a higher --max-attempts if the ladder was still going)")
    # --budget is the run's, not each session's: what the sessions before this one ran is spent.
    budget_left = max(0.0, options.budget_s - time_spent(events)) if options.budget_s else None
    began = False  # from the recorder on, the run dir's records are written: --notify is due, whatever ends it
    try:
        with app.source_locked(base_plan.source):
            plan, cache = app.cache_for(base_plan, options, services)
            plan = restored_plan(plan, last_plan_state(events))
            rec = app.open_recorder(run_dir, plan, options, streams, resumed=replace(summary, attempts=tuple(attempts)))
            began = True
            try:
                rec.event("run.resumed", pid=os.getpid(), next_attempt=done + 1, env=plan.env_set, jobs=plan.jobs,
                          killed_attempt=killed.number if killed else None, budget_left_s=budget_left,
                          **job_identity(environ))
                app.record_containment(rec, streams)  # this session's containment, as a build records its own
                for leftover in containment.end_leftovers(plan.source):  # a killed run's processes, still going
                    rec.event("leftovers.stopped", **leftover)
                streams.err.write(f"rocmbuild: resuming {run_dir} at attempt {done + 1} "
                                  f"(MAX_JOBS={plan.jobs}, remedies so far: "
                                  f"{', '.join(r for h in history for r in h.remedies) or 'none'})\n")
                with runner.InterruptFlag() as interrupted:
                    ctx = RunContext.for_options(
                        options, streams=streams, services=services, catalogue=load_catalogue(),
                        interrupted=interrupted,
                        deadline=services.clock() + budget_left if budget_left is not None else None)
                    ctx = ctx.with_cache(cache)
                    # The same limits and the same before/after comparison of the tree as a build's (app.py):
                    # the tree as this session finds it is what the fingerprint record must still match after.
                    stop = app.fingerprint_stop(ctx)
                    bounds = Bounds(ctx.deadline, ctx.limits.stall_timeout_s, ctx.interrupted)
                    try:
                        before: fingerprint.Fingerprint | None = fingerprint.compute(base_plan, stop=stop)
                    except treehash.Stopped:
                        before = None  # the session below stops at once for the same reason
                    # Stopped before its first attempt (during preflight): its checks are still due.
                    stopped = (run_preflight(plan, options, ctx, rec)
                               if not attempts and not options.skip_preflight else None)
                    if stopped is not None:
                        outcome, reason = stopped
                    else:
                        session = BuildSession(plan, ctx, rec, history=tuple(history),
                                               number_offset=done - len(history), uncounted=done - spent)
                        outcome, _ = session.run()
                        reason = session.state.reason
                    if outcome == Outcome.SUCCEEDED:  # the fingerprint, and the wheel step of a --wheel-dir run
                        built = provision.Built(base_plan=base_plan, final_plan=session.state.plan, reason=reason,
                                                before=before)
                        outcome, reason = provision.after_success(built, options, rec, streams, stop=stop,
                                                                  bounds=bounds)
                    # Inside the flag: a second signal (a job script forwarding the scheduler's) cannot cut it.
                    _, code = app.finish_run(rec, outcome, reason, options, streams)
            except BaseException as exc:  # an interrupt, a full disk, a bug: the record says how the run ended
                app.record_abrupt_end(rec, exc)
                raise
            finally:
                rec.close()
    finally:
        if began and options.notify:  # as after a build: also after an interrupt or an error
            notify_console(run_notify(options.notify, run_dir, environ, options.notify_timeout_s), streams.err)
    return code
