"""What rocmbuild knows about ROCm libraries: their link names and the packages that provide them.

Used by preflight (a library the recipe names is missing) and by the
add_library_paths remedy (a library it could not find anywhere).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Library -> packages that usually provide the unversioned (link-time) .so.
_LIBRARY_PACKAGES: dict[str, str] = {
    "amdhip64": "libamdhip64-dev (Debian/Ubuntu) or hip-runtime-amd (ROCm repo)",
    "hsa-runtime64": "libhsa-runtime-dev (Debian/Ubuntu) or hsa-rocr-dev (ROCm repo)",
    "amd_comgr": "libamd-comgr-dev (Debian/Ubuntu) or comgr (ROCm repo)",
    "rocblas": "librocblas-dev (Debian/Ubuntu) or rocblas-dev (ROCm repo)",
    "hipblas": "libhipblas-dev (Debian/Ubuntu) or hipblas-dev (ROCm repo)",
    "hipblaslt": "hipblaslt-dev (ROCm repo)",
    "MIOpen": "miopen-hip-dev (ROCm repo)",
    "rccl": "librccl-dev (Debian/Ubuntu) or rccl-dev (ROCm repo)",
    "hipfft": "libhipfft-dev (Debian/Ubuntu) or hipfft-dev (ROCm repo)",
    "rocfft": "librocfft-dev (Debian/Ubuntu) or rocfft-dev (ROCm repo)",
    "hiprand": "libhiprand-dev (Debian/Ubuntu) or hiprand-dev (ROCm repo)",
    "rocrand": "librocrand-dev (Debian/Ubuntu) or rocrand-dev (ROCm repo)",
    "hipsparse": "libhipsparse-dev (Debian/Ubuntu) or hipsparse-dev (ROCm repo)",
    "rocsparse": "librocsparse-dev (Debian/Ubuntu) or rocsparse-dev (ROCm repo)",
    "hipsolver": "libhipsolver-dev (Debian/Ubuntu) or hipsolver-dev (ROCm repo)",
    "rocsolver": "librocsolver-dev (Debian/Ubuntu) or rocsolver-dev (ROCm repo)",
    "roctracer64": "roctracer-dev (ROCm repo)",
    "roctx64": "roctracer-dev (ROCm repo)",
    "hiprtc": "hip-runtime-amd (ROCm >= 7.0 splits hipRTC out of libamdhip64)",
}


def library_base(name: str) -> str:
    """``libhipblas.so.3`` / ``hipblas`` / ``-lhipblas`` -> ``hipblas``."""
    name = name.strip().removeprefix("-l")
    name = re.sub(r"\.so(\.\d+)*$|\.a$", "", name)
    return name.removeprefix("lib")


def library_package_hint(name: str) -> str:
    name = library_base(name)
    known = {key.lower(): value for key, value in _LIBRARY_PACKAGES.items()}
    return known.get(name.lower()) or (
        f"lib{name.lower()}-dev (Debian/Ubuntu) or {name.lower()}-dev (ROCm repo)")


def install_line(names: Sequence[str]) -> str:
    """One install line for every missing library (not one library per rerun).

    ``apt-get install`` of the Debian/Ubuntu packages, then the ROCm repo's names for the same set;
    libraries only the ROCm repo ships are named as such.
    """
    debian: list[str] = []
    rocm: list[str] = []
    rocm_only: list[str] = []
    for name in dict.fromkeys(library_base(n) for n in names):
        hint = library_package_hint(name)
        deb = re.search(r"(\S+) \(Debian/Ubuntu\)", hint)
        repo = re.search(r"(\S+) \(ROCm repo\)", hint) or re.match(r"(\S+)", hint)
        if deb:
            debian.append(deb.group(1))
        elif repo:
            rocm_only.append(repo.group(1))
        if repo:
            rocm.append(repo.group(1))
    parts = []
    if debian:
        parts.append(f"apt-get install {' '.join(debian)}"
                     + (f" (Debian/Ubuntu; {', '.join(rocm_only)} only from the ROCm repo)" if rocm_only else ""))
    parts.append(f"{'or, ' if debian else ''}from the ROCm repo: apt-get install {' '.join(rocm)}")
    return "; ".join(parts)
