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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

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
        import regex  # only user signature files need its engine (and its ~10 ms import)

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


class TrustedPattern:
    """A bundled pattern on Python's ``re``, compiled at its first search.

    The bundled catalogue holds ~530 patterns and compiling them all costs 0.1-0.3 s of every
    command that loads it (``rocmbuild build`` before its first attempt); a build's log reaches
    only the patterns of the signatures whose keywords it contains.  Bundled patterns are
    compiled and exercised by the test suite (every signature's examples), so deferring the
    compile defers no error a user could cause.  Equal when the pattern text is, like ``re.Pattern``.
    """

    __slots__ = ("_compiled", "pattern", "search")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: re.Pattern[str] | None = None
        # The first search compiles and puts the compiled pattern's own search here: later searches
        # (hundreds of thousands on a big log) cost no Python call of ours.
        self.search: Callable[[str], re.Match[str] | None] = self._first_search

    def compile(self) -> re.Pattern[str]:
        """The compiled pattern (raises re.error for an invalid one: ``signatures check`` asks)."""
        if self._compiled is None:
            self._compiled = re.compile(self.pattern)
            self.search = self._compiled.search
        return self._compiled

    def _first_search(self, text: str, /) -> re.Match[str] | None:
        return self.compile().search(text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TrustedPattern) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __repr__(self) -> str:
        return f"TrustedPattern({self.pattern!r})"


def compile_user_pattern(pattern: str) -> BoundedPattern:
    """Compile a user's pattern for bounded matching; raises ValueError with the reason it is refused."""
    import regex

    reason = catastrophic(pattern)
    if reason is not None:
        raise ValueError(reason)
    try:
        return BoundedPattern(pattern)
    except regex.error as exc:
        raise ValueError(str(exc)) from exc
