"""Which torch to install for a build, and what must be fixed before it: advice that fits the host.

The torch version and wheel index come from the source's own ROCm requirement file
(vLLM 0.11.0's ``requirements/rocm-build.txt``: ``torch==2.8.0`` from ``whl/rocm6.3``) and the
host's ROCm; when the host's ROCm cannot take that torch (an older major release, or none), the
first step is ROCm itself, and the torch install is named as the step after it.  (The order
in which blockers are reported lives in diagnosis/nextstep.py.) Pure functions over values.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from rocmbuild.planning.sourcereqs import TorchPin, torch_pin

TORCH_INDEX = "https://download.pytorch.org/whl/rocm{}"
ROCM_FROM = "AMD's ROCm repository at repo.radeon.com, per rocm.docs.amd.com's quick start installation guide"


def _major_minor(version: str | None) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version or "")[:2])


def rocm_blocker(host_rocm: str | None, pin: TorchPin | None) -> str | None:
    """Why the host's ROCm cannot take the source's torch, or None. Pure."""
    if pin is None or pin.rocm is None:
        return None
    wanted = f"torch{'==' + pin.version if pin.version else ''} for ROCm {pin.rocm} ({pin.file})"
    if not host_rocm:
        return f"the source pins {wanted}, and no ROCm was found on this host"
    if _major_minor(host_rocm)[:1] != _major_minor(pin.rocm)[:1]:
        return f"the source pins {wanted}, but this host has ROCm {host_rocm}"
    return None


def torch_install(python: str, source: Path | None, host_rocm: str | None) -> str:
    """The exact torch install for this build, or what must come before it. Pure but for reading the source."""
    pin = torch_pin(source)
    py = shlex.quote(python or "python3")
    if pin is not None and (pin.version or pin.index):
        spec = f"torch=={pin.version}" if pin.version else "torch"
        index = pin.index or (TORCH_INDEX.format(".".join(map(str, _major_minor(host_rocm)))) if host_rocm else "")
        command = f"`{py} -m pip install {shlex.quote(spec)}" + (f" --index-url {index}`" if index else "`")
        blocker = rocm_blocker(host_rocm, pin)
        if blocker:
            return (f"{blocker}: install ROCm {pin.rocm} first, from {ROCM_FROM}, and pass --rocm-path; "
                    f"then {command} (the source's pin)")
        return f"install the torch the source pins ({pin.file}): {command}"
    if not host_rocm:
        return (f"install ROCm first, from {ROCM_FROM}; then a ROCm torch for that release "
                f"(`{py} -m pip install torch --index-url {TORCH_INDEX.format('X.Y')}`)")
    release = ".".join(map(str, _major_minor(host_rocm)))
    return (f"install a ROCm torch for this host's ROCm {release}: `{py} -m pip install torch --index-url "
            f"{TORCH_INDEX.format(release)}` (if PyTorch publishes no wheels for {release}, take the nearest "
            f"ROCm {release.split('.')[0]}.x index)")

