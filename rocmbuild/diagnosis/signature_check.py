"""``rocmbuild signatures check``: a signature file's examples and near-misses, against the whole catalogue.

Owns the checks only; loading and validation are :mod:`rocmbuild.diagnosis.catalogue`'s, matching is
:mod:`rocmbuild.diagnosis.classifier`'s.  (Kept apart so that neither of those imports the other's user.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rocmbuild.diagnosis.catalogue import (
    Catalogue,
    Signature,
    bundled_path,
    load_catalogue,
    merge_catalogue_files,
    user_signature_files,
)
from rocmbuild.diagnosis.classifier import classify
from rocmbuild.diagnosis.patterns import TrustedPattern
from rocmbuild.errors import CatalogueError


@dataclass(frozen=True)
class ExampleCase:
    """One bundled example or near-miss line, for tests and ``signatures check``."""

    signature: str
    line: str
    should_match: bool


def example_cases(catalogue: Catalogue | None = None) -> list[ExampleCase]:
    """Every example (must match) and near-miss (must not) of every signature."""
    cat = catalogue or load_catalogue(user=False)
    cases: list[ExampleCase] = []
    for sig in cat.signatures:
        cases.extend(ExampleCase(sig.id, line, True) for line in sig.examples)
        cases.extend(ExampleCase(sig.id, line, False) for line in sig.near_misses)
    return cases


def check_signatures(catalogue: Catalogue, only: Iterable[str] | None = None) -> list[str]:
    """Failures of the signatures' own examples against ``catalogue``.

    Each example must match its signature and be classified in that signature's category
    by the whole catalogue (one line alone; a higher-priority signature of another category
    that also claims it would steal the diagnosis); each near-miss must not match its signature.
    An example of several lines (a ``confirm_required`` signature's, with its confirmation) must
    match on its first line and be read as a whole.
    """
    wanted = set(only) if only is not None else None
    failures = []
    for sig in catalogue.signatures:
        if wanted is not None and sig.id not in wanted:
            continue
        where = f"{sig.source}: {sig.id}"
        if not sig.examples:
            failures.append(f"{where}: has no examples")
        for line in sig.examples:
            lines = line.split("\n")
            if sig.match(lines[0]) is None:
                failures.append(f"{where}: example does not match: {line!r}")
                continue
            got = classify(lines, catalogue=catalogue, host=sig.host)  # a host-bound reading, on its host
            if len(lines) > 1 and got.signature != sig.id:
                failures.append(f"{where}: example of several lines is read as {got.signature or 'unknown'}, "
                                f"not as this signature: {line!r}")
                continue
            if sig.confirm_required and classify(lines[:1], catalogue=catalogue, host=sig.host).signature == sig.id:
                failures.append(f"{where}: example's first line alone is read as this signature although it "
                                f"needs its confirmation: {line!r}")
            # A reading the catalogue holds exactly as strong as another comes out as an honest tie
            # (unknown, naming both): the example is still read as this signature.
            tied = got.category == "unknown" and any(c.signature == sig.id for c in got.candidates)
            # A category-less reading (unknown) must be read as itself, not as any other unknown.
            if (got.category != sig.category and not tied) or (sig.category == "unknown" and got.signature != sig.id):
                failures.append(f"{where}: example is classified as {got.signature or 'unknown'} "
                                f"({got.category}) by the whole catalogue: {line!r}")
        for line in sig.near_misses:
            if sig.match(line) is not None:
                failures.append(f"{where}: near-miss matches: {line!r}")
    return failures


def _uncompiled(signatures: Sequence[Signature]) -> list[str]:
    """Bundled patterns are compiled at first use (patterns.TrustedPattern): here, every one of them."""
    failures = []
    for sig in signatures:
        for pattern in (*sig.patterns, *sig.exclude, *sig.confirm, *sig.after_patterns, *sig.dismiss):
            if isinstance(pattern, TrustedPattern):
                try:
                    pattern.compile()
                except re.error as exc:
                    failures.append(f"{sig.id}: invalid regex {pattern.pattern!r}: {exc}")
    return failures


def check_catalogue(path: Path | None = None) -> tuple[list[str], int]:
    """``rocmbuild signatures check [FILE]``: (failures, number of signatures checked).

    With ``path``: that file's signatures, loaded over the bundled and user catalogue (so
    overlaps with bundled signatures are found).  Without: the bundled and user catalogue.
    A file that does not load is one failure (the CatalogueError's message).
    """
    try:
        if path is None:
            catalogue = load_catalogue()
            return _uncompiled(catalogue.signatures) + check_signatures(catalogue), len(catalogue.signatures)
        files = [f for f in (bundled_path(), *user_signature_files()) if f.resolve() != Path(path).resolve()]
        catalogue, live = merge_catalogue_files([*files, Path(path)])
        checked = [s for s in catalogue.signatures if s.id in live]
        return _uncompiled(checked) + check_signatures(catalogue, only=live), len(live)
    except CatalogueError as exc:
        return [exc.what], 0


def check_file(path: Path | str | None = None) -> list[str]:
    """The failures of ``check_catalogue`` alone (empty: every example and near-miss behaves)."""
    return check_catalogue(Path(path) if path is not None else None)[0]
