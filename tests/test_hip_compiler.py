"""The build's HIP compiler: which one, and everything that follows it.

Unit tests use small real programs in tmp_path; the tests marked ``clang19`` build
real gfx942 code objects with Debian's clang-19 and CMake >= 3.28 from PyPI, through
rocmbuild itself (``examples/hipcmake``, ``recipes/example-cmake.toml``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from planfactory import make_plan

from rocmbuild.checks import preflight
from rocmbuild.errors import UsageError
from rocmbuild.host import hipcompiler
from rocmbuild.host.arch import Targets
from rocmbuild.loop.remedies import RemedyContext, set_cmake_policy_minimum
from rocmbuild.verification.artifacts import find_tools, list_code_objects

REPO = Path(__file__).resolve().parent.parent
ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")
EXAMPLE = REPO / "examples" / "hipcmake"
RECIPE = REPO / "recipes" / "example-cmake.toml"
CLANG = "/usr/bin/clang++-19"
LLVM19 = "/usr/lib/llvm-19/bin"


def _program(path: Path, text: str = "#!/bin/sh\necho 'clang version 99.0.0'\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


# --- which compiler ----------------------------------------------------------------------------


def test_option_wins_over_hipcxx_which_wins_over_hipcc(tmp_path: Path) -> None:
    llvm = _program(tmp_path / "llvm-99" / "bin" / "clang")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "clang++-99").symlink_to(llvm)
    other = _program(tmp_path / "other" / "clang++")
    env = {"PATH": str(tmp_path / "bin"), "HIPCXX": str(other)}

    chosen = hipcompiler.resolve("clang++-99", env, "/usr/bin/hipcc")
    assert chosen is not None
    wanted = (str(tmp_path / "bin" / "clang++-99"), "clang", "--hip-compiler")
    assert (chosen.path, chosen.kind, chosen.origin) == wanted
    # Its LLVM is where the link points, not where the link is.
    assert chosen.llvm_bin == str(tmp_path / "llvm-99" / "bin")

    from_env = hipcompiler.resolve(None, env, "/usr/bin/hipcc")
    assert from_env is not None and (from_env.path, from_env.origin) == (str(other), "$HIPCXX")

    fallback = hipcompiler.resolve(None, {"PATH": "/usr/bin"}, "/usr/bin/hipcc")
    assert fallback is not None and fallback.kind == "hipcc" and not fallback.is_clang
    assert hipcompiler.resolve(None, {"PATH": "/usr/bin"}, None) is None


def test_a_compiler_that_is_not_there_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as raised:
        hipcompiler.resolve(str(tmp_path / "clang++-42"), {"PATH": ""}, None)
    assert raised.value.exit_code == 2
    assert "is not an executable program" in raised.value.what and "--hip-compiler" in raised.value.todo
    with pytest.raises(UsageError, match=r"\$HIPCXX"):
        hipcompiler.resolve(None, {"PATH": "", "HIPCXX": "no-such-clang"}, None)


def test_cli_refuses_a_missing_hip_compiler_without_a_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path)}
    proc = subprocess.run([ROCMBUILD, "plan", "example", "--arch", "gfx90a", "--hip-compiler",
                           str(tmp_path / "nope")], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "is not an executable program" in proc.stderr and "Traceback" not in proc.stderr


def test_newer_clangs_lists_only_llvm_16_and_later(tmp_path: Path) -> None:
    for name in ("clang++-15", "clang++-17", "clang++-19", "clang-19"):
        _program(tmp_path / name)
    assert hipcompiler.newer_clangs({"PATH": str(tmp_path)}) == [str(tmp_path / "clang++-19"),
                                                                 str(tmp_path / "clang++-17")]


# --- the remedy ----------------------------------------------------------------------------------


def test_set_cmake_policy_minimum_exports_the_variable_once(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    first = set_cmake_policy_minimum(plan, None, RemedyContext())  # type: ignore[arg-type]
    assert first.applied and first.plan.env["CMAKE_POLICY_VERSION_MINIMUM"] == "3.5"
    assert first.plan.env_set["CMAKE_POLICY_VERSION_MINIMUM"] == "3.5"   # recorded in the attempt's env
    again = set_cmake_policy_minimum(first.plan, None, RemedyContext())  # type: ignore[arg-type]
    assert not again.applied and "already 3.5" in again.detail


# --- real clang-19 ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def device_libs(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The gfx942 device-lib dir, built by the same script as `make toolchain` (in a private cache)."""
    cache = tmp_path_factory.mktemp("xdg-cache")
    proc = subprocess.run(["bash", str(REPO / "examples" / "device-libs.sh")], capture_output=True, text=True,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache)}, timeout=120, check=True)
    path = proc.stdout.strip().splitlines()[-1]
    assert path == str(cache / "rocmbuild" / "device-libs" / "llvm-19")
    assert (Path(path) / "oclc_isa_version_942.bc").is_file() and (Path(path) / "ocml.bc").exists()
    return path


