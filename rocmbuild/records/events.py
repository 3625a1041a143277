"""The names of rocmbuild's own events (events.jsonl's ``event`` field), as one Literal type.

Owns the closed list: ``RunRecorder.event`` takes an :data:`EventName`, so mypy
checks every caller's name against it.  The strings are the contract
(docs/reference-records.md): renaming one is a change there too.
"""

from __future__ import annotations

from typing import Literal, get_args

EventName = Literal[
    # the run
    "run.started", "run.resumed", "run.finished", "leftovers.stopped", "plan.warning", "source.copied",
    # preflight and up-to-date
    "preflight.checked", "fingerprint.compared", "fingerprint.saved", "fingerprint.not_saved", "force.cleaned",
    "containment",
    # attempts
    "attempt.started", "attempt.finished", "failure.diagnosed", "artifacts.verified", "build.warning",
    "cache.warning",
    # the ladder and its effects
    "plan.changed", "remedy.applied", "remedy.skipped", "remedy.warning", "path.removed", "path.refused",
    "package.installed", "retry.waiting",
    # the memory guard (memguard.py)
    "memory.paused", "memory.resumed", "memory.oom_kill", "memory.oom_checked",
    # after success
    "wheel.verified", "wheel.failed", "wheel.refused",
    # written by notify.py straight into events.jsonl, after the recorder closed
    "notify.finished",
]

EVENT_NAMES: frozenset[str] = frozenset(get_args(EventName))
