"""``rocmbuild inspect PATH...``: which gfx targets every code object in a wheel, directory or .so carries.

Owns finding the binaries (a .so/ELF file, every ELF under a directory, every
ELF member of a wheel, extracted to a private temporary directory) and
rendering what ``artifacts.list_code_objects`` reports for each, as text or
JSON.  The question users keep asking (uv#14086, pytorch#168984): "which
GPUs does this wheel actually support?".  Bad input (missing path, a file that
is neither a wheel nor an ELF, a broken wheel) is a UsageError (exit 2).
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from rocmbuild.errors import UsageError
from rocmbuild.verification.artifacts import CodeObjectListing, list_code_objects

ELF_MAGIC = b"\x7fELF"


@dataclass(frozen=True)
class Inspected:
    """One binary: where it is (``wheel!member`` inside a wheel) and its code objects."""

    name: str
    listing: CodeObjectListing

    def to_json(self) -> dict[str, object]:
        return {"path": self.name, "archs": list(self.listing.archs), "entries": list(self.listing.entries),
                "bundles": len(self.listing.bundles), "partial": list(self.listing.partial),
                "tool": self.listing.tool, "readable": self.listing.readable, "note": self.listing.note}


def _is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(4) == ELF_MAGIC
    except OSError:
        return False


def _elves(directory: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(directory, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in (".git", "__pycache__"))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if not path.is_symlink() and _is_elf(path):
                yield path


def _wheel(path: Path) -> list[Inspected]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise UsageError(f"{path} is not a readable wheel: {exc}",
                         todo="pass a .whl file, a directory or a shared library") from None
    found = []
    with archive, tempfile.TemporaryDirectory(prefix="rocmbuild-inspect-") as tmp:
        for index, info in enumerate(archive.infolist()):
            if info.is_dir():
                continue
            with archive.open(info) as member:
                if member.read(4) != ELF_MAGIC:
                    continue
            # Extract under a numbered name: member names come from the wheel and are not trusted as paths.
            target = Path(tmp) / f"{index}.so"
            with archive.open(info) as member, target.open("wb") as out:
                while chunk := member.read(1 << 20):
                    out.write(chunk)
            found.append(Inspected(f"{path}!{info.filename}", list_code_objects(target)))
    return found


def inspect_paths(paths: Sequence[str]) -> list[Inspected]:
    """Every binary under ``paths``, with its code objects; UsageError on a path that cannot be inspected."""
    results: list[Inspected] = []
    for text in paths:
        path = Path(text)
        if not path.exists():
            raise UsageError(f"{path} does not exist", todo="pass a wheel, a directory or a shared library")
        if path.is_dir():
            results += [Inspected(str(p), list_code_objects(p)) for p in _elves(path)]
        elif zipfile.is_zipfile(path):
            results += _wheel(path)
        elif _is_elf(path):
            results.append(Inspected(str(path), list_code_objects(path)))
        else:
            raise UsageError(f"{path} is neither a wheel nor an ELF binary (.so)",
                             why="only wheels, directories and shared libraries/executables hold code objects",
                             todo="pass a .whl file, a directory or a .so")
    return results


def render(results: Sequence[Inspected]) -> str:
    if not results:
        return "no ELF binaries found"
    lines = []
    for item in results:
        listing = item.listing
        if not listing.readable:
            lines.append(f"{item.name}: not listed ({listing.note})")
        elif not listing.archs:
            lines.append(f"{item.name}: no GPU code objects" + (f" ({listing.note})" if listing.note else ""))
        else:
            bundles = f", {len(listing.bundles)} bundles" if len(listing.bundles) > 1 else ""
            partial = f"; only in some bundles: {', '.join(listing.partial)}" if listing.partial else ""
            lines.append(f"{item.name}: {', '.join(listing.archs)} ({Path(listing.tool).name}{bundles}){partial}")
            targets = sorted({e.split("--", 1)[-1] if "--" in e else e for e in listing.entries if "amdgcn" in e})
            if targets:
                lines.append(f"    targets: {', '.join(targets)}")
    return "\n".join(lines)


def run_inspect(paths: Sequence[str], *, as_json: bool, out: IO[str]) -> int:
    results = inspect_paths(paths)
    if as_json:
        out.write(json.dumps({"binaries": [r.to_json() for r in results],
                              "archs": sorted({a for r in results for a in r.listing.archs})}) + "\n")
    else:
        out.write(render(results) + "\n")
    return 0
