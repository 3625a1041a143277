"""The wheel ships the bundled recipes, the example and the signature catalogue inside the package."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_contains_recipes_example_and_catalogue(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True, timeout=300)
    wheel = next(tmp_path.glob("rocmbuild-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in ("rocmbuild/recipes/torch.toml", "rocmbuild/recipes/vllm.toml", "rocmbuild/recipes/example.toml",
                     "rocmbuild/signatures.toml", "rocmbuild/examples/hipvec/setup.py", "rocmbuild/cli.py"):
        assert required in names, required
    assert not any(n.startswith("rocmbuild/examples/hipvec/build/") for n in names)
    assert not any(n.endswith(".so") for n in names), "no build products in the wheel"
