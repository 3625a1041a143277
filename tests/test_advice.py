"""The first answer is the right one: blockers in order, torch from the source's pin, apt advice only for
packages apt here has, the CMake < 3.28 fact, and the wheel step's needs checked before the build."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from rocmbuild.checks import preflight
from rocmbuild.checks.preflight import FAIL, OK, Check
from rocmbuild.diagnosis.advice import next_steps
from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.diagnosis.classifier import classify
from rocmbuild.diagnosis.nextstep import Required, outcome_todo, preflight_todo, requires_todo
from rocmbuild.host import aptcheck
from rocmbuild.host.hipcompiler import HipCompiler
from rocmbuild.host.libraries import install_line, rocm_release_of
from rocmbuild.planning.sourcereqs import declared, declares_module, torch_pin
from rocmbuild.planning.torchadvice import torch_install

VENV_BIN = str(Path(sys.executable).parent)

# vLLM 0.11.0's own files, as its sdist has them.
ROCM_BUILD = """# Common dependencies
-r common.txt

--extra-index-url https://download.pytorch.org/whl/rocm6.3
torch==2.8.0
torchvision==0.23.0
torchaudio==2.8.0

triton==3.3.0
cmake>=3.26.1,<4
packaging>=24.2
setuptools>=77.0.3,<80.0.0
setuptools-scm>=8
wheel
jinja2>=3.1.6
amdsmi==6.2.4
timm>=1.0.17
"""
PYPROJECT = """[build-system]
requires = ["cmake>=3.26.1", "ninja", "packaging>=24.2", "setuptools>=77.0.3,<80.0.0",
            "setuptools-scm>=8.0", "torch == 2.8.0", "wheel", "jinja2"]
