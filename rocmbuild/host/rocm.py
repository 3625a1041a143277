"""The ROCm install as one frozen value: what discovery found and everything downstream reads.

``host.facts`` discovers it (``discover_rocm``/``inspect_root``); the plan carries it
(``BuildPlan.rocm``); the environment (ROCM_PATH, PATH, LIBRARY_PATH), preflight and
doctor (``check_rocm_root``, library checks, hipcc), fingerprints and records all read
this same value.  No I/O here: the value only holds what discovery measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Rocm:
    """A ROCm installation and how it was found.  Paths are the real ones (a fake tree's in tests)."""

    root: Path
    version: str | None = None
    version_source: str = "unknown"    # ".info/version", "rocm_version.h", "hip_version.h (HIP version)", ...
    origin: str = ""                   # "--rocm-path", "$ROCM_PATH", "/opt/rocm -> /opt/rocm-6.2.4", ...
    layout: str = "custom"             # "opt" | "core" | "system" | "pip" | "custom"
    bin_dirs: tuple[Path, ...] = ()
    lib_dirs: tuple[Path, ...] = ()
    llvm_bin: Path | None = None       # the LLVM whose tools go on PATH (for the system layout: hipcc's own)
    hipcc: Path | None = None
    device_lib_dir: Path | None = None  # amdgcn/bitcode, where hipcc looks for it

    @property
    def version_tuple(self) -> tuple[int, ...] | None:
        """(6, 2, 4) for comparisons; None when the version is unknown."""
        if not self.version:
            return None
        return tuple(int(part) for part in re.findall(r"\d+", self.version))
