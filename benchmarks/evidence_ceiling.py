"""Measurement: how much of a batch could any reader of the paste alone get right?

Issue #22's goal is a first-look accuracy on new batches.  A batch's label is the root cause its thread
established, and a paste does not always show it: it may stop before the error, or show a line that two
labels fit equally (whose bug a missing third-party header was, say).  No classifier that reads only the
paste can be right there without guessing.  This script puts a number on that.

Each judged batch holds ``evidence.json``: verdicts by one or more judges who read each excerpt with the
category table and its label, but neither the thread nor the classifier (its code, catalogue or output):

- ``EVIDENT``: a line of the excerpt establishes the label and no other label is about as plausible;
- ``AMBIGUOUS``: the excerpt points at the label, but another fits about as well, or the label depends
  on facts the excerpt lacks;
- ``ABSENT``: nothing in the excerpt supports the label.

A log is *reachable* when a reader of the paste could be right without guessing: its label is ``other``
(a reader who abstains, answering ``unknown``, is right whatever the paste shows; the column "of them
other" counts these) or the judges say ``EVIDENT`` (with two or more judges, *strict*, the default, needs
all of them; ``--lenient`` any one).  Rows compare the reachable share (the ceiling) with the batch's
recorded first look (``firstlook.json``), and split the first-look misses into those within reach (for
an ``other`` log: a category named where abstaining was right) and those beyond the paste.  "Same
verdict" counts the logs on which every judge gave the same verdict.

    python benchmarks/evidence_ceiling.py [--reallogs benchmarks/reallogs] [--lenient]

Exit 0 with the table; 2 when an ``evidence.json`` is malformed (no judges, a verdict outside the three) or a
judged batch's files are missing or not in the reallogs format.
A case missing from ``firstlook.json`` or from a judge's verdicts, or labelled differently in
``firstlook.json`` than in ``labels.json``, is left out and named on standard error.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from diagnosis_quality import OTHER  # noqa: E402  (the scoring rule's own name for the label unknown answers)

EVIDENT = "EVIDENT"
VERDICTS = frozenset({EVIDENT, "AMBIGUOUS", "ABSENT"})


class MalformedEvidence(Exception):
    """An evidence.json this script cannot count."""


@dataclass(frozen=True)
class JudgedCase:
    """One log: its label, whether the first look was right, and each judge's verdict."""

    case_id: str
    label: str
    first_look_right: bool
    verdicts: tuple[str, ...]

    def reachable(self, *, strict: bool) -> bool:
        if self.label == OTHER:
            return True
        said = [verdict == EVIDENT for verdict in self.verdicts]
        return all(said) if strict else any(said)


def _read(path: Path) -> Any:
    """A JSON file's value; its shape is the reallogs format's (checked where a wrong shape could mislead)."""
    return json.loads(path.read_text(encoding="utf-8"))


def judged_cases(batch: Path) -> list[JudgedCase]:
    evidence = _read(batch / "evidence.json")
    judges = evidence.get("judges") if isinstance(evidence, dict) else None
    if not judges:
        raise MalformedEvidence(f"{batch / 'evidence.json'}: no judges")
    first_look = {case["id"]: case for case in _read(batch / "firstlook.json")["cases"]}
    cases = []
    for case in sorted(_read(batch / "labels.json"), key=lambda c: c["id"]):
        case_id, label = case["id"], case["label"]
        scored = first_look.get(case_id)
        verdicts = [judge["verdicts"].get(case_id, {}).get("verdict") for judge in judges]
        if scored is None or None in verdicts or scored.get("label", label) != label:
            why = ("not in firstlook.json" if scored is None else "a judge has no verdict" if None in verdicts
                   else f"labelled {scored.get('label')} in firstlook.json, {label} in labels.json")
            print(f"{batch.name} {case_id}: left out ({why})", file=sys.stderr)
            continue
        unknown = [verdict for verdict in verdicts if verdict not in VERDICTS]
        if unknown:
            raise MalformedEvidence(f"{batch / 'evidence.json'}: {case_id} has the verdict {unknown[0]!r}, "
                                    f"not one of {', '.join(sorted(VERDICTS))}")
        cases.append(JudgedCase(case_id, label, bool(scored["right"]), tuple(verdicts)))
    return cases


def row(name: str, cases: list[JudgedCase], *, strict: bool) -> str:
    total = len(cases)
    reachable = sum(case.reachable(strict=strict) for case in cases)
    others = sum(case.label == OTHER for case in cases)
    right = sum(case.first_look_right for case in cases)
    within = sum(case.reachable(strict=strict) and not case.first_look_right for case in cases)
    beyond = sum(not case.reachable(strict=strict) and not case.first_look_right for case in cases)
    judges = max(len(case.verdicts) for case in cases)
    same = sum(len(set(case.verdicts)) == 1 for case in cases)
    return (
        f"| {name} | {total} | {judges} | {same}/{total} | {reachable}/{total} = {100 * reachable / total:.1f}% "
        f"| {others} | {right}/{total} = {100 * right / total:.1f}% | {within} | {beyond} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reallogs", type=Path, default=ROOT / "benchmarks" / "reallogs")
    parser.add_argument("--lenient", action="store_true", help="with two or more judges, one EVIDENT suffices")
    options = parser.parse_args(argv)
    batches = sorted(path.parent for path in options.reallogs.glob("*/evidence.json"))
    strict = not options.lenient
    print("| batch | logs | judges | same verdict | reachable (the ceiling) | of them other | first look | "
          "misses within reach | misses beyond the paste |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    everything: list[JudgedCase] = []
    for batch in batches:
        try:
            cases = judged_cases(batch)
        except MalformedEvidence as error:
            print(f"evidence_ceiling: {error}", file=sys.stderr)
            return 2
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            # A missing or unreadable labels/firstlook/evidence file, or one not in the reallogs format.
            print(f"evidence_ceiling: {batch}: not in the reallogs format ({type(error).__name__}: {error}); "
                  "each judged batch needs labels.json, firstlook.json and evidence.json", file=sys.stderr)
            return 2
        if cases:
            everything += cases
            print(row(batch.name, cases, strict=strict))
    if everything:
        print(row("all", everything, strict=strict))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
