"""The error family and the exit codes of the contract.

An exception here means "rocmbuild cannot go on"; a failed build attempt is
not an exception but an outcome value.  Every error carries its exit code and a
three-part message (what went wrong, why, what to do) that the CLI prints
without a traceback.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class ExitCode(IntEnum):
    """Exit codes of the command line contract (docs/reference-cli.md)."""

    SUCCEEDED = 0
    FAILED = 1
    USAGE = 2
    UNRECOGNISED = 3
    NOT_RETRYABLE = 4
    BUDGET_EXHAUSTED = 5
    INTERNAL = 70
    INTERRUPTED = 130


class Outcome(StrEnum):
    """Run outcomes, written to summary.json as their values (a StrEnum: equal to, and dumped as, the string)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    UNRECOGNISED = "unrecognised"
    NOT_RETRYABLE = "not_retryable"
    BUDGET_EXHAUSTED = "budget_exhausted"
    INTERRUPTED = "interrupted"
    UP_TO_DATE = "up_to_date"  # the tree's last success has the same fingerprint

    @property
    def exit_code(self) -> int:
        """The exit code of the contract (docs/reference-cli.md) for this outcome."""
        return int(OUTCOME_EXIT_CODES[self])

    @classmethod
    def for_exit_code(cls, code: int) -> Outcome:
        """The outcome a run ending with ``code`` is recorded with (``failed`` for codes no outcome has)."""
        return next((o for o, c in OUTCOME_EXIT_CODES.items() if c == code and o != cls.SUCCEEDED), cls.FAILED)


OUTCOME_EXIT_CODES: dict[Outcome, ExitCode] = {
    Outcome.SUCCEEDED: ExitCode.SUCCEEDED,
    Outcome.FAILED: ExitCode.FAILED,
    Outcome.UNRECOGNISED: ExitCode.UNRECOGNISED,
    Outcome.NOT_RETRYABLE: ExitCode.NOT_RETRYABLE,
    Outcome.BUDGET_EXHAUSTED: ExitCode.BUDGET_EXHAUSTED,
    Outcome.INTERRUPTED: ExitCode.INTERRUPTED,
    Outcome.UP_TO_DATE: ExitCode.SUCCEEDED,
}


class RocmbuildError(Exception):
    """Base of every error rocmbuild reports to the user."""

    exit_code: int = ExitCode.INTERNAL

    def __init__(self, what: str, why: str = "", todo: str = "") -> None:
        super().__init__(what)
        self.what = what
        self.why = why
        self.todo = todo

    def render(self) -> str:
        lines = [f"error: {self.what}"]
        if self.why:
            lines.append(f"  why: {self.why}")
        if self.todo:
            lines.append(f"  what to do: {self.todo}")
        return "\n".join(lines)


class UsageError(RocmbuildError):
    """Bad option, recipe, arch, missing directory: exit 2."""

    exit_code = ExitCode.USAGE


class RecipeError(UsageError):
    """A recipe that cannot be found or loaded."""


class ArchError(UsageError):
    """A GPU target list that is invalid or cannot be detected."""


class RocmRootError(UsageError):
    """A ROCm root that does not look like ROCm."""


class SourceError(UsageError):
    """A source tree that is missing or cannot be checked out."""


class LockHeldError(UsageError):
    """Another rocmbuild is building in the same source tree."""


class CatalogueError(UsageError):
    """A failure-signature file that does not validate."""


class InternalError(RocmbuildError):
    """A bug in rocmbuild."""

    exit_code = ExitCode.INTERNAL


class DiskFullError(RocmbuildError):
    """The run's records cannot be written any more (full or read-only filesystem): exit 4, disk_full."""

    exit_code = ExitCode.NOT_RETRYABLE