build-backend = "setuptools.build_meta"
"""


def vllm_tree(tmp_path: Path) -> Path:
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "rocm-build.txt").write_text(ROCM_BUILD)
    (tmp_path / "requirements" / "common.txt").write_text("regex\ncachetools\n")
    (tmp_path / "requirements" / "build.txt").write_text("cmake>=3.26.1\nninja\nregex\nbuild\n")
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    return tmp_path


# --- 1. torch from the source's pin, ROCm first, blockers in order, apt only for what apt has -------

def test_torch_pin_and_index_come_from_the_sources_rocm_requirements(tmp_path: Path) -> None:
    tree = vllm_tree(tmp_path)
    pin = torch_pin(tree)
    assert pin is not None and (pin.version, pin.rocm, pin.file) == ("2.8.0", "6.3", "requirements/rocm-build.txt")
    advice = torch_install("/venv/bin/python", tree, "6.3.1")
    assert "/venv/bin/python -m pip install torch==2.8.0 --index-url https://download.pytorch.org/whl/rocm6.3" \
        in advice
    assert "rocm6.4" not in advice


def test_a_host_rocm_too_old_for_the_pin_says_rocm_first(tmp_path: Path) -> None:
    advice = torch_install("python3", vllm_tree(tmp_path), "5.2")
    assert advice.index("install ROCm 6.3 first") < advice.index("pip install torch==2.8.0")
    assert "rocm5.2" not in advice
    assert "repo.radeon.com" in advice


def test_requires_todo_puts_blockers_before_the_torch_install() -> None:
    todo = requires_todo(Required(name="torch", python="python3", packages=["torch"]), ["vllm"], ["gfx942"],
                         torch_install="TORCH-STEP", blockers=["gfx942 needs ROCm 6.0 or later"])
    assert todo.index("gfx942 needs ROCm 6.0") < todo.index("TORCH-STEP")
    assert "rocm6.4" not in todo


def test_preflight_todo_orders_rocm_then_toolchain_then_torch() -> None:
    failed = [
        Check("torch (ROCm)", FAIL, "torch 2.8.0+cpu is a CPU build", todo="TORCH", category="toolchain_missing"),
        Check("cmake for HIP", FAIL, "cmake 3.25.1", todo="CMAKE", category="toolchain_missing"),
        Check("arch gfx942", FAIL, "clang 15 rejects gfx942", todo="ROCM", category="unsupported_arch"),
    ]
    todo = preflight_todo(failed)
    assert todo.index("ROCM") < todo.index("CMAKE") < todo.index("TORCH")


def test_real_apt_cache_says_which_packages_this_host_can_install() -> None:
    answers = aptcheck.lookup(["libamdhip64-dev", "librocblas-dev", "libhipblas-dev"])
    # Debian 12 has HIP, not rocBLAS/hipBLAS
    assert answers == {"libamdhip64-dev": True, "librocblas-dev": False, "libhipblas-dev": False}
    line = install_line(["rocblas", "hipblas"])
    assert "apt-get install librocblas-dev" not in line
    assert "repo.radeon.com" in line and "rocblas-dev" in line


def test_real_library_check_advises_only_installable_packages(tmp_path: Path) -> None:
    checks = preflight.check_libraries(["rocblas"], [tmp_path])
    assert checks[0].failed
    assert "librocblas-dev" not in checks[0].todo.split("no ")[0]
    assert "repo.radeon.com" in checks[0].todo


# --- 2. CMake < 3.28 with clang as the HIP compiler ---------------------------------------------------

CLANG = HipCompiler("/usr/bin/clang++-19", "clang", "--hip-compiler", "/usr/lib/llvm-19/bin")


def test_real_debian_cmake_3_25_fails_the_clang_hip_check() -> None:
    check = preflight.check_cmake_for_clang_hip(CLANG, {"PATH": "/usr/bin:/bin"})
    assert check.failed and check.category == "toolchain_missing"
    assert "cmake 3.25" in check.detail and "3.28" in check.detail


def test_real_pypi_cmake_passes_the_clang_hip_check() -> None:
    check = preflight.check_cmake_for_clang_hip(CLANG, {"PATH": f"{VENV_BIN}:/usr/bin:/bin"})
    assert check.status == OK, check.detail


def test_cmake_3_25_hip_failure_is_named_not_rocm_root_not_found() -> None:
    log = [
        "-- The CXX compiler identification is GNU 12.2.0",
        "-- The HIP compiler identification is unknown",
        "CMake Error at /usr/share/cmake-3.25/Modules/CMakeDetermineHIPCompiler.cmake:106 (message):",
        "  The ROCm root directory:",
        "",
        "   /usr",
        "",
        "  does not contain the HIP runtime CMake package, expected at:",
        "",
        "   /usr/lib/cmake/hip-lang/hip-lang-config.cmake",
        "",
        "-- Configuring incomplete, errors occurred!",
    ]
    diagnosis = classify(log, load_catalogue())
    assert diagnosis.signature == "cmake-too-old-for-clang-hip"
    assert diagnosis.fields.get("cmake_version") == "3.25"
    assert diagnosis.line == 3


# --- 3. --wheel-dir: what the wheel step needs, and a todo as precise as the stop reason ---------------

def fresh_python(tmp_path: Path, setuptools: str | None, wheel: bool) -> Path:
    """A real interpreter (-S: no site-packages) that sees only the setuptools/wheel stand-ins we write."""
    site = tmp_path / "site"
    site.mkdir(parents=True)
    if setuptools is not None:
        (site / "setuptools").mkdir()
        (site / "setuptools" / "__init__.py").write_text(f"__version__ = {setuptools!r}\n")
    if wheel:
        (site / "wheel").mkdir()
        (site / "wheel" / "__init__.py").write_text("")
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} -S \"$@\"\n")
    script.chmod(0o755)
    return script


def test_wheel_step_check_fails_for_old_setuptools_without_wheel(tmp_path: Path) -> None:
    python = fresh_python(tmp_path, "68.2.2", wheel=False)
    check = preflight.check_wheel_step(python, dict(os.environ))
    assert check.failed and check.category == "missing_python_dependency"
    assert check.todo == f"{python} -m pip install wheel"


def test_wheel_step_check_passes_with_wheel_or_new_setuptools(tmp_path: Path) -> None:
    assert preflight.check_wheel_step(fresh_python(tmp_path / "a", "68.2.2", wheel=True)).status == OK
    assert preflight.check_wheel_step(fresh_python(tmp_path / "b", "75.1.0", wheel=False)).status == OK


def test_todo_is_never_vaguer_than_what_rocmbuild_knows() -> None:
    reason = "built, but the wheel step failed: `python3 -m pip wheel .` exited 1 (see /r/wheel.log)"
    todo = outcome_todo("failed", None, None, reason)
    assert todo != "read the last attempt's log and rerun"
    assert "/r/wheel.log" in todo
    known = "`/venv/bin/python -m pip install wheel` there, then rerun"
    assert outcome_todo("failed", None, None, reason, known) == known


# --- 5. (declared requirements, read from the tree) ---------------------------------------------------

def test_declared_build_requirements_are_read_from_the_tree(tmp_path: Path) -> None:
    tree = vllm_tree(tmp_path)
    names = declared(tree).names()
    assert {"setuptools-scm", "jinja2", "wheel", "regex", "build", "amdsmi"} <= set(names)
    assert declares_module(tree, "setuptools_scm.version") == "setuptools-scm>=8.0"
    assert declares_module(tree, "requests") is None


# ------------------------------------------------------------------ a library's release against the host's ROCm

@pytest.mark.parametrize(("name", "release"), [
    ("libamdhip64.so.5", "5"), ("/opt/rocm/lib/libamdhip64.so.6", "6"), ("libhiprtc.so.7", "7"),
    ("librocblas.so.4", "6"), ("librocblas.so.5", "7"), ("libhipblas.so.2", "6"), ("libhipblas.so.3", "7"),
    ("libbitsandbytes_rocm63.so", "6.3"), ("torch-2.4.0+rocm6.1-cp310-linux_x86_64.whl", "6.1"),
    ("libamdhip64.so", None), ("libcudart.so.12", None), ("librocblas.so.0", None), ("libhiprtc-builtins.so", None),
])
def test_the_rocm_release_a_library_name_implies(name: str, release: str | None) -> None:
    assert rocm_release_of(name) == release


def test_a_library_of_another_rocm_release_than_the_hosts_is_named_in_the_advice() -> None:
    line = "ImportError: libamdhip64.so.5: cannot open shared object file: No such file or directory"
    got = classify([line], rocm_version="6.4.1")
    assert got.fields == {"library": "libamdhip64.so.5", "rocm_release": "5", "host_rocm": "6.4.1"}
    assert "belongs to ROCm 5, but this host has ROCm 6.4.1" in got.advice
    assert "belongs to ROCm 5" in next_steps(got.summary_json()), "the report's todo says it too"
    same = classify([line.replace(".so.5", ".so.6")], rocm_version="6.4.1")
    assert same.fields["rocm_release"] == "6" and "belongs to" not in same.advice


def test_the_hosts_rocm_is_read_from_a_versioned_root_in_the_log_when_the_build_did_not_say() -> None:
    got = classify(["-- Found HIP: /opt/rocm-6.2.0 (found version \"6.2.41133\")",
                    "./bench: error while loading shared libraries: librocblas.so.5: cannot open shared object file: "
                    "No such file or directory"])
    assert (got.fields["rocm_release"], got.fields["host_rocm"]) == ("7", "6.2.0")
    assert "Rebuild it against ROCm 6.2.0" in got.advice


def test_a_library_name_that_implies_no_release_leaves_the_fingerprint_alone() -> None:
    got = classify(["/usr/bin/ld: cannot find -lhipblas"], rocm_version="6.4.1")
    assert got.fields == {"library": "hipblas"} and "belongs to" not in got.advice
