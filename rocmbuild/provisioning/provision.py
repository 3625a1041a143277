"""Fleet provisioning around one recipe's build.

Owns: the `up_to_date` short cut before any attempt (fingerprint.py decides, this records), storing
the fingerprint after a success, and then `--wheel-dir`'s wheel step (wheels.py runs, verifies and
publishes it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rocmbuild.errors import Outcome
from rocmbuild.options import BuildOptions
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.process.sidestep import Bounds
from rocmbuild.provisioning import fingerprint, outputs, treehash
from rocmbuild.provisioning.wheels import (  # noqa: F401  (wheels' names, as callers knew them here)
    MANIFEST,
    WheelResult,
    publish_wheels,
    published,
    verify_wheel,
    wheel_commands,
    wheel_hint,
    wheel_todo,
)
from rocmbuild.records.journal import Wheels
from rocmbuild.records.recorder import RunRecorder
from rocmbuild.services import Streams


def _say(streams: Streams, options: BuildOptions, text: str) -> None:
    if options.verbosity != "quiet":
        streams.err.write(f"rocmbuild: {text}\n")
        streams.err.flush()


def up_to_date(plan: BuildPlan, options: BuildOptions, rec: RunRecorder, streams: Streams,
               stop: fingerprint.Stop = fingerprint.never_stop, bounds: Bounds | None = None) -> fingerprint.UpToDate:
    """``.ok`` = nothing to build: the tree's last success has this fingerprint and still verifies.

    Otherwise the stored fingerprint is dropped before the build starts: a build that then fails
    (or is interrupted half way) must not leave the claim that the tree is built.  The verdict's
    fingerprint is the inputs *before* the build, which ``after_success`` compares again.
    Raises ``treehash.Stopped`` when ``stop`` says so during the walk (a Ctrl-C, the budget).
    """
    verdict = fingerprint.check(plan, stop=stop, verify_again=not options.force)
    data = verdict.to_json()
    if options.force:
        data.update(up_to_date=False, differs=["--force"])
    rec.journal = replace(rec.journal, up_to_date=data)
    rec.event("fingerprint.compared", **data)
    tree = verdict.fingerprint.tree
    if tree is not None and not tree.cacheable:  # said once: after the build it is not walked again
        _say(streams, options, f"the tree is not cacheable ({'; '.join(tree.special[:3])}"
                               f"{' ...' if len(tree.special) > 3 else ''}): such files are never opened, "
                               "and up_to_date is never claimed for this tree")
    if verdict.ok and not options.force:
        _say(streams, options, f"up to date: same fingerprint ({verdict.fingerprint.digest[:12]}) as the last "
                               f"success in {plan.source}; {verdict.artifacts}")
        if options.wheel_dir is not None and not published(options.wheel_dir, plan.recipe.name,
                                                            verdict.fingerprint.digest):
            # A node re-run with --wheel-dir still makes sure its wheel is there.
            result = publish_wheels(plan, options, rec, streams, verdict.fingerprint, bounds)
            rec.journal = replace(rec.journal, wheels=Wheels(result.to_json()))
            return verdict if result.ok else replace(verdict, ok=False)
        return verdict
    fingerprint.forget(plan.source)
    return replace(verdict, ok=False)


@dataclass(frozen=True, kw_only=True)
class Built:
    """A build that succeeded: the command's plan, the plan it ended with (remedies applied), the
    session's reason, and the fingerprint taken before it (None: there was none)."""

    base_plan: BuildPlan
    final_plan: BuildPlan
    reason: str
    before: fingerprint.Fingerprint | None


def after_success(built: Built, options: BuildOptions, rec: RunRecorder, streams: Streams, *,
                  stop: fingerprint.Stop, bounds: Bounds) -> tuple[Outcome, str]:
    """Store the fingerprint of the command's plan (not the remedied one: the next run of the same
    command must match) if the tree's inputs did not change during the build; then the wheels; an
    unverified wheel turns the outcome into `failed`, a wheel step stopped by the budget (``bounds``)
    into `budget_exhausted`."""
    final_plan, reason = built.final_plan, built.reason
    current = _record_success(built, options, rec, streams, stop)
    if options.wheel_dir is None:
        return Outcome.SUCCEEDED, reason
    result = publish_wheels(final_plan, options, rec, streams, current, bounds)
    rec.journal = replace(rec.journal, wheels=Wheels(result.to_json(), wheel_todo(result) if not result.ok else None))
    if not result.ok:
        return result.outcome if result.outcome != Outcome.SUCCEEDED else Outcome.FAILED, (
            f"built, but the wheel step failed: {result.detail}")
    return Outcome.SUCCEEDED, f"{reason}; wheel(s) in {options.wheel_dir}"


def _record_success(success: Built, options: BuildOptions, rec: RunRecorder, streams: Streams,
                    stop: fingerprint.Stop) -> fingerprint.Fingerprint:
    """The fingerprint after the build; saved only when the tree's inputs are what they were before it."""
    base_plan, final_plan, before = success.base_plan, success.final_plan, success.before

    def not_saved(why: str) -> None:
        try:
            fingerprint.forget(base_plan.source)
        except OSError as exc:  # the record stays stale; the next run's compare still rebuilds on any change
            why += f"; the old record could not be removed ({exc.strerror or exc})"
        rec.event("fingerprint.not_saved", reason=why)
        rec.journal = replace(rec.journal, fingerprint_saved=False)

    try:
        current = fingerprint.compute(base_plan, stop=stop)
    except treehash.Stopped as exc:
        not_saved(f"stopped ({exc.reason}) while fingerprinting the tree after the build")
        return before or fingerprint.Fingerprint({})
    if before is not None and before.tree is not None and not before.tree.cacheable:
        not_saved("the tree is not cacheable")
        return current
    changed = treehash.changed_between(before.tree, current.tree) if (
        before is not None and before.tree is not None and current.tree is not None) else []
    if before is not None:  # the rest of what the build saw: a torch upgraded while it ran, another cc
        changed += [f"({part})" for part in fingerprint.differences(before.parts, current) if part != "source"]
    if changed:
        shown = ", ".join(changed[:5]) + (f" (+{len(changed) - 5} more)" if len(changed) > 5 else "")
        not_saved(f"changed during the build: {shown}")
        _say(streams, options, f"the tree changed during the build ({shown}): no up_to_date record, the next "
                               "run builds again (files the build itself rewrites belong in the recipe's "
                               "[clean] paths)")
        return current
    built = outputs.collect(base_plan.source, base_plan.recipe.verify_artifacts, base_plan.recipe.clean_paths)
    base_env, final_env = base_plan.env, final_plan.env
    verify_env = {k: v for k, v in final_env.items() if base_env.get(k) != v}
    try:
        where = fingerprint.save(base_plan.source, current, base_plan.recipe.name, built, verify_env)
    except OSError as exc:  # a full or read-only state dir after hours of good build: still a success
        not_saved(f"the state dir could not take it ({exc.strerror or exc})")
        _say(streams, options, f"could not save the up_to_date record ({exc.strerror or exc}): the build "
                               "succeeded, the next run builds again")
        return current
    rec.event("fingerprint.saved", digest=current.digest, parts=dict(current.parts), path=str(where),
              outputs=built.kind, output_files=len(built.files))
    rec.journal = replace(rec.journal, fingerprint_saved=True)
    return current
