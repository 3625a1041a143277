"""Reading rocmbuild's own records back, when they may be damaged or hostile.

Owns the bounded, typed read of a JSON record (summary.json, resume.json, facts.json, events.jsonl and
the run-dir index): size and nesting depth are checked before the parser runs, a byte-order mark is
accepted, invalid UTF-8 is a corrupt record (never a crash), and a summary's fields are checked for the
types the readers use.  A record that fails is a ``CorruptRecord`` naming the file and why, so that each
reader can refuse it (``report``, ``resume``: exit 2) or skip it with one line (``history``).

Run dirs are shared, copied with ``scp``, edited by hand and left half-written by a kill: a reader that
trusted them ended with a traceback (exit 70) instead of saying which file is bad.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeAlias, TypeVar

# What the JSON parser returns, as a type: readers narrow it (the helpers below) instead of trusting it.
JSONValue: TypeAlias = "bool | int | float | str | list[JSONValue] | dict[str, JSONValue] | None"
JSONObject: TypeAlias = "dict[str, JSONValue]"

# A summary of a 10-hour build with dozens of attempts is tens of KB; facts.json a few KB.  The events of
# a long run can grow with every stall note, so they get more room.
MAX_RECORD_BYTES = 16 * 1024 * 1024
MAX_EVENTS_BYTES = 256 * 1024 * 1024
# rocmbuild's records nest 5 levels at most (summary -> attempts -> attempt -> diagnosis -> fields).
MAX_DEPTH = 32

_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class ShapeError(ValueError):
    """A field of a record that has another type than rocmbuild writes (the message names it)."""


_Name = TypeVar("_Name", bound=str)


def one_of(value: object, names: Sequence[_Name], what: str) -> _Name:
    """``value`` as one of a closed set of names (a Literal's members); anything else is a damaged record."""
    for name in names:
        if value == name:
            return name
    raise ShapeError(f"{what} is {value!r}")


class CorruptRecord(Exception):
    """A record that cannot be used: ``path`` and a one-line ``why``."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


def nesting_depth(text: str, limit: int = MAX_DEPTH) -> int:
    """The deepest nesting of ``[``/``{`` outside strings, counted up to ``limit + 1`` (then it stops)."""
    depth = deepest = 0
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif token in "]}":
            depth -= 1
    return deepest


def parse_record(text: str, path: Path, *, max_depth: int = MAX_DEPTH) -> JSONValue:
    """JSON from ``text`` whose nesting was bounded first (the C parser recurses once per level)."""
    if nesting_depth(text, max_depth) > max_depth:
        raise CorruptRecord(path, f"nested deeper than {max_depth} levels (rocmbuild writes 5)")
    try:
        value: JSONValue = json.loads(text, parse_constant=_no_constant)
        return value
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise CorruptRecord(path, f"not valid JSON ({exc})") from None


def _no_constant(name: str) -> None:
    """NaN, Infinity and -Infinity are Python's extension of JSON, never written by rocmbuild: a duration
    of Infinity would overflow every reader that formats it."""
    raise ValueError(f"{name} is not a JSON number")


def read_text(path: Path, *, max_bytes: int = MAX_RECORD_BYTES) -> str:
    """A record's text: bounded, UTF-8 (a byte-order mark is dropped), or ``CorruptRecord``."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise CorruptRecord(path, "missing") from None
    except OSError as exc:
        raise CorruptRecord(path, f"unreadable ({exc.strerror or exc})") from None
    if len(raw) > max_bytes:
        raise CorruptRecord(path, f"larger than {max_bytes // (1024 * 1024)} MiB (rocmbuild writes far less)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CorruptRecord(path, f"not UTF-8 (byte {exc.start})") from None


def read_json(path: Path, *, max_bytes: int = MAX_RECORD_BYTES) -> JSONValue:
    return parse_record(read_text(path, max_bytes=max_bytes), path)


def read_json_object(path: Path, *, max_bytes: int = MAX_RECORD_BYTES) -> JSONObject:
    data = read_json(path, max_bytes=max_bytes)
    if not isinstance(data, dict):
        raise CorruptRecord(path, f"a JSON {type(data).__name__}, not an object")
    return data


def read_events(path: Path) -> list[JSONObject]:
    """The usable events of events.jsonl: a line cut by a kill, not UTF-8 or not an object is passed over."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_EVENTS_BYTES)
    except OSError:
        return []
    events: list[JSONObject] = []
    for line in raw.split(b"\n"):
        try:
            event = parse_record(line.decode("utf-8"), path) if line.strip() else None
        except (UnicodeDecodeError, CorruptRecord):
            continue
        if isinstance(event, dict) and isinstance(event.get("event"), str):
            events.append(event)
    return events


def read_path_lines(path: Path, *, max_bytes: int = MAX_RECORD_BYTES) -> Iterator[Path]:
    """The paths listed one a line (the run-dir index); a line that is not UTF-8 is passed over."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(max_bytes)
    except OSError:
        return
    for line in raw.splitlines():
        try:
            text = line.decode("utf-8").strip()
        except UnicodeDecodeError:
            continue
        if text and "\x00" not in text:
            yield Path(text)


# -- the shape of a summary --------------------------------------------------------------------------

_OPTIONAL_STR = (str, type(None))
_NUMBER = (int, float, type(None))
_SUMMARY_FIELDS: dict[str, tuple[type, ...]] = {
    "recipe": _OPTIONAL_STR, "source": _OPTIONAL_STR, "run_dir": _OPTIONAL_STR, "outcome": _OPTIONAL_STR,
    "todo": _OPTIONAL_STR, "stop_reason": _OPTIONAL_STR, "started": _OPTIONAL_STR, "finished": _OPTIONAL_STR,
    "exit_code": (int, type(None)), "duration_s": _NUMBER, "arch": (list,), "preflight": (list, type(None)),
    "attempts": (list,),
}
_ATTEMPT_FIELDS: dict[str, tuple[type, ...]] = {
    "number": (int,), "started": _OPTIONAL_STR, "duration_s": _NUMBER, "ended": _OPTIONAL_STR,
    "exit_code": (int, type(None)), "log": _OPTIONAL_STR, "env": (dict, type(None)),
    "diagnosis": (dict, type(None)), "remedies": (list, type(None)),
}
_DIAGNOSIS_FIELDS: dict[str, tuple[type, ...]] = {
    "category": _OPTIONAL_STR, "signature": _OPTIONAL_STR, "line": (int, type(None)), "text": _OPTIONAL_STR,
    "fields": (dict, type(None)),
}


def _wrong_field(data: Mapping[str, JSONValue], fields: Mapping[str, tuple[type, ...]], where: str) -> str | None:
    for name, types in fields.items():
        value = data.get(name)
        if name in data and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
            return f"{where}{name} is a {type(value).__name__}"
    return None


def summary_problem(data: JSONValue) -> str | None:
    """Why ``data`` is not a summary the readers can use (wrong-typed fields), or None."""
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    attempts = data.get("attempts")
    if not isinstance(attempts, list):
        return "it has no list of attempts"
    problem = _wrong_field(data, _SUMMARY_FIELDS, "")
    if problem:
        return problem
    if not all(isinstance(a, str) for a in as_list(data.get("arch"))):
        return "arch holds a non-string"
    for index, attempt in enumerate(attempts, 1):
        if not isinstance(attempt, dict):
            return f"attempt {index} is a {type(attempt).__name__}"
        problem = _wrong_field(attempt, _ATTEMPT_FIELDS, f"attempt {index}'s ")
        diagnosis = attempt.get("diagnosis")
        if problem is None and isinstance(diagnosis, dict):
            problem = _wrong_field(diagnosis, _DIAGNOSIS_FIELDS, f"attempt {index}'s diagnosis ")
        if problem:
            return problem
        if not all(isinstance(r, str) for r in as_list(attempt.get("remedies"))):
            return f"attempt {index}'s remedies hold a non-string"
        if not all(isinstance(v, str) for v in as_object(attempt.get("env")).values()):
            return f"attempt {index}'s env holds a non-string"
    return None


def read_summary(run_dir: Path) -> JSONObject:
    """A run's summary.json, checked for the shape the readers use, or ``CorruptRecord``."""
    path = run_dir / "summary.json"
    data = read_json(path)
    problem = summary_problem(data)
    if problem or not isinstance(data, dict):
        raise CorruptRecord(path, f"not a rocmbuild summary: {problem}")
    return data


# -- what a renderer takes from a value it shows (anything else counts as absent) ----------------------

def as_list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def as_object(value: object) -> Mapping[str, object]:
    return value if isinstance(value, dict) else {}


def as_objects(value: object) -> list[Mapping[str, object]]:
    """The objects of a list (an entry of another kind is passed over)."""
    return [item for item in as_list(value) if isinstance(item, dict)]


def as_strs(value: object) -> list[str]:
    """The strings of a list (an entry of another kind is passed over)."""
    return [item for item in as_list(value) if isinstance(item, str)]


def as_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


# -- narrowing a parsed value to what a reader uses (``ShapeError`` naming ``where`` otherwise) ----------

def opt_str(value: JSONValue, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ShapeError(f"{where} is a {type(value).__name__}")


def opt_int(value: JSONValue, where: str) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ShapeError(f"{where} is a {type(value).__name__}")


def opt_number(value: JSONValue, where: str) -> float | None:
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    raise ShapeError(f"{where} is a {type(value).__name__}")


def opt_bool(value: JSONValue, where: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise ShapeError(f"{where} is a {type(value).__name__}")


def opt_object(value: JSONValue, where: str) -> JSONObject | None:
    if value is None or isinstance(value, dict):
        return value
    raise ShapeError(f"{where} is a {type(value).__name__}")


def str_list(value: JSONValue, where: str) -> list[str]:
    """A list of strings (null: none)."""
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v for v in value if isinstance(v, str)]
    raise ShapeError(f"{where} is not a list of strings")


def str_map(value: JSONValue, where: str) -> dict[str, str]:
    """An object of strings (null: empty)."""
    found = opt_object(value, where) or {}
    if all(isinstance(v, str) for v in found.values()):
        return {k: v for k, v in found.items() if isinstance(v, str)}
    raise ShapeError(f"{where} holds a non-string")