def env_for(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ROCMBUILD_") and k not in ("HIPCXX", "HIP_DEVICE_LIB_PATH",
                                                           "CMAKE_POLICY_VERSION_MINIMUM", "HIPCMAKE_ARCHS")}
    # The venv's bin first: its python3 and the CMake >= 3.28 that `make toolchain` installs there.
    env.update(PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}", HIP_PLATFORM="amd",
               XDG_STATE_HOME=str(tmp / "state"), XDG_CACHE_HOME=str(tmp / "cache"),
               XDG_CONFIG_HOME=str(tmp / "config"))
    env.update(extra)
    return env


@pytest.fixture
def source(tmp_path: Path) -> Path:
    tree = tmp_path / "hipcmake"
    shutil.copytree(EXAMPLE, tree, ignore=shutil.ignore_patterns("build"))
    return tree


def run_cmake_example(tmp: Path, source: Path, arch: str, run_dir: str, *extra: str, recipe: Path = RECIPE,
                      env: dict[str, str] | None = None) -> tuple[int, str, dict[str, Any]]:
    argv = [ROCMBUILD, str(recipe), "--arch", arch, "--source", str(source), "--run-dir", str(tmp / run_dir),
            "--json", *extra]
    proc = subprocess.run(argv, env=env if env is not None else env_for(tmp), capture_output=True, text=True,
                          timeout=600)
    summary = json.loads(proc.stdout.splitlines()[-1]) if proc.stdout.strip() else {}
    return proc.returncode, proc.stderr, summary


def _events(run_dir: Path, name: str) -> list[dict[str, Any]]:
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == name]


def _preflight(run_dir: Path, name: str) -> dict[str, Any]:
    return next(e for e in _events(run_dir, "preflight.checked") if e["name"] == name)


@pytest.mark.clang19
@pytest.mark.hip
@pytest.mark.integration
def test_gfx942_for_real_cmake4_failure_cured_and_code_objects_verified(
        tmp_path: Path, source: Path, device_libs: str) -> None:
    env = env_for(tmp_path, HIP_DEVICE_LIB_PATH=device_libs)
    code, err, summary = run_cmake_example(tmp_path, source, "gfx942", "run", "--hip-compiler", CLANG, env=env)
    assert code == 0, err
    first, second = summary["attempts"]
    # Attempt 1: real CMake 4 refusing the tree's old cmake_minimum_required.
    assert first["diagnosis"]["signature"] == "cmake4-policy-minimum-removed"
    assert "Compatibility with CMake < 3.5 has been removed" in first["diagnosis"]["text"]
    assert first["remedies"] == ["set_cmake_policy_minimum"]
    assert second["diagnosis"] is None
    assert second["env"]["CMAKE_POLICY_VERSION_MINIMUM"] == "3.5"
    assert second["env"]["HIPCXX"] == CLANG
    assert second["env"]["PATH"].split(":")[0] == LLVM19
    # Preflight probed clang-19, not hipcc 5.2.
    arch_check = _preflight(tmp_path / "run", "arch gfx942")
    assert arch_check["status"] == "ok" and "clang 19" in arch_check["detail"]
    verified = _events(tmp_path / "run", "artifacts.verified")
    assert verified[-1]["ok"] and "build/libhipcmake.so: gfx942 (clang-offload-bundler)" in verified[-1]["detail"]
    # And independently of rocmbuild's verification: llvm-19's bundler lists a gfx942 code object.
    listing = list_code_objects(source / "build" / "libhipcmake.so", tools=find_tools(None, "", LLVM19))
    assert listing.tool == f"{LLVM19}/clang-offload-bundler"
    assert listing.entries == ("hipv4-amdgcn-amd-amdhsa--gfx942",)


