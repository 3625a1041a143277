"""``rocmbuild history``: past runs, and which remedies cure which failures.

Owns finding past runs (every ``runs/*/summary.json`` under the state dir,
plus the run dirs listed in ``runs.index`` there, which is how a run with
``--run-dir`` elsewhere is found again) and the pure functions that turn their
summaries into rows and per-signature statistics.  A signature counts as
*cured* by a remedy when the attempt after that remedy succeeded or failed
differently (another signature): the remedy got the build past that failure.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rocmbuild import paths
from rocmbuild.records.recordfile import (
    CorruptRecord,
    JSONObject,
    as_list,
    as_number,
    as_objects,
    as_strs,
    read_path_lines,
    read_summary,
)
from rocmbuild.records.runindex import index_path


def run_dirs() -> list[Path]:
    """Every run dir known: those under the state dir and those in the index, each once, existing ones only."""
    found: dict[str, Path] = {}
    root = paths.runs_root()
    candidates: list[Path] = [p.parent for p in root.glob("*/summary.json")] if root.is_dir() else []
    candidates += [p.parent for p in root.glob("*/*/summary.json")] if root.is_dir() else []  # several recipes
    candidates += list(read_path_lines(index_path()))
    for path in candidates:
        with contextlib.suppress(OSError, ValueError):  # a dir gone or unreadable since it was indexed
            if path.name == "latest" or not (path / "summary.json").is_file():
                continue
            found.setdefault(str(path.resolve()), path.resolve())
    return list(found.values())


def load_summaries(paths: Iterable[Path], skipped: list[CorruptRecord] | None = None) -> list[JSONObject]:
    """The usable summaries among ``paths``; a damaged one is skipped (and appended to ``skipped``), not fatal."""
    summaries: list[JSONObject] = []
    for path in paths:
        try:
            data = read_summary(path)
        except CorruptRecord as exc:
            if skipped is not None:
                skipped.append(exc)
            continue
        data.setdefault("run_dir", str(path))
        summaries.append(data)
    return summaries


@dataclass(frozen=True)
class HistoryRow:
    run_dir: str
    recipe: str
    arch: str
    started: str
    duration_s: float | None
    outcome: str
    attempts: int
    cured_by: str | None   # the remedies applied before the attempt that succeeded (None: first try, or failed)


def _attempts(summary: Mapping[str, object]) -> list[Mapping[str, object]]:
    return as_objects(summary.get("attempts"))


def history_row(summary: Mapping[str, object]) -> HistoryRow:
    attempts = _attempts(summary)
    cured_by = None
    if summary.get("outcome") == "succeeded" and len(attempts) > 1:
        # the remedies after the last failure (an attempt killed and resumed is not a failure)
        failed = [a for a in attempts[:-1] if a.get("diagnosis")]
        cured_by = "+".join(as_strs(failed[-1].get("remedies"))) or None if failed else None
    return HistoryRow(run_dir=str(summary.get("run_dir")), recipe=str(summary.get("recipe")),
                      arch=";".join(as_strs(summary.get("arch"))), started=str(summary.get("started") or ""),
                      duration_s=as_number(summary.get("duration_s")), outcome=str(summary.get("outcome")),
                      attempts=len(attempts), cured_by=cured_by)


def history_rows(summaries: Iterable[Mapping[str, object]], recipe: str | None = None) -> list[HistoryRow]:
    rows = [history_row(s) for s in summaries if recipe is None or s.get("recipe") == recipe]
    return sorted(rows, key=lambda r: r.started)


@dataclass(frozen=True)
class SignatureStats:
    signature: str
    category: str
    seen: int
    cured: int
    cured_by: dict[str, int] = field(default_factory=dict)   # remedy (or remedies, joined by +) -> times
    tried: dict[str, int] = field(default_factory=dict)      # remedy -> times applied after this signature


def signature_stats(summaries: Iterable[Mapping[str, object]]) -> list[SignatureStats]:
    """Per signature: attempts that ended in it, and how often the next attempt got past it, by remedy."""
    seen: dict[str, int] = {}
    category: dict[str, str] = {}
    cured: dict[str, dict[str, int]] = {}
    tried: dict[str, dict[str, int]] = {}
    for summary in summaries:
        attempts = _attempts(summary)
        for index, attempt in enumerate(attempts):
            diagnosis = attempt.get("diagnosis")
            if not isinstance(diagnosis, Mapping):
                continue
            sig = str(diagnosis.get("signature") or diagnosis.get("category") or "unknown")
            seen[sig] = seen.get(sig, 0) + 1
            category.setdefault(sig, str(diagnosis.get("category")))
            remedies = [str(r) for r in as_list(attempt.get("remedies"))]
            if not remedies or index + 1 >= len(attempts):
                continue
            name = "+".join(remedies)
            tried.setdefault(sig, {})[name] = tried.setdefault(sig, {}).get(name, 0) + 1
            if attempts[index + 1].get("ended") == "interrupted":
                continue  # killed or interrupted: it proves nothing about the remedy
            after = attempts[index + 1].get("diagnosis")
            after_sig = (str(after.get("signature") or after.get("category")) if isinstance(after, Mapping)
                         else None)
            if after_sig != sig:  # succeeded, or got further and failed another way
                cured.setdefault(sig, {})[name] = cured.setdefault(sig, {}).get(name, 0) + 1
    return sorted((SignatureStats(sig, category[sig], count, sum(cured.get(sig, {}).values()),
                                  dict(cured.get(sig, {})), dict(tried.get(sig, {})))
                   for sig, count in seen.items()), key=lambda s: (-s.seen, s.signature))


def render_rows(rows: Sequence[HistoryRow]) -> str:
    if not rows:
        return "no runs recorded\n"
    lines = [f"{'started':<20} {'recipe':<14} {'arch':<12} {'outcome':<16} {'att':>3} {'duration':>9}  "
             f"{'cured by':<22} run dir"]
    for r in rows:
        duration = f"{r.duration_s:.0f}s" if isinstance(r.duration_s, (int, float)) else "-"
        lines.append(f"{r.started[:19]:<20} {r.recipe:<14} {r.arch:<12} {r.outcome:<16} {r.attempts:>3} "
                     f"{duration:>9}  {r.cured_by or '-':<22} {r.run_dir}")
    return "\n".join(lines) + "\n"


def render_stats(stats: Sequence[SignatureStats]) -> str:
    if not stats:
        return "no diagnosed failures recorded\n"
    lines = [f"{'signature':<40} {'category':<26} {'seen':>4} {'cured':>5}  cured by (times)"]
    for s in stats:
        by = ", ".join(f"{name} ({n})" for name, n in sorted(s.cured_by.items(), key=lambda kv: -kv[1])) or "-"
        lines.append(f"{s.signature:<40} {s.category:<26} {s.seen:>4} {s.cured:>5}  {by}")
    return "\n".join(lines) + "\n"


def as_json(value: HistoryRow | SignatureStats) -> str:
    return json.dumps(asdict(value))
