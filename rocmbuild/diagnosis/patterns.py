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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
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


_NESTED_WHY = ("it nests quantifiers, e.g. (x+)+ or (\\w+\\s?)+, which can take exponential time on a line that "
               "almost matches; make the inner repeat possessive (x++) or the group atomic ((?>...))")
_OVERLAP_WHY = ("it repeats a group whose alternatives can match the same text, e.g. (a|a)* or (a|aa)+; make the "
                "alternatives start differently or the group atomic ((?>...))")


def catastrophic(pattern: str) -> str | None:
    """Why ``pattern`` can backtrack exponentially (None: no known catastrophic form).

    Read from ``re``'s parse of the pattern: a repeat inside a repeated group that can split the same
    text two ways ((x+)+, ((a+))+, (\\w+\\s?)+, (x+){2,}; not (\\d+\\.)+, where the dot fixes the split), or a
    repeated alternation whose branches can start with the same character or be empty ((a|a)*, (a|aa)+,
    (ab|a)+).  Possessive repeats and atomic groups never backtrack and pass.  The per-search time limit
    covers what this misses.
    """
    try:
        from re import _constants as c  # type: ignore[attr-defined]
        from re import _parser  # type: ignore[attr-defined]

        parsed = _parser.parse(pattern)
    except re.error:
        return None  # invalid: the compiler refuses it with its own message
    except Exception:  # re's internal API changed: the textual forms only
        if _NESTED.search(pattern):
            return _NESTED_WHY
        return _OVERLAP_WHY if _OVERLAPPING_ALTERNATION.search(pattern) else None
    return _structural(parsed, c)


# One item of ``re._parser``'s parse: an opcode (an int constant of ``re._constants``) and its argument,
# whose shape depends on the opcode (a repeat's (min, max, body), a group's (id, flags, flags, body),
# a literal's code point, ...): the argument stays untyped, each use reads it for its opcode.
_Item = tuple[int, Any]


def _varies(op: int, av: Any, c: ModuleType) -> bool:
    return op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[1] != av[0]


def _structural(items: Iterable[_Item], c: ModuleType) -> str | None:
    """The first catastrophic form in parsed ``items`` (``c``: re's opcode constants)."""
    for op, av in items:
        if op in (c.MAX_REPEAT, c.MIN_REPEAT):
            _low, high, body = av
            if high == c.MAXREPEAT or high > 1:  # (x){12} splits text as many ways as (x)+ does
                if _branches_overlap(body, c):
                    return _OVERLAP_WHY
                if _ambiguous_inner_repeat(body, c):
                    return _NESTED_WHY
            found = _structural(body, c)
        elif op is c.SUBPATTERN:
            found = _structural(av[3], c)
        elif op is c.BRANCH:
            found = next((r for alt in av[1] if (r := _structural(alt, c))), None)
        elif op in (c.ASSERT, c.ASSERT_NOT):
            found = _structural(av[1], c)
        else:  # literals, classes, anchors; possessive repeats and atomic groups never backtrack
            found = None
        if found:
            return found
    return None


def _flat(items: Iterable[_Item], c: ModuleType) -> list[_Item]:
    """Top-level items with plain (unrepeated) groups opened: ((a+)) is a+."""
    flat: list[_Item] = []
    for op, av in items:
        if op is c.SUBPATTERN:
            flat += _flat(av[3], c)
        else:
            flat.append((op, av))
    return flat


def _ambiguous_inner_repeat(body: Iterable[_Item], c: ModuleType) -> bool:
    """A varying repeat in a repeated body whose characters can also start what follows it (wrapping round)."""
    items = _flat(body, c)
    for index, (op, av) in enumerate(items):
        if any(_varies(o, a, c) for o, a in _flat(av[2], c)) if _varies(op, av, c) else False:
            return True  # a repeat in a repeat in a repeat: not worth reasoning about
        if not _varies(op, av, c):
            if op in (c.BRANCH, c.MAX_REPEAT, c.MIN_REPEAT) and _contains_varying(op, av, c):
                return True
            continue
        own = _item_chars(_flat(av[2], c), c)
        follow = _follow_chars(items, index, c)
        if own is None or follow is None or own & follow:
            return True
    return False


def _contains_varying(op: int, av: Any, c: ModuleType) -> bool:
    parts = av[1] if op is c.BRANCH else [av[2]]
    return any(_varies(o, a, c) or (o is c.BRANCH and _contains_varying(o, a, c))
               for part in parts for o, a in _flat(part, c))


def _follow_chars(items: list[_Item], index: int, c: ModuleType) -> frozenset[int] | None:
    """What can come right after ``items[index]`` inside the repeated body, wrapping round to its start."""
    follow: frozenset[int] = frozenset()
    order = items[index + 1:] + items[:index + 1]
    for op, av in order:
        if op is c.AT:
            continue  # zero-width
        optional = op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[0] == 0
        chars = _item_chars(_flat(av[2], c) if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT)
                            else [(op, av)], c)
        if chars is None:
            return None
        follow |= chars
        if not optional:
            return follow
    return None  # everything optional: the body can match empty, which repeats ambiguously


def _item_chars(items: list[_Item], c: ModuleType) -> frozenset[int] | None:
    """The code points (< 256) a one-character item can match; None when it is not one simple character."""
    if len(items) != 1 or items[0][0] not in (c.LITERAL, c.NOT_LITERAL, c.IN, c.ANY, c.CATEGORY):
        return _first_chars(items, c) if items else None
    return _first_chars(items, c)


def _branches_overlap(body: Iterable[_Item], c: ModuleType) -> bool:
    """A BRANCH at the top of a repeated body whose alternatives may be empty or start alike."""
    for op, av in body:
        if op is c.SUBPATTERN:
            return _branches_overlap(av[3], c)
        if op is not c.BRANCH:
            continue
        alternatives = av[1]
        if any(len(alt) == 0 for alt in alternatives):
            return True  # (a|aa) is parsed as a(|a): an empty branch repeats ambiguously
        firsts = [_first_chars(alt, c) for alt in alternatives]
        for i, mine in enumerate(firsts):
            for theirs in firsts[i + 1:]:
                if mine is None or theirs is None or mine & theirs:
                    return True
    return False


def _first_chars(alternative: Sequence[_Item], c: ModuleType) -> frozenset[int] | None:
    """The code points (< 256) an alternative can start with; None when that is not simply known."""
    from re import _compiler  # type: ignore[attr-defined]

    if not len(alternative):
        return None
    op, av = alternative[0]
    if op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[0] == 0:
        return None  # it may start with whatever follows
    if op is c.LITERAL:
        return frozenset((av,))
    try:
        from re import _parser  # type: ignore[attr-defined]

        first = _parser.SubPattern(_parser.State(), [alternative[0]])
        compiled = _compiler.compile(first, 0)
    except Exception:
        return None
    return frozenset(code for code in range(1, 256) if compiled.match(chr(code)))


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

    def walk(items: Iterable[_Item]) -> None:
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
