"""``rocmbuild report RUN_DIR --diff [OTHER]``: what changed since the last good run.

Owns comparing two runs from their records: the environment rocmbuild set (each run's last
attempt), ROCm version, HIP compiler, tool versions, source revision and submodule SHAs
(``facts.json``), and the options; and, when the catalogue did not recognise the failure, the log
lines that are new against the good run's last (successful) attempt log.  Lines are compared as
templates, the way log-template miners (Drain) reduce them: hex, paths and numbers masked, so
"[12/40] Building kernel_12.o" and "[13/40] Building kernel_13.o" are one line and only text the
good build never printed remains.  OTHER defaults to the newest successful run of the same recipe
that started before this one (found like ``rocmbuild history``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rocmbuild.errors import UsageError
from rocmbuild.records.history import load_summaries, run_dirs
from rocmbuild.records.recorder import load_run
from rocmbuild.records.recordfile import as_object, as_objects
from rocmbuild.records.runfacts import load_facts

MAX_NEW_LINES = 30
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_MASKS = (
    (re.compile(r"0x[0-9a-fA-F]+"), "<HEX>"),
    (re.compile(r"\b[0-9a-f]{7,64}\b"), "<HEX>"),                      # git SHAs, hashes
    (re.compile(r"(?:[A-Za-z]:)?(?:~|\.{1,2})?(?:/[^\s:'\"(),;]+)+/?"), "<PATH>"),
    (re.compile(r"\d+(?:\.\d+)*"), "<NUM>"),
)
# Options that differ between any two runs and say nothing about the build.
_IGNORED_OPTIONS = frozenset({"run_dir", "json", "verbosity", "detach", "notify", "notify_timeout_s", "dry_run"})


def template(line: str) -> str:
    """A log line with hex, paths and numbers masked and blanks collapsed (pure)."""
    text = _ANSI.sub("", line).strip()
    for pattern, mask in _MASKS:
        text = pattern.sub(mask, text)
    return " ".join(text.split())


def new_lines(failing: Iterable[str], good: Iterable[str], limit: int = MAX_NEW_LINES) -> list[str]:
    """Lines of ``failing`` whose template never appears in ``good``, once per template, the last ``limit``."""
    known = {template(line) for line in good}
    seen: set[str] = set()
    found = []
    for line in failing:
        shape = template(line)
        if not shape or shape in known or shape in seen or line.startswith("==> rocmbuild"):
            continue
        seen.add(shape)
        found.append(_ANSI.sub("", line).rstrip())
    return found[-limit:]


def changed(mine: Mapping[str, object], theirs: Mapping[str, object], ignore: frozenset[str] = frozenset()
            ) -> dict[str, tuple[object, object]]:
    """key -> (this run, other run) for every key whose value differs (pure)."""
    return {k: (mine.get(k), theirs.get(k)) for k in sorted(set(mine) | set(theirs))
            if k not in ignore and mine.get(k) != theirs.get(k)}


def _flatten(value: object, prefix: str = "") -> dict[str, object]:
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


@dataclass(frozen=True)
class RunDiff:
    this: str
    other: str
    env: dict[str, tuple[object, object]]
    facts: dict[str, tuple[object, object]]        # rocm.*, hip_compiler.*, tools.*, source.* (flattened)
    options: dict[str, tuple[object, object]]
    new_log_lines: list[str] | None          # only for a failure the catalogue does not know
    failing_log: str | None
    good_log: str | None

    def to_json(self) -> dict[str, object]:
        def pairs(d: Mapping[str, tuple[object, object]]) -> dict[str, dict[str, object]]:
            return {k: {"this": a, "other": b} for k, (a, b) in d.items()}

        return {"this": self.this, "other": self.other, "env": pairs(self.env), "facts": pairs(self.facts),
                "options": pairs(self.options), "new_log_lines": self.new_log_lines,
                "failing_log": self.failing_log, "good_log": self.good_log}


def _options(events: Sequence[Mapping[str, object]]) -> dict[str, object]:
    started = next((e for e in events if e.get("event") == "run.started"), {})
    options = started.get("options")
    return dict(options) if isinstance(options, Mapping) else {}


def _last_env(summary: Mapping[str, object]) -> dict[str, object]:
    attempts = as_objects(summary.get("attempts"))
    return dict(as_object(attempts[-1].get("env"))) if attempts else {}


def _read_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [part.split("\r")[-1] for part in text.split("\n")]


def diff_runs(this_dir: Path, other_dir: Path) -> RunDiff:

    mine, my_events = load_run(this_dir)
    theirs, their_events = load_run(other_dir)
    my_facts = _flatten(load_facts(this_dir))
    their_facts = _flatten(load_facts(other_dir))
    if "rocm.version" not in my_facts and isinstance(mine.get("rocm"), Mapping):  # runs before facts.json
        my_facts.update(_flatten({"rocm": mine["rocm"]}))
    if "rocm.version" not in their_facts and isinstance(theirs.get("rocm"), Mapping):
        their_facts.update(_flatten({"rocm": theirs["rocm"]}))
    lines = failing_log = good_log = None
    attempts = as_objects(mine.get("attempts"))
    last = attempts[-1] if attempts else None
    diagnosis = last.get("diagnosis") if last else None
    if last is not None and isinstance(diagnosis, Mapping) and diagnosis.get("category") == "unknown":
        good = [a for a in as_objects(theirs.get("attempts")) if not a.get("diagnosis")]
        if good:
            failing_log, good_log = str(this_dir / str(last.get("log"))), str(other_dir / str(good[-1].get("log")))
            lines = new_lines(_read_lines(Path(failing_log)), _read_lines(Path(good_log)))
    return RunDiff(str(this_dir), str(other_dir), changed(_last_env(mine), _last_env(theirs)),
                   changed(my_facts, their_facts),
                   changed(_options(my_events), _options(their_events), _IGNORED_OPTIONS),
                   lines, failing_log, good_log)


def last_good_run(this_dir: Path, summary: Mapping[str, object]) -> Path:
    """The newest successful run of the same recipe that started before this one."""

    started = str(summary.get("started") or "")
    candidates = [s for s in load_summaries(run_dirs())
                  if s.get("recipe") == summary.get("recipe") and s.get("outcome") == "succeeded"
                  and Path(str(s.get("run_dir"))).resolve() != this_dir.resolve()
                  and str(s.get("started") or "") < started]
    if not candidates:
        raise UsageError(f"no earlier successful run of '{summary.get('recipe')}' to compare with",
                         why="report --diff compares with the last good run of the same recipe (see "
                             "`rocmbuild history`)",
                         todo=f"pass one: rocmbuild report {this_dir} --diff OTHER_RUN_DIR")
    newest = max(candidates, key=lambda s: str(s.get("started") or ""))
    return Path(str(newest["run_dir"]))


def render_diff(diff: RunDiff) -> str:
    out = [f"differences: {diff.this}", f"         vs: {diff.other}"]
    for title, values in (("environment rocmbuild set", diff.env), ("toolchain and source", diff.facts),
                          ("options", diff.options)):
        out.append(f"{title}:" if values else f"{title}: same")
        out.extend(f"  {key}: {a!r}  (other: {b!r})" for key, (a, b) in values.items())
    if diff.new_log_lines is not None:
        out.append(f"log lines new against the good run's log ({len(diff.new_log_lines)}, numbers/paths/hex "
                   f"masked; {diff.failing_log} vs {diff.good_log}):")
        out.extend(f"  {line}" for line in diff.new_log_lines)
    return "\n".join(out) + "\n"
