"""What rocmbuild knows about ROCm libraries: their link names and the packages that provide them.

Used by preflight (a library the recipe names is missing) and by the
add_library_paths remedy (a library it could not find anywhere).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rocmbuild.host import aptcheck

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


# Sonames whose major number moves with the ROCm release (the library's major bump came with it):
# libamdhip64 / libhiprtc carry ROCm's own major (.so.5 = ROCm 5.x, .so.6 = 6.x, .so.7 = 7.x);
# rocBLAS 4 and hipBLAS 2 came with ROCm 6.0, rocBLAS 5 and hipBLAS 3 with ROCm 7.0.
_SONAME_RELEASES: dict[str, dict[str, str]] = {
    "amdhip64": {"4": "4", "5": "5", "6": "6", "7": "7"},
    "hiprtc": {"5": "5", "6": "6", "7": "7"},
    "rocblas": {"4": "6", "5": "7"},
    "hipblas": {"2": "6", "3": "7"},
}
_SONAME = re.compile(r"(?:^|/)lib(?P<base>[\w+-]+?)\.so\.(?P<major>\d+)\b")
# A file named for the ROCm release it was built for: bitsandbytes' libbitsandbytes_rocm63.so, rocm6.2 wheels.
_TAGGED = re.compile(r"(?i)(?:_|\+|\b)(?:rocm|hip)(?P<major>[1-9])\.?(?P<minor>\d)(?!\d)")


def rocm_release_of(library: str) -> str | None:
    """The ROCm release a library's file name implies ("6", "6.3"), or None when the name does not say.

    ``libamdhip64.so.5`` -> "5"; ``librocblas.so.4`` -> "6"; ``libbitsandbytes_rocm63.so`` -> "6.3".
    """
    soname = _SONAME.search(library)
    if soname:
        release = _SONAME_RELEASES.get(soname["base"], {}).get(soname["major"])
        if release:
            return release
    tagged = _TAGGED.search(library.rsplit("/", 1)[-1])
    return f"{tagged['major']}.{tagged['minor']}" if tagged else None


def same_release(named: str, installed: str) -> bool:
    """Does ``installed`` ("6.4.1") belong to the release ``named`` ("6" or "6.4")?"""
    want = named.split(".")
    return installed.split(".")[:len(want)] == want


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
    # Only what this host's package sources can install (when that was looked up): a Debian
    # release without ROCm's math libraries must not be told to apt-get them.
    absent = [p for p in debian if aptcheck.known(p) is False]
    debian = [p for p in debian if p not in absent]
    parts = []
    if debian:
        parts.append(f"apt-get install {' '.join(debian)}"
                     + (f" (Debian/Ubuntu; {', '.join(rocm_only)} only from the ROCm repo)" if rocm_only else ""))
    if absent:
        parts.append(f"{'and ' if debian else ''}this host's package sources have no {', '.join(absent)}: these "
                     f"libraries come with ROCm from {aptcheck.ROCM_SOURCE}; after adding it: "
                     f"apt-get install {' '.join(rocm)}")
        return "; ".join(parts)
    parts.append(f"{'or, ' if debian else ''}from the ROCm repo: apt-get install {' '.join(rocm)}")
    return "; ".join(parts)


def debian_packages(names: Sequence[str]) -> list[str]:
    """The Debian/Ubuntu package names the hints give for these libraries (to look up with apt)."""
    found = []
    for name in names:
        deb = re.search(r"(\S+) \(Debian/Ubuntu\)", library_package_hint(name))
        if deb:
            found.append(deb.group(1))
    return found
