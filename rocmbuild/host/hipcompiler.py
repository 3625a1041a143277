"""The build's HIP compiler: which program compiles device code, and why that one.

The compiler is not always hipcc's clang (docs/rocm-facts.md, "gfx942 for real on Debian
12"): CMake HIP-language builds (vLLM, bitsandbytes) compile with ``HIPCXX``,
CMake's own variable, which may name a newer clang than hipcc's.  Preflight's
probe compile, the arch check and its advice, ``doctor``, the LLVM tools that
read code objects and the compiler cache all ask this module, so they judge
the compiler the build will really use.

Order: ``--hip-compiler PATH`` (also ``ROCMBUILD_HIP_COMPILER``), then the
caller's ``$HIPCXX``, then hipcc (whose clang is the ROCm install's).
``HIP_DEVICE_LIB_PATH`` (where clang looks for the device-library bitcode) is
honoured as the caller set it and shown.  Unset, with a clang compiler on
Debian's system layout, it defaults to the directory ``make toolchain`` builds
(Debian's bitcode plus gfx942's ISA file): that clang finds no device library
there otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rocmbuild import paths
from rocmbuild.errors import UsageError

# LLVM 16 is the first upstream clang that knows gfx942 (docs/rocm-facts.md, Architectures).
MIN_LLVM_FOR_GFX942 = 16


@dataclass(frozen=True)
class HipCompiler:
    """The program that compiles the build's device code."""

    path: str                 # absolute path of the compiler (or hipcc)
    kind: str                 # "clang": driven directly (HIPCXX); "hipcc": the hipcc wrapper
    origin: str               # "--hip-compiler", "$HIPCXX", "hipcc (ROCm install)"
    llvm_bin: str | None      # the LLVM bin dir its tools (objdump, offload bundler) come from

    @property
    def is_clang(self) -> bool:
        return self.kind == "clang"

    def describe(self) -> str:
        return f"{self.path} ({self.origin})"

    def to_json(self) -> dict[str, str | None]:
        return {"path": self.path, "kind": self.kind, "origin": self.origin, "llvm_bin": self.llvm_bin}


def _executable(value: str, environ: Mapping[str, str]) -> str | None:
    """An absolute path for a compiler named by path or by name on PATH."""
    if os.sep in value:
        path = Path(value).expanduser()
        return str(path.absolute()) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(value, path=environ.get("PATH"))


def llvm_bin_of(compiler: str) -> str | None:
    """The LLVM bin dir a clang comes from: /usr/bin/clang++-19 -> /usr/lib/llvm-19/bin (symlinks followed)."""
    real = Path(os.path.realpath(compiler)).parent
    return str(real) if any((real / tool).exists() for tool in ("clang", "llvm-objdump")) else None


def resolve(option: str | None, environ: Mapping[str, str], hipcc: str | None) -> HipCompiler | None:
    """The build's HIP compiler; None when there is neither HIPCXX nor hipcc.

    Raises UsageError (exit 2) for a ``--hip-compiler`` or ``$HIPCXX`` that names no program:
    the build would fail on its first compile, hours of queueing later.
    """
    for value, origin, fix in ((option, "--hip-compiler", "pass --hip-compiler with an existing compiler"),
                               (environ.get("HIPCXX"), "$HIPCXX", "fix or unset HIPCXX")):
        if value is None or not value.strip():
            continue
        found = _executable(value.strip(), environ)
        if found is None:
            raise UsageError(
                f"{origin} {value} is not an executable program",
                why="the HIP compiler compiles every device file of the build (CMake reads it as HIPCXX)",
                todo=f"{fix}, e.g. /usr/bin/clang++-19 (apt-get install clang-19 lld-19)"
                     + (f"; newer clangs on this machine: {', '.join(found_clangs)}"
                        if (found_clangs := newer_clangs(environ)) else ""),
            )
        kind = "hipcc" if Path(found).name.startswith("hipcc") else "clang"
        return HipCompiler(found, kind, origin, llvm_bin_of(found))
    if hipcc:
        return HipCompiler(hipcc, "hipcc", "hipcc of the ROCm install (no $HIPCXX, no --hip-compiler)", None)
    return None


def newer_clangs(environ: Mapping[str, str], minimum: int = MIN_LLVM_FOR_GFX942) -> list[str]:
    """``clang++-N`` programs on PATH with N >= minimum, newest first (for advice only)."""
    found: dict[int, str] = {}
    for directory in (environ.get("PATH") or "").split(os.pathsep):
        if not directory or not os.path.isdir(directory):
            continue
        for entry in os.listdir(directory):
            m = re.fullmatch(r"clang\+\+-(\d+)", entry)
            if m and int(m.group(1)) >= minimum:
                found.setdefault(int(m.group(1)), os.path.join(directory, entry))
    return [found[v] for v in sorted(found, reverse=True)]


def device_lib_path(environ: Mapping[str, str]) -> str | None:
    """``HIP_DEVICE_LIB_PATH`` as the caller set it (clang reads it; rocmbuild only shows it)."""
    value = (environ.get("HIP_DEVICE_LIB_PATH") or "").strip()
    return value or None


def built_device_libs(llvm_bin: str | None = None) -> Path | None:
    """The device-library dir ``make toolchain`` builds (Debian's bitcode plus gfx942's ISA
    version file) under the user cache dir, when it exists: offered in advice, never used
    unasked."""
    root = paths.cache_dir("device-libs")
    if llvm_bin:
        m = re.search(r"llvm-(\d+)", llvm_bin)
        if m and (root / f"llvm-{m.group(1)}").is_dir():
            return root / f"llvm-{m.group(1)}"
    dirs = sorted(root.glob("llvm-*")) if root.is_dir() else []
    return dirs[-1] if dirs else None


def default_device_libs(compiler: HipCompiler | None, rocm_layout: str | None,
                        environ: Mapping[str, str]) -> Path | None:
    """The device-lib dir to use when the caller set none: only for a clang HIP compiler on
    Debian's system layout (a real ROCm's clang finds ROCm's own bitcode, which must win)."""
    if compiler is None or not compiler.is_clang or rocm_layout != "system" or device_lib_path(environ):
        return None
    return built_device_libs(compiler.llvm_bin)