@pytest.mark.clang19
@pytest.mark.hip
@pytest.mark.integration
def test_a_recipe_that_builds_gfx90a_when_gfx942_was_asked_is_an_arch_mismatch(
        tmp_path: Path, source: Path, device_libs: str) -> None:
    text = RECIPE.read_text().replace('name = "example-cmake"', 'name = "wrong-arch"')
    text = text.replace('-DCMAKE_HIP_ARCHITECTURES=\\"$HIPCMAKE_ARCHS\\"', "-DCMAKE_HIP_ARCHITECTURES=gfx90a")
    assert "CMAKE_HIP_ARCHITECTURES=gfx90a" in text
    recipe = tmp_path / "wrong-arch.toml"
    recipe.write_text(text)
    env = env_for(tmp_path, HIP_DEVICE_LIB_PATH=device_libs, HIPCXX=CLANG, CMAKE_POLICY_VERSION_MINIMUM="3.5")
    code, err, summary = run_cmake_example(tmp_path, source, "gfx942", "run", recipe=recipe, env=env)
    assert code == 1, err
    diagnoses = [a["diagnosis"] for a in summary["attempts"]]
    # Every attempt builds and links, and every time verification finds gfx90a only.
    assert len(diagnoses) >= 2 and {d["category"] for d in diagnoses} == {"arch_mismatch"}
    assert all(a["exit_code"] == 0 for a in summary["attempts"])
    assert diagnoses[0]["signature"] == "artifact-missing-arch"
    assert diagnoses[0]["text"] == "build/libhipcmake.so has no code object for gfx942 (found: gfx90a)"
    assert summary["attempts"][0]["remedies"] == ["clean_build"]


@pytest.mark.clang19
@pytest.mark.hip
@pytest.mark.integration
def test_a_stale_gfx90a_build_dir_then_gfx942_is_caught_and_cleaned(
        tmp_path: Path, source: Path, device_libs: str) -> None:
    env = env_for(tmp_path, HIP_DEVICE_LIB_PATH=device_libs, HIPCXX=CLANG, CMAKE_POLICY_VERSION_MINIMUM="3.5")
    code, err, _ = run_cmake_example(tmp_path, source, "gfx90a", "run-90a", env=env)
    assert code == 0, err
    code, err, summary = run_cmake_example(tmp_path, source, "gfx942", "run-942", env=env)
    assert code == 0, err
    first, second = summary["attempts"]
    # The build step exited 0 with the old objects: only verification saw it.
    assert first["exit_code"] == 0 and first["diagnosis"]["category"] == "arch_mismatch"
    assert "no code object for gfx942 (found: gfx90a)" in first["diagnosis"]["text"]
    assert first["remedies"] == ["clean_build"] and second["diagnosis"] is None
    assert _events(tmp_path / "run-942", "artifacts.verified")[-1]["ok"]


