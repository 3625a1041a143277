"""Regular expressions from users' signature files, matched in bounded time.

Owns the rule that no pattern can hang rocmbuild.  The bundled catalogue's
patterns are reviewed and tested with the suite and run on Python's ``re``.
A user's pattern is untrusted: ``^(a+)+$`` against a 41-character line of
``a`` takes ``re`` minutes, during which neither ``--budget``, the stall timer
nor SIGTERM get a turn (the match holds the interpreter).  So user patterns:

1. are refused at load (exit 2) when they nest quantifiers in the classic
   catastrophic form (``(x+)+``, ``(x*)*``, ``(x+)*``, ``(x|x)*`` ...);
2. run on the ``regex`` package's engine with a per-search time limit
   (:data:`SEARCH_TIMEOUT`); a search that times out counts as no match, and a
   pattern that times out :data:`MAX_TIMEOUTS` times is switched off for the
   rest of the process, so a flood of lines cannot add up to a hang either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

import regex

SEARCH_TIMEOUT = 0.05  # seconds per search: a real build line takes microseconds
MAX_TIMEOUTS = 3

# A group whose body ends in an unbounded quantifier, itself quantified: (a+)+ (\w*)* (x+){2,}
_NESTED = re.compile(r"\((?:\?:)?(?:[^()\\]|\\.)*[+*]\)(?:[+*]|\{\d*,\})")
# Alternatives inside a repeated group that can match the same text: (a|a)+ (\w|\d)*
_OVERLAPPING_ALTERNATION = re.compile(r"\(((?:\\.|[^()|\\])+)\|\1\)[+*]")


class Searchable(Protocol):
    """What a signature needs of a compiled pattern (``re.Pattern`` and :class:`BoundedPattern` both are)."""

    @property
    def pattern(self) -> str: ...

    def search(self, text: str, /) -> Any: ...


def catastrophic(pattern: str) -> str | None:
    """Why ``pattern`` can backtrack exponentially (None: no known catastrophic form)."""
    if _NESTED.search(pattern):
        return "it nests quantifiers, e.g. (x+)+, which can take exponential time on a line that almost matches"
    if _OVERLAPPING_ALTERNATION.search(pattern):
        return "it repeats a group whose alternatives match the same text, e.g. (a|a)*"
    return None


@dataclass(eq=False)  # identity: a Signature holding it stays hashable
class BoundedPattern:
    """A user pattern: ``search`` gives up after SEARCH_TIMEOUT and reports no match."""

    pattern: str
    flags: int = 0
    timeouts: int = 0
    _compiled: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._compiled = regex.compile(self.pattern, self.flags | regex.VERSION0)

    @property
    def disabled(self) -> bool:
        return self.timeouts >= MAX_TIMEOUTS

    def search(self, text: str) -> Any:
        if self.disabled:
            return None
        try:
            return self._compiled.search(text, timeout=SEARCH_TIMEOUT)
        except TimeoutError:
            self.timeouts += 1
            return None


def compile_user_pattern(pattern: str) -> BoundedPattern:
    """Compile a user's pattern for bounded matching; raises ValueError with the reason it is refused."""
    reason = catastrophic(pattern)
    if reason is not None:
        raise ValueError(reason)
    try:
        return BoundedPattern(pattern)
    except regex.error as exc:
        raise ValueError(str(exc)) from exc
