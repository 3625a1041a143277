"""The HIP compiler's answers kept for the life of one command (``Services.probes``).

Its own module, beside the HIP compiler's facts, so that ``Services`` (below the checks) can hold one
that the checks (checks/preflight.py) fill.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ProbeCache:
    """Answers of the HIP compiler, kept by whoever owns the cache (``Services.probes``).

    A compiler does not change while rocmbuild runs, so ``rocmbuild torch vllm`` asks it
    once; callers that pass no cache (a test's fake runner) always ask.
    """

    # (real compiler path, ROCM_PATH, HIP_PATH, HIP_CLANG_PATH) -> the version lines
    versions: dict[tuple[str, ...], str] = field(default_factory=dict)
    # (real compiler path, version text, arch, HIP_DEVICE_LIB_PATH) -> (accepted, message)
    probes: dict[tuple[str, str, str, str], tuple[bool, str]] = field(default_factory=dict)
