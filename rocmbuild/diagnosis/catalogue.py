"""The failure catalogue: signatures as data, loaded and validated.

Owns the loading of ``signatures.toml`` (bundled with the package) and of the
user's own signature files (``$XDG_CONFIG_HOME/rocmbuild/signatures/*.toml``,
which add entries or override bundled ones by ``id``), the validation of both
(every problem is a :class:`~rocmbuild.errors.CatalogueError` naming the file
and the entry).  The checks behind ``rocmbuild signatures check`` live in
:mod:`rocmbuild.diagnosis.signature_check` (they need the classifier, which needs this module).

A file holds per-category defaults and signatures::

    [category.missing_library]
    retryable = true
    remedies = ["add_library_paths", "clean_build"]
    advice = "what a person should do when the ladder is spent"
    decisive = false                     # true: stop the build the moment it is seen (disk_full)

    [category.unknown]
    generic = ["clean_build", ...]       # the ladder --escalate-unknown applies to unrecognised failures

The catalogue is the one home of the ladder and stop policy: each category's
ladder, the decisive categories, the generic ladder and the stall ladder (the
``stalled`` category's remedies) are read from it, never restated in code.

    [[signature]]
    id = "ld-cannot-find-library"        # unique; a user file with the same id replaces it
    category = "missing_library"
    description = "GNU ld cannot find -lNAME"
    patterns = ['cannot find -l(?P<library>[^\\s:]+)']   # Python regexes; named groups = fields
    exclude = []                           # a line matching any of these never matches
    keywords = ["cannot find -l"]          # literal substrings: the watcher's prefilter
    priority = 70                          # higher wins
    fallback = false                       # generic: loses to any specific match anywhere
    examples = ["/usr/bin/ld: cannot find -lhipblas"]
    near_misses = ["..."]
    references = ["ROCm/hip#3042"]         # public threads the shape was taken from

Optional signature keys: ``retryable`` and ``remedies`` (override the
category's), ``confirm`` + ``confirm_within`` (the match only counts as
specific when one of these patterns matches within N following lines;
unconfirmed it is a fallback, or no reading at all with ``confirm_required = true``),
``after_patterns`` + ``after_within`` (fill
missing fields from the following lines, e.g. CMake's NOTFOUND variable list),
``dismiss`` + ``dismiss_within`` (the tool itself says the failure was harmless within
N following lines, e.g. ``Server does not provide clone.bundle; ignoring``),
``host = "rocm"`` (the reading holds only on a ROCm host: a CUDA library missing is a wrong,
CUDA-flavoured package there, but a load-path problem on a CUDA box; it counts when the build knows
its host is ROCm, or when the log itself shows ROCm; ``host = "not-rocm"``: the reading holds only
elsewhere, e.g. a CUDA toolkit header missing, which on a ROCm host is a CUDA-only source built for HIP),
``alone = true`` (a guess from circumstance: it
counts only when the log shows no
other error line that a person would read first),
``if_requested`` (a category: the reading when the captured ``compiler`` is the very compiler the build
asked for with ``-DCMAKE_<LANG>_COMPILER=``; a cached path the build no longer asks for is stale, a path
it asks for that does not exist is a missing toolchain), ``wording`` (which tool's source the wording
is taken from, e.g. ``ROCm/clr hipamd/src/hip_error.cpp``: signatures match a tool's message family,
not one pasted phrasing),
``unless_before`` (regexes over the match's own ``{field}`` values, filled in escaped: any of the six
lines before the match that one finds takes the match back, e.g. a traceback frame inside the very
package whose submodule is "missing"; a template naming a field the match did not capture is skipped,
and each ``{name}`` must be a named group of the patterns, or ``scope``: the outermost namespace of a
mangled ``symbol``, mangled.py, offered only when a pattern captures ``symbol`` and has no ``scope`` group of
its own), ``unless_line`` (the same templates, searched in the matched line itself:
a loader's ``vllm/_C.abi3.so: undefined symbol: _ZN4vllm...`` names the project's own scope in its own
path), ``enabled = false`` (a user file switching
a bundled signature off), ``advice`` (what to do when this signature, not just its category, is the cause: it
replaces the category's advice; ``{field}`` placeholders take the captures).

A wording that several signatures share (strerror(ENOENT) in six languages, the local services a
network signature must not read as the network) is written once, as a fragment, and named in a
pattern as ``(?&name)`` (PCRE's syntax for "this named subpattern here").  A user file's pattern that
calls one of its own groups that way (the ``regex`` module's recursion) keeps doing so: a name the
pattern defines as a group is never taken for a fragment.  A fragment may name fragments defined before it::

    [fragments]
    enoent = 'No such file or directory|Нет такого файла или каталога|...'

    patterns = ['^make: (?P<path>[^:]+): (?&enoent)$']  # read as ^make: (?P<path>[^:]+): (?:No such...|...)$

A file sees its own fragments and those of the files loaded before it (a user file can use the
bundled ones); a name is defined once (a later file redefining ``enoent`` is refused, so a bundled
signature and a user's can never read the same call two ways).
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Protocol, get_args

from rocmbuild import paths
from rocmbuild.diagnosis.mangled import outer_scope
from rocmbuild.diagnosis.patterns import Searchable, TrustedPattern, compile_user_pattern, required_literal
from rocmbuild.errors import CatalogueError
from rocmbuild.host.trust import check_trusted
from rocmbuild.process.noise import ascii_quotes

# The closed sets of docs/reference-categories.md: a category and a remedy are these strings, checked by
# mypy where they are written and by the loader where a catalogue names them.
Category = Literal[
    "missing_library", "missing_runtime_library", "arch_mismatch", "unsupported_arch", "compiler_crash",
    "out_of_memory", "stale_build", "abi_mismatch", "toolchain_missing", "missing_python_dependency",
    "network", "disk_full", "stalled", "unknown",
]
RemedyName = Literal[
    "add_library_paths", "clean_build", "uninstall_packages", "lower_optimization", "reduce_jobs",
    "wait_and_retry", "set_cmake_policy_minimum", "sync_submodules", "narrow_archs", "refetch_download",
    "install_build_requirements",
]
CATEGORIES: tuple[Category, ...] = get_args(Category)
REMEDY_NAMES: tuple[RemedyName, ...] = get_args(RemedyName)


def known_remedies(values: Iterable[object]) -> tuple[RemedyName, ...]:
    """The names in ``values`` that are remedies, in order (a record from elsewhere may hold others)."""
    return tuple(name for value in values for name in REMEDY_NAMES if value == name)


def category_or_unknown(value: object) -> Category:
    """A recorded category as a ``Category``; a name outside the closed set reads as ``unknown``."""
    return next((name for name in CATEGORIES if value == name), "unknown")


def remedy_names(values: Iterable[str]) -> tuple[RemedyName, ...]:
    """``values`` as ``RemedyName``s (``ValueError`` for a name outside the closed set)."""
    found: list[RemedyName] = []
    for value in values:
        name = next((n for n in REMEDY_NAMES if n == value), None)
        if name is None:
            raise ValueError(f"unknown remedy {value!r}")
        found.append(name)
    return tuple(found)
BUNDLED_NAME = "signatures.toml"

_SIGNATURE_KEYS = {
    "id", "category", "description", "patterns", "exclude", "priority", "fallback", "retryable",
    "remedies", "references", "examples", "near_misses", "keywords", "confirm", "confirm_within", "confirm_required",
    "after_patterns", "after_within", "enabled", "advice", "dismiss", "dismiss_within", "alone", "wording", "host",
    "if_requested", "unless_before", "unless_line",
}
_REQUIRED_KEYS = ("id", "category", "description", "patterns", "keywords")
_CATEGORY_KEYS = {"retryable", "remedies", "advice", "decisive", "generic"}
_TOP_KEYS = {"signature", "category", "fragments"}
_FRAGMENT_CALL = re.compile(r"\(\?&(\w+)\)")
_NO_FRAGMENTS: Mapping[str, str] = MappingProxyType({})
# {field}; neither a quantifier ({2}, {1,3}) nor a regex-module property (\p{Lu}, \N{...}) is one
_FIELD_PLACEHOLDER = re.compile(r"(?<!\\[pPN])\{([A-Za-z_]\w*)\}")
_GROUP_NAME = re.compile(r"\(\?P?<(\w+)>")  # a named group's name in a pattern's text
# Fields the catalogue derives from a captured one (the derived name: the group it needs).
_DERIVED = {"scope": "symbol"}
_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


@dataclass(frozen=True)
class CategoryInfo:
    """Per-category defaults: is it worth retrying, and the ladder of remedies."""

    name: Category
    retryable: bool
    remedies: tuple[RemedyName, ...]
    advice: str = ""
    decisive: bool = False  # seen once = the build stops at once, even without --fail-fast
    generic: tuple[RemedyName, ...] = ()  # ``unknown`` only: the generic ladder --escalate-unknown uses


@dataclass(frozen=True)
class Signature:
    """One failure signature: how a line looks when this failure happened."""

    id: str
    category: Category
    description: str
    patterns: tuple[Searchable, ...]
    keywords: tuple[str, ...]
    exclude: tuple[Searchable, ...] = ()
    priority: int = 50
    fallback: bool = False
    retryable: bool | None = None          # None: the category's
    remedies: tuple[RemedyName, ...] | None = None  # None: the category's
    references: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    near_misses: tuple[str, ...] = ()
    confirm: tuple[Searchable, ...] = ()
    confirm_within: int = 200
    confirm_required: bool = False   # unconfirmed, the match is no reading (not even a fallback)
    after_patterns: tuple[Searchable, ...] = ()
    after_within: int = 5
    advice: str = ""
    dismiss: tuple[Searchable, ...] = ()
    dismiss_within: int = 2
    alone: bool = False
    wording: str = ""  # where the wording comes from: the tool's source that prints it (file / function)
    host: str = ""     # "rocm" / "not-rocm": the reading holds only on / off a ROCm host (known or shown by the log)
    if_requested: str = ""  # the category when the captured `compiler` is the one the build asked for (-D...=)
    unless_before: tuple[str, ...] = ()  # regex templates over the match's {fields}: one found before takes it back
    unless_line: tuple[str, ...] = ()  # the same, searched in the matched line itself
    source: str = ""

    def taken_back_by(self, fields: Mapping[str, str], before: Sequence[str]) -> bool:
        """Does a line before the match show what ``unless_before`` describes, with this match's fields?

        The fields are the match's own values, escaped: ``No module named 'cupy.cuda.cub'`` after a
        traceback frame inside ``cupy/`` is cupy's own module missing (a build that skipped it), not a
        dependency to install (cupy/cupy#4218)."""
        return self._found_by(self.unless_before, fields, before)

    def _found_by(self, templates: Sequence[str], fields: Mapping[str, str], lines: Sequence[str]) -> bool:
        trusted = _is_bundled(self.source)
        for template in templates:
            names = _FIELD_PLACEHOLDER.findall(template)
            if not all(fields.get(name) for name in names):
                continue  # a field this match did not capture: the template says nothing about it
            pattern = _FIELD_PLACEHOLDER.sub(lambda m: re.escape(fields[m.group(1)]), template)
            # A user's template runs on the bounded engine its patterns run on (checked at load).
            try:
                found: Searchable = re.compile(pattern) if trusted else compile_user_pattern(pattern)
            except (re.error, ValueError):
                continue  # filled in, a user's template the bounded engine refuses says nothing about this match
            if any(found.search(text) for text in lines):
                return True
        return False

    @functools.cached_property
    def _derives_scope(self) -> bool:
        """Whether this signature's templates or advice use ``{scope}`` (derived only for those that do)."""
        return any("{scope}" in t for t in (*self.unless_before, *self.unless_line, self.advice))

    def match(self, text: str) -> dict[str, str] | None:
        """The captured fields when ``text`` is this failure, else None."""
        if not any(k in text for k in self.keywords):
            return None
        return self.match_candidate(text)

    def match_candidate(self, text: str) -> dict[str, str] | None:
        """:meth:`match` for a ``text`` that holds one of the keywords (``Catalogue.candidates`` said so).

        The same answer, without the keyword test and with each pattern's required literal tested
        here rather than in a call per pattern: the classifier asks ~50 signatures of every
        ``error:`` line, and a build flooding errors prints thousands.
        """
        for literal, search in self._gates:
            if literal and literal not in text:
                continue
            found = search(text)
            if found is None:
                continue
            if any(x.search(text) for x in self.exclude):
                return None
            fields = {k: v for k, v in found.groupdict().items() if v}
            if self._derives_scope and "symbol" in fields and "scope" not in fields \
                    and (scope := outer_scope(fields["symbol"])):
                fields["scope"] = scope  # a pattern's own `scope` group, when it has one, is what it says
            if self.unless_line and self._found_by(self.unless_line, fields, (text,)):
                return None  # the line itself, read with its own fields, says the reading does not hold
            return fields
        return None

    @functools.cached_property
    def _gates(self) -> tuple[tuple[str, Callable[[str], Any]], ...]:
        """Each pattern's (required literal or '', search), compiled at the signature's first candidate line."""
        return tuple(gate() if (gate := getattr(p, "gate", None)) is not None else ("", p.search)
                     for p in self.patterns)


class Finder(Protocol):
    """What the classifier asks of ahocorasick_rs's automaton."""

    def find_matches_as_indexes(self, haystack: str, overlapping: bool = ...) -> list[tuple[int, int, int]]: ...


def _finder(literals: tuple[str, ...]) -> Finder | None:
    """An overlapping Aho-Corasick automaton over ``literals`` (None without ahocorasick_rs or literals)."""
    try:
        import ahocorasick_rs
    except ImportError:  # pragma: no cover - a dependency; the `in` loops give the same answers
        return None
    if not literals:
        return None
    found: Finder = ahocorasick_rs.AhoCorasick(list(literals), matchkind=ahocorasick_rs.MatchKind.Standard)
    return found


@dataclass(frozen=True)
class _GateIndex:
    """For one list of candidate signatures: which of them each required literal lets through."""

    finder: Finder | None                     # automaton over the distinct literals (None: test them all)
    owners: tuple[tuple[int, ...], ...]       # literal index -> positions of the signatures that need it
    always: tuple[int, ...]                   # signatures with a pattern that has no literal
    folded_finder: Finder | None = None                # the same for case-insensitive patterns' lower-cased literals,
    folded_owners: tuple[tuple[int, ...], ...] = ()  # searched in an ASCII text's lower()

    @classmethod
    def of(cls, sigs: Sequence[Signature]) -> _GateIndex:
        literals: dict[str, list[int]] = {}
        folded: dict[str, list[int]] = {}
        always: list[int] = []
        for position, sig in enumerate(sigs):
            needs: list[tuple[dict[str, list[int]], str]] = []
            for (literal, _), pattern in zip(sig._gates, sig.patterns, strict=True):
                if literal:
                    needs.append((literals, literal))
                    continue
                lowered = required_literal(pattern.pattern, folded=True) if isinstance(pattern, TrustedPattern) else ""
                if len(lowered) < 3:
                    break
                needs.append((folded, lowered))
            else:
                for index, literal in needs:
                    index.setdefault(literal, []).append(position)
                continue
            always.append(position)
        return cls(_finder(tuple(literals)), tuple(tuple(v) for v in literals.values()), tuple(always),
                   _finder(tuple(folded)), tuple(tuple(v) for v in folded.values()))

    def through(self, text: str) -> set[int]:
        """Positions of the signatures one of whose patterns' literals ``text`` holds (or that have none)."""
        keep = set(self.always)
        if self.finder is not None:
            owners = self.owners
            for m in self.finder.find_matches_as_indexes(text, overlapping=True):
                keep.update(owners[m[0]])
        if self.folded_owners:
            if self.folded_finder is None or not text.isascii():
                for owner in self.folded_owners:  # case folding beyond ASCII: no shortcut
                    keep.update(owner)
            else:
                owners = self.folded_owners
                for m in self.folded_finder.find_matches_as_indexes(text.lower(), overlapping=True):
                    keep.update(owners[m[0]])
        return keep


@dataclass(frozen=True)
class Catalogue:
    """All signatures (bundled + user), ordered by priority, and the categories."""

    signatures: tuple[Signature, ...]
    categories: Mapping[str, CategoryInfo]
    sources: tuple[str, ...] = ()
    _by_keyword: Mapping[str, tuple[Signature, ...]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, list[Signature]] = {}
        for sig in self.signatures:
            for keyword in sig.keywords:
                index.setdefault(keyword, []).append(sig)
        object.__setattr__(self, "_by_keyword", {k: tuple(v) for k, v in index.items()})

    @property
    def keywords(self) -> tuple[bytes, ...]:
        """Every keyword as UTF-8 bytes (the watcher's prefilter), longest first, no duplicates."""
        return tuple(sorted({k.encode() for k in self._by_keyword}, key=lambda b: (-len(b), b)))

    def candidates(self, text: str) -> list[Signature]:
        """Signatures that have a keyword in ``text`` (the only ones that can match it)."""
        seen: dict[str, Signature] = {}
        if "keywords" not in self._finders:  # built at the first line (None: no automaton)
            self._finders["keywords"] = _finder(tuple(self._by_keyword))
        finder = self._finders["keywords"]
        if finder is None:
            for keyword, sigs in self._by_keyword.items():
                if keyword in text:
                    for sig in sigs:
                        seen.setdefault(sig.id, sig)
            return list(seen.values())
        # One Aho-Corasick pass names every keyword present; the signatures come in the order the
        # loop above gives them (keyword order, then signature order).
        by_keyword = self._keyword_sigs
        for index in sorted({m[0] for m in finder.find_matches_as_indexes(text, overlapping=True)}):
            for sig in by_keyword[index]:
                seen.setdefault(sig.id, sig)
        return list(seen.values())

    def plausible(self, text: str) -> list[Signature]:
        """:meth:`candidates` without those none of whose patterns' required literals ``text`` holds.

        The same signatures match (``Signature.match_candidate`` tests those literals first and
        answers None without them), found with one Aho-Corasick pass over the literals of the
        candidates instead of a test per pattern: an ``error:`` line reaches ~58 signatures and
        ~160 patterns, and a build can print thousands of them.
        """
        sigs = self.candidates(text)
        if len(sigs) < 8:
            return sigs
        key = tuple(sig.id for sig in sigs)
        gates = self._gate_index.get(key)
        if gates is None:
            if len(self._gate_index) >= 256:
                self._gate_index.clear()
            gates = self._gate_index[key] = _GateIndex.of(sigs)
        if gates.finder is None and gates.folded_finder is None:
            return sigs
        return [sigs[i] for i in sorted(gates.through(text))]

    @functools.cached_property
    def _keyword_sigs(self) -> tuple[tuple[Signature, ...], ...]:
        return tuple(self._by_keyword.values())

    @functools.cached_property
    def _finders(self) -> dict[str, Finder | None]:
        return {}

    @functools.cached_property
    def _gate_index(self) -> dict[tuple[str, ...], _GateIndex]:
        return {}

    def get(self, signature_id: str) -> Signature:
        for sig in self.signatures:
            if sig.id == signature_id:
                return sig
        raise KeyError(signature_id)

    def category(self, name: Category) -> CategoryInfo:
        return self.categories.get(name) or CategoryInfo(name, retryable=False, remedies=())

    def retryable(self, sig: Signature) -> bool:
        return sig.retryable if sig.retryable is not None else self.category(sig.category).retryable

    def remedies(self, sig: Signature) -> tuple[RemedyName, ...]:
        return sig.remedies if sig.remedies is not None else self.category(sig.category).remedies

    def advice(self, sig: Signature | None, category: Category) -> str:
        """What to do about a failure: the signature's own advice, else its category's."""
        if sig is not None and sig.advice:
            return sig.advice
        return self.category(category).advice

    def category_ladders(self) -> dict[str, tuple[str, ...]]:
        """Each category's remedy ladder (the ladder policy's input)."""
        return {name: info.remedies for name, info in self.categories.items()}

    def signature_ladders(self) -> dict[str, dict[str, tuple[str, ...]]]:
        """Per category, the signatures whose own ladder differs from the category's (a stop category
        whose one failure a remedy cures: CMake 4's policy minimum), so a ladder table never says
        "stop" for a failure that is in fact cured."""
        found: dict[str, dict[str, tuple[str, ...]]] = {}
        for sig in self.signatures:
            ladder = self.remedies(sig) if self.retryable(sig) else ()
            category = self.category(sig.category)
            if ladder != (category.remedies if category.retryable else ()):
                found.setdefault(sig.category, {})[sig.id] = ladder
        return found

    # The stop policy, stated once in the catalogue (signatures.toml), read by the session and the plan:

    def decisive_categories(self) -> frozenset[str]:
        """Categories that stop the build the moment they are seen (besides every non-retryable one)."""
        return frozenset(name for name, info in self.categories.items() if info.decisive)

    def generic_ladder(self) -> tuple[RemedyName, ...]:
        """The ladder --escalate-unknown applies to unrecognised failures."""
        return self.category("unknown").generic

    def stall_ladder(self) -> tuple[RemedyName, ...]:
        """What a stall (no output for the stall timeout) gets: the ``stalled`` category's remedies."""
        return self.category("stalled").remedies


# --------------------------------------------------------------------------------------------- loading


@functools.cache  # asked for each of the catalogue's ~530 patterns (is it bundled, hence trusted?)
def bundled_path() -> Path:
    return paths.package_dir() / BUNDLED_NAME


def _is_bundled(source: str) -> bool:
    """Is ``source`` the bundled catalogue (trusted: Python's ``re``), not a user's file (the bounded ``regex``)?"""
    return source == str(bundled_path())


def user_signature_dir() -> Path:
    """``$XDG_CONFIG_HOME/rocmbuild/signatures`` (platformdirs honours XDG_CONFIG_HOME)."""
    return paths.config_dir("signatures")


def user_signature_files() -> list[Path]:
    """The user's signature files; refused (exit 2) when another user could add or change one."""
    directory = user_signature_dir()
    files = sorted(directory.glob("*.toml")) if directory.is_dir() else []
    for file in files:  # a file there can switch a bundled signature off
        check_trusted(file, "signature file", found_by_listing=True)
    return files


def _error(source: str, entry: str | None, what: str, todo: str = "") -> CatalogueError:
    where = f"{source}: signature '{entry}'" if entry else source
    return CatalogueError(f"{where}: {what}", why="the failure catalogue must validate before a build can be diagnosed",
                          todo=todo or f"fix {source} (see `rocmbuild signatures check {source}`)")


def _strings(value: object, source: str, entry: str | None, key: str) -> tuple[str, ...]:
    """A list of strings, typographic quotes made ASCII: every list a signature holds (patterns, keywords,
    examples, ...) is matched against lines the scanner cleaned the same way (``‘x’`` is read as ``'x'``)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _error(source, entry, f"'{key}' must be a list of strings")
    return tuple(ascii_quotes(v) for v in value)


def _expand_fragments(text: str, fragments: Mapping[str, str], source: str, entry: str | None) -> str:
    """``text`` with each ``(?&name)`` replaced by the fragment's ``(?:...)``.

    A name the pattern itself defines as a group is left alone (the ``regex`` module's recursion)."""
    own_groups = set(_GROUP_NAME.findall(text))

    def one(call: re.Match[str]) -> str:
        name = call.group(1)
        if name in own_groups:
            return call.group(0)
        if name not in fragments:
            raise _error(source, entry, f"pattern {text!r} names the fragment '{name}', which no [fragments] table "
                                        "loaded so far defines",
                         todo=f"define it under [fragments] in {source}, or fix the name "
                              f"(known: {', '.join(sorted(fragments)) or 'none'})")
        return f"(?:{fragments[name]})"
    return _FRAGMENT_CALL.sub(one, text)


def _regexes(value: object, source: str, entry: str | None, key: str,
             fragments: Mapping[str, str] = _NO_FRAGMENTS) -> tuple[Searchable, ...]:
    """Patterns: Python's ``re`` for the bundled catalogue (compiled at first use), time-bounded ones for user files."""
    trusted = _is_bundled(source)
    compiled: list[Searchable] = []
    for text in _strings(value, source, entry, key):
        text = _expand_fragments(text, fragments, source, entry)
        try:
            compiled.append(TrustedPattern(text) if trusted else compile_user_pattern(text))
        except (re.error, ValueError) as exc:
            raise _error(source, entry, f"invalid regex in '{key}': {text!r}: {exc}",
                         todo=f"fix the pattern in {source}; patterns must not nest quantifiers "
                              "(write (ab)+ as ab(ab)* only when it cannot match the same text two ways)") from exc
    return tuple(compiled)


def _field_templates(value: object, source: str, entry: str | None, fragments: Mapping[str, str],
                     patterns: Sequence[Searchable], key: str) -> tuple[str, ...]:
    """``unless_before`` / ``unless_line`` templates: regexes over the match's ``{field}`` values (filled in,
    escaped, per match).

    Each placeholder must name a group of the signature's patterns, or a field derived from one
    (``scope``, from ``symbol``); the template is checked with each placeholder standing for a plain word,
    with the engine the file's patterns use."""
    templates = []
    trusted = _is_bundled(source)
    groups = {name for p in patterns for name in _GROUP_NAME.findall(p.pattern)}
    groups |= {derived for derived, needs in _DERIVED.items() if needs in groups}
    for text in _strings(value, source, entry, key):
        text = _expand_fragments(text, fragments, source, entry)
        unknown = sorted(set(_FIELD_PLACEHOLDER.findall(text)) - groups)
        if unknown and unknown[0] in _DERIVED:
            needs = _DERIVED[unknown[0]]
            raise _error(source, entry, f"'{key}' {text!r} names {{{unknown[0]}}}, which is derived from a captured "
                                        f"'{needs}', and no pattern captures '{needs}'",
                         todo=f"capture (?P<{needs}>...) in a pattern, or use one of its named groups: "
                              f"{', '.join(sorted(groups)) or 'none'}")
        if unknown:
            raise _error(source, entry, f"'{key}' {text!r} names {{{unknown[0]}}}, which no pattern captures",
                         todo=f"use one of the patterns' named groups: {', '.join(sorted(groups)) or 'none'}")
        probe = _FIELD_PLACEHOLDER.sub("x", text)
        try:
            re.compile(probe) if trusted else compile_user_pattern(probe)
        except (re.error, ValueError) as exc:
            raise _error(source, entry, f"invalid regex in '{key}': {text!r}: {exc}") from exc
        templates.append(text)
    return tuple(templates)


def _one_line(value: object, source: str, entry: str | None, key: str) -> str:
    if not isinstance(value, str):
        raise _error(source, entry, f"'{key}' must be a string")
    return " ".join(value.split())


def _remedy_list(value: object, source: str, entry: str | None) -> tuple[RemedyName, ...]:
    names = _strings(value, source, entry, "remedies")
    for name in names:
        if name not in REMEDY_NAMES:
            raise _error(source, entry, f"unknown remedy '{name}'", todo=f"use one of: {', '.join(REMEDY_NAMES)}")
    return remedy_names(names)


HOSTS = ("", "rocm", "not-rocm")


def _host(value: object, source: str, entry: str | None) -> str:
    if value not in HOSTS:
        raise _error(source, entry, f"'host' must be one of {', '.join(repr(h) for h in HOSTS)}")
    return str(value)


def _if_requested(value: object, source: str, entry: str | None) -> str:
    if value == "":
        return ""
    if value not in CATEGORIES or value in ("unknown", "stalled"):
        raise _error(source, entry, f"'if_requested' must be a category, not {value!r}",
                     todo=f"use one of: {', '.join(c for c in CATEGORIES if c not in ('unknown', 'stalled'))}")
    return str(value)


def _bool(value: object, source: str, entry: str | None, key: str) -> bool:
    if not isinstance(value, bool):
        raise _error(source, entry, f"'{key}' must be true or false")
    return value


def _int(value: object, source: str, entry: str | None, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _error(source, entry, f"'{key}' must be an integer")
    return value


def _parse_category(name: str, table: object, source: str, base: CategoryInfo | None) -> CategoryInfo:
    label = f"category.{name}"
    if name not in CATEGORIES:
        raise _error(source, None, f"unknown category '{name}' in [{label}]",
                     todo=f"use one of: {', '.join(CATEGORIES)}")
    if not isinstance(table, dict):
        raise _error(source, None, f"[{label}] must be a table")
    unknown = sorted(set(table) - _CATEGORY_KEYS)
    if unknown:
        raise _error(source, None, f"unknown key '{unknown[0]}' in [{label}]",
                     todo=f"allowed keys: {', '.join(sorted(_CATEGORY_KEYS))}")
    info = base or CategoryInfo(name, retryable=False, remedies=())
    if "retryable" in table:
        info = replace(info, retryable=_bool(table["retryable"], source, label, "retryable"))
    if "remedies" in table:
        info = replace(info, remedies=_remedy_list(table["remedies"], source, label))
    if "advice" in table:
        if not isinstance(table["advice"], str):
            raise _error(source, label, "'advice' must be a string")
        info = replace(info, advice=table["advice"])
    if "decisive" in table:
        info = replace(info, decisive=_bool(table["decisive"], source, label, "decisive"))
    if "generic" in table:
        if name != "unknown":
            raise _error(source, label, "'generic' (the --escalate-unknown ladder) belongs to [category.unknown]")
        info = replace(info, generic=_remedy_list(table["generic"], source, label))
    return info


def _parse_fragments(table: object, source: str, known: dict[str, str]) -> None:
    """Add ``source``'s ``[fragments]`` (name -> regex text) to ``known``.

    Each may name fragments defined before it, and must compile on its own with the engine the file's
    patterns use (``re`` for the bundled file, the bounded ``regex`` for the user's)."""
    if not isinstance(table, dict):
        raise _error(source, None, "'fragments' must be a table of name = 'regex' entries")
    trusted = _is_bundled(source)
    for name, text in table.items():
        if not isinstance(text, str) or not re.fullmatch(r"\w+", name):
            raise _error(source, None, f"fragment '{name}' must be a word naming a regex string")
        if name in known:
            raise _error(source, None, f"fragment '{name}' is already defined by a file loaded earlier",
                         todo=f"give the fragment in {source} a name of its own")
        text = _expand_fragments(ascii_quotes(text), known, source, None)
        try:
            re.compile(text) if trusted else compile_user_pattern(text)
        except (re.error, ValueError) as exc:
            raise _error(source, None, f"invalid regex in fragment '{name}': {text!r}: {exc}") from exc
        known[name] = text


def _parse_signature(table: object, source: str, index: int,
                     fragments: Mapping[str, str] = _NO_FRAGMENTS) -> tuple[str, Signature | None]:
    if not isinstance(table, dict):
        raise _error(source, None, f"[[signature]] number {index + 1} must be a table")
    entry_id = table.get("id")
    label = entry_id if isinstance(entry_id, str) else f"#{index + 1}"
    unknown = sorted(set(table) - _SIGNATURE_KEYS)
    if unknown:
        raise _error(source, label, f"unknown key '{unknown[0]}'",
                     todo=f"allowed keys: {', '.join(sorted(_SIGNATURE_KEYS))}")
    if not isinstance(entry_id, str) or not _ID.match(entry_id):
        raise _error(source, label, "'id' must be a lowercase name (letters, digits, - _ .)")
    if table.get("enabled", True) is False:
        return entry_id, None
    if "enabled" in table:
        _bool(table["enabled"], source, label, "enabled")
    for key in _REQUIRED_KEYS:
        if key not in table:
            raise _error(source, label, f"missing required key '{key}'")
    category = table["category"]
    # "unknown": a failure recognised by its wording whose cause lies in the project (a source or build-system
    # bug) and fits no category: the diagnosis stays unknown, but names it and says what to do.
    if category not in CATEGORIES or category == "stalled":
        raise _error(source, label, f"unknown category '{category}'",
                     todo=f"use one of: {', '.join(c for c in CATEGORIES if c != 'stalled')}")
    if category == "unknown" and (table.get("retryable") or table.get("remedies")):
        raise _error(source, label, "a signature of category 'unknown' cannot be retried or remedied",
                     todo="drop 'retryable' and 'remedies', or give it the category whose ladder fits")
    description = table["description"]
    if not isinstance(description, str) or not description.strip() or "\n" in description.strip():
        raise _error(source, label, "'description' must be one line of text")
    patterns = _regexes(table["patterns"], source, label, "patterns", fragments)
    if not patterns:
        raise _error(source, label, "'patterns' must not be empty")
    keywords = _strings(table["keywords"], source, label, "keywords")
    if not keywords or any(not k for k in keywords):
        raise _error(source, label, "'keywords' must be a non-empty list of non-empty strings")
    examples = _strings(table.get("examples", []), source, label, "examples")
    for example in examples:
        if not any(k in example for k in keywords):
            raise _error(source, label, f"example {example!r} contains none of the keywords {list(keywords)}",
                         todo="a line can only match when it contains a keyword: add one that the example contains")
    sig = Signature(
        id=entry_id,
        category=category,
        description=description.strip(),
        patterns=patterns,
        keywords=keywords,
        exclude=_regexes(table.get("exclude", []), source, label, "exclude", fragments),
        priority=_int(table.get("priority", 50), source, label, "priority"),
        fallback=_bool(table.get("fallback", False), source, label, "fallback"),
        retryable=_bool(table["retryable"], source, label, "retryable") if "retryable" in table else None,
        remedies=_remedy_list(table["remedies"], source, label) if "remedies" in table else None,
        references=_strings(table.get("references", []), source, label, "references"),
        examples=examples,
        near_misses=_strings(table.get("near_misses", []), source, label, "near_misses"),
        confirm=_regexes(table.get("confirm", []), source, label, "confirm", fragments),
        confirm_within=_int(table.get("confirm_within", 200), source, label, "confirm_within"),
        confirm_required=_bool(table.get("confirm_required", False), source, label, "confirm_required"),
        after_patterns=_regexes(table.get("after_patterns", []), source, label, "after_patterns", fragments),
        after_within=_int(table.get("after_within", 5), source, label, "after_within"),
        advice=_one_line(table.get("advice", ""), source, label, "advice"),
        dismiss=_regexes(table.get("dismiss", []), source, label, "dismiss", fragments),
        dismiss_within=_int(table.get("dismiss_within", 2), source, label, "dismiss_within"),
        alone=_bool(table.get("alone", False), source, label, "alone"),
        wording=_one_line(table.get("wording", ""), source, label, "wording"),
        host=_host(table.get("host", ""), source, label),
        if_requested=_if_requested(table.get("if_requested", ""), source, label),
        unless_before=_field_templates(table.get("unless_before", []), source, label, fragments, patterns,
                                       "unless_before"),
        unless_line=_field_templates(table.get("unless_line", []), source, label, fragments, patterns, "unless_line"),
        source=source,
    )
    if sig.confirm_required and not sig.confirm:
        raise _error(source, label, "'confirm_required' needs 'confirm' patterns",
                     todo="add the 'confirm' regexes whose line makes the match count, or drop 'confirm_required'")
    return entry_id, sig


def _read(path: Path) -> dict[str, object]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise _error(str(path), None, "no such file") from exc
    try:
        return tomllib.loads(raw.decode())
    except ValueError as exc:  # tomllib.TOMLDecodeError, or bytes that are not UTF-8
        raise _error(str(path), None, f"not valid TOML: {exc}") from exc


def _merge_file(path: Path, signatures: dict[str, Signature | None], categories: dict[str, CategoryInfo],
                fragments: dict[str, str]) -> list[str]:
    """Add ``path``'s fragments, categories and signatures (later files override by id); return its ids."""
    source = str(path)
    data = _read(path)
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise _error(source, None, f"unknown top-level key '{unknown[0]}'",
                     todo="use [[signature]], [category.NAME] and [fragments]")
    _parse_fragments(data.get("fragments", {}), source, fragments)
    cats = data.get("category", {})
    if not isinstance(cats, dict):
        raise _error(source, None, "'category' must be a table of [category.NAME] tables")
    for name, table in cats.items():
        categories[name] = _parse_category(name, table, source, categories.get(name))
    entries = data.get("signature", [])
    if not isinstance(entries, list):
        raise _error(source, None, "'signature' must be an array of tables ([[signature]])")
    ids: list[str] = []
    for index, table in enumerate(entries):
        entry_id, sig = _parse_signature(table, source, index, fragments)
        if entry_id in ids:
            raise _error(source, entry_id, "duplicate id in the same file")
        ids.append(entry_id)
        signatures[entry_id] = sig
    return ids


def _build(signatures: dict[str, Signature | None], categories: dict[str, CategoryInfo],
           sources: Sequence[str]) -> Catalogue:
    for name in CATEGORIES:
        categories.setdefault(name, CategoryInfo(name, retryable=False, remedies=()))
    live = [s for s in signatures.values() if s is not None]
    # Priority order (higher first); the file order breaks ties, as in PyTorch's log classifier.
    ordered = sorted(enumerate(live), key=lambda pair: (-pair[1].priority, pair[0]))
    return Catalogue(tuple(s for _, s in ordered), dict(categories), tuple(sources))


def merge_catalogue_files(files: Sequence[Path]) -> tuple[Catalogue, tuple[str, ...]]:
    """Merge ``files`` in order (later override by id) into a catalogue; also return the ids of
    the signatures the last file defines that are still live (not removed by ``enabled = false``)."""
    signatures: dict[str, Signature | None] = {}
    categories: dict[str, CategoryInfo] = {}
    fragments: dict[str, str] = {}
    last_ids: list[str] = []
    for path in files:
        last_ids = _merge_file(path, signatures, categories, fragments)
    live = tuple(i for i in last_ids if signatures.get(i) is not None)
    return _build(signatures, categories, [str(p) for p in files]), live


def load_catalogue(extra: Iterable[Path] = (), *, user: bool = True, bundled: bool = True) -> Catalogue:
    """The bundled catalogue, then the user's files, then ``extra`` files (later override by id)."""
    files: list[Path] = []
    if bundled:
        files.append(bundled_path())
    if user:
        files.extend(user_signature_files())
    files.extend(Path(p) for p in extra)
    return merge_catalogue_files(files)[0]