@pytest.mark.hip
@pytest.mark.integration
def test_hipcc_52_alone_is_still_refused_for_gfx942_with_the_clang_route_in_the_advice(
        tmp_path: Path, source: Path) -> None:
    code, err, summary = run_cmake_example(tmp_path, source, "gfx942", "run")
    assert code == 4, err
    check = _preflight(tmp_path / "run", "arch gfx942")
    assert check["status"] == "fail" and "invalid target ID 'gfx942'" in check["detail"] and "hipcc" in check["detail"]
    assert summary["attempts"][0]["diagnosis"]["category"] == "unsupported_arch"
    if shutil.which("clang++-19"):
        assert "--hip-compiler /usr/bin/clang++-19" in _events(tmp_path / "run", "failure.diagnosed")[0]["todo"]


@pytest.mark.clang19
@pytest.mark.hip
@pytest.mark.integration
def test_clang19_without_gfx942_device_library_is_unsupported_arch_in_preflight(
        tmp_path: Path, source: Path) -> None:
    debian = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"   # Debian 12's: no oclc_isa_version_942.bc
    env = env_for(tmp_path, HIP_DEVICE_LIB_PATH=debian, HIPCXX=CLANG)
    code, err, summary = run_cmake_example(tmp_path, source, "gfx942", "run", env=env)
    assert code == 4, err
    check = _preflight(tmp_path / "run", "arch gfx942")
    assert "cannot find ROCm device library for gfx942" in check["detail"]
    diagnosis = summary["attempts"][0]["diagnosis"]
    assert diagnosis["category"] == "unsupported_arch"
    todo = _events(tmp_path / "run", "failure.diagnosed")[0]["todo"]
    assert f"HIP_DEVICE_LIB_PATH={debian} has no oclc_isa_version_942.bc" in todo


@pytest.mark.clang19
@pytest.mark.hip
@pytest.mark.integration
def test_preflight_probe_follows_the_clang_and_hip_device_lib_path(device_libs: str) -> None:
    compiler = hipcompiler.resolve(CLANG, {"PATH": "/usr/bin"}, "/usr/bin/hipcc")
    assert compiler is not None and compiler.llvm_bin == LLVM19
    env = {**os.environ, "HIP_PLATFORM": "amd"}
    env.pop("HIP_DEVICE_LIB_PATH", None)
    # No device libraries found at all (none on Debian's default search path for this clang): a missing
    # part of the toolchain, whatever the arch.
    nolib, = preflight.check_arch_supported("/usr/bin/hipcc", Targets.parse("gfx942"), preflight.Probing(env=env),
                                           compiler=compiler)
    assert nolib.failed and "device library for" not in nolib.detail, nolib
    assert nolib.category == "toolchain_missing"
    assert "export HIP_DEVICE_LIB_PATH=DIR" in nolib.todo
    # Debian's device libraries, which have no gfx942 ISA file: the toolchain as installed lacks the arch.
    debian = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"
    old, = preflight.check_arch_supported("/usr/bin/hipcc", Targets.parse("gfx942"),
                                         preflight.Probing(env={**env, "HIP_DEVICE_LIB_PATH": debian}),
                                         compiler=compiler)
    assert old.failed and "device library for gfx942" in old.detail, old
    assert old.category == "unsupported_arch"
    ok = preflight.check_arch_supported("/usr/bin/hipcc", Targets.parse("gfx942,gfx90a"),
                                        preflight.Probing(env={**env, "HIP_DEVICE_LIB_PATH": device_libs}),
                                        compiler=compiler)
    assert [c.status for c in ok] == ["ok", "ok"]
    assert ok[0].detail == f"clang 19.1.7 (HIP compiler {CLANG}) compiles for gfx942"


