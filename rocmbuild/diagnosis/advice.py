"""What a person should do about a diagnosis: its signature's own advice, else its category's.

Owns the per-category advice text and the one function that fills an advice template from a
diagnosis's fields (``fill_advice``, also the classifier's).
Used by the end-of-build report, ``report``, ``diagnose`` and summary.json's ``todo`` (nextstep.py).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.errors import CatalogueError
from rocmbuild.host.libraries import library_base, library_package_hint, same_release

# What a person should do when the ladder could not fix it, by category.
NEXT_STEPS: dict[str, str] = {
    "missing_library": (
        "The linker cannot find lib{library}. Install its development package ({package}), or put the "
        "directory holding lib{library}.so on LIBRARY_PATH (LD_LIBRARY_PATH does not help the linker)."
    ),
    "missing_runtime_library": (
        "{library} cannot be loaded. Add its directory to LD_LIBRARY_PATH or /etc/ld.so.conf.d/rocm.conf "
        "(then run ldconfig). If the soname is older than your ROCm's (e.g. .so.6 on ROCm 7), rebuild the "
        "binary against the installed ROCm."
    ),
    "arch_mismatch": (
        "The binary has no code object for {arch}. Build for the GPU you run on (--arch), clean the build "
        "directory so stale objects go, and check PYTORCH_ROCM_ARCH/GPU_ARCHS in your environment."
    ),
    "unsupported_arch": (
        "The compiler does not know {arch}. Install a ROCm release that supports it (gfx942 needs ROCm 6.0 "
        "or newer, gfx950 ROCm 7.0) and point --rocm-path at it, or build for another target."
    ),
    "compiler_crash": (
        "The compiler crashed even after lowering optimisation and jobs. Report it upstream with the "
        "preprocessed source named in the crash text; meanwhile try CMAKE_BUILD_TYPE=Release (no -g) or "
        "another ROCm version."
    ),
    "out_of_memory": (
        "Compile jobs ran out of memory even at a low MAX_JOBS. Add swap or memory, close other work, or "
        "pass --jobs 1; single links (rccl, hipBLASLt) may need > 16 GB on their own."
    ),
    "stale_build": (
        "The build directory belongs to another configuration. Remove it (the recipe's clean paths) or run "
        "`git clean -xdf` in the tree (destructive: commits are kept, untracked files go)."
    ),
    "abi_mismatch": (
        "An extension was built against another torch or libstdc++. Rebuild it against the installed torch "
        "(uninstall the old wheel first) and keep torch and its extensions from the same build."
    ),
    "toolchain_missing": (
        "A ROCm tool is missing or the CUDA toolchain was picked. Install ROCm (hipcc, hip-dev), set "
        "ROCM_PATH / --rocm-path, set HIP_PLATFORM=amd, and make sure torch is a ROCm build."
    ),
    "missing_python_dependency": (
        "Python module '{module}' is missing in the build's interpreter. Install the build requirements "
        "(`python3 -m pip install {module}` or the recipe's requirements file) in that same environment."
    ),
    "network": (
        "Downloads kept failing. Check the proxy/DNS/mirror settings, or pre-fetch sources (git submodules, "
        "FetchContent deps) and rerun; --backoff sets the wait between retries."
    ),
    "disk_full": "The disk is full. Free space (or point TMPDIR and the build at a bigger disk) and rerun.",
    "stalled": (
        "The build stopped printing output. Look at the process snapshot in the attempt log; raise "
        "--stall-timeout if a single step legitimately takes that long, or lower --jobs if the machine swaps."
    ),
    "unknown": (
        "rocmbuild does not recognise this failure. Read the decisive line and its context in the attempt "
        "log; rerun with --escalate-unknown to try the generic remedies, or add a signature in "
        "$XDG_CONFIG_HOME/rocmbuild/signatures/."
    ),
}


class _Blank(dict[str, str]):
    """A template's fields: a field the diagnosis did not capture reads ``?``."""

    def __missing__(self, key: str) -> str:
        return "?"


def fill_advice(advice: str, fields: Mapping[str, str]) -> str:
    """``advice`` with ``{field}`` placeholders filled from the diagnosis's captures (``?`` when absent)."""
    if "{" not in advice:
        return advice
    try:
        return advice.format_map(_Blank(fields))
    except (ValueError, IndexError, AttributeError):  # a user's advice with stray braces stays as written
        return advice


def release_note(fields: Mapping[str, str]) -> str:
    """What the diagnosis's library name says against the host's ROCm ("" when they agree or one is unknown).

    ``rocm_release``: the release the library's name implies (``libamdhip64.so.5``: 5); ``host_rocm``:
    the ROCm installed where the build ran.  A load or link failure for a library of another release is
    not cured by a search path: the binary needs rebuilding against the installed ROCm.
    """
    named, installed = fields.get("rocm_release", ""), fields.get("host_rocm", "")
    if not named or not installed or same_release(named, installed):
        return ""
    library = fields.get("library", "the library")
    return (f" {library} belongs to ROCm {named}, but this host has ROCm {installed}: the binary that wants it was "
            f"built for another ROCm release. Rebuild it against ROCm {installed} (or install ROCm {named} beside it).")


@functools.lru_cache(maxsize=1)
def _signature_advice() -> dict[str, str]:
    """Each signature's own advice (where it has one), from the catalogue the build used."""
    try:
        catalogue = load_catalogue()
    except CatalogueError:  # a broken user file was reported when the build loaded it
        catalogue = load_catalogue(user=False)
    return {sig.id: sig.advice for sig in catalogue.signatures if sig.advice}


def next_steps(diagnosis: Mapping[str, object] | None) -> str:
    """What to do about ``diagnosis``: its signature's own advice when it has one, else its category's."""
    if not diagnosis:
        return ""
    own = _signature_advice().get(str(diagnosis.get("signature") or ""))
    found = diagnosis.get("fields")
    given = {str(k): str(v) for k, v in found.items()} if isinstance(found, Mapping) else {}
    if own:
        return fill_advice(own, given) + release_note(given)
    fields = _Blank(given)
    if "library" in fields:
        fields.setdefault("package", library_package_hint(fields["library"]))
        if diagnosis.get("category") == "missing_library":
            fields["library"] = library_base(fields["library"])
    template = NEXT_STEPS.get(str(diagnosis.get("category")), NEXT_STEPS["unknown"])
    return template.format_map(fields) + release_note(given)
