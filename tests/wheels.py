"""Test helper: small, real wheels (zip, dist-info, RECORD) that pip installs like any other.

For stand-ins of packages that cannot be had here (a ROCm torch, vllm, amdsmi).
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def build_wheel(directory: Path, name: str, version: str, files: dict[str, str],
                requires: tuple[str, ...] = ()) -> Path:
    """A real wheel (zip, dist-info, RECORD) written here: pip installs it like any other.

    ``requires``: its Requires-Dist lines (what pip pulls in with it)."""
    dist = f"{name}-{version}".replace("-", "_", 0)
    info = f"{name}-{version}.dist-info"
    depends = "".join(f"Requires-Dist: {r}\n" for r in requires)
    contents = {**files,
                f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{depends}",
                f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for path, text in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    wheel = directory / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in contents.items():
            archive.writestr(path, text)
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel
