"""Failure diagnosis: which catalogued failure a build log shows, and on which line.

Owns the ranking policy that turns signature matches into one Diagnosis.  The
catalogue (``signatures.toml`` + ``catalogue.py``) says what lines look like;
this module decides which of several matching lines is the root cause:

1. Specific beats generic: a ``fallback`` signature (or a ``confirm`` signature
   whose confirmation never came) only wins when nothing specific matched anywhere;
   an unconfirmed ``confirm_required`` signature is no reading at all.
2. Resource exhaustion explains everything else: signatures with priority >= 90
   (``disk_full``, ``out_of_memory``) win wherever they are, so an OOM kill beats
   the crash text printed after it and ``No space left on device`` beats the
   backend error around it.
3. Anchor in the failing step: ninja's first ``FAILED: <target>`` block (up to the
   next ``[N/M]`` status line, ``FAILED:`` or ``ninja: build stopped``) holds the
   first error; matches inside it beat matches elsewhere.
4. Then priority, then the earliest line (the first error beats follow-on errors).

Boilerplate (pip's ``subprocess-exited-with-error``, ``Failed building wheel``,
ninja's ``build stopped``, CMake's ``Configuring incomplete``) is matched by no
signature, so it can never win by being last.

Blocks: a failure that spans lines is read as one unit.  An LLVM crash report
(``Stack dump:``, ``0. Program arguments``, ``Running pass``, frames in LLVM's or
glibc's form) is a compiler crash with or without a ``command failed`` line
(frames alone need a second frame to confirm them); a CMake error block is
matched on its indented message lines (``Could not find a package
configuration file provided by "X"``); in a Python traceback the frames' source
lines are never the error, the exception line is.  A match that the tool
itself dismisses on the next lines (``...; ignoring``) does not count.

Never pointing nowhere: when no signature matches, the diagnosis is
``unknown`` but still names a decisive line: the first error-looking line that
clean builds do not print (not a warning, not a CMake check result, not
boilerplate), preferring the first ``FAILED:`` block, with its context.

Exit status: 137 or -9 (SIGKILL) turns the weak out_of_memory signatures (a bare
``Killed`` line, ``[code=137]``, ``std::bad_alloc``) into specific ones, and with no
match at all the diagnosis is out_of_memory (signature ``exit-status-sigkill``).
Without that exit status a bare ``Killed`` still counts, but only as a fallback.

``Classifier`` implements the watcher's LineHook (only lines containing a keyword
reach ``on_line``); ``classify()`` and ``classify_stream()`` are the pure entry points.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from rocmbuild.diagnosis.advice import fill_advice, release_note
from rocmbuild.diagnosis.catalogue import (
    Catalogue,
    Category,
    RemedyName,
    Signature,
    category_or_unknown,
    load_catalogue,
)
from rocmbuild.diagnosis.patterns import required_literal
from rocmbuild.host.libraries import rocm_release_of
from rocmbuild.process.logscan import scan_lines, scan_stream
from rocmbuild.process.memguard import KILL_STATUSES

CONTEXT_BEFORE = 6
CONTEXT_AFTER = 4
FAILED_WINDOW = 3000  # lines after the first FAILED: watched for the end of its block
GLOBAL_PRIORITY = 90  # resource exhaustion: wins wherever it is
# Lines the classifier reads besides the catalogue's keywords: ninja's block markers, and error-looking
# words for the decisive line of an unknown failure.
MARKER_KEYWORDS: tuple[bytes, ...] = (b"FAILED: ", b"ninja: build stopped", b"fatal", b"Traceback", b"xception",
                                      b"FATAL", b"rocm", b"ROCm", b"ROCM",  # the log shows a ROCm host
                                      b"_COMPILER=")  # a compiler the configure asks for (if_requested)

_NINJA_STATUS = re.compile(r"^\[\d+/\d+(?:\s[^\]]*)?\]\s")
# The raw bytes of a line that on_line dismisses as a flagged compiler warning whatever its cleaned text:
# `path:LINE[:COL]: warning: ... [-W...]`, with a path (no space, no colon), no escape, \r or NUL.  No
# prefix noise.clean_line strips can reach past the path's first colon (each needs a space or a
# marker the path cannot hold) and what it deletes inside cannot touch ": warning: ", "[-W" or the
# final "]"; so such a line's text always satisfies on_line's warning rule.  The watcher tests
# candidates against it before decoding them (RAW_DISMISS): real builds print thousands.
_FLAGGED_WARNING_RAW = re.compile(rb"[^\s:\x1b\r\x00]+:\d+(?::\d+)?: warning: [^\x1b\r\x00]*\[-W[^\x1b\r\x00]*\]")
_PY_FRAME = re.compile(r'^File "(?!<)[^"]*", line \d+')  # frames of "<string>" have no source line
_PY_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b")
# A tool's own message (`/usr/bin/ld: cannot find -lcuda`, `collect2: error: ...`) printed into the middle of a
# traceback by a child process: not the frame's source line, whatever line came before it.
_TOOL_MESSAGE = re.compile(r"^(?:/[^\s:]+|[\w.+-]+)(?::\d+)*: (?!=)")
_BLOCK_END_PREFIXES = ("FAILED: ", "ninja: build stopped", "ninja: error:")
# What shows a log was made on a ROCm host (for ``host = "rocm"`` readings): a ROCm path or package,
# a ROCm torch (+rocm6.2), HIP's tools and libraries, an AMD GPU target.
_ROCM_EVIDENCE = re.compile(r"(?i)rocm|hipcc|\bhip[_/.-]|libamdhip|\bgfx\d{3}|amdgpu|\bhsa[_-]")
# ...except a line saying ROCm is not there: every CUDA or CPU PyTorch configure prints LoadHIP's
# "ROCM_PATH environment variable is not set and /opt/rocm does not exist. Building without ROCm support."
_ROCM_ABSENT = re.compile(r"(?i)without rocm|\brocm_(?:path|home)\b[^\n]*\bnot set")


def _shows_rocm(line: str) -> bool:
    return _ROCM_EVIDENCE.search(line) is not None and _ROCM_ABSENT.search(line) is None


# The compiler a configure line asks CMake for (`-DCMAKE_CXX_COMPILER=/x/cl.exe`, `-DCMAKE_HIP_COMPILER:FILEPATH=..`).
_REQUESTED_COMPILER = re.compile(r"""-DCMAKE_(?P<language>[A-Z]+)_COMPILER(?::\w+)?=["']?(?P<path>[^"'\s]+)""")
# The installed ROCm's version as a log shows it (a versioned install root), when the build did not say.
_ROCM_ROOT_VERSION = re.compile(r"/opt/rocm-(\d+\.\d+(?:\.\d+)?)\b")

# Error-looking lines, for the decisive line of an unknown failure.
_ERRORISH = re.compile(
    r"(?i)(?:\w(?:error|exception)\b|\b(?:error|fatal|failed|failure|exception|traceback|aborted|"
    r"segmentation fault|cannot|could not|couldn't|unable to|not found|no such file|undefined)\b|\*\*\*)")
# ...that clean builds print too, or that only frame the real error (one case-insensitive regex of these).
_NOT_DECISIVE_PARTS: tuple[str, ...] = (
    r"^--\s", r"^warning\b", r"\bwarning:", r"\[-W", r"-Werror", r"\b0 errors?\b", r"-- (?:failed|not found)$",
    r"^checking ", r"\bno error\b", r"errors? generated", r"subprocess-exited-with-error",
    r"originates from a subprocess", r"failed building wheel", r"could not build wheels", r"failed to build",
    r"ninja: build stopped", r"configuring incomplete", r"^make(?:\[\d+\])?: \*\*\*", r"\berror \d+$",
    r"waiting for unfinished jobs", r"returned non-zero exit status", r"^error: command .* failed",
    r"see (?:above|also)", r"^\[end of output\]", r"^ERROR: Failed ", r"exited with code")
_NOT_DECISIVE = re.compile("(?i)(?:" + "|".join(_NOT_DECISIVE_PARTS) + ")")
_not_decisive_literals: tuple[str, ...] | None = None


def _not_decisive(text: str) -> bool:
    """``_NOT_DECISIVE.search(text)``, told without the regex engine when ``text`` holds no part's literal.

    The regex (a case-insensitive alternation, ~25 us a line) runs on every unmatched error line
    until the boilerplate tier is taken, and a build flooding errors prints thousands.  Each part
    has a literal every match contains (``required_literal``, lower-cased: the regex ignores case);
    for an ASCII text, where ignoring case is lower-casing, a text without any of them cannot match.
    """
    global _not_decisive_literals
    if _not_decisive_literals is None:

        _not_decisive_literals = tuple(required_literal(part).lower() for part in _NOT_DECISIVE_PARTS)
    literals = _not_decisive_literals
    if text.isascii() and all(literals):
        lowered = text.lower()
        if not any(literal in lowered for literal in literals):
            return False
    return _NOT_DECISIVE.search(text) is not None

# --------------------------------------------------------------------------------------------- values


@dataclass(frozen=True)
class RunnerUp:
    """Another signature that matched, and why it lost."""

    signature: str
    category: Category
    line: int | None
    text: str | None
    reason: str

    def __str__(self) -> str:
        where = f" at line {self.line}" if self.line is not None else ""
        return f"{self.signature} ({self.category}){where}: {self.reason}"

    def to_json(self) -> dict[str, object]:
        return {"signature": self.signature, "category": self.category, "line": self.line,
                "text": self.text, "reason": self.reason}


@dataclass(frozen=True)
class Diagnosis:
    """What failed, where, and what the ladder may try (``unknown`` when nothing matched, or, with a
    ``signature``, when the catalogue knows the failure as the project's own bug: no category, no remedy)."""

    category: Category
    signature: str | None = None
    line: int | None = None
    text: str | None = None
    fields: Mapping[str, str] = field(default_factory=dict)
    retryable: bool = False
    remedies: tuple[RemedyName, ...] = ()
    context: tuple[str, ...] = ()
    runners_up: tuple[RunnerUp, ...] = ()
    description: str = ""
    advice: str = ""
    # How sure the diagnosis is: "high" (a specific signature, no rival reading), "medium" (only a
    # generic/fallback shape or a guess from circumstance spoke), "low" (unknown: nothing matched, or
    # two categories tied on the evidence; the tied candidates are the runners-up, reason "tie").
    confidence: str = "high"
    # What the attempt measured about memory (loop/jobsizing.MemoryEvidence), for reduce_jobs; not
    # part of the fingerprint: the same failure with another peak is still the same failure.
    memory: object = field(default=None, compare=False)

    @classmethod
    def simple(cls, category: Category, signature: str | None = None, *, text: str | None = None,
               fields: Mapping[str, str] | None = None, retryable: bool = False,
               remedies: Iterable[RemedyName] = ()) -> Diagnosis:
        """A diagnosis made outside the log (stall, preflight, artifact verification): no line of it."""
        return cls(category=category, signature=signature, text=text, fields=dict(fields or {}),
                   retryable=retryable, remedies=tuple(remedies),
                   confidence="high" if category != "unknown" else "low")

    @property
    def recognised(self) -> bool:
        return self.category != "unknown"

    def fingerprint(self) -> str:
        """Category + signature + sorted fields: equal fingerprints = the same failure came back."""
        parts = [self.category, self.signature or "-"]
        parts.extend(f"{k}={v}" for k, v in sorted(self.fields.items()))
        return "|".join(parts)

    @property
    def candidates(self) -> tuple[RunnerUp, ...]:
        """For an unknown that is a tie: the readings that tied, each with the line it rests on."""
        return tuple(r for r in self.runners_up if r.reason.startswith("tie"))

    def summary_json(self) -> dict[str, object]:
        data: dict[str, object] = {"category": self.category, "signature": self.signature, "line": self.line,
                "text": self.text, "fields": dict(self.fields), "retryable": self.retryable,
                "confidence": self.confidence}
        if self.candidates:
            data["candidates"] = [r.to_json() for r in self.candidates]
        return data

    def to_json(self) -> dict[str, object]:
        return {**self.summary_json(), "remedies": list(self.remedies), "context": list(self.context)}

    def explain_json(self) -> dict[str, object]:
        """``to_json`` plus why: the signature's description, advice and the runners-up."""
        return {**self.to_json(), "description": self.description, "advice": self.advice,
                "fingerprint": self.fingerprint(), "runners_up": [r.to_json() for r in self.runners_up]}


# --------------------------------------------------------------------------------------------- matching


class _Match:
    """One matched line while scanning (mutable: after-context and confirmation arrive later)."""

    __slots__ = ("after", "before", "confirmed", "dismissed", "fields", "fields_open", "in_block", "line", "sig",
                 "text")

    def __init__(self, sig: Signature, line: int, text: str, fields: dict[str, str],
                 before: tuple[str, ...], in_block: bool) -> None:
        self.sig = sig
        self.line = line
        self.text = text
        self.fields = fields
        self.before = before
        self.in_block = in_block
        self.after: list[str] = []
        self.confirmed = not sig.confirm
        self.dismissed = False
        self.fields_open = bool(sig.after_patterns)

    def weak(self, promote_oom: bool) -> bool:
        if promote_oom and self.sig.category == "out_of_memory":
            return False
        return self.sig.fallback or not self.confirmed

    def key(self, promote_oom: bool) -> tuple[bool, bool, bool, int, int]:
        return (not self.weak(promote_oom), self.sig.priority >= GLOBAL_PRIORITY, self.in_block,
                self.sig.priority, -self.line)


_PLAIN = Signature(id="", category="unknown", description="an error-looking line", patterns=(), keywords=())


TIE_MARGIN = 0  # equal priority, in the same rank otherwise: the same strength of evidence (a higher one ranks)


def _tied(winner: _Match, others: Sequence[_Match], promote: bool) -> list[_Match]:
    """The matches of other categories that are as strong as ``winner`` (a tie: no honest verdict).

    As strong: specific (not a fallback), in the same rank (resource exhaustion or not, inside the
    first FAILED block or not) and within TIE_MARGIN of its priority.  A specific winner never ties
    with a weak reading, and a later follow-on error of another category ties only when it is as
    specific as the winner: the earliest-line rule is for errors of one failure, not two readings.
    A higher-priority signature on the very same line is the catalogue's refinement of the other
    reading (conda's libstdc++ behind a GLIBCXX error), not a rival.
    """
    if winner.weak(promote):
        return []
    rank = winner.sig.priority >= GLOBAL_PRIORITY, winner.in_block
    return [m for m in others
            if m.sig.category != winner.sig.category and not m.weak(promote)
            and (m.sig.priority >= GLOBAL_PRIORITY, m.in_block) == rank
            and winner.sig.priority - m.sig.priority <= TIE_MARGIN
            and not (m.line == winner.line and m.sig.priority < winner.sig.priority)]


def _same_path(a: str, b: str) -> bool:
    """The same file, written by Windows, MSYS or POSIX (``/F/x/cl.exe`` is ``F:\\x\\cl.exe``)?"""
    def canonical(path: str) -> str:
        path = path.replace("\\", "/").lower()
        return re.sub(r"^/([a-z])/", r"\1:/", path)
    return canonical(a) == canonical(b)


def _normalise(fields: Mapping[str, str]) -> dict[str, str]:
    out = {}
    for key, value in fields.items():
        value = value.strip().rstrip(".,;:'\"")
        if key == "library" and value.isupper():
            value = value.lower()  # a CMake variable (HIPBLAS_LIBRARY) names the library in upper case
        if value:
            out[key] = value
    return out


class Classifier:
    """Incremental classifier: the watcher's LineHook, queried live (current) and at the end (finish)."""

    raw_dismiss = _FLAGGED_WARNING_RAW  # candidate lines on_line would dismiss, told by their raw bytes

    def __init__(self, catalogue: Catalogue | None = None, host: str = "", rocm_version: str = "") -> None:
        """``host``: "rocm" when the build runs on a ROCm host (a live build); "" = tell from the log.
        ``rocm_version``: the host's installed ROCm ("6.4.1"); "" = the first versioned /opt/rocm-X.Y root
        the log shows, if any."""
        self.catalogue = catalogue if catalogue is not None else load_catalogue()
        self.rocm_version = rocm_version
        self._requested: dict[str, str] = {}     # language -> compiler a configure line asked for
        self.host = host
        self.keywords: tuple[bytes, ...] = tuple(dict.fromkeys((*self.catalogue.keywords, *MARKER_KEYWORDS)))
        self._first: dict[str, _Match] = {}      # first (confirmed preferred) occurrence per signature
        self._in_block: dict[str, _Match] = {}   # first occurrence inside the first FAILED block
        self._counts: dict[str, int] = {}
        self._open: list[_Match] = []            # still collecting after-context / fields
        self._confirming: list[tuple[_Match, int]] = []
        self._dismissing: list[tuple[_Match, int]] = []
        self._plain: dict[int, _Match] = {}      # unknown's decisive line: best error-looking line per tier
        self._failed_line: int | None = None
        self._block_open = False
        self._last = 0
        self._dirty = False
        self._current: Diagnosis | None = None
        self._rocm_seen = host == "rocm"

    # -- LineHook ---------------------------------------------------------------------------------

    def on_line(self, number: int, text: str, before: Sequence[str] = ()) -> int:
        if text.startswith("==> rocmbuild"):
            return 0  # rocmbuild's own step headers and notes echo commands; they are never the failure
        if text.endswith("]") and ": warning: " in text and "[-W" in text:
            # A compiler warning with its flag (`... [-Wpass-failed=transform-warning]`): real builds print
            # thousands, and none is a failure (an error promoted by -Werror says `error:`).
            return 0
        self._observe(number, text)
        want = 0
        if text.startswith("FAILED: ") and self._failed_line is None:
            self._failed_line = number
            self._block_open = True
            want = FAILED_WINDOW
        if before and _PY_FRAME.match(before[-1]) and not _PY_EXCEPTION.match(text) \
                and not _TOOL_MESSAGE.match(text):
            return want  # a traceback's source line (`raise ReadTimeoutError(...)`), never the error itself
        matched = False
        for sig in self.catalogue.plausible(text):
            fields = sig.match_candidate(text)
            if fields is not None and not (sig.unless_before and sig.taken_back_by(fields, before)):
                matched = True
                want = max(want, self._record(sig, number, text, fields, before))
        if not matched and len(self._plain) < 3:
            want = max(want, self._note_plain(number, text, before))
        return want

    def on_context(self, number: int, text: str) -> None:
        self._observe(number, text)

    # -- queries ----------------------------------------------------------------------------------

    def current(self, *, named: bool = False) -> Diagnosis | None:
        """The best specific diagnosis so far (None: nothing specific yet); cheap, for fail-fast.

        Weak (fallback / unconfirmed) matches never show here: they must not stop a build
        that may still succeed.  A named unknown (a signature of category ``unknown``: the project's own
        bug) shows only with ``named=True``: it is no category, so only ``--fail-fast`` stops on it.
        """
        if self._dirty:
            self._dirty = False
            self._current = self._decide(exit_status=None, final=False)
        found = self._current
        if found is None or (found.category == "unknown" and not (named and found.signature)):
            return None
        return found

    def finish(self, exit_status: int | None = None) -> Diagnosis:
        """The diagnosis of the whole log (``unknown`` when nothing fits)."""
        return self._decide(exit_status=exit_status, final=True)

    @property
    def counts(self) -> Mapping[str, int]:
        """How many lines each signature matched (for benchmarks and --explain)."""
        return dict(self._counts)

    # -- internals --------------------------------------------------------------------------------

    def _record(self, sig: Signature, number: int, text: str, fields: dict[str, str],
                before: Sequence[str]) -> int:
        in_block = self._block_open and self._failed_line is not None and number > self._failed_line
        match = _Match(sig, number, text, fields, tuple(before)[-CONTEXT_BEFORE:], in_block)
        self._counts[sig.id] = self._counts.get(sig.id, 0) + 1
        stored = False
        if sig.id not in self._first:
            self._first[sig.id] = match
            stored = True
        if in_block and sig.id not in self._in_block:
            self._in_block[sig.id] = match
            stored = True
        want = CONTEXT_AFTER
        if sig.confirm:
            first = self._first[sig.id]
            if not first.confirmed and len(self._confirming) < 64:
                self._confirming.append((match, number + sig.confirm_within))
                want = max(want, sig.confirm_within)
                stored = True
        if sig.after_patterns:
            want = max(want, sig.after_within)
        if sig.dismiss and stored:
            self._dismissing.append((match, number + sig.dismiss_within))
            want = max(want, sig.dismiss_within)
        if stored:
            self._open.append(match)
            self._dirty = True
        return want

    def _observe(self, number: int, text: str) -> None:
        if number <= self._last:
            return
        self._last = number
        if not self._rocm_seen and _shows_rocm(text):
            self._rocm_seen = True
        if "_COMPILER" in text and "-DCMAKE_" in text:
            for asked in _REQUESTED_COMPILER.finditer(text):
                self._requested[asked["language"]] = asked["path"]
        if not self.rocm_version and "/opt/rocm-" in text:
            found = _ROCM_ROOT_VERSION.search(text)
            if found:
                self.rocm_version = found[1]
        if self._open:
            self._open = [m for m in self._open if self._feed_after(m, number, text)]
        if self._confirming:
            pending = []
            for match, until in self._confirming:
                if number > until:
                    continue
                if any(p.search(text) for p in match.sig.confirm):
                    match.confirmed = True
                    self._promote(match)
                else:
                    pending.append((match, until))
            self._confirming = pending
        if self._dismissing:
            pending_dismiss = []
            for match, until in self._dismissing:
                if number > until:
                    continue
                if any(p.search(text) for p in match.sig.dismiss):
                    self._dismiss(match)
                else:
                    pending_dismiss.append((match, until))
            self._dismissing = pending_dismiss
        if self._block_open and self._failed_line is not None and number > self._failed_line and (
                number > self._failed_line + FAILED_WINDOW or _NINJA_STATUS.match(text)
                or text.startswith(_BLOCK_END_PREFIXES)):
            self._block_open = False

    def _dismiss(self, match: _Match) -> None:
        """The tool said the matched failure was harmless: forget it, so a later occurrence can count."""
        match.dismissed = True
        sid = match.sig.id
        if self._first.get(sid) is match:
            del self._first[sid]
        if self._in_block.get(sid) is match:
            del self._in_block[sid]
        self._dirty = True

    def _note_plain(self, number: int, text: str, before: Sequence[str]) -> int:
        """Remember an error-looking line no signature matched (the decisive line of an unknown failure)."""
        in_block = self._block_open and self._failed_line is not None and number > self._failed_line
        decisive_tier = 0 if in_block else 1
        if decisive_tier in self._plain:
            # Only the boilerplate tier can still take this line: both regexes must say yes (a flood of
            # unmatched errors reaches here once per line; _not_decisive's literals rule most out at once).
            if 2 in self._plain or not _not_decisive(text) or not _ERRORISH.search(text):
                return 0
            tier = 2
        else:
            if not _ERRORISH.search(text):
                return 0
            tier = 2 if _not_decisive(text) else decisive_tier
            if tier in self._plain:
                return 0
        match = _Match(_PLAIN, number, text, {}, tuple(before)[-CONTEXT_BEFORE:], in_block)
        self._plain[tier] = match
        self._open.append(match)
        return CONTEXT_AFTER

    @staticmethod
    def _feed_after(match: _Match, number: int, text: str) -> bool:
        """Give ``match`` a following line; False once it needs no more."""
        if number <= match.line:
            return True
        if len(match.after) < CONTEXT_AFTER:
            match.after.append(text)
        if match.fields_open:
            if number > match.line + match.sig.after_within:
                match.fields_open = False
            else:
                for pattern in match.sig.after_patterns:
                    found = pattern.search(text)
                    if found:
                        for key, value in found.groupdict().items():
                            if value and key not in match.fields:
                                match.fields[key] = value
                        match.fields_open = False
                        break
        return len(match.after) < CONTEXT_AFTER or match.fields_open

    def _promote(self, match: _Match) -> None:
        sid = match.sig.id
        first = self._first.get(sid)
        if first is None or not first.confirmed:
            self._first[sid] = match
        block = self._in_block.get(sid)
        if match.in_block and (block is None or not block.confirmed):
            self._in_block[sid] = match
        self._dirty = True

    def _decide(self, exit_status: int | None, final: bool) -> Diagnosis:
        promote = final and exit_status in KILL_STATUSES
        best: dict[str, _Match] = {}
        for match in (*self._first.values(), *self._in_block.values()):
            seen = best.get(match.sig.id)
            if seen is None or match.key(promote) > seen.key(promote):
                best[match.sig.id] = match
        # A guess from circumstance ("alone") is no answer once the log shows an error line of its own.
        visible_error = any(tier < 2 for tier in self._plain)
        # A match whose own evidence lies in its confirmation (an abort frame is LLVM's only if LLVM's frames
        # follow) says nothing unconfirmed: not even a fallback.
        candidates = [m for m in best.values() if not m.dismissed and not (m.sig.alone and visible_error)
                      and not (m.sig.confirm_required and not m.confirmed) and self._host_fits(m)]
        if not final:
            candidates = [m for m in candidates if not m.weak(False)]
        if not candidates:
            if promote:
                info = self.catalogue.category("out_of_memory")
                return Diagnosis(
                    category="out_of_memory", signature="exit-status-sigkill", text=None,
                    fields={"exit_status": str(exit_status)}, retryable=info.retryable, remedies=info.remedies,
                    description="the build was killed by SIGKILL (exit status 137 / -9): the OOM killer",
                    advice=info.advice)
            return self._unknown()
        candidates.sort(key=lambda m: m.key(promote), reverse=True)
        winner = candidates[0]
        rivals = _tied(winner, candidates[1:], promote)
        if rivals and final:
            return self._tie(winner, rivals)
        runners = tuple(
            RunnerUp(m.sig.id, m.sig.category, m.line, m.text, self._reason(m, winner, promote))
            for m in candidates[1:])
        fields = self._with_release(_normalise(winner.fields))
        category = self._requested_reading(winner.sig, fields)
        if category == "unknown":
            return self._recognised_unknown(winner, fields, runners)
        own_ladder = category == winner.sig.category
        info = self.catalogue.category(category)
        return Diagnosis(
            category=category,
            signature=winner.sig.id,
            line=winner.line,
            text=winner.text,
            fields=fields,
            retryable=self.catalogue.retryable(winner.sig) if own_ladder else info.retryable,
            remedies=self.catalogue.remedies(winner.sig) if own_ladder else info.remedies,
            context=(*winner.before, winner.text, *winner.after),
            runners_up=runners,
            description=winner.sig.description,
            advice=fill_advice(self.catalogue.advice(winner.sig if own_ladder else None, category), fields)
            + release_note(fields),
            confidence="medium" if winner.weak(promote) or winner.sig.alone else "high",
        )

    def _requested_reading(self, sig: Signature, fields: dict[str, str]) -> Category:
        """The signature's category, or its ``if_requested`` one when the failing ``compiler`` is the very
        compiler a configure line in the log asked for (the build wants a compiler that is not there,
        rather than a cache remembering an old one)."""
        if not sig.if_requested or "compiler" not in fields:
            return sig.category
        asked = self._requested.get(fields.get("language", ""))
        if asked is not None and _same_path(asked, fields["compiler"]):
            return category_or_unknown(sig.if_requested)
        return sig.category

    def _with_release(self, fields: dict[str, str]) -> dict[str, str]:
        """``fields`` plus the ROCm release the library's name implies and the host's ROCm beside it.

        Set only when the name implies a release (``libamdhip64.so.5``, ``libbitsandbytes_rocm63.so``), so
        other failures keep their fingerprints; the advice then says when the two releases differ.
        """
        release = rocm_release_of(fields.get("library", ""))
        if release is None:
            return fields
        fields = {**fields, "rocm_release": release}
        if self.rocm_version:
            fields["host_rocm"] = self.rocm_version
        return fields

    def _host_fits(self, match: _Match) -> bool:
        """Does the reading's ``host`` condition hold (``rocm``: a ROCm host; ``not-rocm``: any other)?"""
        if not match.sig.host:
            return True
        shown = self._host_shown(match)
        return shown if match.sig.host == "rocm" else not shown

    def _host_shown(self, match: _Match) -> bool:
        """Does the build's host, or the log (any line read, or the lines before the match), show ROCm?"""
        return self._rocm_seen or any(_shows_rocm(line) for line in match.before)

    def _tie(self, winner: _Match, rivals: Sequence[_Match]) -> Diagnosis:
        """Two categories read the same evidence equally well: unknown, naming each reading and its line."""
        tied = (winner, *rivals)
        names = " / ".join(dict.fromkeys(m.sig.category for m in tied))
        # What every reading captured alike (the arch both name) is known whatever the cause.
        common = _normalise(winner.fields)
        for m in rivals:
            theirs = _normalise(m.fields)
            common = {k: v for k, v in common.items() if theirs.get(k) == v}
        return Diagnosis(
            category="unknown", line=winner.line, text=winner.text, fields=common,
            context=(*winner.before, winner.text, *winner.after),
            runners_up=tuple(RunnerUp(m.sig.id, m.sig.category, m.line, m.text, "tie: as strong as the others")
                             for m in tied),
            description=f"the evidence fits {names} equally well; nothing in the log decides between them",
            advice=self.catalogue.category("unknown").advice, confidence="low")

    def _recognised_unknown(self, winner: _Match, fields: dict[str, str],
                            runners: tuple[RunnerUp, ...]) -> Diagnosis:
        """A signature of category ``unknown`` won: a failure the catalogue knows by its wording whose cause
        is the project's own (no remedy of rocmbuild's applies), so nothing is retried or escalated
        as if a category were known; the diagnosis names it and says what to do, with low confidence."""
        return Diagnosis(
            category="unknown", signature=winner.sig.id, line=winner.line, text=winner.text, fields=fields,
            context=(*winner.before, winner.text, *winner.after), runners_up=runners,
            description=winner.sig.description,
            advice=fill_advice(self.catalogue.advice(winner.sig, "unknown"), fields), confidence="low")

    def _unknown(self) -> Diagnosis:
        """Nothing matched: still point at the first error-looking line (tier order), with its context."""
        advice = self.catalogue.category("unknown").advice
        if not self._plain:
            return Diagnosis(category="unknown", advice=advice, confidence="low")
        plain = self._plain[min(self._plain)]
        return Diagnosis(category="unknown", line=plain.line, text=plain.text,
                         context=(*plain.before, plain.text, *plain.after), advice=advice, confidence="low",
                         description="no catalogued failure matched; this is the first error-looking line")

    @staticmethod
    def _reason(loser: _Match, winner: _Match, promote: bool) -> str:
        if loser.weak(promote) and not winner.weak(promote):
            return "fallback" if loser.confirmed else "fallback (never confirmed)"
        win_global = winner.sig.priority >= GLOBAL_PRIORITY
        if win_global and loser.sig.priority < GLOBAL_PRIORITY:
            if winner.sig.category == "out_of_memory":
                return "after an OOM kill" if loser.line > winner.line else "explained by an OOM kill"
            if winner.sig.category == "disk_full":
                return "after the disk filled up" if loser.line > winner.line else "explained by a full disk"
            return "lower priority"
        if winner.in_block and not loser.in_block:
            return "outside the first FAILED block"
        if loser.sig.priority < winner.sig.priority:
            return "lower priority"
        return "later than the decisive line" if loser.line > winner.line else "lower rank"


# --------------------------------------------------------------------------------------------- entry points


def classify(lines: Iterable[str] | str | bytes, catalogue: Catalogue | None = None,
             exit_status: int | None = None, host: str = "", rocm_version: str = "") -> Diagnosis:
    """Diagnose a log given as lines (or one string / bytes holding the whole log), through the
    same line scanner as a live build and ``diagnose`` (same lines, numbers and cleaning)."""

    if isinstance(lines, bytes | bytearray):
        return classify_stream(io.BytesIO(lines), catalogue=catalogue, exit_status=exit_status, host=host,
                               rocm_version=rocm_version)
    if isinstance(lines, str):
        lines = lines.split("\n")
    classifier = Classifier(catalogue, host=host, rocm_version=rocm_version)
    scan_lines(lines, classifier)
    return classifier.finish(exit_status)


def classify_stream(stream: BinaryIO, catalogue: Catalogue | None = None,
                    exit_status: int | None = None, host: str = "", rocm_version: str = "") -> Diagnosis:
    """Diagnose a (possibly huge) binary log stream in bounded memory, chunk by chunk."""

    classifier = Classifier(catalogue, host=host, rocm_version=rocm_version)
    scan_stream(stream, classifier)
    return classifier.finish(exit_status)
