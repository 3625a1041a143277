"""``rocmbuild diagnose``: the diagnosis of saved logs, as text or contract JSON.

Logs are streamed (``-`` is stdin), so a 1 GB log costs bounded memory.
Exit 0 when every log was recognised, 1 when one was not, 2 on usage errors.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from rocmbuild.diagnosis.advice import next_steps
from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.diagnosis.classifier import Diagnosis, classify_stream
from rocmbuild.errors import ExitCode, UsageError


def _open_checked(name: str) -> Path:
    path = Path(name)
    if not path.exists():
        raise UsageError(f"log {name} does not exist", todo="pass the path of a saved build log, or - for stdin")
    if path.is_dir():
        raise UsageError(f"{name} is a directory, not a log",
                         todo=f"pass a file, e.g. {name}/attempt-1.log")
    return path


def render_diagnosis(name: str, diagnosis: Diagnosis, explain: bool) -> str:
    lines = [f"{name}: {diagnosis.category}"]
    if diagnosis.category != "unknown":
        lines[0] += f" ({diagnosis.signature}; confidence {diagnosis.confidence})"
        lines.append(f"  decisive line {diagnosis.line}: {diagnosis.text}")
        if diagnosis.fields:
            lines.append("  fields: " + ", ".join(f"{k}={v}" for k, v in diagnosis.fields.items()))
        if diagnosis.description:
            lines.append(f"  meaning: {diagnosis.description}")
        lines.append(f"  retryable: {'yes' if diagnosis.retryable else 'no'}; "
                     f"remedies: {' -> '.join(diagnosis.remedies) or 'none'}")
    elif diagnosis.signature:
        # known by its wording, but the cause is the project's own: no category, nothing to retry
        lines[0] += f" ({diagnosis.signature}; confidence {diagnosis.confidence}; the project's own bug, no remedy)"
        lines.append(f"  decisive line {diagnosis.line}: {diagnosis.text}")
        if diagnosis.description:
            lines.append(f"  meaning: {diagnosis.description}")
    elif diagnosis.candidates:
        lines.append(f"  {diagnosis.description}; the readings and the lines they rest on:")
        lines.extend(f"    - {c.category} ({c.signature}) line {c.line}: {c.text}" for c in diagnosis.candidates)
    elif diagnosis.line is not None:
        lines.append(f"  first error-looking line {diagnosis.line} (no catalogued failure matched): {diagnosis.text}")
    if diagnosis.context:
        lines.append("  context:")
        lines.extend(f"    | {line}" for line in diagnosis.context)
    # A saved log is one failure, not a run whose ladder was climbed: advise on this failure alone
    # (the signature's own advice, else its category's), never "even after lowering -O / jobs".
    lines.append("  what to do: " + (diagnosis.advice or next_steps(diagnosis.summary_json())))
    if explain:
        lines.append("  runners-up:" if diagnosis.runners_up else "  runners-up: none")
        lines.extend(f"    - {runner_up}" for runner_up in diagnosis.runners_up)
    return "\n".join(lines)


def diagnose_logs(logs: Sequence[str], *, as_json: bool, explain: bool, out: TextIO) -> int:
    paths = [None if name == "-" else _open_checked(name) for name in logs]
    catalogue = load_catalogue()
    recognised = True
    for name, path in zip(logs, paths, strict=True):
        if path is None:
            diagnosis = classify_stream(sys.stdin.buffer, catalogue)
        else:
            with path.open("rb") as handle:
                diagnosis = classify_stream(handle, catalogue)
        recognised = recognised and diagnosis.category != "unknown"
        if as_json:
            data = {"log": name, **(diagnosis.explain_json() if explain else diagnosis.to_json())}
            out.write(json.dumps(data) + "\n")
        else:
            out.write(render_diagnosis(name, diagnosis, explain) + "\n")
    return ExitCode.SUCCEEDED if recognised else 1