def _doctor(tmp: Path, **extra: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run([ROCMBUILD, "doctor", "--arch", "gfx942", "--json"], env=env_for(tmp, **extra),
                          capture_output=True, text=True, timeout=300)
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.clang19
@pytest.mark.hip
@pytest.mark.integration
def test_doctor_gfx942_passes_with_clang19_and_fails_with_hipcc52(tmp_path: Path, device_libs: str) -> None:
    code, report = _doctor(tmp_path, HIPCXX=CLANG, HIP_DEVICE_LIB_PATH=device_libs)
    assert code == 0, report["checks"]
    assert report["hip_compiler"]["path"] == CLANG and report["hip_compiler"]["origin"] == "$HIPCXX"
    assert report["hip_device_lib_path"] == device_libs
    assert {c["name"]: c["status"] for c in report["checks"]}["arch gfx942"] == "ok"

    code, report = _doctor(tmp_path)
    assert code == 1
    assert report["hip_compiler"]["kind"] == "hipcc"
    arch = next(c for c in report["checks"] if c["name"] == "arch gfx942")
    assert arch["status"] == "fail" and "invalid target ID" in arch["detail"]
    assert "--hip-compiler /usr/bin/clang++-19" in arch["todo"]


@pytest.mark.clang19
@pytest.mark.hip
@pytest.mark.integration
def test_plan_shows_the_compiler_its_llvm_and_the_device_libs(tmp_path: Path, source: Path, device_libs: str) -> None:
    env = env_for(tmp_path, HIP_DEVICE_LIB_PATH=device_libs)
    proc = subprocess.run([ROCMBUILD, "plan", str(RECIPE), "--arch", "gfx942", "--source", str(source),
                           "--hip-compiler", "clang++-19", "--json"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout.splitlines()[-1])
    assert plan["hip_compiler"] == {"path": CLANG, "kind": "clang", "origin": "--hip-compiler", "llvm_bin": LLVM19}
    assert plan["hip_device_lib_path"] == device_libs
    assert plan["env"]["HIPCXX"] == CLANG and plan["env"]["PATH"].startswith(LLVM19 + ":")
    text = subprocess.run([ROCMBUILD, "plan", str(RECIPE), "--arch", "gfx942", "--source", str(source),
                           "--hip-compiler", "clang++-19"], env=env, capture_output=True, text=True, timeout=300)
    assert f"HIP compiler {CLANG} (--hip-compiler)" in text.stdout + text.stderr
    assert f"HIP_DEVICE_LIB_PATH={device_libs}" in text.stdout + text.stderr


def test_a_clang_hip_compiler_is_cached_through_the_cmake_launcher_not_the_hipcc_wrapper(tmp_path: Path) -> None:
    from rocmbuild.toolchain.cache import CompilerCache

    env = {**env_for(tmp_path), "HIPCXX": "/usr/bin/clang++"}
    cache = CompilerCache.for_build(env=env, source=tmp_path, remote=None, hip_compiler_is_clang=True)
    assert cache is not None, "ccache is installed by make toolchain"
    variables = dict(cache.variables)
    assert "HIP_CLANG_PATH" not in variables            # hipcc's wrapper would wrap a compiler nobody runs
    launcher = Path(variables["CMAKE_HIP_COMPILER_LAUNCHER"])  # the job-limit shim, which runs ccache
    assert launcher.name == "rocmbuild-launch-ccache" and str(cache.tool.path) in launcher.read_text()
    assert cache.device_compiles_cached and cache.describe()["device_compiles_cached"]


def test_device_library_and_cmake4_shapes_are_diagnosed_with_their_own_advice() -> None:
    from rocmbuild.diagnosis.advice import next_steps
    from rocmbuild.diagnosis.classifier import classify

    log = ["[1/3] Building HIP object CMakeFiles/k.dir/k.hip.o",
           "FAILED: CMakeFiles/k.dir/k.hip.o",
           "clang++-19: error: cannot find ROCm device library for gfx942; provide its path via '--rocm-path' or "
           "'--rocm-device-lib-path', or pass '-nogpulib' to build without ROCm device library"]
    found = classify(log)
    assert (found.category, found.signature, found.line, found.fields) == (
        "unsupported_arch", "hip-device-library-missing-for-arch", 3, {"arch": "gfx942"})
    advice = next_steps(found.summary_json())
    assert "no bitcode for gfx942" in advice and "HIP_DEVICE_LIB_PATH" in advice

    cmake = ["CMake Error at /usr/lib/x86_64-linux-gnu/cmake/hip/hip-config.cmake:20 (cmake_minimum_required):",
             "  Compatibility with CMake < 3.5 has been removed from CMake.", "",
             "  Or, add -DCMAKE_POLICY_VERSION_MINIMUM=3.5 to try configuring anyway."]
    found = classify(cmake)
    assert (found.signature, found.line, found.retryable, found.remedies) == (
        "cmake4-policy-minimum-removed", 2, True, ("set_cmake_policy_minimum",))
    assert "CMAKE_POLICY_VERSION_MINIMUM=3.5" in next_steps(found.summary_json())


@pytest.mark.integration
def test_doctor_reports_a_broken_hipcxx_as_a_failed_check(tmp_path: Path) -> None:
    code, report = _doctor(tmp_path, HIPCXX=str(tmp_path / "clang++-gone"))
    assert code == 1
    check = next(c for c in report["checks"] if c["name"] == "HIP compiler")
    assert check["status"] == "fail" and "is not an executable program" in check["detail"]
    assert report["hip_compiler"] is None


@pytest.mark.clang19
@pytest.mark.hip
@pytest.mark.integration
def test_unset_hip_device_lib_path_defaults_to_the_make_toolchain_dir_on_debian(
        tmp_path: Path, source: Path, device_libs: str) -> None:
    cache = str(Path(device_libs).parents[2])           # the XDG_CACHE_HOME the fixture built it in
    code, report = _doctor(tmp_path, HIPCXX=CLANG, XDG_CACHE_HOME=cache)
    assert code == 0, report["checks"]
    assert report["hip_device_lib_path"] == device_libs
    assert "make toolchain" in report["hip_device_lib_path_origin"]

    def planned(**extra: str) -> dict[str, Any]:
        proc = subprocess.run([ROCMBUILD, "plan", str(RECIPE), "--arch", "gfx942", "--source", str(source),
                               "--json"], env=env_for(tmp_path, HIPCXX=CLANG, XDG_CACHE_HOME=cache, **extra),
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return dict(json.loads(proc.stdout.splitlines()[-1]))

    assert planned()["env"]["HIP_DEVICE_LIB_PATH"] == device_libs
    # The caller's own choice is kept (here Debian's bitcode, which then fails preflight: exit 4).
    proc = subprocess.run([ROCMBUILD, "plan", str(RECIPE), "--arch", "gfx90a", "--source", str(source), "--json"],
                          env=env_for(tmp_path, HIPCXX=CLANG, XDG_CACHE_HOME=cache, HIP_DEVICE_LIB_PATH="/x/bc"),
                          capture_output=True, text=True, timeout=300)
    assert json.loads(proc.stdout.splitlines()[-1])["hip_device_lib_path"] == "/x/bc"


def test_no_default_device_libs_for_a_real_rocm_or_hipcc(tmp_path: Path) -> None:
    clang = hipcompiler.HipCompiler("/opt/rocm/lib/llvm/bin/clang++", "clang", "$HIPCXX", "/opt/rocm/lib/llvm/bin")
    assert hipcompiler.default_device_libs(clang, "opt", {}) is None          # ROCm's own bitcode must win
    hipcc = hipcompiler.HipCompiler("/usr/bin/hipcc", "hipcc", "hipcc", None)
    assert hipcompiler.default_device_libs(hipcc, "system", {}) is None
    assert hipcompiler.default_device_libs(clang, "system", {"HIP_DEVICE_LIB_PATH": "/mine"}) is None
