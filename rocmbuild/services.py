"""The outside world as values: where output goes, and the effects tests replace.

``Streams`` says where --json objects and human text go; ``Services`` holds
the clock and the sleep, the helper-command runner, the attempt runner (the PTY engine, called
with an ``AttemptRequest``), GPU
detection and the cache of the HIP compiler's answers, so that tests can replace each without patching modules;
:func:`pause` is the one interruptible wait, whatever sleep it is given.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from rocmbuild.host import arch as archmod
from rocmbuild.host.probecache import ProbeCache
from rocmbuild.process import command as proc
from rocmbuild.process import runner

if TYPE_CHECKING:
    from rocmbuild.process.attempt import AttemptHooks, AttemptRequest
    from rocmbuild.process.runner import AttemptOutcome


@dataclass(frozen=True)
class Streams:
    """Where output goes: ``out`` gets --json objects, ``err`` human text."""

    out: TextIO
    err: TextIO


@dataclass(frozen=True)
class Services:
    """The outside world, replaceable in tests."""

    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic  # the budget's clock (deadlines are on it)
    run: proc.Run = proc.capture
    detect_arch: Callable[[], archmod.Detection | None] = archmod.detect_local_archs
    probes: ProbeCache = field(default_factory=ProbeCache)
    attempt: Callable[[AttemptRequest, AttemptHooks], AttemptOutcome] = runner.run_attempt  # runs one attempt's steps


def pause(seconds: float, *, sleep: Callable[[float], None], interrupted: Callable[[], bool],
          chunk: float = 0.5) -> float:
    """Wait ``seconds`` through ``sleep`` in chunks, stopping early when interrupted; the time waited.

    The time is counted from the chunks asked for, not read from a clock, so a sleep that returns
    at once (a test's) ends the wait as promptly as a real one ends it on time.
    """
    waited = 0.0
    while waited < seconds and not interrupted():
        step = min(chunk, seconds - waited)
        sleep(step)
        waited += step
    return waited
