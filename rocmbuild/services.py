"""The outside world as values: where output goes, and the effects tests replace.

``Streams`` says where --json objects and human text go; ``Services`` holds
the sleep, the helper-command runner and GPU detection, so that tests can
replace each without patching modules.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from rocmbuild import arch as archmod
from rocmbuild import runner


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
