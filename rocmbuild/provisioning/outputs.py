"""A build's outputs as the last success left them, checked the way ninja checks its outputs.

Owns: listing the outputs (the recipe's declared artifacts; otherwise its clean paths) with each
file's size and mtime, and the pure comparison that says whether they are still what the last
success left (a file gone, added, rewritten or touched is a difference).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocmbuild.provisioning.treehash import clean_matches

_MAX_FILES = 500_000  # a listing stops here (and then never matches): the check stays bounded


@dataclass(frozen=True)
class Outputs:
    """Which globs named the outputs (``kind``: "artifacts", "clean paths" or "none") and each file found."""

    kind: str
    files: Mapping[str, tuple[int, int]]  # rel -> (size, mtime_ns); a symlink: (-1, 0) + its target in links
    links: Mapping[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "files": {k: list(v) for k, v in self.files.items()}, "links": dict(self.links)}

    @classmethod
    def from_json(cls, data: object) -> Outputs | None:
        if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
            return None
        try:
            files = {str(k): (int(v[0]), int(v[1])) for k, v in data["files"].items()}
            links = {str(k): str(v) for k, v in (data.get("links") or {}).items()}
        except (TypeError, ValueError, IndexError, AttributeError):
            return None
        return cls(str(data.get("kind", "")), files, links)


def patterns_for(artifacts: Sequence[str], clean_paths: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """What counts as the build's outputs: declared artifacts, else the clean paths. Pure."""
    if artifacts:
        return "artifacts", tuple(artifacts)
    if clean_paths:
        return "clean paths", tuple(clean_paths)
    return "none", ()


def collect(source: Path, artifacts: Sequence[str], clean_paths: Sequence[str]) -> Outputs:
    """The output files on disk now, each with its size and mtime (links not followed: a clean path
    may point outside the tree, and the link itself is what the build left)."""
    kind, patterns = patterns_for(artifacts, clean_paths)
    files: dict[str, tuple[int, int]] = {}
    links: dict[str, str] = {}
    pending = sorted(clean_matches(source, patterns), reverse=True)
    while pending and len(files) < _MAX_FILES:
        rel = pending.pop()
        path = source / rel
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            files[rel] = (-1, 0)
            links[rel] = os.readlink(path)
        elif stat.S_ISDIR(st.st_mode):
            try:
                pending += sorted((f"{rel}/{name}" for name in os.listdir(path)), reverse=True)
            except OSError:
                files[rel] = (-2, 0)
        else:
            files[rel] = (st.st_size, st.st_mtime_ns)
    return Outputs(kind, files, links)


def differences(recorded: Outputs, now: Outputs) -> str | None:
    """None when the outputs are what was recorded, else a short account of the first differences. Pure."""
    if recorded.kind != now.kind:
        return f"the outputs were {recorded.kind} and are now {now.kind}"
    gone = [r for r in recorded.files if r not in now.files]
    new = [r for r in now.files if r not in recorded.files]
    changed = [r for r in recorded.files if r in now.files and (recorded.files[r] != now.files[r]
                                                              or recorded.links.get(r) != now.links.get(r))]
    if not (gone or new or changed):
        return None
    said = []
    for label, names in (("missing", gone), ("changed", changed), ("new", new)):
        if names:
            more = f" (+{len(names) - 3} more)" if len(names) > 3 else ""
            said.append(f"{label}: {', '.join(sorted(names)[:3])}{more}")
    return "; ".join(said)
