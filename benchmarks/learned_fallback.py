"""Measurement: would a learned fallback raise first-look accuracy without raising confidently wrong?

Issue #22 allows a learned fallback (weights trained offline, pure-Python inference, used only where no
rule speaks) if, and only if, it raises first-look accuracy without raising confidently wrong.  This
script measures that prequentially, the only honest way: for each batch of ``benchmarks/reallogs``
(in name order, from ``--start`` on), a model is trained on the development set and every *earlier*
batch, then asked about the batch's logs that the rules answered ``unknown`` **at first look** (the
``predicted`` of the batch's ``firstlook.json``: what the classifier said before anyone learned from
it).  A model answer counts only when it is a category (not ``other``) with probability >= the
threshold; it is then either a conversion (the label) or a new confident mistake (and, on a log
labelled ``other``, a right ``unknown`` lost).

The model: multinomial logistic regression (SGD, L2) over the lower-cased words and word pairs of a
log's error-looking lines (the classifier's own ``_ERRORISH`` test, boilerplate dropped), present or
absent.  Naive Bayes was tried too (``--model nb``) and is worse: overconfident.

    python benchmarks/learned_fallback.py [--start 38] [--model lr|nb] [--dev ../shared/reallogs]

Prints one row per threshold: first-look right and confidently wrong over the batches scored, rules
alone against rules + fallback.  Exit 0 always (a measurement).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rocmbuild.diagnosis.classifier import _ERRORISH, _not_decisive  # noqa: E402
from rocmbuild.process.noise import clean_line  # noqa: E402

BATCHES = ROOT / "benchmarks" / "reallogs"
DEFAULT_DEV = ROOT.parent / "shared" / "reallogs"
_WORD = re.compile(r"[a-z][a-z0-9_+.-]*[a-z0-9+]|[a-z]")
THRESHOLDS = (0.5, 0.7, 0.8, 0.9, 0.95)
Features = frozenset[str]


def features(text: str) -> Features:
    """Words and word pairs of the error-looking lines (digits folded), present or absent."""
    lines = [clean_line(raw) for raw in text.splitlines()]
    chosen = [line for line in lines if _ERRORISH.search(line) and not _not_decisive(line)]
    chosen = chosen or [line for line in lines if _ERRORISH.search(line)]
    found: set[str] = set()
    for line in chosen[:200]:
        words = [re.sub(r"\d+", "0", w) for w in _WORD.findall(line.lower())]
        found.update(words)
        found.update(f"{a} {b}" for a, b in itertools.pairwise(words))
    return frozenset(found)


def load(directory: Path) -> list[tuple[str, str, Features]]:
    """(id, label, features) of each log in a reallogs-format directory."""
    out = []
    for entry in json.loads((directory / "labels.json").read_text(encoding="utf-8")):
        log = directory / f"{entry['id']}.log"
        if log.is_file():
            out.append((str(entry["id"]), str(entry["label"]),
                        features(log.read_bytes().decode("utf-8", "replace"))))
    return out


def _softmax(scores: dict[str, float]) -> dict[str, float]:
    top = max(scores.values())
    total = sum(math.exp(v - top) for v in scores.values())
    return {c: math.exp(v - top) / total for c, v in scores.items()}


class LogisticRegression:
    def __init__(self, epochs: int = 30, rate: float = 0.2, l2: float = 1e-4) -> None:
        self.epochs, self.rate, self.l2 = epochs, rate, l2
        self.weights: dict[str, defaultdict[str, float]] = {}
        self.bias: dict[str, float] = {}

    def fit(self, xs: Sequence[Features], ys: Sequence[str]) -> LogisticRegression:
        classes = sorted(set(ys))
        self.weights = {c: defaultdict(float) for c in classes}
        self.bias = dict.fromkeys(classes, 0.0)
        order = list(range(len(xs)))
        shuffle = random.Random(0)
        for _ in range(self.epochs):
            shuffle.shuffle(order)
            for i in order:
                probability = self.proba(xs[i])
                for c in classes:
                    gradient = probability[c] - (1.0 if ys[i] == c else 0.0)
                    if abs(gradient) < 1e-6:
                        continue
                    w = self.weights[c]
                    for f in xs[i]:
                        w[f] -= self.rate * (gradient + self.l2 * w[f])
                    self.bias[c] -= self.rate * gradient
        return self

    def proba(self, x: Features) -> dict[str, float]:
        return _softmax({c: self.bias[c] + sum(w.get(f, 0.0) for f in x) for c, w in self.weights.items()})


class NaiveBayes:
    def fit(self, xs: Sequence[Features], ys: Sequence[str]) -> NaiveBayes:
        self.prior = Counter(ys)
        self.counts: dict[str, Counter[str]] = defaultdict(Counter)
        self.totals: Counter[str] = Counter()
        self.vocabulary: set[str] = set()
        for x, y in zip(xs, ys, strict=True):
            self.counts[y].update(x)
            self.totals[y] += len(x)
            self.vocabulary.update(x)
        return self

    def proba(self, x: Features) -> dict[str, float]:
        n, size = sum(self.prior.values()), len(self.vocabulary)
        return _softmax({c: math.log(self.prior[c] / n) + sum(
            math.log((self.counts[c][f] + 0.5) / (self.totals[c] + 0.5 * size)) for f in x if f in self.vocabulary)
            for c in self.prior})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--start", type=int, default=38, help="first batch number scored (bNN)")
    parser.add_argument("--model", choices=("lr", "nb"), default="lr")
    parser.add_argument("--dev", type=Path, default=DEFAULT_DEV, help="the development set (trained on, never scored)")
    args = parser.parse_args(argv)
    batches = sorted(p.parent for p in BATCHES.glob("b*/firstlook.json"))
    if not batches or not (args.dev / "labels.json").is_file():
        print(f"error: need {BATCHES}/bNN/firstlook.json and {args.dev}/labels.json", file=sys.stderr)
        return 0
    dev = load(args.dev)
    data = {b: load(b) for b in batches}
    rules = Counter[str]()
    added = {t: Counter[str]() for t in THRESHOLDS}
    for index, batch in enumerate(batches):
        if int(batch.name[1:]) < args.start:
            continue
        first = {str(c["id"]): str(c["predicted"])
                 for c in json.loads((batch / "firstlook.json").read_text(encoding="utf-8"))["cases"]}
        train = dev + [case for earlier in batches[:index] for case in data[earlier]]
        model = (LogisticRegression() if args.model == "lr" else NaiveBayes()).fit(
            [x for _, _, x in train], [y for _, y, _ in train])
        for case_id, label, x in data[batch]:
            predicted = first.get(case_id)
            if predicted is None:
                continue
            expected = "unknown" if label == "other" else label
            rules["total"] += 1
            rules["right"] += predicted == expected
            rules["wrong"] += predicted not in ("unknown", expected)
            if predicted != "unknown":
                continue
            probability = model.proba(x)
            best = max(probability, key=probability.__getitem__)
            for threshold in THRESHOLDS:
                if best != "other" and probability[best] >= threshold:
                    if best == label:
                        added[threshold]["right"] += 1
                    else:  # a new confident mistake; on an `other` log it also undoes the rules' right unknown
                        added[threshold]["wrong"] += 1
                        added[threshold]["right"] -= label == "other"
    total = max(rules["total"], 1)
    print(f"learned fallback ({args.model}), prequential over b{args.start:02d}.. ({rules['total']} logs, "
          "each batch's model trained on the dev set and the batches before it)")
    print("| threshold | right (net) | new confidently wrong | first look right | confidently wrong |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| rules alone | - | - | {rules['right']}/{total} = {100 * rules['right'] / total:.1f}% "
          f"| {rules['wrong']} ({100 * rules['wrong'] / total:.1f}%) |")
    for threshold in THRESHOLDS:
        right = rules["right"] + added[threshold]["right"]
        wrong = rules["wrong"] + added[threshold]["wrong"]
        print(f"| >= {threshold} | {added[threshold]['right']} | {added[threshold]['wrong']} "
              f"| {right}/{total} = {100 * right / total:.1f}% | {wrong} ({100 * wrong / total:.1f}%) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
