"""What one run of the ladder loop works with besides the plan: one frozen ``RunContext``.

Owns the split between planning and running: the command's options are read
once, here (``RunContext.for_options``), into the limits, the loop's policy
switches and the console mode; the loop (session.py) and the app's per-recipe
steps never read ``BuildOptions`` for a decision the context or the plan holds.
The context also carries the outside world (streams, services with their clock
and sleep), the catalogue, the interrupt flag, the deadline and, per recipe,
the compiler cache.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rocmbuild.diagnosis.catalogue import Catalogue
from rocmbuild.options import BuildOptions
from rocmbuild.services import Services, Streams

if TYPE_CHECKING:
    from rocmbuild.toolchain.cache import CompilerCache


@dataclass(frozen=True)
class LoopLimits:
    """What bounds the attempts: how many, how long without output, how long to back off, memory kept free."""

    max_attempts: int
    stall_timeout_s: float
    backoff_s: float
    memory_reserve: int | None  # bytes; None: the guard's default, 0: guard off


@dataclass(frozen=True)
class LoopPolicy:
    """The user's switches over the ladder."""

    fail_fast: bool = False
    escalate_unknown: bool = False


@dataclass(frozen=True)
class ConsoleMode:
    """Where and how much the loop writes on the console."""

    verbosity: str = "normal"  # "quiet" | "normal" | "verbose"
    json: bool = False  # --json: stdout is for summaries, progress goes to stderr


@dataclass(frozen=True)
class RunContext:
    """Everything the ladder loop needs besides the plan and the recorder."""

    limits: LoopLimits
    policy: LoopPolicy
    console: ConsoleMode
    streams: Streams
    services: Services
    catalogue: Catalogue
    interrupted: Callable[[], bool]
    deadline: float | None = None  # on services.clock; None: no budget
    cache: CompilerCache | None = None  # this recipe's compiler cache (set per recipe)

    @classmethod
    def for_options(cls, options: BuildOptions, *, streams: Streams, services: Services, catalogue: Catalogue,
                    interrupted: Callable[[], bool], deadline: float | None) -> RunContext:
        """The context of a command: its options read once."""
        return cls(
            limits=LoopLimits(options.max_attempts, options.stall_timeout_s, options.backoff_s,
                              options.memory_reserve),
            policy=LoopPolicy(options.fail_fast, options.escalate_unknown),
            console=ConsoleMode(options.verbosity, options.json),
            streams=streams, services=services, catalogue=catalogue, interrupted=interrupted, deadline=deadline)

    def with_cache(self, cache: CompilerCache | None) -> RunContext:
        return replace(self, cache=cache)

    def budget_left(self) -> float | None:
        """Seconds left of the budget (None: no budget), on the services' clock."""
        return None if self.deadline is None else self.deadline - self.services.clock()

    def say(self, text: str) -> None:
        """A console line (errors even with --quiet)."""
        if self.console.verbosity != "quiet" or text.startswith("rocmbuild: error"):
            self.streams.err.write(f"rocmbuild: {text}\n")
            self.streams.err.flush()
