"""Benchmark: how often the classifier is right on real, pasted build logs.

Reads a directory in the ``reallogs`` format: ``NNN.log`` files (verbatim excerpts
of build logs from public threads) and ``labels.json``, a list of
``{"id", "label", "source", "fix", "note"}`` where ``label`` is the root cause the
thread established (a category, or ``other`` for a failure that fits none: the
classifier must answer ``unknown`` there).  Prints:

- accuracy (right / total) and "confidently wrong" (a category other than the
  label, ``unknown`` excluded: the mistakes that send a build down the wrong ladder);
- a per-category confusion matrix (label rows, prediction columns);
- every miss with the decisive line the classifier chose.

    python benchmarks/diagnosis_quality.py [DIR ...] [--json FILE] [--quiet]

DIR defaults to ``../shared/reallogs`` beside the repository when it exists.  A DIR without
``labels.json`` whose subdirectories have one (``benchmarks/reallogs``: a batch each) is scored
batch by batch, in name order; several DIRs or batches end with a table (one row each, then the
total), and ``--json`` then holds one entry per batch.
Exit 0 always (a measurement, not a test); 2 when DIR is not in that format.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rocmbuild.diagnosis.catalogue import load_catalogue  # noqa: E402
from rocmbuild.diagnosis.classifier import classify_stream  # noqa: E402

DEFAULT_DIR = ROOT.parent / "shared" / "reallogs"
OTHER = "other"


@dataclass(frozen=True)
class Case:
    id: str
    label: str
    predicted: str
    signature: str | None
    line: int | None
    text: str | None
    source: str

    @property
    def right(self) -> bool:
        return self.predicted == ("unknown" if self.label == OTHER else self.label)

    @property
    def confidently_wrong(self) -> bool:
        return not self.right and self.predicted != "unknown"


def load_cases(directory: Path) -> list[dict[str, str]]:
    labels = directory / "labels.json"
    if not labels.is_file():
        raise SystemExit(f"error: {labels} not found: DIR must hold NNN.log files and labels.json")
    try:
        entries = json.loads(labels.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"error: {labels} is not readable JSON: {exc}") from exc
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "id" in e and "label" in e for e in entries):
        raise SystemExit(f"error: {labels} must be a list of objects with 'id' and 'label'")
    return entries


def classify_dir(directory: Path) -> list[Case]:
    catalogue = load_catalogue(user=False)
    cases = []
    for entry in load_cases(directory):
        path = directory / f"{entry['id']}.log"
        if not path.is_file():
            print(f"warning: {path} missing, case skipped", file=sys.stderr)
            continue
        with path.open("rb") as handle:
            diagnosis = classify_stream(handle, catalogue)
        cases.append(Case(str(entry["id"]), str(entry["label"]), diagnosis.category, diagnosis.signature,
                          diagnosis.line, diagnosis.text, str(entry.get("source", ""))))
    return cases


def confusion(cases: list[Case]) -> str:
    labels = sorted({c.label for c in cases})
    predicted = sorted({c.predicted for c in cases})
    counts = Counter((c.label, c.predicted) for c in cases)
    width = max(len(x) for x in [*labels, "label \\ predicted"]) + 1
    short = {p: p[:10] for p in predicted}
    head = "label \\ predicted".ljust(width) + " ".join(short[p].rjust(10) for p in predicted) + "   right"
    rows = [head]
    for label in labels:
        mine = [c for c in cases if c.label == label]
        right = sum(c.right for c in mine)
        cells = " ".join((str(counts[(label, p)]) if counts[(label, p)] else ".").rjust(10) for p in predicted)
        rows.append(label.ljust(width) + cells + f"   {right}/{len(mine)}")
    return "\n".join(rows)


def report(cases: list[Case], directory: Path, quiet: bool) -> str:
    total = len(cases)
    right = sum(c.right for c in cases)
    wrong = sum(c.confidently_wrong for c in cases)
    lines = [f"diagnosis quality on {directory} ({total} logs)",
             f"  right: {right}/{total} = {100 * right / max(total, 1):.1f}%",
             f"  confidently wrong: {wrong}",
             f"  unknown where a category was expected: "
             f"{sum(1 for c in cases if c.predicted == 'unknown' and c.label != OTHER)}",
             "", confusion(cases)]
    misses = [c for c in cases if not c.right]
    if misses and not quiet:
        lines += ["", "misses (label -> predicted [signature] at line: decisive text):"]
        for c in misses:
            mark = "WRONG " if c.confidently_wrong else ""
            where = f"line {c.line}: {(c.text or '')[:150]}" if c.line is not None else "no decisive line"
            lines.append(f"  {mark}{c.id}: {c.label} -> {c.predicted} [{c.signature or '-'}] {where}")
    return "\n".join(lines)


def expand(dirs: list[Path]) -> list[Path]:
    """Each DIR, or its subdirectories holding labels.json (a directory of batches), in name order."""
    out: list[Path] = []
    for directory in dirs:
        batches = sorted(p.parent for p in directory.glob("*/labels.json"))
        out.extend(batches if not (directory / "labels.json").is_file() and batches else [directory])
    return out


def summary(directory: Path, cases: list[Case]) -> dict[str, object]:
    return {"dir": str(directory), "total": len(cases), "right": sum(c.right for c in cases),
            "confidently_wrong": sum(c.confidently_wrong for c in cases),
            "cases": [{**c.__dict__, "right": c.right} for c in cases]}


def table(rows: list[dict[str, object]]) -> str:
    lines = ["| set | cases | right | confidently wrong |", "| --- | --- | --- | --- |"]
    for row in rows:
        total, right, wrong = int(str(row["total"])), int(str(row["right"])), int(str(row["confidently_wrong"]))
        lines.append(f"| {Path(str(row['dir'])).name} | {total} | {right}/{total} = {100 * right / max(total, 1):.1f}% "
                     f"| {wrong} ({100 * wrong / max(total, 1):.1f}%) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", nargs="*", type=Path, default=[DEFAULT_DIR])
    parser.add_argument("--json", type=Path, help="also write the cases and totals as JSON here")
    parser.add_argument("--quiet", action="store_true", help="totals and the matrix only")
    args = parser.parse_args(argv)
    for directory in args.dir:
        if not directory.is_dir():
            print(f"error: {directory} is not a directory (expected NNN.log files and labels.json)", file=sys.stderr)
            return 2
    rows: list[dict[str, object]] = []
    every: list[Case] = []
    for directory in expand(args.dir):
        try:
            cases = classify_dir(directory)
        except SystemExit as exc:
            print(exc, file=sys.stderr)
            return 2
        print(report(cases, directory, args.quiet))
        rows.append(summary(directory, cases))
        every.extend(cases)
    if len(rows) > 1:
        total = summary(Path("all"), every)
        print("\n" + table([*rows, total]))
    if args.json:
        data = rows[0] if len(rows) == 1 else {"sets": rows, "total": len(every),
                                                "right": sum(c.right for c in every),
                                                "confidently_wrong": sum(c.confidently_wrong for c in every)}
        args.json.write_text(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
