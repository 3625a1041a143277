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
(``unknown`` is the right answer whatever the paste shows) or the judge says ``EVIDENT``.  With two
judges, *strict* needs both to say so and *lenient* either.  Rows compare the reachable share (the
ceiling) with the batch's recorded first look (``firstlook.json``), and split the first-look misses into
those with the evidence in the paste (the classifier's gap) and those without (out of any paste
reader's reach).

    python benchmarks/evidence_ceiling.py [--reallogs benchmarks/reallogs]

Exit 0 always (a measurement).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OTHER = "other"
EVIDENT = "EVIDENT"


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


def judged_cases(batch: Path) -> list[JudgedCase]:
    evidence = json.loads((batch / "evidence.json").read_text(encoding="utf-8"))
    first_look = json.loads((batch / "firstlook.json").read_text(encoding="utf-8"))
    right = {case["id"]: bool(case["right"]) for case in first_look["cases"]}
    labels = {case["id"]: case["label"] for case in json.loads((batch / "labels.json").read_text(encoding="utf-8"))}
    judges = evidence["judges"]
    cases = []
    for case_id, label in sorted(labels.items()):
        verdicts = tuple(judge["verdicts"][case_id]["verdict"] for judge in judges)
        cases.append(JudgedCase(case_id, label, right[case_id], verdicts))
    return cases


def agreement(cases: list[JudgedCase]) -> str:
    """How often two judges gave the same verdict (``-`` for one judge)."""
    pairs = [case.verdicts for case in cases if len(case.verdicts) >= 2]
    if not pairs:
        return "-"
    same = sum(verdicts[0] == verdicts[1] for verdicts in pairs)
    return f"{same}/{len(pairs)}"


def row(name: str, cases: list[JudgedCase], *, strict: bool) -> str:
    total = len(cases)
    reachable = sum(case.reachable(strict=strict) for case in cases)
    right = sum(case.first_look_right for case in cases)
    gap = sum(case.reachable(strict=strict) and not case.first_look_right for case in cases)
    beyond = sum(not case.reachable(strict=strict) and not case.first_look_right for case in cases)
    judges = max((len(case.verdicts) for case in cases), default=0)
    return (
        f"| {name} | {total} | {judges} | {agreement(cases)} | {reachable}/{total} = {100 * reachable / total:.1f}% "
        f"| {right}/{total} = {100 * right / total:.1f}% | {gap} | {beyond} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reallogs", type=Path, default=ROOT / "benchmarks" / "reallogs")
    parser.add_argument("--lenient", action="store_true", help="with two judges, either one's EVIDENT suffices")
    options = parser.parse_args(argv)
    batches = sorted(path.parent for path in options.reallogs.glob("*/evidence.json"))
    print("| batch | logs | judges | same verdict | reachable (the ceiling) | first look | "
          "misses with the evidence | misses beyond the paste |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    everything: list[JudgedCase] = []
    for batch in batches:
        cases = judged_cases(batch)
        everything += cases
        print(row(batch.name, cases, strict=not options.lenient))
    if everything:
        print(row("all", everything, strict=not options.lenient))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
