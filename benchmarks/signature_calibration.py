"""Measurement: would calibrating each signature by its first-look record lower confidently wrong?

Issue #22 asks that weak evidence come out ``unknown``.  One reading of "weak" is a signature whose own
record on real logs is poor: more confident mistakes than right answers at first look.  This script
measures that policy prequentially, from the ``firstlook.json`` of every batch in ``benchmarks/reallogs``
(what the classifier said before anyone learned from the batch): for each batch in name order, a
signature is *disputed* when, over the first looks of the earlier batches, it fired at least
``--min-fires`` times and its smoothed precision ``(right + 1) / (fires + 2)`` is under the threshold;
a disputed reading is then scored as ``unknown`` (right on a log labelled ``other``, a lost answer
otherwise).  Rows compare the rules alone with the rules under the policy over the batches from
``--start`` on.

The last lines say what shipping the policy now would cost on the development set: the signatures
disputed by every first look on record, and the development-set logs the current classifier reads
right with one of them (each would turn ``unknown``).

    python benchmarks/signature_calibration.py [--start 100] [--dev ../shared/reallogs]

Exit 0 always (a measurement).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from diagnosis_quality import OTHER, classify_dir  # noqa: E402

THRESHOLDS = (0.5, 0.6, 0.7, 0.8)
MIN_FIRES = (2, 3, 5)


def first_looks(reallogs: Path) -> list[tuple[int, list[dict[str, object]]]]:
    """Every batch's first-look cases, in batch order (b1 < b2 < ... < b135)."""
    batches = []
    for path in reallogs.glob("b*/firstlook.json"):
        cases = json.loads(path.read_text(encoding="utf-8"))["cases"]
        batches.append((int(path.parent.name[1:]), cases))
    return sorted(batches, key=lambda batch: batch[0])


def disputed(right: int, wrong: int, threshold: float, min_fires: int) -> bool:
    """The policy: enough fires, and a smoothed precision under the threshold."""
    fires = right + wrong
    return fires >= min_fires and (right + 1) / (fires + 2) < threshold


def record(cases: list[dict[str, object]], right_of: Counter[str], wrong_of: Counter[str]) -> None:
    """Count each first look that named a category as its signature's right answer or confident mistake."""
    for case in cases:
        if case["predicted"] != "unknown":
            (right_of if case["right"] else wrong_of)[str(case["signature"])] += 1


def simulate(batches: list[tuple[int, list[dict[str, object]]]], threshold: float, min_fires: int,
             start: int) -> tuple[int, int, int, int, int]:
    """(logs, right alone, wrong alone, right with policy, wrong with policy) over batches >= start."""
    right_of: Counter[str] = Counter()
    wrong_of: Counter[str] = Counter()
    logs = alone_right = alone_wrong = policy_right = policy_wrong = 0
    for number, cases in batches:
        if number >= start:
            for case in cases:
                predicted, signature = str(case["predicted"]), str(case["signature"])
                truth = "unknown" if case["label"] == OTHER else str(case["label"])
                logs += 1
                alone_right += predicted == truth
                alone_wrong += predicted not in (truth, "unknown")
                if predicted != "unknown" and disputed(right_of[signature], wrong_of[signature], threshold,
                                                       min_fires):
                    predicted = "unknown"
                policy_right += predicted == truth
                policy_wrong += predicted not in (truth, "unknown")
        record(cases, right_of, wrong_of)  # learned only after the batch was scored
    return logs, alone_right, alone_wrong, policy_right, policy_wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=100, help="first batch number scored (default 100)")
    parser.add_argument("--reallogs", type=Path, default=ROOT / "benchmarks" / "reallogs")
    parser.add_argument("--dev", type=Path, default=ROOT.parent / "shared" / "reallogs")
    parser.add_argument("--threshold", type=float, default=0.5, help="policy for the development-set lines")
    parser.add_argument("--min-fires", type=int, default=3, help="policy for the development-set lines")
    args = parser.parse_args(argv)

    batches = first_looks(args.reallogs)
    print(f"first looks of {sum(len(c) for _, c in batches)} logs in {len(batches)} batches; "
          f"scored from b{args.start} on")
    print("| threshold | min fires | logs | right alone | right, policy | wrong alone | wrong, policy |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for threshold in THRESHOLDS:
        for min_fires in MIN_FIRES:
            logs, right, wrong, p_right, p_wrong = simulate(batches, threshold, min_fires, args.start)
            print(f"| {threshold} | {min_fires} | {logs} | {right} | {p_right} ({p_right - right:+d}) "
                  f"| {wrong} | {p_wrong} ({p_wrong - wrong:+d}) |")

    right_of: Counter[str] = Counter()
    wrong_of: Counter[str] = Counter()
    for _, cases in batches:
        record(cases, right_of, wrong_of)
    now = sorted(s for s in set(right_of) | set(wrong_of)
                 if disputed(right_of[s], wrong_of[s], args.threshold, args.min_fires))
    print(f"\ndisputed now (threshold {args.threshold}, min fires {args.min_fires}): "
          + ", ".join(f"{s} {right_of[s]}/{right_of[s] + wrong_of[s]}" for s in now))
    if args.dev.is_dir():
        dev = classify_dir(args.dev)
        lost = [c for c in dev if c.right and c.signature in now]
        gained = [c for c in dev if c.confidently_wrong and c.signature in now and c.label == OTHER]
        print(f"development set ({len(dev)}): right now {sum(c.right for c in dev)}; under the policy "
              f"{sum(c.right for c in dev) - len(lost) + len(gained)} (loses "
              + (", ".join(f"{c.id} {c.signature}" for c in lost) or "none") + ")")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
