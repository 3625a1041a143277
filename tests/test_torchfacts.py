"""Torch integrity preflight: a fresh venv as the build interpreter, stand-in torch wheels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from wheels import build_wheel

from rocmbuild.checks import torchfacts
from rocmbuild.checks.preflight import FAIL, OK, WARN
from rocmbuild.host.arch import Targets

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")


def torch_wheel(directory: Path, version: str, hip: str | None, archs: list[str]) -> Path:
    return build_wheel(directory, "torch", version, {
        "torch/__init__.py": f"__version__ = {version!r}\nfrom torch import version, cuda\n",
        "torch/version.py": f"hip = {hip!r}\ncuda = None\n",
        "torch/cuda.py": f"def get_arch_list():\n    return {archs!r}\n",
    })


@pytest.fixture(scope="module")
def build_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv (pip, and Python 3.11's bundled setuptools < 80): the build's interpreter."""
    root = tmp_path_factory.mktemp("buildvenv") / "venv"
    venv.EnvBuilder(with_pip=True).create(root)
    return root


def pip_install(venv_dir: Path, *wheels: Path) -> None:
    subprocess.run([str(venv_dir / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--force-reinstall", *map(str, wheels)], check=True, capture_output=True, timeout=120)


def probe(venv_dir: Path) -> torchfacts.TorchFacts:
    facts = torchfacts.probe(str(venv_dir / "bin" / "python"))
    assert facts is not None
    return facts


# --- pure checks on facts ------------------------------------------------------------------

def facts(**kw: object) -> torchfacts.TorchFacts:
    base: dict[str, object] = dict(python="/v/bin/python", version="2.5.1+rocm6.2", hip="6.2.41133-dd7f95766",
                                   archs=("gfx90a", "gfx942"), vision=None, audio=None, setuptools="75.1.0")
    base.update(kw)
    return torchfacts.TorchFacts(**base)  # type: ignore[arg-type]


def test_hip_version_mismatch_names_the_exact_install_line() -> None:
    check = torchfacts.check_hip_version(facts(), "6.4.1")
    assert check.status == FAIL and check.category == "abi_mismatch"
    assert "HIP 6.2.41133-dd7f95766" in check.detail and "6.4.1" in check.detail
    assert ("/v/bin/python -m pip install --force-reinstall torch torchvision torchaudio "
            "--index-url https://download.pytorch.org/whl/rocm6.4") in check.todo
    assert torchfacts.check_hip_version(facts(), "6.2").status == OK
    assert torchfacts.check_hip_version(facts(), None).status == WARN


def test_arch_list_must_cover_the_requested_archs() -> None:
    assert torchfacts.check_arch_list(facts(), Targets.parse("gfx942:xnack-,gfx90a")).status == OK
    check = torchfacts.check_arch_list(facts(archs=("gfx90a",)), Targets.parse("gfx942,gfx90a"))
    assert check.status == FAIL and check.category == "arch_mismatch"
    assert check.detail.endswith("not for gfx942") and "rocmbuild torch --arch 'gfx942;gfx90a'" in check.todo
    assert torchfacts.check_arch_list(facts(archs=None), Targets.parse("gfx942")).status == WARN


def test_companions_from_another_build_are_named_with_their_reinstall() -> None:
    ok = facts(vision="0.20.1+rocm6.2", audio="2.5.1+rocm6.2")
    assert torchfacts.check_companions(ok).status == OK
    skew = torchfacts.check_companions(facts(vision="0.20.1", audio="2.5.1+rocm6.2"))
    assert skew.status == FAIL and "torchvision differ" in skew.detail
    assert skew.todo.endswith("install --force-reinstall torchvision "
                              "--index-url https://download.pytorch.org/whl/rocm6.2 --no-deps")
    source = facts(version="2.9.0a0+git1234", vision="0.24.0+cu128")
    assert torchfacts.check_companions(source).status == FAIL
    assert torchfacts.check_companions(facts(version="2.9.0a0+git1234", vision="0.24.0a0+git99")).status == OK


def test_setuptools_80_with_setup_py_develop() -> None:
    develop = ["python3 setup.py develop"]
    assert torchfacts.check_setuptools(facts(setuptools="80.9.0"), ["pip install -e ."], False) is None
    assert torchfacts.check_setuptools(facts(setuptools="79.0.1"), develop, False).status == OK  # type: ignore[union-attr]
    fail = torchfacts.check_setuptools(facts(setuptools="80.9.0"), develop, False)
    assert fail is not None and fail.status == FAIL and fail.todo == "/v/bin/python -m pip install 'setuptools<80'"
    warn = torchfacts.check_setuptools(facts(setuptools="80.9.0"), develop, True)
    assert warn is not None and warn.status == WARN and not warn.fatal


def test_build_isolation_refused_with_the_fixed_step() -> None:
    for step in ("pip install .", "python3 -m pip install -v -e .", "pip install '.[rocm]' && echo", "pip3 install ."):
        check = torchfacts.check_build_isolation([step])
        assert check.status == FAIL, step
    check = torchfacts.check_build_isolation(["python3 -m pip install -v -e ."])
    assert "`python3 -m pip install --no-build-isolation -v -e .`" in check.todo
    for step in ("python3 -m pip install --no-build-isolation -v -e .", "pip install -r requirements.txt",
                 "pip install ninja", "python3 setup.py develop"):
        assert torchfacts.check_build_isolation([step]).status == OK, step


# --- the real interpreter: a fresh venv with stand-in torch wheels --------------------------

@pytest.mark.integration
def test_probe_reads_a_stand_in_torch_in_a_fresh_venv(build_venv: Path, tmp_path: Path) -> None:
    pip_install(build_venv, torch_wheel(tmp_path, "2.5.1+rocm6.2", "6.2.41133-dd7f95766", ["gfx90a", "gfx942"]),
                build_wheel(tmp_path, "torchvision", "0.20.1", {"torchvision/__init__.py": ""}))
    got = probe(build_venv)
    assert got.version == "2.5.1+rocm6.2" and got.hip == "6.2.41133-dd7f95766"
    assert got.archs == ("gfx90a", "gfx942") and got.vision == "0.20.1" and got.audio is None
    assert got.setuptools is not None and int(got.setuptools.split(".")[0]) < 80   # venv's bundled setuptools
    assert torchfacts.check_companions(got).status == FAIL
    subprocess.run([str(build_venv / "bin" / "python"), "-m", "pip", "uninstall", "-q", "-y", "torchvision"],
                   check=True, capture_output=True, timeout=120)


def plan(recipe: Path, venv_dir: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{venv_dir / 'bin'}:{os.environ['PATH']}", "XDG_STATE_HOME": str(tmp_path / "s"),
           "XDG_CACHE_HOME": str(tmp_path / "c"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    for key in ("ROCM_PATH", "PYTORCH_ROCM_ARCH", "HIPCXX", "VIRTUAL_ENV"):
        env.pop(key, None)
    return subprocess.run([ROCMBUILD, "plan", str(recipe), "--source", str(tmp_path), "--json", *args],
                          env=env, capture_output=True, text=True, timeout=120)


def torch_recipe(tmp_path: Path, build: str) -> Path:
    recipe = tmp_path / "needstorch.toml"
    recipe.write_text(f'name = "needstorch"\nrequires = ["torch"]\n[steps]\nbuild = ["{build}"]\n')
    return recipe


@pytest.mark.integration
def test_preflight_refuses_a_torch_built_for_another_rocm(build_venv: Path, tmp_path: Path) -> None:
    """The host's ROCm is Debian's 5.2; the stand-in torch says HIP 6.2: exit 4 with the exact install line."""
    pip_install(build_venv, torch_wheel(tmp_path, "2.5.1+rocm6.2", "6.2.41133-dd7f95766", ["gfx90a", "gfx908"]))
    proc = plan(torch_recipe(tmp_path, "python3 setup.py build_ext"), build_venv, tmp_path, "--arch", "gfx90a")
    assert proc.returncode == 4, proc.stderr
    assert "torch HIP version: torch 2.5.1+rocm6.2 was built with HIP 6.2.41133-dd7f95766" in proc.stderr
    assert ("-m pip install --force-reinstall torch torchvision torchaudio "
            "--index-url https://download.pytorch.org/whl/rocm5.2") in proc.stderr


@pytest.mark.integration
def test_preflight_passes_a_matching_torch_and_refuses_missing_archs(build_venv: Path, tmp_path: Path) -> None:
    pip_install(build_venv, torch_wheel(tmp_path, "2.1.0+rocm5.2", "5.2.21151-afdc89f8", ["gfx90a"]))
    recipe = torch_recipe(tmp_path, "python3 setup.py build_ext")
    ok = plan(recipe, build_venv, tmp_path, "--arch", "gfx90a")
    assert ok.returncode == 0, ok.stderr
    checks = {c["check"]: c["status"] for c in json.loads(ok.stdout.splitlines()[0])["preflight"]}
    assert checks["torch HIP version"] == checks["torch arch list"] == checks["build isolation"] == "ok"
    missing = plan(recipe, build_venv, tmp_path, "--arch", "gfx90a,gfx908")
    assert missing.returncode == 4, missing.stderr
    assert "torch arch list: torch 2.1.0+rocm5.2 has kernels for gfx90a; not for gfx908" in missing.stderr


@pytest.mark.integration
def test_preflight_refuses_setup_py_develop_under_setuptools_80(build_venv: Path, tmp_path: Path) -> None:
    pip_install(build_venv, torch_wheel(tmp_path, "2.1.0+rocm5.2", "5.2.21151-afdc89f8", ["gfx90a"]))
    recipe = torch_recipe(tmp_path, "python3 setup.py develop")
    assert plan(recipe, build_venv, tmp_path, "--arch", "gfx90a").returncode == 0
    # The real setuptools >= 80 from the machine's package index.
    subprocess.run([str(build_venv / "bin" / "python"), "-m", "pip", "install", "-q", "setuptools>=80"],
                   check=True, capture_output=True, timeout=300)
    try:
        proc = plan(recipe, build_venv, tmp_path, "--arch", "gfx90a")
        assert proc.returncode == 4, proc.stderr
        assert "setuptools >= 80 runs it as `pip install -e`" in proc.stderr
        assert "-m pip install 'setuptools<80'" in proc.stderr
    finally:
        subprocess.run([str(build_venv / "bin" / "python"), "-m", "pip", "install", "-q", "setuptools<80"],
                       check=False, capture_output=True, timeout=300)


@pytest.mark.integration
def test_preflight_refuses_pip_install_dot_with_isolation(build_venv: Path, tmp_path: Path) -> None:
    pip_install(build_venv, torch_wheel(tmp_path, "2.1.0+rocm5.2", "5.2.21151-afdc89f8", ["gfx90a"]))
    proc = plan(torch_recipe(tmp_path, "python3 -m pip install -v ."), build_venv, tmp_path, "--arch", "gfx90a")
    assert proc.returncode == 4, proc.stderr
    assert "`python3 -m pip install --no-build-isolation -v .`" in proc.stderr
    checks = {c["check"]: c["status"] for c in json.loads(proc.stdout.splitlines()[0])["preflight"]}
    assert checks["build isolation"] == "fail"
