"""Provenance of one attempt: tool versions, submodule SHAs, every URL the build downloaded.

Owns ``attempts[].provenance`` in summary.json (additive), so that a report
can say what changed between a build that worked and one that did not: a new
setuptools, another torch, a submodule that moved, a download from another
mirror.  Versions are asked of the tools the build itself runs (its PATH and
interpreter); URLs are parsed from the attempt's log (pip's ``Downloading
https://...``, CMake's ``-- Downloading ...`` / ``Fetching ...``, git clone
and submodule URLs, wget/curl).  Credentials in URLs (``user:pw@``, secret
query parameters) are redacted before anything is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import regex

from rocmbuild.process import command as proc
from rocmbuild.process.logscan import scan_lines, scan_log
from rocmbuild.records.redact import redact_text

MAX_URLS = 500   # a build that downloads more than this is summarised, not listed in full

_URL = regex.compile(r"\b(?:https?|git|ssh|ftp|s3)://[^\s'\"<>()\[\]{}`]+")
# Lines where a URL means "the build fetched this" (not a URL in a warning or a help text).
_FETCH_LINE = regex.compile(
    r"\b(?:Downloading|Fetching|Cloning|git\s+clone|git\s+fetch|registered\s+for\s+path|wget|curl|"
    r"Collecting\s+\S+\s+@|Obtaining|Downloaded)\b", regex.IGNORECASE)


def redact_url(url: str) -> str:
    """``https://user:pw@host/x?token=abc`` -> ``https://<redacted>@host/x?token=<redacted>`` (redact.py's rule)."""
    return redact_text(url)


class _Downloads:
    """A LineHook collecting the URLs of fetch lines: only lines holding ``://`` reach it,
    cleaned by the scanner (the one noise rule: ANSI, \\r redraws, CI prefixes)."""

    keywords: tuple[bytes, ...] = (b"://",)

    def __init__(self) -> None:
        self.found: dict[str, None] = {}

    def on_line(self, number: int, line: str, before: Sequence[str]) -> int:
        if len(self.found) < MAX_URLS and "://" in line and _FETCH_LINE.search(line):
            for match in _URL.finditer(line):
                url = match.group(0).rstrip(".,;:!'\"")
                self.found.setdefault(redact_url(url))
                if len(self.found) >= MAX_URLS:
                    break
        return 0

    def on_context(self, number: int, text: str) -> None:
        """Never asked for: on_line wants no following lines."""


def downloaded_urls(lines: Iterable[str]) -> list[str]:
    """URLs on fetch lines, redacted, each once, in order of first appearance (pure)."""
    downloads = _Downloads()
    scan_lines(lines, downloads)
    return list(downloads.found)


def urls_in_log(log: Path) -> list[str]:
    """downloaded_urls() over an attempt log, through the one line scanner."""
    downloads = _Downloads()
    scan_log(log, downloads)
    return list(downloads.found)


def parse_submodule_status(output: str) -> dict[str, str]:
    """``git submodule status --recursive`` -> {path: sha}; a leading '-' (not initialised) is skipped."""
    found = {}
    for line in output.splitlines():
        match = regex.match(r"^[ +U]?([0-9a-f]{7,64}) (\S+)", line)
        if match:
            found[match[2]] = match[1]
    return found


_PYTHON_VERSIONS = """
import json
from importlib import metadata
out = {}
for name in ("setuptools", "pip", "torch", "wheel", "cmake", "ninja"):
    try:
        out[name] = metadata.version(name)
    except Exception:
        out[name] = None
print(json.dumps(out))
"""


def _first_line(result: proc.CommandResult) -> str | None:
    if result.missing or not result.ok:
        return None
    lines = [line.strip() for line in result.output.splitlines() if line.strip()]
    return lines[0] if lines else None


def _version_lines(result: proc.CommandResult) -> str | None:
    """The lines that say "version" (hipcc prints HIP's and clang's, after whatever its helpers print)."""
    if result.missing:
        return None
    lines = [line.strip() for line in result.output.splitlines() if "version" in line.lower()]
    return "; ".join(lines[:2]) or None


def tool_versions(*, python: str, env: Mapping[str, str], rocm_version: str | None, hip_compiler: str | None,
                  run: proc.Run = proc.capture) -> dict[str, str | None]:
    """The versions of what the build runs, with the build's environment (its PATH, its interpreter)."""
    environ = dict(env)
    versions: dict[str, str | None] = {"rocm": rocm_version}
    versions["hip_compiler"] = _version_lines(run([hip_compiler, "--version"], env=environ)) if hip_compiler else None
    versions["cmake"] = _first_line(run(["cmake", "--version"], env=environ))
    versions["ninja"] = _first_line(run(["ninja", "--version"], env=environ))
    result = run([python, "-c", _PYTHON_VERSIONS], env=environ)
    packages: dict[str, object] = {}
    if result.ok:
        try:
            packages = json.loads(result.output.strip().splitlines()[-1])
        except (ValueError, IndexError):
            packages = {}
    for name in ("setuptools", "pip", "torch"):
        value = packages.get(name)
        versions[name] = str(value) if value else None
    return versions


def git_state(source: Path, env: Mapping[str, str], run: proc.Run = proc.capture) -> dict[str, object]:
    """The source tree's commit and its submodules' SHAs (empty outside a git tree)."""
    if not (source / ".git").exists():
        return {}
    head = _first_line(run(["git", "rev-parse", "HEAD"], env=dict(env), cwd=source))
    status = run(["git", "submodule", "status", "--recursive"], env=dict(env), cwd=source)
    subs = parse_submodule_status(status.output) if status.ok else {}
    return {"commit": head, "submodules": subs}


@dataclass(frozen=True, kw_only=True)
class Tools:
    """The tools an attempt ran with, whose versions its provenance records."""

    python: str
    rocm_version: str | None
    hip_compiler: str | None


def collect(*, source: Path, log: Path, env: Mapping[str, str], tools: Tools,
            run: proc.Run = proc.capture) -> dict[str, object]:
    """``attempts[].provenance``: {"tools": {...}, "commit", "submodules": {...}, "downloads": [...]}."""
    state = git_state(source, env, run)
    return {
        "tools": tool_versions(python=tools.python, env=env, rocm_version=tools.rocm_version,
                               hip_compiler=tools.hip_compiler, run=run),
        "commit": state.get("commit"),
        "submodules": state.get("submodules", {}),
        "downloads": urls_in_log(log),
    }
