"""Fleet provisioning around one recipe's build.

Owns: the `up_to_date` short cut before any attempt (fingerprint.py decides, this records), storing
the fingerprint after a success, and then `--wheel-dir`'s wheel step (wheels.py runs, verifies and
publishes it).
"""

from __future__ import annotations

from rocmbuild.errors import Outcome
from rocmbuild.options import BuildOptions
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.process.sidestep import Bounds
from rocmbuild.provisioning import fingerprint
from rocmbuild.provisioning.wheels import (  # noqa: F401  (wheels' names, as callers knew them here)
    MANIFEST,
    WheelResult,
    publish_wheels,
    published,
    verify_wheel,
    wheel_commands,
    wheel_hint,
)
from rocmbuild.records.recorder import RunRecorder
from rocmbuild.services import Streams


def _say(streams: Streams, options: BuildOptions, text: str) -> None:
    if options.verbosity != "quiet":
        streams.err.write(f"rocmbuild: {text}\n")
        streams.err.flush()


def up_to_date(plan: BuildPlan, options: BuildOptions, rec: RunRecorder, streams: Streams,
               bounds: Bounds | None = None) -> bool:
    """True = nothing to build: the tree's last success has this fingerprint and still verifies.

    Otherwise the stored fingerprint is dropped before the build starts: a build that then fails
    (or is interrupted half way) must not leave the claim that the tree is built.
    """
    verdict = fingerprint.check(plan)
    data = verdict.to_json()
    if options.force:
        data.update(up_to_date=False, differs=["--force"])
    rec.extra["up_to_date"] = data
    rec.event("fingerprint.compared", **data)
    if verdict.ok and not options.force:
        _say(streams, options, f"up to date: same fingerprint ({verdict.fingerprint.digest[:12]}) as the last "
                               f"success in {plan.source}; artifacts: {verdict.artifacts}")
        if options.wheel_dir is not None and not published(options.wheel_dir, plan.recipe.name,
                                                            verdict.fingerprint.digest):
            # A node re-run with --wheel-dir still makes sure its wheel is there.
            result = publish_wheels(plan, options, rec, streams, verdict.fingerprint, bounds)
            rec.extra["wheels"] = result.to_json()
            return result.ok
        return True
    fingerprint.forget(plan.source)
    return False


def after_success(base_plan: BuildPlan, final_plan: BuildPlan, options: BuildOptions, rec: RunRecorder,
                  streams: Streams, reason: str, bounds: Bounds | None = None) -> tuple[Outcome, str]:
    """Store the fingerprint of the command's plan (not the remedied one: the next run of the same
    command must match), then the wheels; an unverified wheel turns the outcome into `failed`, a
    wheel step stopped by the budget (``bounds``) into `budget_exhausted`."""
    current = fingerprint.compute(base_plan)
    where = fingerprint.save(base_plan.source, current, base_plan.recipe.name)
    rec.event("fingerprint.saved", digest=current.digest, parts=dict(current.parts), path=str(where))
    if options.wheel_dir is None:
        return Outcome.SUCCEEDED, reason
    result = publish_wheels(final_plan, options, rec, streams, current, bounds)
    rec.extra["wheels"] = result.to_json()
    if not result.ok:
        return result.outcome if result.outcome != Outcome.SUCCEEDED else Outcome.FAILED, (
            f"built, but the wheel step failed: {result.detail}")
    return Outcome.SUCCEEDED, f"{reason}; wheel(s) in {options.wheel_dir}"
