"""Preflight checks: real hipcc/python where marked, fakes for what this machine cannot show."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rocmbuild.checks import preflight
from rocmbuild.checks.preflight import (
    FAIL,
    OK,
    WARN,
    Check,
    Probing,
    check_arch_supported,
    check_disk,
    check_hipcc_is_amd,
    check_libraries,
    check_memory,
    check_python_modules,
    check_rocm_root,
    check_torch_rocm,
    first_fatal,
    parse_hipcc_version,
)
from rocmbuild.host.arch import Targets
from rocmbuild.host.rocm import Rocm
from rocmbuild.process.command import CommandResult, capture

HIPCC = "/usr/bin/hipcc"
AMD_VERSION = "HIP version: 5.2.21153-0\nDebian clang version 15.0.6\nTarget: x86_64-pc-linux-gnu\n"
NVCC_VERSION = ("HIP version: 5.2.21153-0\nnvcc: NVIDIA (R) Cuda compiler driver\n"
                "Copyright (c) 2005-2025 NVIDIA Corporation\n"
                "Cuda compilation tools, release 13.0, V13.0.88\n")


class FakeRun:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], **kwargs: Any) -> CommandResult:
        self.calls.append(list(argv))
        return self.answer(list(argv), kwargs)


def amd_env() -> dict[str, str]:
    return {**os.environ, "HIP_PLATFORM": "amd"}


# --- compiler version and platform ---------------------------------------------------------


def test_parse_hipcc_version() -> None:
    v = parse_hipcc_version(AMD_VERSION)
    assert (v.hip, v.clang) == ("5.2", "clang 15.0.6")
    assert v.describe(HIPCC) == "clang 15.0.6 from HIP 5.2 (hipcc /usr/bin/hipcc)"
    rocm = parse_hipcc_version(
        "HIP version: 6.2.41133-dd7f95766\nAMD clang version 18.0.0git (https://github.com/RadeonOpenCompute/"
        "llvm-project roc-6.2.4 24392 1f7e4a4f6b2f1e8b3ea8d1b7b42bd5e1b8e3b1f0)\n")
    assert (rocm.hip, rocm.clang) == ("6.2", "AMD clang 18.0.0git (roc-6.2.4)")


def test_hipcc_resolving_to_nvcc_fails() -> None:
    run = FakeRun(lambda argv, kw: CommandResult(0, NVCC_VERSION))
    check = check_hipcc_is_amd(HIPCC, {"PATH": "/usr/bin"}, run=run)
    assert check.status == FAIL and check.category == "toolchain_missing"
    assert check.detail == "hipcc resolves to nvcc (HIP_PLATFORM=unset): set HIP_PLATFORM=amd"
    assert run.calls == [[HIPCC, "--version"]]


def test_missing_hipcc_fails() -> None:
    check = check_hipcc_is_amd(None)
    assert check.status == FAIL and check.category == "toolchain_missing"
    assert "apt-get install hipcc" in check.todo
    gone = check_hipcc_is_amd("/nonexistent/hipcc", amd_env())
    assert gone.status == FAIL and "not found" in gone.detail


def test_amd_hipcc_without_platform_variable_warns() -> None:
    run = FakeRun(lambda argv, kw: CommandResult(0, AMD_VERSION))
    check = check_hipcc_is_amd(HIPCC, {"PATH": "/usr/bin"}, run=run)
    assert check.status == WARN and not check.fatal and check.todo == "set HIP_PLATFORM=amd"


@pytest.mark.hip
def test_real_hipcc_is_amd_with_platform_set() -> None:
    check = check_hipcc_is_amd(HIPCC, amd_env())
    assert check.status == OK, check
    assert "HIP_PLATFORM=amd" in check.detail and "clang" in check.detail


@pytest.mark.hip
def test_real_hipcc_without_platform_is_nvcc_when_cuda_is_installed(tmp_path: Path) -> None:
    # hipcc (HIP 5.2) picks NVIDIA when $CUDA_PATH/bin/nvcc exists (default /usr/local/cuda): a CUDA
    # install of our own, with an nvcc that prints nvcc's banner, makes this hold on any machine.
    nvcc = tmp_path / "cuda" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text('#!/bin/sh\necho "nvcc: NVIDIA (R) Cuda compiler driver"\n'
                    'echo "Cuda compilation tools, release 12.0, V12.0.1"\n')
    nvcc.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "HIP_PLATFORM"}
    env["CUDA_PATH"] = str(tmp_path / "cuda")
    check = check_hipcc_is_amd(HIPCC, env)
    assert check.status == FAIL and "resolves to nvcc" in check.detail


# --- arch probes -------------------------------------------------------------------------------


def probe_answer(rejected: dict[str, str]) -> Any:
    def answer(argv: list[str], kwargs: dict[str, Any]) -> CommandResult:
        assert kwargs["env"]["HIP_PLATFORM"] == "amd"
        if argv[1:] == ["--version"]:
            return CommandResult(0, AMD_VERSION)
        arch = next(a.split("=", 1)[1] for a in argv if a.startswith("--offload-arch="))
        if arch in rejected:
            return CommandResult(0 if rejected[arch].startswith("warning") else 1, rejected[arch])
        return CommandResult(0, "")
    return answer


def test_arch_rejections_and_warnings_are_unsupported_arch() -> None:
    run = FakeRun(probe_answer({
        "gfx950": "clang: error: invalid target ID 'gfx950'; format is a processor name ...",
        # Only a warning, exit status 0: still not usable.
        "gfx1201": "warning: 'gfx1201' is not a recognized processor for this target (ignoring processor)",
    }))
    checks = check_arch_supported(HIPCC, Targets.parse("gfx90a,gfx950,gfx1201"), Probing(env={}, run=run))
    assert [c.status for c in checks] == [OK, FAIL, FAIL]
    assert checks[1].detail == ("clang 15.0.6 from HIP 5.2 (hipcc /usr/bin/hipcc) rejects gfx950: "
                                "invalid target ID 'gfx950'")
    assert checks[1].category == "unsupported_arch" and "ROCm 7.0" in checks[1].todo
    assert checks[2].category == "unsupported_arch" and "not a recognized processor" in checks[2].detail
    # Without a cache every call probes.
    check_arch_supported(HIPCC, Targets.parse("gfx90a"), Probing(env={}, run=run))
    assert sum(1 for c in run.calls if "--offload-arch=gfx90a" in c) == 2


def test_a_probe_cache_asks_the_compiler_once() -> None:
    run = FakeRun(probe_answer({"gfx950": "clang: error: invalid target ID 'gfx950'"}))
    cache = preflight.ProbeCache()
    first = check_arch_supported(HIPCC, Targets.parse("gfx90a,gfx950"), Probing(env={}, run=run, cache=cache))
    again = check_arch_supported(HIPCC, Targets.parse("gfx90a,gfx950"), Probing(env={}, run=run, cache=cache))
    assert first == again and [c.status for c in again] == [OK, FAIL]
    assert sum(1 for c in run.calls if "--version" in c) == 1
    assert sum(1 for c in run.calls if any(a.startswith("--offload-arch=") for a in c)) == 2
    # Another ROCm behind the same hipcc is another compiler: asked again.
    check_arch_supported(HIPCC, Targets.parse("gfx90a"), Probing(env={"ROCM_PATH": "/opt/rocm-6.2"}, run=run,
                                                                 cache=cache))
    assert sum(1 for c in run.calls if "--version" in c) == 2


def test_other_probe_failures_are_toolchain_problems() -> None:
    run = FakeRun(probe_answer({"gfx90a": "probe.hip:1:10: fatal error: 'hip/hip_runtime.h' file not found"}))
    check, = check_arch_supported(HIPCC, Targets.parse("gfx90a"), Probing(env={}, run=run))
    assert check.status == FAIL and check.category == "toolchain_missing"
    assert "'hip/hip_runtime.h' file not found" in check.detail


@pytest.mark.hip
def test_real_probe_accepts_gfx90a_and_judges_gfx942_by_version(tmp_path: Path) -> None:
    version = preflight.hipcc_version(HIPCC, amd_env())
    cache = preflight.ProbeCache()
    ok, gfx942 = check_arch_supported(HIPCC, Targets.parse("gfx90a,gfx942"),
                                      Probing(env=amd_env(), workdir=tmp_path, cache=cache))
    assert ok.status == OK, ok
    assert version.hip is not None
    if tuple(int(x) for x in version.hip.split(".")) < (6, 0):
        # Debian's HIP 5.2 / clang 15 (docs/rocm-facts.md).
        assert gfx942.status == FAIL and gfx942.category == "unsupported_arch"
        compiler = f"{version.clang} from HIP {version.hip} (hipcc {HIPCC})"
        assert gfx942.detail.startswith(f"{compiler} rejects gfx942")
        assert "invalid target ID 'gfx942'" in gfx942.detail
        assert "ROCm 6.0" in gfx942.todo
    else:
        assert gfx942.status == OK
    assert list(tmp_path.iterdir()) == [], "probe scratch dirs are removed"
    # Kept in the cache: the second round compiles nothing (told by the commands it runs, not by a clock).
    ran: list[list[str]] = []

    def recording(argv: Sequence[str], **kw: Any) -> Any:
        ran.append(list(argv))
        return capture(argv, **kw)

    again = check_arch_supported(HIPCC, Targets.parse("gfx90a,gfx942"),
                                 Probing(env=amd_env(), workdir=tmp_path, cache=cache, run=recording))
    assert not [argv for argv in ran if any(a.startswith("--offload-arch=") for a in argv)], ran
    assert [c.status for c in again] == [ok.status, gfx942.status]


# --- ROCm root and libraries -------------------------------------------------------------------


def test_rocm_root() -> None:
    assert check_rocm_root(None).category == "toolchain_missing"
    rocm = Rocm(Path("/usr"), version="5.2.3", lib_dirs=(Path("/usr/lib/x86_64-linux-gnu"),),
                bin_dirs=(Path("/usr/bin"),))
    check = check_rocm_root(rocm)
    assert check.status == OK and check.detail.startswith("ROCm 5.2.3 at /usr")
    unknown = check_rocm_root(Rocm(Path("/x"), lib_dirs=(Path("/x/lib"),)))
    assert unknown.status == WARN and not unknown.fatal


@pytest.mark.hip
def test_real_libraries() -> None:
    found, made_up = check_libraries(["amdhip64", "rocmbuildnosuchlib"], [Path("/usr/lib/x86_64-linux-gnu")])
    assert found.status == OK and "libamdhip64.so in" in found.detail
    assert made_up.status == FAIL and made_up.category == "missing_library"
    assert "librocmbuildnosuchlib.so not found" in made_up.detail


def test_library_found_by_ldconfig_and_runtime_only(tmp_path: Path) -> None:
    ldconfig = ("3 libs found in cache `/etc/ld.so.cache'\n"
                "\tlibhipblas.so.2 (libc6,x86-64) => /opt/rocm/lib/libhipblas.so.2\n"
                "\tlibrocblas.so (libc6,x86-64) => /opt/rocm/lib/librocblas.so\n")
    run = FakeRun(lambda argv, kw: CommandResult(0, ldconfig))
    (tmp_path / "libMIOpen.so.1").write_text("")
    rocblas, hipblas, miopen = check_libraries(["rocblas", "hipblas", "MIOpen"], [tmp_path], run=run)
    assert rocblas.status == OK and "/opt/rocm/lib" in rocblas.detail
    assert hipblas.status == FAIL and "only the runtime libhipblas.so.2" in hipblas.detail
    assert "hipblas-dev" in hipblas.todo
    assert miopen.status == FAIL and "libMIOpen.so.1" in miopen.detail and "miopen-hip-dev" in miopen.todo
    assert [c for c in run.calls if c[0] == "ldconfig"] == [["ldconfig", "-p"]], "ldconfig asked once"


# --- resources --------------------------------------------------------------------------------------


def test_disk(tmp_path: Path) -> None:
    assert check_disk(tmp_path / "not" / "yet", 0).status == OK
    full = check_disk(tmp_path, 10**9)
    assert full.status == FAIL and full.category == "disk_full" and str(tmp_path) in full.detail


def test_memory() -> None:
    gib = 2**30
    assert check_memory(32 * gib, 4).detail.endswith("room for 8 parallel jobs")
    assert check_memory(3 * gib, 4).status == WARN
    low = check_memory(1 * gib, 4)
    assert low.status == FAIL and low.category == "out_of_memory"
    assert first_fatal([Check("a", OK, ""), check_memory(3 * gib, 4), low]) is low


# --- Python ---------------------------------------------------------------------------------------------


def test_python_modules_real_interpreter() -> None:
    ok = check_python_modules(sys.executable, ["json", "setuptools", "os.path"])
    assert ok.status == OK, ok
    missing = check_python_modules(sys.executable, ["json", "rocmbuild_no_such_mod", "no_such_pkg.sub"])
    assert missing.status == FAIL and missing.category == "missing_python_dependency"
    assert missing.detail.endswith("rocmbuild_no_such_mod, no_such_pkg.sub")
    assert missing.todo == f"{sys.executable} -m pip install rocmbuild_no_such_mod no_such_pkg"
    assert check_python_modules("/nonexistent/python", ["json"]).category == "toolchain_missing"


def fake_torch(tmp_path: Path, hip: str | None, cuda: str | None) -> dict[str, str]:
    pkg = tmp_path / "torch"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("__version__ = '2.5.1'\nfrom torch import version\n")
    (pkg / "version.py").write_text(f"hip = {hip!r}\ncuda = {cuda!r}\n")
    return {**os.environ, "PYTHONPATH": str(tmp_path)}


def test_torch_missing_real_interpreter() -> None:
    check = check_torch_rocm(sys.executable, {**os.environ, "PYTHONPATH": ""})
    try:
        import torch  # noqa: F401
    except ImportError:
        assert check.status == FAIL and check.category == "missing_python_dependency"
        assert "torch is not installed" in check.detail
    else:  # pragma: no cover - a machine with torch
        assert check.status in (OK, FAIL)


def test_torch_cuda_build_fails(tmp_path: Path) -> None:
    check = check_torch_rocm(sys.executable, fake_torch(tmp_path, None, "12.1"))
    assert check.status == FAIL and check.category == "toolchain_missing"
    assert check.detail == "torch 2.5.1 is a CUDA 12.1 build: install a ROCm build of torch"


def test_torch_rocm_build_passes(tmp_path: Path) -> None:
    check = check_torch_rocm(sys.executable, fake_torch(tmp_path, "6.2.41133", None))
    assert check.status == OK and "HIP 6.2.41133" in check.detail


def test_torch_import_error_at_load_time(tmp_path: Path) -> None:
    pkg = tmp_path / "torch"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "raise ImportError('libamdhip64.so.6: cannot open shared object file: No such file or directory')\n")
    check = check_torch_rocm(sys.executable, {**os.environ, "PYTHONPATH": str(tmp_path)})
    assert check.status == FAIL and check.category == "missing_runtime_library"
