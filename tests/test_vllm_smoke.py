"""The vllm recipe's smoke after build: amdsmi and vLLM's ROCm platform, diagnosed like any step.

vLLM itself cannot be built here (no ROCm torch), so stand-in `vllm` and `amdsmi` packages are written in the
test; the verify command is the recipe's own, run by bash with a real interpreter, and its output goes through
the real catalogue.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.diagnosis.classifier import classify
from rocmbuild.planning.recipe import find_recipe


def smoke_command() -> str:
    verify = find_recipe("vllm").steps.verify
    [smoke] = [c for c in verify if "amdsmi" in c]
    return smoke


def stand_in_vllm(root: Path, is_rocm: bool) -> None:
    (root / "vllm" / "platforms").mkdir(parents=True)
    (root / "vllm" / "__init__.py").write_text("")
    (root / "vllm" / "platforms" / "__init__.py").write_text(
        f"class _P:\n    def is_rocm(self):\n        return {is_rocm}\ncurrent_platform = _P()\n")


def run_smoke(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", smoke_command()], cwd=root, env=env, capture_output=True, text=True,
                          timeout=60)


def test_verify_imports_amdsmi_and_checks_the_platform() -> None:
    smoke = smoke_command()
    assert "import os, amdsmi" in smoke and "current_platform.is_rocm()" in smoke
    assert "No platform detected, vLLM is running on UnspecifiedPlatform" in smoke   # vLLM's own wording


def test_missing_amdsmi_fails_the_smoke_and_is_diagnosed(tmp_path: Path) -> None:
    stand_in_vllm(tmp_path, is_rocm=True)
    proc = run_smoke(tmp_path)
    assert proc.returncode != 0
    diagnosis = classify(proc.stderr.splitlines(), load_catalogue())
    assert diagnosis.category == "missing_python_dependency", diagnosis
    assert "amdsmi" in (diagnosis.text or "")


def test_smoke_passes_with_amdsmi_on_a_host_without_a_gpu(tmp_path: Path) -> None:
    stand_in_vllm(tmp_path, is_rocm=False)
    (tmp_path / "amdsmi.py").write_text("")
    # No /dev/kfd here: amdsmi enumerates no GPU on a build host, so only the import is required.
    assert not Path("/dev/kfd").exists()
    proc = run_smoke(tmp_path)
    assert proc.returncode == 0, proc.stderr
