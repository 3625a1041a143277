"""What a source tree itself declares it needs to build: its build requirements and its torch pin.

Read from the tree's own files, never guessed: pyproject.toml's ``[build-system] requires``,
vLLM's ``requirements/build.txt`` and ``requirements/rocm-build.txt`` (newer trees:
``requirements/build/rocm.txt``), PyTorch's ``requirements.txt``; one level of ``-r`` includes is
followed.  Used for the torch advice (the version and wheel index the source pins) and by the
``install_build_requirements`` remedy (a ``No module named X`` where X is declared).
Pure functions over the files; a file that cannot be read declares nothing.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

# Requirement files that declare build requirements, in the order their pins win.
BUILD_FILES = ("requirements/build/rocm.txt", "requirements/rocm-build.txt", "requirements/build.txt",
               "requirements.txt")
ROCM_FILES = ("requirements/build/rocm.txt", "requirements/rocm-build.txt")

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_INDEX = re.compile(r"^\s*--(?:extra-)?index-url[\s=]+(\S+)")
_INCLUDE = re.compile(r"^\s*-r\s+(\S+)")
_TORCH_PIN = re.compile(r"^\s*torch\s*==\s*([\w.+]+)")


@dataclass(frozen=True)
class Declared:
    """The build requirements a tree declares: requirement lines and where each file is."""

    files: tuple[str, ...]          # relative paths that declared something (pyproject.toml first)
    requirements: tuple[str, ...]   # requirement specifiers, as written (markers dropped)
    index_urls: tuple[str, ...] = ()

    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for r in self.requirements if (n := requirement_name(r))))


@dataclass(frozen=True)
class TorchPin:
    """The torch a source pins for ROCm: ``torch==2.8.0`` from ``.../whl/rocm6.3`` (requirements/rocm-build.txt)."""

    version: str | None
    index: str | None
    file: str

    @property
    def rocm(self) -> str | None:
        """``6.3`` from the index URL (``.../whl/rocm6.3``), None when it names no ROCm."""
        match = re.search(r"/rocm(\d+(?:\.\d+)*)/?$", self.index or "")
        return match.group(1) if match else None


def normalize(name: str) -> str:
    """PEP 503 name, with ``_`` for every separator (``setuptools-scm`` -> ``setuptools_scm``). Pure."""
    return re.sub(r"[-_.]+", "_", name).lower()


def requirement_name(line: str) -> str | None:
    line = line.split("#", 1)[0].strip()
    if not line or line.startswith("-"):
        return None
    match = _NAME.match(line)
    return match.group(1) if match else None


def _lines(path: Path, depth: int = 0) -> tuple[list[str], list[str]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return [], []
    requirements: list[str] = []
    indexes: list[str] = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if (index := _INDEX.match(line)) is not None:
            indexes.append(index.group(1))
        elif (include := _INCLUDE.match(line)) is not None:
            if depth == 0:
                more, more_indexes = _lines(path.parent / include.group(1), depth + 1)
                requirements += more
                indexes += more_indexes
        elif not line.startswith("-"):
            requirements.append(line.split(";", 1)[0].strip())
    return requirements, indexes


def _pyproject(source: Path) -> list[str]:
    try:
        data = tomllib.loads((source / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    requires = data.get("build-system", {}).get("requires", [])
    return [str(r).split(";", 1)[0].strip() for r in requires if isinstance(r, str)]


def declared(source: Path) -> Declared:
    """Every build requirement ``source`` declares (see the module docstring for where)."""
    files: list[str] = []
    requirements: list[str] = []
    indexes: list[str] = []
    if pyproject := _pyproject(source):
        files.append("pyproject.toml")
        requirements += pyproject
    for name in BUILD_FILES:
        found, found_indexes = _lines(source / name)
        if found or found_indexes:
            files.append(name)
            requirements += found
            indexes += found_indexes
    return Declared(tuple(files), tuple(dict.fromkeys(requirements)), tuple(dict.fromkeys(indexes)))


def torch_pin(source: Path | None) -> TorchPin | None:
    """The torch version and wheel index the source's ROCm requirement file pins, or None."""
    if source is None:
        return None
    for name in ROCM_FILES:
        requirements, indexes = _lines(source / name)
        version = next((m.group(1) for r in requirements if (m := _TORCH_PIN.match(r))), None)
        index = next((u for u in indexes if "rocm" in u), None)
        if version or index:
            return TorchPin(version, index, name)
    return None


# Import names that are not their distribution's name.
_MODULE_DISTS = {"yaml": "pyyaml", "cv2": "opencv_python", "pil": "pillow", "sklearn": "scikit_learn",
                 "google": "protobuf", "dateutil": "python_dateutil", "git": "gitpython"}


def declaring(source: Path, module: str) -> tuple[str, str] | None:
    """(requirement, file) for the declared build requirement that provides ``module``
    (``setuptools_scm.version`` -> ``("setuptools-scm>=8.0", "pyproject.toml")``), or None."""
    top = normalize(module.split(".")[0])
    wanted = {top, normalize(_MODULE_DISTS.get(top, top))}
    found: list[tuple[str, list[str]]] = [("pyproject.toml", _pyproject(source))]
    found += [(name, _lines(source / name)[0]) for name in BUILD_FILES]
    for file, requirements in found:
        for requirement in requirements:
            name = requirement_name(requirement)
            if name and normalize(name) in wanted:
                return requirement, file
    return None


def declares_module(source: Path, module: str) -> str | None:
    """The declared requirement that provides ``module``, or None when the source does not declare it."""
    found = declaring(source, module)
    return found[0] if found else None
