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


def required_literal(pattern: str, *, folded: bool = False) -> str:
    """The longest run of characters every match of ``pattern`` (on ``re``) contains; '' when unknown.

    ``folded``: for a case-insensitive pattern too, lower-cased (and '' unless ASCII): a run every
    match holds up to case, so an ASCII text whose ``lower()`` lacks it cannot match.

    Read from the parsed pattern: literal characters in sequence at the top level, and inside
    groups that are not repeated; anything else (a class, a repeat, an alternation, an assertion)
    ends a run.  Case-insensitive patterns have none.  A text without the literal cannot match,
    which an ``in`` test (tens of nanoseconds) tells before the regex engine runs (a microsecond):
    the catalogue's error signatures each try several patterns on every ``error`` line.  Uses
    ``re``'s own parser (``re._parser``, Python 3.11+); if that ever fails, no literal, same results.
    """
    try:
        from re import _constants, _parser  # type: ignore[attr-defined]

        parsed = _parser.parse(pattern)
        if parsed.state.flags & re.IGNORECASE and not folded:
            return ""
        literal, subpattern = _constants.LITERAL, _constants.SUBPATTERN
    except Exception:  # an internal API: without it, a pattern is simply always searched
        return ""
    runs: list[str] = []
    current: list[str] = []

    def walk(items: Any) -> None:
        for op, av in items:
            if op is literal:
                current.append(chr(av))
            elif op is subpattern and (folded or not (av[1] & re.IGNORECASE)):
                walk(av[3])  # a group matched once: its sequence continues the run
            else:
                runs.append("".join(current))
                current.clear()

    walk(parsed)
    runs.append("".join(current))
    longest = max(runs, key=len)
    if folded:
        return longest.lower() if longest.isascii() else ""
    return longest


class TrustedPattern:
    """A bundled pattern on Python's ``re``, compiled at its first search.

    The bundled catalogue holds ~530 patterns and compiling them all costs 0.1-0.3 s of every
    command that loads it (``rocmbuild build`` before its first attempt); a build's log reaches
    only the patterns of the signatures whose keywords it contains.  Bundled patterns are
    compiled and exercised by the test suite (every signature's examples), so deferring the
    compile defers no error a user could cause.  Equal when the pattern text is, like ``re.Pattern``.
    """

    __slots__ = ("_compiled", "_literal", "pattern", "search")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: re.Pattern[str] | None = None
        self._literal = ""
        # The first search compiles and puts the fastest search there is here: the compiled pattern's
        # own (no Python call of ours), or one that tests the pattern's required literal first.
        self.search: Callable[[str], re.Match[str] | None] = self._first_search

    def compile(self) -> re.Pattern[str]:
        """The compiled pattern (raises re.error for an invalid one: ``signatures check`` asks)."""
        if self._compiled is None:
            self._compiled = re.compile(self.pattern)
            self._literal = required_literal(self.pattern)
            self.search = self._literal_first if len(self._literal) >= 3 else self._compiled.search
        return self._compiled

    def gate(self) -> tuple[str, Callable[[str], re.Match[str] | None]]:
        """(required literal or '', the compiled search): for a caller's loop to test the literal inline."""
        compiled = self.compile()
        return (self._literal if len(self._literal) >= 3 else ""), compiled.search

    def _first_search(self, text: str, /) -> re.Match[str] | None:
        self.compile()
        return self.search(text)

    def _literal_first(self, text: str, /) -> re.Match[str] | None:
        if self._literal not in text:
            return None
        assert self._compiled is not None
        return self._compiled.search(text)

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
