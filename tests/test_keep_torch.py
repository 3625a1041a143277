"""--requires-from and the build's torch: the missing requirement named, nothing half-installed, and pip in
the build held to the installed torch by a constraints file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rocmbuild.provisioning import requirements
from rocmbuild.provisioning.requirements import RequirementError, missing_distribution
from rocmbuild.provisioning.torchpin import keep_torch
from tests.planfactory import make_plan
from tests.wheels import build_wheel

# Only the wheelhouse under test: no pip configuration of this machine (extra find-links) reaches pip.
HERMETIC = {"PATH": "/usr/bin:/bin", "PIP_CONFIG_FILE": "/dev/null"}

NEEDS_TORCH = """
name = "needs-torch"
requires = ["torch"]
[steps]
build = ["true"]
"""


def torch_wheel(house: Path, version: str, hip: str | None, requires: tuple[str, ...] = ()) -> Path:
    house.mkdir(parents=True, exist_ok=True)
    return build_wheel(house, "torch", version, {
        "torch/__init__.py": f"from torch import version\n__version__ = {version!r}\n",
        "torch/version.py": f"__version__ = {version!r}\nhip = {hip!r}\ncuda = None\n",
    }, requires=requires)


@pytest.fixture()
def venv(tmp_path: Path) -> Path:
    path = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    # pip from the test's own interpreter, running for the venv (no network, no bootstrap).
    site = next((path / "lib").glob("python3*/site-packages"))
    pip_dir = Path(__import__("pip").__file__).parent
    (site / "pip").symlink_to(pip_dir, target_is_directory=True)
    return path / "bin" / "python"


def installed(python: Path) -> set[str]:
    code = "import importlib.metadata as m; print(' '.join(d.metadata['Name'].lower() for d in m.distributions()))"
    return set(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.split())


def test_missing_distribution_is_read_from_pip() -> None:
    assert missing_distribution("ERROR: Cannot install torch==2.13.0+cpu and torch==2.8.0+rocm5.2 because these "
                                "package versions have conflicting dependencies.\n\nThe conflict is caused by:\n"
                                "    torch 2.13.0+cpu depends on filelock\n    torch 2.8.0+rocm5.2 depends on "
                                "filelock\n\nTo fix this you could try to:\n") == "filelock"
    assert missing_distribution("Additionally, some packages in these conflicts have no matching distributions "
                                "available for your environment:\n    filelock\n") == "filelock"
    assert missing_distribution("ERROR: Could not find a version that satisfies the requirement filelock "
                                "(from torch) (from versions: none)\nERROR: No matching distribution found "
                                "for filelock\n") == "filelock"


def test_an_incomplete_wheelhouse_names_the_missing_requirement(tmp_path: Path, venv: Path) -> None:
    house = tmp_path / "house"
    torch_wheel(house, "2.8.0+rocm6.3", "6.3.42131", requires=("filelock",))
    plan = make_plan(tmp_path, recipe_text=NEEDS_TORCH, python=str(venv), caller=HERMETIC)
    with pytest.raises(RequirementError) as error:
        requirements.provide(plan, ["torch"], str(house), install=True)
    text = error.value.render()
    assert "could not install torch" in text and "it has no filelock, which torch needs" in text
    assert "pip download filelock" in text


def test_a_refused_cpu_torch_goes_with_what_it_pulled_in(tmp_path: Path, venv: Path) -> None:
    house = tmp_path / "house"
    torch_wheel(house, "2.8.0+cpu", None, requires=("filelockstandin",))
    build_wheel(house, "filelockstandin", "3.0", {"filelockstandin/__init__.py": ""})
    plan = make_plan(tmp_path, recipe_text=NEEDS_TORCH, python=str(venv), caller=HERMETIC)
    before = installed(venv)
    with pytest.raises(RequirementError) as error:
        requirements.provide(plan, ["torch"], str(house), install=True)
    assert "not a ROCm build" in error.value.render() and "filelockstandin" in error.value.render()
    assert installed(venv) == before  # nothing half-installed


def test_pip_in_the_build_cannot_replace_the_build_torch(tmp_path: Path, venv: Path) -> None:
    house = tmp_path / "house"
    torch_wheel(house, "2.8.0+rocm6.3", "6.3.42131")
    torch_wheel(house, "2.9.0", None)
    build_wheel(house, "torchvision", "0.24.0", {"torchvision/__init__.py": ""}, requires=("torch==2.9.0",))
    subprocess.run([str(venv), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(house),
                    "torch==2.8.0+rocm6.3"], check=True, capture_output=True, timeout=300, env=HERMETIC)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    plan = keep_torch(make_plan(tmp_path, recipe_text=NEEDS_TORCH, python=str(venv),
                                caller={**HERMETIC, "PATH": f"{venv.parent}:/usr/bin:/bin"}), run_dir)
    assert "torch==2.8.0+rocm6.3" in (run_dir / "constraints.txt").read_text()
    # What vLLM's prepare step does: pip install of a torchvision that wants another torch.
    result = subprocess.run([str(venv), "-m", "pip", "install", "--no-index", "--find-links", str(house),
                             "torchvision"], env=dict(plan.env), capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    version = subprocess.run([str(venv), "-c", "import torch; print(torch.__version__)"], capture_output=True,
                             text=True).stdout.strip()
    assert version == "2.8.0+rocm6.3"
