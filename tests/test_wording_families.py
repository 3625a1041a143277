"""Wording families taken from the tools' sources, fields that decide, and how sure a diagnosis is.

Each fixture is written for a failure's shape (the tool's own wording, as its source prints it), not
copied from a log; the comment names threads the shape generalises.  Every test checks the decisive
line as well as the category.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.diagnosis.classifier import Classifier, Diagnosis, classify
from rocmbuild.errors import CatalogueError
from rocmbuild.process.noise import clean_line

CAT = load_catalogue(user=False)


def run(text: str, host: str = "") -> Diagnosis:
    return classify(text.strip("\n").split("\n"), catalogue=CAT, host=host)


def read_as(log: str, category: str, signature: str, line: int | None = None) -> Diagnosis:
    """The diagnosis of ``log``, asserted to be ``category`` by ``signature`` (on ``line`` when given)."""
    got = run(log)
    have = (got.category, got.signature, got.line if line is not None else None)
    assert have == (category, signature, line), got
    return got


# ------------------------------------------------------------------- the HIP runtime's own error table

# hipamd/src/hip_error.cpp's strings reach logs through whatever macro the (ported) code uses:
# ggml's CUDA_CHECK prints "CUDA error <n> at <file>:<line>: <string>" on ROCm (ggml-org/llama.cpp
# threads), PyTorch "HIP error: <string>" (pytorch/pytorch#103973), HIP_CHECK wrappers the error's name.
@pytest.mark.parametrize("line", [
    "CUDA error 98 at /src/ggml/ggml-cuda.cu:2112: invalid device function",
    "ROCm error: invalid device function",
    "  hipLaunchKernel failed -> hipErrorInvalidDeviceFunction (kernels.hip:41)",
    "RuntimeError: HIP error: device kernel image is invalid",
    "terminate called after throwing an instance of 'c10::Error'\n"
    "  what():  CUDA error: no kernel image is available for execution on the device",
])
def test_hip_runtime_error_strings_through_any_macro_are_arch_mismatch(line: str) -> None:
    got = run("[ 41%] running the test\n" + line)
    assert got.category == "arch_mismatch", got
    assert got.line is not None and got.line >= 2
    assert got.confidence == "high"


def test_other_hip_runtime_errors_are_not_an_arch_gap() -> None:
    # Same table, other rows: memory and launch failures say nothing about code objects.
    got = run("CUDA error 2 at ggml-cuda.cu:900: out of memory\nHIP error: an illegal memory access was encountered")
    assert got.category != "arch_mismatch"


# ---------------------------------------------------------------------------------- GCC and LLVM texts

def test_gcc_driver_names_the_signal_segfault_is_a_crash_killed_is_oom() -> None:
    # gcc.cc: "%s signal terminated program %s" with strsignal(); only SIGKILL is the OOM killer
    # (rocm-arch/rocm-arch#309 and google/or-tools#4229 are the Killed form; the other signals crash).
    crash = run("c++: internal compiler error: Segmentation fault signal terminated program cc1plus")
    assert crash.category == "compiler_crash"
    oom = run("g++: fatal error: Killed signal terminated program cc1plus")
    assert oom.category == "out_of_memory"


def test_a_localised_sigkill_in_an_ice_is_oom_not_a_crash() -> None:
    # glibc translates strsignal(SIGKILL); GCC prints it inside its ICE banner
    # (stratisproject/stratisX#42: French "Processus arrêté"), then the bug-report banner.
    got = run("g++: internal compiler error: Processus arrêté (program cc1plus)\n"
              "Please submit a full bug report,\nwith preprocessed source if appropriate.")
    assert (got.category, got.line) == ("out_of_memory", 1)


def test_gcc_bug_report_banner_alone_is_a_crash() -> None:
    # gcc/diagnostic.cc's banner when the ICE line itself was not pasted.
    got = run("make[2]: Leaving directory '/b'\n"
              "Please submit a full bug report, with preprocessed source (by using -freport-bug).\n"
              "See <file:///usr/share/doc/gcc-13/README.Bugs> for instructions.")
    assert (got.category, got.line) == ("compiler_crash", 2)


@pytest.mark.parametrize("line", [
    "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.shfl.sync.bfly.i32",    # lum3on/comfyui_HiDream-Sampler#102
    "LLVM ERROR: Cannot select: intrinsic %llvm.amdgcn.mfma.f32.16x16x16f16",  # MFMA on a gfx without it
])
def test_instruction_the_target_lacks_is_unsupported_arch_not_a_crash(line: str) -> None:
    got = run("[12/80] Building HIP object k.o\n" + line)
    assert (got.category, got.line) == ("unsupported_arch", 2), got


# ------------------------------------------------------------------------------- headers and products

@pytest.mark.parametrize(("line", "library", "category"), [
    # a ROCm library's header: its -dev package is not installed (ROCm/hip#68, ROCm/rccl#1161); GCC's wording
    ("src/gemm.cpp:4:10: fatal error: hipblas/hipblas.h: No such file or directory", "hipblas", "missing_library"),
    # HIP's own header: a ROCm too old for the code (vllm-project/vllm#1313); clang's wording
    ("/opt/rocm-5.6.0/include/hip/hip_bf16.h:30:10: fatal error: 'hip/amd_detail/amd_hip_bf16.h' file not found",
     "hip", "toolchain_missing"),
])
def test_a_missing_rocm_header_is_the_sdk_or_a_library_by_whose_it_is(line: str, library: str, category: str) -> None:
    got = run("In file included from src/x.cpp:1:\n" + line + "\ncompilation terminated.")
    assert (got.category, got.line, got.fields.get("library")) == (category, 2, library)
    assert "install" in got.advice and not got.retryable


def test_a_projects_own_missing_header_is_not_a_rocm_component() -> None:
    got = run("src/x.cpp:1:10: fatal error: myproj/hip/kernels.h: No such file or directory")
    assert got.category != "toolchain_missing"


def test_a_per_arch_object_never_produced_is_unsupported_arch() -> None:
    # ROCm/TheRock#154 (hipBLASLt ops for gfx1151), clang's err_drv_no_such_file wording.
    got = run("[3/37] Compiling source kernels\n"
              "clang++: error: no such file or directory: '/b/build_tmp/ops/A_H_S_256_4_gfx1151.o'")
    assert (got.category, got.fields.get("arch"), got.line) == ("unsupported_arch", "gfx1151", 2)


# ------------------------------------------------------------------------------------ linker and loader

@pytest.mark.parametrize("log", [
    # binutils' DSO-missing pair (mapnik/mapnik#2771, xtreme8000/BetterSpades#67)
    "/usr/bin/ld: libfoo.a(a.o): undefined reference to symbol 'dlclose@@GLIBC_2.2.5'\n"
    "/usr/bin/ld: /lib/x86_64-linux-gnu/libdl.so.2: error adding symbols: DSO missing from command line",
    # libdl/libm not linked (janestreet/magic-trace#198)
    "tool.c:(.text+0x12): undefined reference to `dlsym'\ncollect2: error: ld returned 1 exit status",
    # binutils' Spanish translation, OpenMP runtime not linked (OPALX-project/OPAL#1205)
    "B.cpp:(.text+0x8): referencia a `GOMP_parallel' sin definir\ncollect2: error: ld devolvió el estado de salida 1",
])
def test_link_time_symbol_families_are_missing_library(log: str) -> None:
    got = run(log)
    assert (got.category, got.line) == ("missing_library", 1), got


def test_ldd_not_found_is_missing_runtime_library() -> None:
    # glibc rtld's trace wording (ROCm/ROCm-OpenCL-Runtime#42)
    got = run("$ ldd libamdocl64.so\n\tlibc.so.6 => /lib/libc.so.6 (0x7f)\n\tlibhsa-runtime64.so.1 => not found")
    assert (got.category, got.fields.get("library"), got.line) == (
        "missing_runtime_library", "libhsa-runtime64.so.1", 3)


@pytest.mark.parametrize(("log", "line"), [
    # a ctypes binding newer than its library (ROCm/amdsmi#186)
    ("Traceback (most recent call last):\n"
     "  File \"/usr/lib64/python3.9/ctypes/__init__.py\", line 387, in __getattr__\n"
     "    func = self.__getitem__(name)\n"
     "AttributeError: /opt/rocm-7.0.1/lib/libamd_smi.so: undefined symbol: amdsmi_new_call", 4),
    # a C-API symbol of another Python (pytorch/pytorch#14931)
    ("python: symbol lookup error: /v/torch/lib/libtorch_python.so: undefined symbol: PySlice_Unpack", 1),
])
def test_symbol_skew_between_binding_and_library_is_abi_mismatch(log: str, line: int) -> None:
    got = run(log)
    assert (got.category, got.line) == ("abi_mismatch", line), got


def test_a_linker_line_inside_a_traceback_is_not_a_frames_source_line() -> None:
    # A JIT link printed into the middle of a Python traceback (pytorch/pytorch#103417).
    got = run('  File "/x/torch/_inductor/debug.py", line 239, in inner\n'
              "/usr/bin/ld: cannot find -lcuda: No such file or directory\n"
              "collect2: error: ld returned 1 exit status\n    return fn(*args, **kwargs)")
    assert (got.category, got.fields.get("library"), got.line) == ("missing_library", "cuda", 2)


# ----------------------------------------------------------------------------- fields decide: the host

CUDA_LIB = ("Traceback (most recent call last):\n"
            "  File \"/v/lib/python3.10/site-packages/torch/__init__.py\", line 176, in _load_global_deps\n"
            "    ctypes.CDLL(lib_path, mode=ctypes.RTLD_GLOBAL)\n"
            "OSError: libcudart.so.12: cannot open shared object file: No such file or directory")


def test_a_cuda_library_missing_on_an_unknown_host_is_a_load_path_problem() -> None:
    # pytorch/pytorch#131284, shouxieai/tensorRT_Pro#171: CUDA boxes, nothing in the log says ROCm.
    got = run(CUDA_LIB)
    assert (got.category, got.line) == ("missing_runtime_library", 4)


def test_a_cuda_library_missing_on_a_rocm_host_is_the_wrong_package() -> None:
    # The same line where the log shows ROCm (bitsandbytes on ROCm) or the build knows its host.
    shown = run("torch.__version__  = 2.4.0+rocm6.1\n" + CUDA_LIB)
    assert (shown.category, shown.line) == ("toolchain_missing", 5)
    known = run(CUDA_LIB, host="rocm")
    assert known.category == "toolchain_missing"


def test_a_cuda_torch_library_missing_is_an_extension_built_for_another_torch() -> None:
    # xuhuisheng/rocm-gfx803#23 (torchaudio for a CUDA torch on a ROCm torch)
    got = run("OSError: libc10_cuda.so: cannot open shared object file: No such file or directory")
    assert (got.category, got.fields.get("library")) == ("abi_mismatch", "libc10_cuda.so")


# --------------------------------------------------------------------------- CMake, pip, nvcc templates

@pytest.mark.parametrize("log", [
    # CMakeDetermine<LANG>Compiler.cmake (cuda_memtest#45, VideoProcessingFramework#16, torch-int#25)
    "CMake Error at CMakeLists.txt:43 (enable_language):\n  No CMAKE_HIP_COMPILER could be found.\n",
    "CMake Error at /usr/share/cmake/Modules/CMakeDetermineCUDACompiler.cmake:25 (message):\n"
    "  Could not find compiler set in environment variable CUDACXX:\n  /usr/local/cuda/bin/nvcc.",
])
def test_cmake_cannot_find_a_languages_compiler_is_toolchain_missing(log: str) -> None:
    got = run(log)
    assert (got.category, got.line) == ("toolchain_missing", 2), got


def test_pep517_backend_unavailable_is_a_missing_python_dependency() -> None:
    # pypa/build's wording through a Windows console that shows ESC as ← (pypa/packaging-problems#482)
    assert clean_line("←[91mERROR←[0m Backend 'setuptools.build_meta' is not available.") == \
        "ERROR Backend 'setuptools.build_meta' is not available."
    got = run("←[91mERROR←[0m Backend 'setuptools.build_meta' is not available.")
    assert (got.category, got.fields.get("module")) == ("missing_python_dependency", "setuptools.build_meta")


@pytest.mark.parametrize("line", [
    "nvcc fatal   : Unsupported gpu architecture 'compute_20'",     # rodschulz/BPA#6
    "nvcc fatal   : Value 'sm_35' is not defined for option 'gpu-architecture'",
    "Tensile::FATAL: Architecture gfx90c not supported",           # lamikr/rocm_sdk_builder#112
])
def test_arch_names_a_toolchain_rejects_are_unsupported_arch(line: str) -> None:
    got = run("-- Configuring done\n" + line)
    assert (got.category, got.line) == ("unsupported_arch", 2), got


def test_clang_without_hip_rejecting_offload_arch_is_toolchain_missing() -> None:
    # clang's err_drv_unsupported_opt (ROCm/hipfort#12: a distro clang-10)
    got = run("clang-10: error: unsupported option '--offload-arch=gfx900'")
    assert (got.category, got.fields.get("option")) == ("toolchain_missing", "--offload-arch")


# ------------------------------------------------------------------------------------------ downloads

@pytest.mark.parametrize(("line", "status"), [
    ("urllib.error.HTTPError: HTTP Error 409: Conflict", "409"),                              # CPython urllib
    ("requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://h/x.tgz", "404"),  # requests
    ("2025-01-02 10:00:00 ERROR 410: Gone.", "410"),                                           # GNU wget
    ("  Caused by: HTTP status client error (403 Forbidden) for url (https://h/x.whl)", "403"),  # uv/reqwest
    ("curl: (22) The requested URL returned error: 404", "404"),                                # curl
])
def test_gone_for_good_in_any_clients_words_is_never_retried(line: str, status: str) -> None:
    got = run("-- Downloading x\n" + line)
    assert (got.category, got.signature, got.fields.get("status")) == ("network", "download-gone", status), got
    assert not got.retryable and got.remedies == ()


@pytest.mark.parametrize("log", [
    "CMake Error at cmake/aotriton.cmake:40 (file):\n  file DOWNLOAD HASH mismatch\n\n"
    "    for file: [/src/build/aotriton.tar.gz]",
    "  ╰─▶ Hash mismatch for `triton==3.5.0`",
    "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.",
])
def test_a_hash_mismatch_is_fetched_again_once_never_waited_out(log: str) -> None:
    got = run(log)
    assert got.category == "network" and got.retryable
    assert got.remedies == ("refetch_download",), "one fresh fetch, no wait_and_retry"


def test_the_cmake_hash_mismatch_names_the_partial_file() -> None:
    got = run("CMake Error at a.cmake:4 (file):\n  file DOWNLOAD HASH mismatch\n\n    for file: [/src/build/a.tgz]")
    assert got.fields.get("file") == "/src/build/a.tgz"


def test_urllib3s_last_retry_is_a_network_failure() -> None:
    # pypi/warehouse#3395: every retry shown, the last with total=0
    retry = ("  Retrying (Retry(total={n}, connect=None, read=None, redirect=None, status=None)) after connection "
             "broken by 'SSLError(SSLError(1, '[SSL: CERTIFICATE_VERIFY_FAILED]'))': /simple/pip/")
    got = run("Collecting pip\n" + "\n".join(retry.format(n=n) for n in (2, 1, 0)))
    assert (got.category, got.line) == ("network", 4)


# ---------------------------------------------------------------------------------------- confidence

def test_a_specific_match_is_high_confidence_and_says_so_in_json() -> None:
    got = run("/usr/bin/ld: cannot find -lhipblas")
    assert got.confidence == "high"
    assert json.loads(json.dumps(got.to_json()))["confidence"] == "high"
    assert got.summary_json()["confidence"] == "high", "the attempt's diagnosis carries it too"


def test_a_fallback_alone_is_medium_confidence() -> None:
    got = run("Killed")
    assert (got.category, got.confidence) == ("out_of_memory", "medium")


def test_nothing_matched_is_unknown_with_low_confidence() -> None:
    got = run("src/a.cpp:3:1: error: expected ';' after class definition")
    assert (got.category, got.confidence) == ("unknown", "low")


def test_a_tie_between_specific_readings_on_two_lines_is_unknown() -> None:
    # Resource-free ranks, same priority band, different lines, different categories: a missing header
    # of HIP itself (toolchain_missing, 79) and a library's arch check (unsupported_arch, 79).
    got = run("src/x.cpp:1:10: fatal error: hip/hip_fp16.h: No such file or directory\n"
              "RuntimeError: gfx1010 is not a supported target")
    assert (got.category, got.confidence) == ("unknown", "low")
    assert {c.category for c in got.candidates} == {"toolchain_missing", "unsupported_arch"}
    assert {c.line for c in got.candidates} == {1, 2}


def test_a_refinement_on_the_same_line_is_not_a_tie() -> None:
    # conda's own libstdc++ behind a GLIBCXX error: the specific reading refines the generic one.
    got = run("ImportError: /home/u/miniconda3/envs/e/lib/libstdc++.so.6: version `GLIBCXX_3.4.30' not found "
              "(required by /x/_C.so)")
    assert got.category != "unknown" and got.confidence == "high"


def test_a_live_classifier_knows_its_host() -> None:
    classifier = Classifier(CAT, host="rocm")
    classifier.on_line(1, "ImportError: libcublas.so.12: cannot open shared object file: No such file or directory")
    assert classifier.finish().category == "toolchain_missing"


def test_a_library_only_for_another_cpu_is_an_arch_mismatch() -> None:
    # binutils' "skipping incompatible" before "cannot find" (esmini on aarch64, a nixpkgs cross build
    # whose host ld skipped the aarch64 glib): the library exists, for another architecture.
    got = run("/usr/bin/ld: skipping incompatible /x/lib/libosg.a when searching for -losg\n"
              "/usr/bin/ld: cannot find -losg")
    assert (got.category, got.fields.get("library"), got.line) == ("arch_mismatch", "osg", 1)


def test_clang_without_its_linker_is_toolchain_missing() -> None:
    # clang's driver wording for a tool it cannot run (rocm-arch hsa-rocr builds without lld).
    got = run('clang-14: error: unable to execute command: Executable "ld.lld" doesn\'t exist!\n'
              "clang-14: error: ld.lld command failed with exit code 1 (use -v to see invocation)")
    assert (got.category, got.fields.get("tool"), got.line) == ("toolchain_missing", "ld.lld", 1)


def test_spack_checksum_failures_are_left_unknown() -> None:
    # spack/spack#14340 and spack/spack#5613: the same ChecksumError was an upstream re-rolled tarball
    # in one thread and a flaky mirror in the other; most are the former, which no retry fixes.
    got = run("==> Error: ChecksumError: sha256 checksum failed for /tmp/spack-stage/x-1.0.tar.gz")
    assert got.category == "unknown"


def test_a_stale_precompiled_header_is_a_stale_build() -> None:
    # clang's err_fe_pch_file_modified (a TrinityCore build after a system header update; a spectre
    # build after a source moved): the PCH predates a file it was built from.
    got = run("In file included from <built-in>:1:\n"
              "fatal error: file '/usr/include/asm/types.h' has been modified since the precompiled header "
              "'/b/pch.h.gch' was built")
    assert (got.category, got.line) == ("stale_build", 2)


def test_curl_status_through_cmake_download_is_network() -> None:
    # curl_easy_strerror's words as CMake's file(DOWNLOAD) STATUS prints them (vcpkg behind a proxy;
    # a neovim third-party download that could not connect).
    got = run('-- Downloading https://h/x.tar.gz... Failed. Status: 35;"SSL connect error"\n'
              "CMake Error at scripts/cmake/vcpkg_download_distfile.cmake:156 (message):")
    assert (got.category, got.fields.get("code"), got.line) == ("network", "35", 1)


def test_a_container_step_killed_with_137_is_oom() -> None:
    # docker's "returned a non-zero code: 137" (github/semantic's cabal build, Docker Desktop's memory cap)
    got = run("Step 14/20 : RUN cabal v2-build\n"
              "The command '/bin/sh -c cabal v2-build' returned a non-zero code: 137")
    assert (got.category, got.line) == ("out_of_memory", 2)


@pytest.mark.parametrize(("log", "category"), [
    # runc's ENOEXEC for an image of another CPU (docker threads on arm64 hosts running amd64 images)
    ('standard_init_linux.go:178: exec user process caused "exec format error"', "arch_mismatch"),
    # node's NODE_MODULE_VERSION check (electron apps with addons built for the system node)
    ("Error: The module '/x/binding.node'\nwas compiled against a different Node.js version using\n"
     "NODE_MODULE_VERSION 57. This version of Node.js requires\nNODE_MODULE_VERSION 64.", "abi_mismatch"),
    # V8's heap limit during a webpack build
    ("<--- JS stacktrace --->\nFATAL ERROR: Ineffective mark-compacts near heap limit Allocation failed - "
     "JavaScript heap out of memory", "out_of_memory"),
])
def test_runtime_families_outside_the_gpu_stack(log: str, category: str) -> None:
    assert run(log).category == category


# ------------------------------------------------------------------ CMake's compiler against what was asked for
# CMake Modules/CMakeDetermineCompiler.cmake: "The CMAKE_<LANG>_COMPILER:\n\n  <path>\n\n is not a full path to an
# existing compiler tool." dotnet/runtime#90509 (a cached MSVC path outdated by an update),
# microsoft/vscode-cmake-tools#3515 (a build dir moved between machines), opentibiabr/remeres-map-editor#67.

def _compiler_gone(cached: str, asked: str | None = None) -> Diagnosis:
    configure = [f"cmake -S . -B build -G Ninja -DCMAKE_CXX_COMPILER:FILEPATH={asked}"] if asked else []
    return run("\n".join([*configure, "CMake Error at CMakeLists.txt:6 (project):", "  The CMAKE_CXX_COMPILER:", "",
                          f"    {cached}", "", "  is not a full path to an existing compiler tool.", "",
                          "  Tell CMake where to find the compiler by setting either the environment"]))


def test_a_cached_compiler_the_build_no_longer_asks_for_is_a_stale_cache() -> None:
    got = _compiler_gone("F:/build/env/cb6d33c/Scripts/cl.exe", asked="/F/build/env/8ee1771/Scripts/cl.exe")
    assert (got.category, got.signature) == ("stale_build", "cmake-compiler-path-gone")
    assert got.fields == {"language": "CXX", "compiler": "F:/build/env/cb6d33c/Scripts/cl.exe"}
    assert got.remedies[0] == "clean_build"


def test_the_very_compiler_the_build_asks_for_missing_is_a_missing_toolchain() -> None:
    got = _compiler_gone("F:/build/env/8ee1771/Scripts/cl.exe", asked="/F/build/env/8ee1771/Scripts/cl.exe")
    assert (got.category, got.signature, got.retryable) == ("toolchain_missing", "cmake-compiler-path-gone", False)
    assert "toolchain" in got.advice and "CMakeCache" not in got.advice, "the category's advice, not the cache's"


def test_with_no_request_in_view_the_cache_outlived_its_compiler() -> None:
    assert _compiler_gone("/home/u/envs/old/bin/x86_64-conda-linux-gnu-c++").category == "stale_build"


def test_a_bare_compiler_name_not_on_path_is_a_missing_toolchain() -> None:
    got = run("CMake Error at CMakeLists.txt:2 (project):\n  The CMAKE_CXX_COMPILER:\n\n    clang++\n\n"
              "  is not a full path and was not found in the PATH.")
    assert (got.category, got.signature) == ("toolchain_missing", "cmake-language-compiler-not-found")


# ------------------------------------------------------------------ round 2: families from the b09/b10 misses
# Each case: a few written lines in the shape of the cited public threads; the category, the signature and
# the decisive line are asserted.

@pytest.mark.parametrize(("log", "category", "signature", "line"), [
    # bitsandbytes cextension.py (bitsandbytes-foundation/bitsandbytes#1190, #1559): the runtime-versioned name first
    ("Could not find the bitsandbytes ROCm binary at PosixPath('/s/bitsandbytes/libbitsandbytes_rocm62.so')\n"
     "Could not load bitsandbytes native library: /s/bitsandbytes/libbitsandbytes_cpu.so: cannot open shared object "
     "file: No such file or directory\nOSError: /s/bitsandbytes/libbitsandbytes_cpu.so: cannot open shared object file:"
     " No such file or directory", "abi_mismatch", "runtime-versioned-binary-missing", 1),
    # composable_kernel ck.hpp (ROCm/composable_kernel#775, ROCm/TheRock#4768)
    ("[12/900] Building HIP object x.hip.o\n/src/ck/include/ck/utility/amd_buffer_addressing.hpp:33:48: error: use of "
     "undeclared identifier 'CK_BUFFER_RESOURCE_3RD_DWORD'\n1 error generated when compiling for gfx1012.",
     "unsupported_arch", "ck-arch-not-in-config", 2),
    # curl url.c / CMake file(DOWNLOAD) status (spack/spack#236, avast/retdec#214): not network, never retried
    ("CMake Error at dl.cmake:27 (message):\n  error: downloading 'https://h/x.zip' failed\n\n    status_code: 1\n"
     "    status_string: \"Unsupported protocol\"\n    log: Protocol \"https\" not supported or disabled in libcurl",
     "toolchain_missing", "curl-protocol-unsupported", 5),
    # Go net (golang/go#34548, golang/go#65662)
    ("go: downloading example.com/m v1.0.0\ngo: example.com/m@v1.0.0: Get \"https://proxy.golang.org/x\": dial tcp "
     "142.250.1.1:443: i/o timeout", "network", "go-net-dial-failed", 2),
    # apt methods/connect.cc (docker-library/official-images#1736, rui314/mold#1145)
    ("Ign:1 http://archive.ubuntu.com/ubuntu jammy InRelease\nErr:1 http://archive.ubuntu.com/ubuntu jammy InRelease\n"
     "  Temporary failure resolving 'archive.ubuntu.com'", "network", "connection-failed", 3),
    # LLVM machine verifier (ROCm/composable_kernel#1707, ROCm/rocm-systems#3058)
    ("error: Illegal instruction detected: Operand has incorrect register class.\nrenamable $vgpr0 = V_MOV_B32_e32 0"
     "\n1 error generated when compiling for gfx1100.", "compiler_crash", "llvm-machine-verifier", 1),
    # GNU make exec ENOENT of a hard-coded compiler (a Makefile's /usr/bin/hipcc)
    ("/usr/bin/hipcc -std=c++14 -c ops.cu -o ops.o\nmake: /usr/bin/hipcc: No such file or directory\n"
     "make: *** [Makefile:107: hip] Error 127", "toolchain_missing", "hip-tool-not-found", 2),
    # lld's --no-allow-shlib-undefined for a ROCm library symbol (a -lrocblas missing from the link line)
    ("ld.lld: error: undefined reference due to --no-allow-shlib-undefined: rocblas_initialize\n>>> referenced by "
     "libfoo.so", "missing_library", "undefined-reference-rocm-runtime", 1),
    # projects' in-source guard (kokkos/kokkos#4556, opencv/opencv#8582): the CMakeCache left in the source tree
    ("CMake Error at CMakeLists.txt:4 (message):\n  FATAL: In-source builds are not allowed.  You should create a "
     "separate\n  directory for build files.", "stale_build", "cmake-in-source-build-refused", 2),
    # roctracer's generated header (ROCm/rocm-systems#28, rocm-arch/rocm-arch#168): CppHeaderParser missing at configure
    ("[ 57%] Building CXX object CMakeFiles/roctracer64.dir/src/core/roctracer.cpp.o\n"
     "/src/roctracer/inc/roctracer_kfd.h:30:10: fatal error: inc/kfd_ostream_ops.h: No such file or directory\n"
     "compilation terminated.",
     "missing_python_dependency", "roctracer-generated-header-missing", 2),
    # x86 intrinsics on another CPU (ggml-org/whisper.cpp#240, seqan/seqan3#1477, AcademySoftwareFoundation/Imath#183)
    ("[ 47%] Building CXX object CMakeFiles/rsp.dir/parallel.cpp.o\n/usr/lib/gcc/powerpc64le-linux-gnu/12/include/"
     "xmmintrin.h:54:2: error: #error \"Please read comment above.  Use -DNO_WARN_X86_INTRINSICS to disable this "
     "error.\"",
     "unsupported_arch", "x86-intrinsics-on-other-cpu", 2),
    # libstdc++'s dual ABI against libtorch (pytorch/pytorch#13541, hasktorch/ffi-experimental#3)
    ("main.cpp:(.text+0x2a): undefined reference to `c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<"
     "char, std::char_traits<char>, std::allocator<char> >)'\ncollect2: error: ld returned 1 exit status",
     "abi_mismatch", "libtorch-dual-abi-mismatch", 1),
    # OpenSSH under git's ssh transport (zai-org/CodeGeeX#18, OWASP/Maturity-Models#178); a key problem is not network
    ("Cloning into 'sub'...\nkex_exchange_identification: Connection closed by remote host\nfatal: Could not read from "
     "remote repository.", "network", "connection-failed", 2),
    # MSVC's heap (microsoft/CNTK#1542, dotnet/coreclr#27232)
    ("6>c:\\src\\op.h(941): fatal error C1002: compiler is out of heap space in pass 2", "out_of_memory",
     "msvc-compiler-out-of-heap", 1),
    # GHC's and rustc's own panics (bjpop/language-python#73, rust-lang/rust#119357)
    ("ghc: panic! (the 'impossible' happened)\n  (GHC version 8.4.3 for x86_64-unknown-linux):\n\tPrelude.chr: bad "
     "argument: 2600468483\n\nPlease report this as a GHC bug:  http://www.haskell.org/ghc/reportabug",
     "compiler_crash", "ghc-rustc-compiler-panic", 1),
    # NumPy 2's import-time message without an 'rror' on its line (numpy/_core/src/multiarray)
    ("ImportError: \nA module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.0.0 as it may crash.",
     "abi_mismatch", "numpy-abi-mismatch", 2),
    # cargo's error chain (sjtug/mirror-requests#305): the curl error under 'Caused by:'
    ("error: failed to get `x` as a dependency of package `y`\n\nCaused by:\n  network failure seems to have happened\n"
     "\nCaused by:\n  [28] Timeout was reached (Operation too slow.); class=Net (12)", "network",
     "cargo-network-failure", 7),
    # glibc dl-load.c (DFHack/dfhack#164, envmodules/modules#357)
    ("./tool: error while loading shared libraries: libz.so.1: wrong ELF class: ELFCLASS64", "arch_mismatch",
     "loader-wrong-elf-class", 1),
])
def test_round_two_families(log: str, category: str, signature: str, line: int) -> None:
    read_as(log, category, signature, line)


def test_a_cuda_toolkit_header_is_a_missing_toolkit_off_rocm_and_unknown_on_a_rocm_host() -> None:
    # open-mmlab/mmdetection#71, NVIDIA/nccl#131 (a CUDA box); on a ROCm box the source is CUDA-only (left unknown)
    log = "csrc/nms.cpp:3:10: fatal error: cuda_runtime.h: No such file or directory\ncompilation terminated."
    off = run(log)
    assert (off.category, off.signature, off.fields["header"]) == ("toolchain_missing", "cuda-toolkit-header-missing",
                                                                    "cuda_runtime.h")
    assert run(log, host="rocm").category == "unknown"
    assert run(log + "\n1 error generated when compiling for gfx1030.").category == "unknown", "the log shows ROCm"


def test_pytorchs_own_tree_contradicting_itself_is_stale_an_extension_against_torchs_api_is_left_unknown() -> None:
    # pytorch/pytorch#11572, #47993 (torch's tree) against vllm-project/vllm#44641 and ROCm/xformers#30 (an
    # extension's source against the torch API it was built with: both threads fixed the source, "other")
    own = run("/src/pytorch/torch/csrc/cuda/Module.cpp:40:10: error: no member named 'getFreeMutex' in namespace "
              "'torch::cuda'")
    assert (own.category, own.signature, own.fields["member"]) == ("stale_build", "torch-tree-self-inconsistent",
                                                                    "getFreeMutex")
    ext = run("/src/vllm/csrc/ops.cpp:40:10: error: no member named 'getFreeMutex' in namespace 'torch::cuda'")
    assert (ext.category, ext.signature) == ("unknown", None)
    assert "getFreeMutex" in (ext.text or ""), "the decisive line is still shown"


def test_torchs_own_library_missing_its_own_symbol_is_mixed_installs_an_extensions_is_abi() -> None:
    # pytorch/pytorch#10234, #13893 against vllm-project/vllm#13608
    own = run("ImportError: /v/site-packages/torch/lib/libtorch_cpu.so: undefined symbol: _ZN3c1010TensorImpl5emptyEv")
    assert (own.category, own.signature) == ("stale_build", "torch-own-library-mixed-installs")
    ext = run("ImportError: /v/site-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c1010TensorImpl5emptyEv")
    assert (ext.category, ext.signature) == ("abi_mismatch", "undefined-symbol-torch-abi")


def test_an_ssh_key_refused_is_not_a_network_failure() -> None:
    got = run("Cloning into 'sub'...\ngit@github.com: Permission denied (publickey).\n"
              "fatal: Could not read from remote repository.")
    assert got.category != "network", got


def test_cargos_retry_warnings_are_weak_and_give_way_to_a_specific_failure() -> None:
    # rust-lang/cargo#6513: cargo retries by itself; the warnings alone are a weak network reading
    retry = "warning: spurious network error (2 tries remaining): [28] Timeout was reached (download of `x` failed)"
    assert (run(retry).category, run(retry).confidence) == ("network", "medium")
    later = run(retry + "\n/usr/bin/ld: cannot find -lssl")
    assert later.category == "missing_library", "the visible failure of the build wins"


# ----------------------------------------------------------------------- round 4 (the misses of b13/b14)

@pytest.mark.parametrize(("log", "category", "signature", "line"), [
    # GNU make <= 4.2 job.c, exec_command on ENOENT: "%s: Command not found" (ROCm/roctracer#73, ROCm/hipCaffe#18)
    ("/opt/src/bin/hipcc -c -o main.o main.cpp\nmake: /opt/src/bin/hipcc: Command not found\n"
     "Makefile:12: recipe for target 'main.o' failed\nmake: *** [main.o] Error 127",
     "toolchain_missing", "hip-tool-not-found", 2),
    # CMake cmMakefile.cxx: "Unknown CMake command" for FindHIP's macros (ROCm/rocALUTION#133, ROCm/hip#715)
    ("-- hip::amdhip64 is SHARED_LIBRARY\nCMake Error at lib/CMakeLists.txt:40 (hip_add_library):\n"
     "  Unknown CMake command \"hip_add_library\".\n\n\n-- Configuring incomplete, errors occurred!",
     "toolchain_missing", "cmake-unknown-hip-command", 3),
    # ... and for rocm-cmake's functions (ROCm/clang-ocl#38, ROCm/composable_kernel#547)
    ("CMake Error at CMakeLists.txt:21 (rocm_setup_version):\n  Unknown CMake command \"rocm_setup_version\".",
     "toolchain_missing", "cmake-unknown-hip-command", 2),
    # rocWMMA config.hpp's static_assert (ROCm/TheRock#2127, ROCm/rocm-libraries#4618, ggml-org/llama.cpp#14193)
    ("[12/300] Building HIP object src/CMakeFiles/fa.dir/fattn-wmma.cu.o\n"
     "/opt/rocm/include/rocwmma/internal/config.hpp:80:15: error: static assertion failed: Unsupported architecture\n"
     "   80 | static_assert(0, \"Unsupported architecture\");\n      |               ^\n"
     "1 error generated when compiling for gfx1031.",
     "unsupported_arch", "rocwmma-unsupported-arch", 2),
    # CMake cmFindPackageCommand.cxx's second sentence, the paste cut above the first (ROCm/hipFFT#37)
    ("  \"amd_comgr_DIR\" to a directory containing one of the above files.  If\n"
     "  \"amd_comgr\" provides a separate development package or SDK, be sure it has\n  been installed.\n"
     "Call Stack (most recent call first):\n  /opt/hip/lib/cmake/hip/hip-config.cmake:200 (find_dependency)",
     "toolchain_missing", "cmake-hip-package-missing", 1),
    ("  Add the installation prefix of \"rocprim\" to CMAKE_PREFIX_PATH or set\n"
     "  \"rocprim_DIR\" to a directory containing one of the above files.  If",
     "toolchain_missing", "cmake-rocm-package-missing", 2),
    # glibc dl-lookup.c for a ROCm library's mangled internal symbol (ROCm/legacy-rocm-build#1879, arch4edu#203)
    (">>> import torch\nTraceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n"
     "ImportError: /opt/rocm/lib/librocsolver.so.0: undefined symbol: _Z27rocblas_internal_trsm_tplIdEv",
     "abi_mismatch", "undefined-symbol-rocm-runtime-skew", 4),
    # torch's exported targets name /opt/rocm/lib; ROCm lives in /opt/rocm-X.Y (vllm-project/vllm#8042, #8004)
    ("-- Build files have been written to: /w/vllm/build/temp\n"
     "ninja: error: '/opt/rocm/lib/libamdhip64.so', needed by '/w/vllm/build/lib/vllm/_C.abi3.so', missing and "
     "no known rule to make it", "missing_library", "rocm-default-root-library-missing", 2),
])
def test_round_four_families(log: str, category: str, signature: str, line: int) -> None:
    read_as(log, category, signature, line)


def test_rocwmma_names_the_arch_it_rejects_and_stops() -> None:
    got = run("/r/rocwmma/library/include/rocwmma/internal/config.hpp:79:15: error: static assertion failed: "
              "Unsupported architecture\n   79 | static_assert(0, \"Unsupported architecture\");\n"
              "1 error generated when compiling for gfx906.")
    assert (got.category, got.fields.get("arch"), got.retryable) == ("unsupported_arch", "gfx906", False)


def test_the_same_static_assert_outside_rocwmma_is_not_read_as_an_arch_gap() -> None:
    got = run("/src/simd/detect.hpp:30:5: error: static assertion failed: Unsupported architecture")
    assert got.category != "unsupported_arch", got


def test_an_unknown_command_of_the_projects_own_stays_unknown() -> None:
    # chipStar's hip_add_exe_to_target is HIP's test helper (a wrong Catch2 found), not FindHIP missing
    got = run("CMake Error at tests/CMakeLists.txt:17 (hip_add_exe_to_target):\n"
              "  Unknown CMake command \"hip_add_exe_to_target\".")
    assert got.category == "unknown", got


def test_a_versioned_rocm_path_gone_from_the_build_graph_is_still_a_stale_cache() -> None:
    # a cache naming /opt/rocm-6.1.0 after an upgrade to 6.2 (the ninja stale-tree shape); only the
    # unversioned root that torch's config hard-codes reads as the library missing
    got = run("ninja: error: '/opt/rocm-6.1.0/lib/libamdhip64.so', needed by 'lib/libx.so', missing and no known rule "
              "to make it")
    assert (got.category, got.signature) == ("stale_build", "ninja-missing-no-known-rule")
    gone = run("ninja: error: '/opt/rocm/lib/libhipblas.so', needed by 'lib/libx.so', missing and no known rule to "
               "make it")
    assert (gone.category, gone.retryable) == ("missing_library", False)


def test_hipsycl_undefined_references_are_not_the_hip_runtime_missing() -> None:
    # AdaptiveCpp's runtime (hipsycl::rt) undefined: two libstdc++ ABIs, not a missing -lamdhip64
    got = run("main.cpp:(.text+0x1f): undefined reference to `hipsycl::rt::result::what() const'\n"
              "clang-14: error: linker command failed with exit code 1 (use -v to see invocation)")
    assert got.category != "missing_library", got
    hip = run("main.cpp:(.text+0x1f): undefined reference to `hipMalloc'")
    assert hip.category == "missing_library"


# ----------------------------------------------------------------------- round 5 (the misses of b15/b16)

@pytest.mark.parametrize(("log", "category", "signature", "line"), [
    # HIP hip_runtime.h's #error for wave64 on a wave32-only arch (ginkgo-project/ginkgo#1429, ROCm/hipamd#59,
    # llvm/llvm-project#89332)
    ("[ 12%] Building HIP object kernels/CMakeFiles/k.dir/reduce.hip.o\nIn file included from src/reduce.hip:2:\n"
     "/opt/rocm-6.0.2/include/hip/hip_runtime.h:41:2: error: HIP is not supported on the specified GPU ARCH with "
     "wavefront size 64\n   41 | #error HIP is not supported on the specified GPU ARCH with wavefront size 64\n"
     "      |  ^\n1 error generated when compiling for gfx1100.",
     "unsupported_arch", "hip-wave64-unsupported-arch", 3),
    # ... as releases up to ROCm 5.4 worded it
    ("/opt/rocm-5.4.1/include/hip/hip_runtime.h:41:2: error: HIP is not supported on GFX10 with wavefront size 64",
     "unsupported_arch", "hip-wave64-unsupported-arch", 1),
    # HIPCC hipBin_amd.h's probe, then the clang it derived from an unset ROCM_PATH (ROCm/HIPCC#103)
    ("Hip Clang Compiler not found\nHIP version: 6.1.0\nsh: line 1: llvm/bin/clang++: No such file or directory\n"
     "failed to execute:llvm/bin/clang++ --driver-mode=g++ -O3 --version",
     "toolchain_missing", "hipcc-clang-not-found", 1),
    # MIOpen wants a composable_kernel device instance the installed CK was not built with
    # (ROCm/pytorch#2893, ROCm/composable_kernel#3523)
    ("Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n"
     "ImportError: /opt/rocm/lib/libMIOpen.so.1: undefined symbol: "
     "_ZN2ck16tensor_operation6device8instance40add_device_conv2d_fwd_xdl_nhwc_f32_instancesERSt6vectorIiSaIiEE",
     "abi_mismatch", "undefined-symbol-rocm-runtime-skew", 3),
])
def test_round_five_families(log: str, category: str, signature: str, line: int) -> None:
    read_as(log, category, signature, line)


def test_the_wave64_error_names_the_arch_and_is_not_retried() -> None:
    got = run("/usr/include/hip/hip_runtime.h:41:2: error: HIP is not supported on the specified GPU ARCH with "
              "wavefront size 64\n1 warning and 1 error generated when compiling for gfx1030.")
    assert (got.category, got.fields.get("arch"), got.retryable) == ("unsupported_arch", "gfx1030", False)


def test_clangs_wave64_warning_is_not_the_runtimes_refusal() -> None:
    # clang's own -Wunsupported-wave64 warning (llvm/llvm-project#140185) does not stop a build
    got = run("clang++: warning: wavefront size 64 is not supported by HIP runtime on AMD GPU architecture gfx10 "
              "and above [-Wunsupported-wave64]")
    assert got.category == "unknown", got


def test_hipccs_probe_alone_is_only_a_medium_guess() -> None:
    # chipStar's hipcc printed the probe's line while compiling went on (CHIP-SPV/chipStar#308): without
    # hipcc then failing to run its clang the line is weak, and a specific failure elsewhere wins
    weak = run("Hip Clang Compiler not found\n[ 50%] Linking CXX executable add")
    assert (weak.category, weak.confidence) == ("toolchain_missing", "medium"), weak
    other = run("Hip Clang Compiler not found\n/usr/bin/ld: cannot find -lrocblas: No such file or directory")
    assert other.category == "missing_library", other


def test_a_ck_like_namespace_of_a_users_own_is_not_rocm_skew() -> None:
    got = run("ImportError: /x/libapp.so: undefined symbol: _ZN2ck4util3logEv")
    assert got.signature != "undefined-symbol-rocm-runtime-skew", got


# ----------------------------------------------------------------------- round 6 (the misses of b17)

@pytest.mark.parametrize(("log", "category", "signature", "line"), [
    # GNU ld's "cannot find %s" for a library named by its path: a sanitizer runtime the driver adds and the
    # distro did not package (rocm-arch/rocm-arch#576, llvm/llvm-project#59919, offa/keygen#71)
    ("$ hipcc -fsanitize=address -o t t.hip\n"
     "/usr/bin/ld: cannot find /opt/rocm/llvm/lib/clang/17/lib/linux/libclang_rt.asan_cxx-x86_64.a: "
     "No such file or directory\nclang: error: linker command failed with exit code 1 (use -v to see invocation)",
     "missing_library", "ld-cannot-find-library", 2),
    # ... and lld's "cannot open %s" for the same
    ("ld.lld: error: cannot open /usr/lib/clang/18/lib/x86_64-unknown-linux-gnu/libclang_rt.ubsan.a: "
     "No such file or directory",
     "missing_library", "ld-cannot-find-library", 1),
    # a shared library wanting a version node the library found in its place lacks
    # (pytorch/builder#1270, smartbitcoin/MyROCm#1)
    ("g++ smoke.cpp -L/opt/libtorch/lib -ltorch -o smoke\n"
     "/usr/bin/ld: /opt/libtorch/lib/libamd_comgr.so.2: undefined reference to `tigetstr@NCURSES6_TINFO_5.0.19991023'\n"
     "/usr/bin/ld: /opt/libtorch/lib/libamd_comgr.so.2: undefined reference to `tputs@NCURSES6_TINFO_5.0.19991023'\n"
     "collect2: error: ld returned 1 exit status",
     "abi_mismatch", "ld-dso-versioned-symbol-undefined", 2),
    # dnf's MarkingErrors for python3- packages a distro does not carry
    # (ROCm/rocBLAS#1519, rpm-software-management/mock#1251, konflux-ci/rpm-lockfile-prototype#23)
    ("Package cmake-3.26.5-2.el9.x86_64 is already installed.\nNo match for argument: python3-msgpack\n"
     "Error: Unable to find a match: python3-msgpack",
     "missing_python_dependency", "distro-python-package-not-found", 3),
    # pip's get_requires_for_build_wheel hook failing, the paste cut inside its traceback
    # (Dao-AILab/flash-attention#1421, SarahWeiii/diso#13, SHI-Labs/NATTEN#243)
    ("Collecting causal-conv1d\n  Installing build dependencies ... done\n"
     "  Getting requirements to build wheel ... error\n  error: subprocess-exited-with-error\n\n"
     "  × Getting requirements to build wheel did not run successfully.\n  │ exit code: 1\n"
     "  ╰─> [18 lines of output]\n      Traceback (most recent call last):\n"
     "        File \"/venv/lib/python3.12/site-packages/pip/_vendor/pyproject_hooks/_in_process/_in_process.py\", "
     "line 389, in <module>\n          main()",
     "missing_python_dependency", "pip-get-requires-hook-failed", 3),
])
def test_round_six_families(log: str, category: str, signature: str, line: int) -> None:
    read_as(log, category, signature, line)


def test_a_versioned_path_under_opt_rocm_is_left_to_the_stale_cache_readings() -> None:
    got = run("/usr/bin/ld: cannot find /opt/rocm-5.7.1/lib/libamdhip64.so.5: No such file or directory")
    assert got.signature != "ld-cannot-find-library", got


def test_a_missing_needed_library_outranks_its_versioned_references() -> None:
    # ld found no libhsa-runtime64 at all: the library is missing, the versioned references follow from it
    read_as("/usr/bin/ld: warning: libhsa-runtime64.so.1, needed by /opt/rocm/lib/libamdhip64.so, not found "
            "(try using -rpath or -rpath-link)\n"
            "/usr/bin/ld: /opt/rocm/lib/libamdhip64.so: undefined reference to `hsa_init@ROCR_1'",
            "missing_library", "ld-needed-by-not-found")


def test_glibcs_own_version_nodes_are_not_read_as_library_skew() -> None:
    got = run("/usr/bin/ld: /opt/x/libbar.so: undefined reference to `fcntl64@GLIBC_2.28'")
    assert got.signature != "ld-dso-versioned-symbol-undefined", got


@pytest.mark.parametrize("packages", ["rocm-hip-sdk", "python3-devel", "python3-wheel rocblas-devel"])
def test_dnf_missing_non_module_packages_stay_unread(packages: str) -> None:
    got = run(f"Error: Unable to find a match: {packages}")
    assert got.signature != "distro-python-package-not-found", got


def test_the_get_requires_guess_is_medium_and_gives_way_to_the_hooks_own_error() -> None:
    head = "  Getting requirements to build wheel ... error\n  error: subprocess-exited-with-error\n" \
           "      Traceback (most recent call last):\n        File \"setup.py\", line 9, in <module>\n"
    cut = run(head)
    assert (cut.category, cut.confidence) == ("missing_python_dependency", "medium"), cut
    other = run(head + "      RuntimeError: this package does not build on Windows")
    assert other.signature != "pip-get-requires-hook-failed", other


def test_a_build_trees_own_targets_file_is_not_a_missing_rocm() -> None:
    # a super-build configured a project before building the one it finds (ROCm/TheRock's build-order bugs):
    # the requested file is a build tree's export, not an installed ROCm package
    built = run("CMake Error at /w/build/math-libs/rocrand/build/rocrand-config.cmake:16 (include):\n"
                "  include could not find requested file:\n\n"
                "    /w/build/math-libs/rocrand/build/rocrand-targets.cmake")
    assert built.signature != "cmake-rocm-package-file-missing", built
    installed = run("CMake Error at /opt/rocm/lib/cmake/hip/hip-config.cmake:180 (include):\n"
                    "  include could not find requested file:\n\n    /opt/rocm/lib/cmake/hip/hip-targets.cmake")
    assert (installed.category, installed.signature) == ("toolchain_missing", "cmake-rocm-package-file-missing")


# ---------------------------------------------------------------------- round 7 (the misses of b18)

def test_findhips_fatal_error_is_a_hip_root_it_cannot_find() -> None:
    # HIP's FindHIP.cmake: message(FATAL_ERROR "Specify HIP_ROOT_DIR") when bin/hipconfig is not found
    # (rocm-arch/rocm-arch#878, ROCm/hipSOLVER#66, ROCm/hip#3019)
    got = read_as("-- BUILD_WITH_COMPILER = HIP-CLANG\n"
                  "CMake Error at /opt/rocm/lib/cmake/hip/FindHIP.cmake:71 (message):\n"
                  "  Specify HIP_ROOT_DIR\n"
                  "Call Stack (most recent call first):\n  cmake/dependencies.cmake:44 (find_package)\n\n"
                  "-- Configuring incomplete, errors occurred!", "toolchain_missing", "findhip-fatal", 2)
    assert got.fields.get("message") == "Specify HIP_ROOT_DIR"
    # A project's own FindHIP.cmake failing to include HIP's is the include-file reading, not this one.
    own = run("CMake Error at cmake/FindHIP.cmake:25 (include):\n  include could not find requested file:\n\n"
              "    /opt/rocm/hip/cmake/FindHIP.cmake")
    assert own.signature != "findhip-fatal", own


# --------------------------------------------- round 8 (families the full keyword budget had kept out)

def test_debians_venv_without_ensurepip_is_a_missing_python_package() -> None:
    # Debian's patch to venv (ROCm/rocBLAS#1389's Tensile virtualenv, microsoft/vcpkg#21912, pyenv/pyenv-installer#125):
    # none of its lines holds 'rror', so it needed keywords of its own
    got = run("/usr/bin/python3.10 -m venv /src/rocBLAS/build/virtualenv --system-site-packages --clear\n"
              "The virtual environment was not created successfully because ensurepip is not\n"
              "available.  On Debian/Ubuntu systems, you need to install the python3-venv\n"
              "package using the following command.\n\n    apt install python3.10-venv\n\n"
              "CMake Error at cmake/virtualenv.cmake:23 (message):\n  1\n")
    assert (got.category, got.signature, got.line) == ("missing_python_dependency", "venv-ensurepip-unavailable", 2)


@pytest.mark.parametrize(("line", "module"), [
    ("E: Unable to locate package python3-PIL", "PIL"),          # zynthian/zynthian-sys#23
    ("E: Unable to locate package python3-pyqt5,", "pyqt5"),     # makehumancommunity/makehuman#137
    ("E: Unable to locate package python3.11-joblib", "joblib"),
])
def test_apt_without_a_python_package_is_a_missing_python_dependency(line: str, module: str) -> None:
    got = run("Reading package lists...\nBuilding dependency tree...\n" + line)
    assert (got.category, got.signature, got.line) == ("missing_python_dependency", "apt-python-package-not-found", 3)
    assert got.fields.get("module") == module


@pytest.mark.parametrize("line", ["E: Unable to locate package rocm-hip-sdk",
                                  "E: Unable to locate package python3.7-dev",
                                  "E: Unable to locate package python3-venv"])
def test_apt_without_a_non_module_package_is_not_read_as_one(line: str) -> None:
    assert run(line).signature != "apt-python-package-not-found"


def test_a_download_cut_inside_urllib3s_error_catcher_is_a_medium_network_guess() -> None:
    # pip's progress bar, then a traceback that stops inside the socket read (open-mmlab/mmdetection#1978,
    # wileewang/TransPixeler#5): urllib3 wraps exactly a response's read errors in _error_catcher
    urllib3 = "  File \"/env/lib/python3.10/site-packages/pip/_vendor/urllib3/response.py\""
    frames = ("     |██      | 47.7MB 17kB/s eta 11:07:26ERROR: Exception:\nTraceback (most recent call last):\n"
              f"{urllib3}, line 438, in _error_catcher\n"
              "    yield\n"
              f"{urllib3}, line 561, in read\n"
              "    data = self._fp_read(amt) if not fp_closed else b\"\"\n"
              "  File \"/env/lib/python3.10/socket.py\", line 717, in readinto\n    return self._sock.recv_into(b)\n")
    cut = run(frames)
    assert (cut.category, cut.signature, cut.confidence) == ("network", "pip-download-read-cut", "medium"), cut
    # the whole traceback's own exception line is read on its own, at full strength
    whole = run(frames + "pip._vendor.urllib3.exceptions.ReadTimeoutError: "
                         "HTTPSConnectionPool(host='files.pythonhosted.org', port=443): Read timed out.")
    assert (whole.category, whole.confidence) == ("network", "high"), whole
    assert whole.signature != "pip-download-read-cut"


@pytest.mark.parametrize(("command", "category", "signature", "field"), [
    ("find_library", "missing_library", "cmake-find-library-required", "OpenCL"),  # rocm-arch/rocm-arch#306
    ("find_program", "toolchain_missing", "cmake-find-program-required", "RPMBUILD_EXECUTABLE"),
])
def test_cmakes_required_find_failures_name_the_command(command: str, category: str, signature: str,
                                                        field: str) -> None:
    # cmFindBase.cxx since CMake 3.18 (nluhmann/BlastFrost#8, ScientificC/cmathl#40): the header names the command
    name = "OpenCL" if command == "find_library" else "rpmbuild"
    got = read_as(f"-- Detecting CXX compile features - done\nCMake Error at CMakeLists.txt:28 ({command}):\n"
                  f"  Could not find {field} using the following names: {name}\n\n\n"
                  "-- Configuring incomplete, errors occurred!", category, signature, 2)
    assert got.fields.get("variable") == field
    assert got.fields.get("library" if command == "find_library" else "program") == name


def test_a_find_path_failure_is_left_unread() -> None:
    # find_path/find_file print the same sentence ("... using the following files") for a header or a file:
    # a missing header says nothing certain about which package is missing
    got = run("CMake Error at CMakeLists.txt:12 (find_path):\n"
              "  Could not find HIPRAND_INCLUDE using the following files: hiprand.h")
    assert got.signature not in ("cmake-find-library-required", "cmake-find-program-required"), got


# Families from the tools' own wording that no batch had shown yet (each a tool's fixed text, 2+ threads)
@pytest.mark.parametrize(("log", "category", "signature", "line"), [
    # autoconf lang.m4 (libffi/libffi#244, dschanoeh/socketcand#23, shlevy/nix-exec#10)
    ("checking whether the C compiler works... no\nconfigure: error: in `/src/libffi':\n"
     "configure: error: C compiler cannot create executables\nSee `config.log' for more details",
     "toolchain_missing", "autoconf-compiler-cannot-create-executables", 3),
    # MSVC LNK1181/LNK1104 (ROCm/HIPIFY#1824, meistdan/hippie#2, nicehash/nheqminer#110)
    ("  main.hip.obj\nLINK : fatal error LNK1181: cannot open input file 'hipblas.lib' [C:\\b\\app.vcxproj]",
     "missing_library", "msvc-link-cannot-open-library", 2),
    # setuptools spawn.py (NicolasHug/Surprise#49, benoitc/http-parser#30)
    ("building 'ext._C' extension\nunable to execute 'x86_64-linux-gnu-gcc': No such file or directory\n"
     "error: command 'x86_64-linux-gnu-gcc' failed with exit status 1",
     "toolchain_missing", "distutils-compiler-missing", 2),
    # sh/env (ROCm/legacy-rocm-build#3411, jbush001/NyuziProcessor#184)
    ("[ 12%] Generating kernels\n/opt/rocm/bin/hipcc: line 2: perl: command not found\nmake[2]: *** [k.o] Error 127",
     "toolchain_missing", "build-tool-not-found", 2),
    ("ninja: job failed: python3 gen.py\n/usr/bin/env: 'python': No such file or directory",
     "toolchain_missing", "build-tool-not-found", 2),
    # cmGlobalGenerator.cxx (jbush001/NyuziProcessor#184, rolandshacks/Droid64#1)
    ("CMake Error: CMake was unable to find a build program corresponding to \"Ninja\".  CMAKE_MAKE_PROGRAM is not "
     "set.  You probably need to select a different build tool.\nCMake Error: CMAKE_C_COMPILER not set, after "
     "EnableLanguage", "toolchain_missing", "cmake-build-program-missing", 1),
    # MSVC C1083 for a ROCm component's header
    ("C:\\src\\gemm.cpp(3): fatal error C1083: Cannot open include file: 'rocblas/rocblas.h': "
     "No such file or directory",
     "missing_library", "rocm-library-header-missing", 1),
    # numpy's C-API import (its _import_array text)
    ("ImportError: numpy.core.multiarray failed to import", "abi_mismatch", "numpy-abi-mismatch", 1),
])
def test_tool_wordings_ahead_of_the_batches(log: str, category: str, signature: str, line: int) -> None:
    read_as(log, category, signature, line)


@pytest.mark.parametrize("log", [
    "error: command 'g++' failed with exit status 1",                       # the compiler ran and failed
    "g++: error: build/temp.linux-x86_64-3.8/box.o: No such file or directory",
    "LINK : fatal error LNK1561: entry point must be defined",
    "-- Could NOT find Perl (missing: PERL_EXECUTABLE)",
])
def test_look_alikes_of_those_wordings_are_not_read_as_them(log: str) -> None:
    got = run(log)
    assert got.signature not in ("distutils-compiler-missing", "msvc-link-cannot-open-library",
                                 "build-tool-not-found"), got


@pytest.mark.parametrize(("log", "category", "signature"), [
    # pip's resolver and uv's (lshqqytiger/stable-diffusion-webui-amdgpu#655,
    # AUTOMATIC1111/stable-diffusion-webui#17312)
    ("ERROR: Cannot install torchvision because these package versions have conflicting\ndependencies.\n"
     "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/",
     "missing_python_dependency", "pip-resolution-impossible"),
    ("  × No solution found when resolving dependencies:\n  ╰─▶ Because there is no version of torch==2.5.0+rocm6.2",
     "missing_python_dependency", "pip-resolution-impossible"),
    # torch cpp_extension (CSAILVision/unifiedparsing#12, zhanghang1989/PyTorch-Encoding#167)
    ("    raise RuntimeError(\"Ninja is required to load C++ extensions\")\n"
     "RuntimeError: Ninja is required to load C++ extensions", "toolchain_missing", "torch-extension-ninja-missing"),
    # the same wordings in another case: pip's "HTTP error 503", apt's "connection timed out", git's bare early EOF
    ("ERROR: HTTP error 503 while getting https://download.pytorch.org/whl/rocm6.2/torch-2.5.0.whl",
     "network", "http-server-error"),
    ("E: Failed to fetch https://repo.radeon.com/rocm/apt/6.2/dists/jammy/InRelease  Could not connect to "
     "repo.radeon.com:443 (1.2.3.4), connection timed out", "network", "connection-failed"),
    ("remote: Enumerating objects: 5123, done.\nfatal: early EOF\nfatal: index-pack failed",
     "network", "git-transfer-failed"),
])
def test_more_tool_wordings_ahead_of_the_batches(log: str, category: str, signature: str) -> None:
    read_as(log, category, signature)


@pytest.mark.parametrize(("log", "signature"), [
    # none of these lines holds "rror" or "ailed": each reaches its signature through a keyword of its own
    ("ssh: connect to host github.com port 22: Network is unreachable", "connection-failed"),  # OpenSSH, via git
    ("ssh: connect to host github.com port 22: Connection refused", "connection-failed"),
    ("Read from remote host github.com: Connection reset by peer", "connection-failed"),      # OpenSSH packet.c
    ("requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='huggingface.co', port=443): Read timed out.",
     "read-timed-out"),
    ("Unable to establish SSL connection.", "connection-failed"),                              # wget
    ("  Caused by: operation timed out", "read-timed-out"),                                  # uv's cause line
    ("fatal: early EOF", "git-transfer-failed"),
])
def test_network_wordings_that_hold_no_error_keyword_are_still_read(log: str, signature: str) -> None:
    read_as(log, "network", signature)


@pytest.mark.parametrize("log", [
    "Failed to download https://github.com/x/y/archive/v1.tar.gz: Connection refused",
    "error: Failed to download `torch==2.5.1+rocm6.2`\n  Caused by: Request failed after 3 retries\n"
    "  Caused by: operation timed out",                                  # uv
    "Error: Failed to download metadata for repo 'ROCm': Cannot download repomd.xml: All mirrors were tried",  # dnf
])
def test_downloaders_own_failure_lines_are_the_network(log: str) -> None:
    got = run(log)
    assert got.category == "network", got


def test_a_local_service_refusing_a_connection_is_not_the_network() -> None:
    got = run("sccache: error: Server startup failed: Connection refused\nFailed to connect to bus: Connection refused")
    assert got.category != "network", got


@pytest.mark.parametrize(("log", "category", "signature"), [
    # Windows' ERROR_MOD_NOT_FOUND with torch's suffix, and ctypes' wording (patientx/ComfyUI-Zluda#5,
    # pytorch/pytorch#129568, ROCm/TheRock#1167)
    ("    raise err\nOSError: [WinError 126] The specified module could not be found. Error loading "
     "\"C:\\venv\\lib\\site-packages\\torch\\lib\\caffe2_nvrtc.dll\" or one of its dependencies.",
     "missing_runtime_library", "windows-dll-not-found"),
    ("FileNotFoundError: Could not find module 'C:\\Program Files\\AMD\\ROCm\\6.1\\bin\\amdhip64.dll' "
     "(or one of its dependencies). Try using the full path with constructor syntax.",
     "missing_runtime_library", "windows-dll-not-found"),
    # clang err_fe_pch_different_branch: a PCH left by another compiler
    ("fatal error: PCH file built from a different branch ((clang-17.0.6)) than the compiler ((clang-18.1.8))",
     "stale_build", "clang-pch-file-modified"),
    # Cython's check of numpy's struct sizes
    ("ValueError: numpy.dtype size changed, may indicate binary incompatibility. Expected 96 from C header, "
     "got 88 from PyObject", "abi_mismatch", "numpy-abi-mismatch"),
])
def test_load_and_leftover_wordings_ahead_of_the_batches(log: str, category: str, signature: str) -> None:
    read_as(log, category, signature)


def test_other_windows_errors_are_not_a_missing_dll() -> None:
    got = run("OSError: [WinError 5] Access is denied: 'C:\\venv\\Scripts\\pip.exe'")
    assert got.signature != "windows-dll-not-found", got


def test_a_failed_externalproject_download_stamp_is_a_medium_network_guess() -> None:
    # CMake ExternalProject's <name>-download stamp as the failed target (neovim/neovim#11582, uf-mil/mil2#110,
    # NVIDIA/TensorRT-LLM#434): the fetch's own error, when in view, speaks instead
    alone = run("[3/40] Performing download step for 'rocprim'\nFAILED: deps/src/rocprim-stamp/rocprim-download\n"
                "cd /b/deps && /usr/bin/cmake -P /b/deps/src/rocprim-stamp/download-rocprim.cmake\n"
                "ninja: build stopped: subcommand failed.")
    assert (alone.category, alone.signature, alone.confidence) == (
        "network", "externalproject-download-step-failed", "medium"), alone
    assert alone.fields.get("project") == "rocprim"
    told = run("FAILED: deps/src/rocprim-stamp/rocprim-download\n"
               "fatal: unable to access 'https://github.com/ROCm/rocPRIM.git/': Could not resolve host: github.com")
    assert (told.category, told.confidence) == ("network", "high"), told
    built = run("FAILED: deps/src/rocprim-stamp/rocprim-build\nninja: build stopped: subcommand failed.")
    assert built.signature != "externalproject-download-step-failed", built


# ----------------------------------------------------------------------- round 8 (the misses of b20)

def test_a_find_module_that_cannot_find_an_llvm_tool_is_a_missing_toolchain_program() -> None:
    # a project's FindLLVM/FindHIP message naming the LLVM/ROCm program it looked for (CHIP-SPV/chipStar#304)
    got = read_as("CMake Error at cmake/FindLLVM.cmake:105 (message):\n"
                  "  Can't find llvm-spirv at /usr/bin.  Please install it into that directory,\n"
                  "  or provide explicit path with -DLLVM_SPIRV_BINARY=\n",
                  "toolchain_missing", "hip-tool-not-found", 2)
    assert got.fields.get("tool") == "llvm-spirv"
    library = run("CMake Error at cmake/FindLLVM.cmake:80 (message):\n  Could not find llvm-config library directory\n")
    assert library.signature != "hip-tool-not-found", library


@pytest.mark.parametrize("symbol", ["_Py_ZeroStruct", "_Py_NoneStruct", "PyUnicode_AsUTF8", "Py_InitModule4_64"])
def test_private_python_c_api_symbols_are_a_python_abi_skew(symbol: str) -> None:
    # a module built for another Python (ROCm/AMDMIGraphX#745's migraphx.so built for Python 2)
    read_as(f"ImportError: /opt/rocm-3.7.0/lib/migraphx.so: undefined symbol: {symbol}",
            "abi_mismatch", "undefined-symbol-python-c-api")


# ----------------------------------------------------------------------- round 8 (the misses of b19)

@pytest.mark.parametrize(("log", "category", "signature", "line"), [
    # clang's own resource header missing: the LLVM in use is not the one the runtime compile expects
    # (ROCm/MIOpen#1105's COMGR build; a clang without its resource directory)
    ("MIOpen(HIP): Warning [BuildHip] <built-in>:1:10: fatal error: '__clang_hip_runtime_wrapper.h' file not found\n"
     "#include \"__clang_hip_runtime_wrapper.h\"", "toolchain_missing", "hip-tool-not-found", 1),
    # cmd.exe and PowerShell (ROCm/TheRock#1200: HIP_PATH with a space, unquoted)
    ("λ hipcc --version\n'C:\\Program' is not recognized as an internal or external command,\n"
     "operable program or batch file.", "toolchain_missing", "windows-command-not-recognized", 2),
    ("ninja : The term 'ninja' is not recognized as the name of a cmdlet, function, script file, or operable program.",
     "toolchain_missing", "windows-command-not-recognized", 1),
    # the HIP runtime's strings through an example's HIP_CHECK (ROCm/rocm-examples#225)
    ("info: running on device AMD Instinct MI300A\n"
     "An error encountered: \"invalid device function\" at .../HIP-Basic/saxpy/main.hip:92",
     "arch_mismatch", "hip-invalid-device-function", 2),
    ("An error encountered: \"invalid kernel file\" at .../HIP-Basic/cooperative_groups/main.hip:204",
     "arch_mismatch", "hip-invalid-device-function", 1),
    # SIInstrInfo::verifyInstruction's per-generation refusals (ROCm/rocm-examples#45, ROCm/rocPRIM#180)
    ("error: Illegal instruction detected: Invalid dpp_ctrl value: broadcasts are not supported on GFX10+\n"
     "renamable $vgpr0 = V_MOV_B32_dpp $vgpr0(tied-def 0), killed $vgpr1, 322, 15, 15, 0, implicit $exec\n"
     "1 error generated when compiling for gfx1102.", "unsupported_arch", "llvm-verifier-unsupported-on-gfx", 1),
])
def test_round_eight_families(log: str, category: str, signature: str, line: int) -> None:
    read_as(log, category, signature, line)


def test_the_verifiers_own_bugs_stay_a_compiler_crash() -> None:
    read_as("error: Illegal instruction detected: Operand has incorrect register class.",
            "compiler_crash", "llvm-machine-verifier")


def test_other_runtime_errors_through_an_examples_macro_are_not_an_arch_gap() -> None:
    got = run("An error encountered: \"out of memory\" at .../HIP-Basic/saxpy/main.hip:40")
    assert got.category != "arch_mismatch", got


@pytest.mark.parametrize(("log", "tool"), [
    # LLVM's own configure (ROCm's llvm-project builds: rocm-arch/rocm-arch#66)
    ("CMake Error at CMakeLists.txt:658 (message):\n"
     "  Unable to find Python interpreter, required for builds and testing.\n\n"
     "  Please install Python or specify the PYTHON_EXECUTABLE CMake variable.", "Python"),
    # CPack's RPM generator (lamikr/rocm_sdk_builder#16, ROCm/legacy-rocm-build#3411)
    ("CMake Error at /usr/share/cmake-3.25/Modules/Internal/CPack/CPackRPM.cmake:822 (message):\n"
     "  RPM package requires rpmbuild executable", "rpmbuild"),
])
def test_configure_messages_naming_a_missing_build_program(log: str, tool: str) -> None:
    got = read_as(log, "toolchain_missing", "build-tool-not-found", 2)
    assert got.fields.get("tool") == tool


# ----------------------------------------------------------------------- round 8 (the misses of b21)

def test_a_downloaders_http_404_for_url_is_gone_for_good() -> None:
    # the same status in another client's words (lemonade-sdk/lemonade#1902; pip's "while getting")
    got = read_as("  Progress: 100% (0.0/0.0 MB)    Error: Failed to download sd-server from: https://x/y.zip\n"
                  "Last error: HTTP error 404 for URL: https://github.com/x/y/releases/download/v1/y.zip",
                  "network", "download-gone")
    assert got.fields.get("status") == "404"


def test_therocks_configure_error_in_a_pasted_diff_block_is_read() -> None:
    # a paste in a ```diff block puts '+' before TheRock's "[component phase]" prefix (ROCm/TheRock#462)
    read_as("+[hip-clr configure] -- Resolving system find_package(OpenGL)\n"
            "+[hip-clr configure] CMake Error at /usr/share/cmake-3.28/Modules/FindPackageHandleStandardArgs.cmake"
            ":230 (message):\n"
            "+[hip-clr configure]   Could NOT find OpenGL (missing: OPENGL_opengl_LIBRARY OPENGL_glx_LIBRARY",
            "toolchain_missing", "cmake-could-not-find-package", 3)


# ----------------------------------------------------------------------- round 8 (the misses of b22)

def test_a_missing_rocm_version_file_is_a_rocm_root_that_is_not_there() -> None:
    # DeepSpeed's and TensorFlow's build read <ROCm root>/.info/version(-dev) (deepspeedai/DeepSpeed#2080,
    # tensorflow/tensorflow#45733): the file missing means ROCm is not where the build looks
    read_as("      File \"/tmp/pip-install-x/deepspeed/op_builder/builder.py\", line 192, in installed_rocm_version\n"
            "          with open('/opt/rocm/.info/version-dev', 'r') as file:\n"
            "      FileNotFoundError: [Errno 2] No such file or directory: '/opt/rocm/.info/version-dev'",
            "toolchain_missing", "rocm-root-not-found", 3)


@pytest.mark.parametrize("enoent", ["No such file or directory", "Нет такого файла или каталога",
                                    "No existe el archivo o el directorio", "Aucun fichier ou dossier de ce type",
                                    "Datei oder Verzeichnis nicht gefunden", "没有那个文件或目录"])
def test_a_shell_that_cannot_run_hipcc_reads_the_same_in_any_locale(enoent: str) -> None:
    # glibc's strerror(ENOENT), translated (rocm-arch/rocm-arch#865: torch wrote 'bin/hipcc' with ROCM_HOME unset)
    relative = run(f"[2/32] bin/hipcc  -DWITH_HIP -c x.hip\n/bin/sh: line 1: bin/hipcc: {enoent}")
    assert (relative.category, relative.signature) == ("toolchain_missing", "hip-tool-not-found"), relative
    assert relative.fields.get("tool") == "hipcc"
    # an absolute path the build cached, now gone, is a stale tree in every language as well
    cached = run(f"/bin/sh: 1: /opt/rocm-6.1.0/bin/hipcc: {enoent}")
    assert (cached.category, cached.signature) == ("stale_build", "cached-tool-path-gone"), cached


# ----------------------------------------------------------------------- round 8 (the misses of b23)

def test_a_dll_the_loader_cannot_open_is_a_missing_runtime_library_in_any_wrapper() -> None:
    # FormatMessage(126) behind a loader's own prefix (ROCm/TheRock#1552: a renamed hipblaslt DLL)
    read_as("Output from the failed command:\n"
            "Failed to load amdhip64.dll: amdhip64.dll: Can't open: The specified module could not be found.  (0x7E)",
            "missing_runtime_library", "windows-dll-not-found", 2)


def test_a_runners_action_download_that_timed_out_is_the_network() -> None:
    # the GitHub Actions runner's wording (pytorch/pytorch#166866)
    read_as("Warning: Back off 28.951 seconds before retry.\n"
            "Error: Action 'https://api.github.com/repos/x/y/tarball/335b5c7' download has timed out. "
            "Error: The request was canceled due to the configured HttpClient.Timeout of 100 seconds elapsing.",
            "network", "read-timed-out")


# ------------------------------------------------------- round 8's review: look-alikes the new families must leave

@pytest.mark.parametrize("line", ["ImportError: numpy.core._multiarray_umath failed to import",
                                  "ImportError: numpy._core._multiarray_umath failed to import",
                                  "ImportError: numpy.core.multiarray failed to import"])
def test_numpys_import_failure_in_each_of_its_wordings_is_abi_skew(line: str) -> None:
    read_as(line, "abi_mismatch", "numpy-abi-mismatch")


@pytest.mark.parametrize("line", ["/bin/sh: 1: /opt/old/bin/ninja: not found",
                                  "/bin/sh: 1: /home/u/b/build/g++: not found"])
def test_an_absolute_tool_path_a_shell_cannot_run_stays_a_stale_tree(line: str) -> None:
    # dash prints the cached absolute path; the build-tool family is for a program missing from PATH
    read_as(line, "stale_build", "cached-tool-path-gone")


@pytest.mark.parametrize("line", ["./configure: line 2345: nasm: command not found", "/bin/sh: 1: ccache: not found",
                                  "./configure: line 88: perl: command not found"])
def test_a_configure_probe_or_an_optional_tool_is_not_a_missing_build_program(line: str) -> None:
    assert run(line).signature != "build-tool-not-found"


@pytest.mark.parametrize("line", [
    "Cannot connect to the Docker daemon: dial unix /var/run/docker.sock: connect: connection refused",
    "Could not connect to the X server: Connection refused",
    "curl: (7) Failed to connect to localhost port 8080 after 0 ms: Connection refused",
])
def test_a_local_service_refusing_a_connection_is_not_a_download_failure(line: str) -> None:
    assert run(line).category != "network"


@pytest.mark.parametrize("line", ["ERROR: Timeout: operation timed out waiting for lock /var/lib/dpkg/lock",
                                  "hipDeviceSynchronize failed: operation timed out"])
def test_an_operation_timing_out_inside_a_sentence_is_not_a_download(line: str) -> None:
    assert run(line).signature != "read-timed-out"


def test_curls_own_timeout_keeps_curls_reading() -> None:
    read_as("curl: (28) Operation timed out after 300000 milliseconds with 0 out of 0 bytes received",
            "network", "curl-transfer-error")


def test_powershells_missing_command_names_the_tool_in_the_advice() -> None:
    got = run("ninja : The term 'ninja' is not recognized as the name of a cmdlet, function, script file, "
              "or operable program.")
    assert got.fields.get("tool") == "ninja"
    assert "could not run ninja:" in (got.advice or ""), got.advice


def test_the_dll_torch_could_not_load_is_named_and_pythons_own_dll_failure_is_read() -> None:
    got = run("OSError: [WinError 126] The specified module could not be found. Error loading "
              "\"C:\\venv\\lib\\site-packages\\torch\\lib\\fbgemm.dll\" or one of its dependencies.")
    assert got.fields.get("path", "").endswith("fbgemm.dll"), got
    python = run("ImportError: DLL load failed while importing _C: The specified module could not be found.")
    assert (python.category, python.signature) == ("missing_runtime_library", "windows-dll-not-found"), python


@pytest.mark.parametrize("line", ["  couldn't find llvm-spirv in /usr/bin", "  Could not locate llvm-link",
                                  "  cannot locate hipcc on PATH"])
def test_every_phrasing_the_find_module_pattern_allows_reaches_it(line: str) -> None:
    read_as("CMake Error at cmake/FindLLVM.cmake:10 (message):\n" + line, "toolchain_missing", "hip-tool-not-found")


def test_a_cmake_status_line_about_an_optional_probe_is_not_a_missing_tool() -> None:
    assert run("-- Could not find rocm_agent_enumerator, using default targets").signature != "hip-tool-not-found"


def test_pips_resolver_exception_in_a_traceback_is_read() -> None:
    read_as("pip._vendor.resolvelib.resolvers.ResolutionImpossible: [RequirementInformation(requirement=...)]",
            "missing_python_dependency", "pip-resolution-impossible")


def test_a_wrong_git_ref_behind_a_download_stamp_is_not_read_as_the_network() -> None:
    got = run("FAILED: deps/src/rocprim-stamp/rocprim-download\n"
              "cd /b/deps && /usr/bin/cmake -P /b/deps/src/rocprim-stamp/rocprim-gitclone.cmake\n"
              "fatal: invalid reference: v9.9")
    assert got.signature != "externalproject-download-step-failed", got


# ------------------------------------------------------------------- CMake's find_package, the rest of its texts

def test_a_config_that_declares_its_package_not_found_stops_a_configure() -> None:
    # cmFindPackageCommand: the config file was found but set <pkg>_FOUND to FALSE (a missing Boost variant,
    # ROCm/MIVisionX#369); CMake wraps the message after the package name's line.
    read_as("CMake Error at /usr/local/lib/cmake/Boost-1.72.0/BoostConfig.cmake:120 (find_package):\n"
            "  Found package configuration file:\n\n"
            "    /usr/local/lib/cmake/boost_filesystem-1.72.0/boost_filesystem-config.cmake\n\n"
            "  but it set boost_filesystem_FOUND to FALSE so package \"boost_filesystem\" is\n"
            "  considered to be NOT FOUND.  Reason given by package:",
            "toolchain_missing", "cmake-could-not-find-package", 6)


def test_the_same_text_for_an_optional_package_is_taken_back_when_the_configure_goes_on() -> None:
    got = run("CMake Warning at CMakeLists.txt:40 (find_package):\n"
              "  but it set Boost_FOUND to FALSE so package \"Boost\" is\n"
              "  considered to be NOT FOUND.\n"
              "-- Configuring done\n"
              "-- Generating done\n"
              "[ 10%] Building CXX object CMakeFiles/x.dir/x.cpp.o\n"
              "/src/x.cpp:3:1: error: use of undeclared identifier 'frob'")
    assert got.signature != "cmake-could-not-find-package" and got.category == "unknown", got


@pytest.mark.parametrize(("line", "package"), [
    ("  Could not find a configuration file for package \"hsakmt\" that is compatible", "hsakmt"),
    ("  Could not find a configuration file for package \"rocm-cmake\" that is", "rocm-cmake"),
])
def test_a_config_of_an_unusable_version_is_a_missing_toolchain_part_wherever_cmake_wraps_it(
        line: str, package: str) -> None:
    got = read_as("CMake Error at CMakeLists.txt:97 (find_package):\n" + line, "toolchain_missing",
                  "cmake-rocm-package-missing", 2)
    assert got.fields["package"] == package


def test_a_config_cmake_rejects_for_version_unknown_is_the_packages_own_bug() -> None:
    # ROCm/rocm-cmake#47: ROCMConfig.cmake shipped without a version file.
    got = run("CMake Error at CMakeLists.txt:10 (find_package):\n"
              "  Could not find a configuration file for package \"ROCM\" that is compatible\n"
              "  with requested version \"0.5\".\n\n"
              "  The following configuration files were considered but not accepted:\n\n"
              "    /opt/rocm/share/rocm/cmake/ROCMConfig.cmake, version: unknown")
    assert got.category == "unknown", got


# ------------------------------------------------------------------- programs a Python package provides

@pytest.mark.parametrize("log", [
    # ROCm/rocm-cmake#139 (ROCMSphinxDoc.cmake, MIGraphX), flux-framework/flux-sched#1078 (wrapped name list)
    "CMake Error at /opt/rocm/share/rocm/cmake/ROCMSphinxDoc.cmake:10 (find_program):\n"
    "  Could not find SPHINX_EXECUTABLE using the following names: sphinx-build",
    "CMake Error at doc/CMakeLists.txt:7 (find_program):\n"
    "  Could not find SPHINX using the following names: sphinx-build,\n  sphinx-build2",
    # labapart/gattlib#147: a non-REQUIRED find_program's NOTFOUND run by make
    "[ 63%] Generating documentation with Sphinx\n/bin/sh: 1: SPHINX_EXECUTABLE-NOTFOUND: not found",
])
def test_sphinx_build_missing_is_a_python_package_not_a_toolchain_part(log: str) -> None:
    got = read_as(log, "missing_python_dependency", "python-doc-tool-not-found", 2)
    assert "SPHINX" in got.fields["variable"]


def test_a_c_program_find_program_misses_stays_a_missing_tool() -> None:
    read_as("CMake Error at cmake/Docs.cmake:3 (find_program):\n"
            "  Could not find DOXYGEN_EXECUTABLE using the following names: doxygen",
            "toolchain_missing", "cmake-find-program-required", 1)


# ------------------------------------------------------------------- libstdc++'s new-ABI tag alone

@pytest.mark.parametrize("line", [
    # GCC tags every function returning std::string with [abi:cxx11]: an unlinked library looks the same.
    "main.cpp:(.text+0x2c): undefined reference to `mylib::Config::name[abi:cxx11]() const'",
    "ld.lld: error: undefined symbol: hipsycl::rt::result::what[abi:cxx11]() const",
    "/usr/bin/ld: x.o: undefined reference to `std::_V2::error_category::_M_message[abi:cxx11](int) const'",
])
def test_the_new_abi_tag_alone_is_not_read_as_the_dual_abi(line: str) -> None:
    assert run("[100%] Linking CXX executable app\n" + line).signature != "libtorch-dual-abi-mismatch"


# ------------------------------------------------------------------- LLVM's own unreachable, in any host

def test_llvm_unreachable_from_an_embedded_llvm_is_a_compiler_crash() -> None:
    # JuliaGPU/AMDGPU.jl#76 (Julia's LLVM), and the same ErrorHandling.cpp text from clang (llvm/llvm-project#165062)
    read_as("unhandled address space\n"
            "UNREACHABLE executed at /src/julia/deps/srccache/llvm-9.0.1/lib/Target/AMDGPU/SIISelLowering.cpp:1201!\n\n"
            "signal (6): Aborted",
            "compiler_crash", "llvm-crash-report", 2)


# ------------------------------------------------------------------- a package's own module, not a dependency

@pytest.mark.parametrize("log", [
    # cupy/cupy#4218: the ROCm build skipped cupy's own cub module
    "  File \"/env/lib/python3.7/site-packages/cupy/__init__.py\", line 20, in <module>\n"
    "    from cupy import core  # NOQA\n"
    "  File \"cupy/core/_cub_reduction.pyx\", line 1, in init cupy.core._cub_reduction\n"
    "ModuleNotFoundError: No module named 'cupy.cuda.cub'",
    # ROCm/aiter's installed package without its ops module
    "  File \"/usr/local/lib/python3.12/dist-packages/aiter/__init__.py\", line 15, in <module>\n"
    "    from .ops.enum import *\n"
    "ModuleNotFoundError: No module named 'aiter.ops'",
])
def test_a_packages_own_submodule_missing_after_its_own_frames_is_not_a_dependency(log: str) -> None:
    got = run("Traceback (most recent call last):\n" + log)
    assert got.signature != "module-not-found" and got.category == "unknown", got


@pytest.mark.parametrize(("log", "module"), [
    # a namespace root: google.rpc is another distribution (googleapis-common-protos) than google.protobuf
    ("  File \"/env/lib/python3.11/site-packages/google/api_core/grpc_helpers.py\", line 20, in <module>\n"
     "    from google.rpc import status_pb2\n"
     "ModuleNotFoundError: No module named 'google.rpc'", "google.rpc"),
    # a directory that only shares the name (a conda env called torch) is not the package
    ("  File \"/opt/conda/envs/torch/lib/python3.10/site-packages/torchvision/__init__.py\", line 5, in <module>\n"
     "    import torch\n"
     "ModuleNotFoundError: No module named 'torch'", "torch"),
    ("  File \"/opt/python/lib/python3.11/site-packages/wheel/bdist_wheel.py\", line 11, in <module>\n"
     "    from setuptools.command.bdist_wheel import bdist_wheel as bdist_wheel\n"
     "ModuleNotFoundError: No module named 'setuptools.command.bdist_wheel'", "setuptools.command.bdist_wheel"),
    ("  File \"setup.py\", line 3, in <module>\n    from Cython.Build import cythonize\n"
     "ImportError: No module named Cython.Build", "Cython.Build"),
])
def test_another_packages_module_after_the_frames_is_still_a_missing_dependency(log: str, module: str) -> None:
    got = read_as("Traceback (most recent call last):\n" + log, "missing_python_dependency", "module-not-found")
    assert got.fields["module"] == module


# ------------------------------------------------- device libraries, LLVM inside another program, graph inputs


def test_two_llvm_copies_in_one_process_are_an_abi_mismatch_not_a_compiler_crash() -> None:
    # JuliaGPU/AMDGPU.jl#58 (Julia's LLVM and ROCm's comgr), the mechanism JuliaLang/julia#36342 describes:
    # LLVM's own fatal error follows, and must not turn it into a crash of the compiler
    read_as("   Building AMDGPU → `~/.julia/packages/AMDGPU/ztzIl/deps/build.log`\n"
            "ERROR: Error building `AMDGPU`: \n"
            ": CommandLine Error: Option 'disable-symbolication' registered more than once!\n"
            "LLVM ERROR: inconsistency in registered CommandLine options",
            "abi_mismatch", "llvm-linked-twice")


def test_an_assertion_in_llvms_sources_is_a_compiler_crash_whatever_program_embeds_it() -> None:
    # hashcat/hashcat#4000 (the OpenCL JIT of Arch's rocm-llvm), ROCm/hcc#811 (clang itself)
    read_as("Initializing backend runtime for device #1. Please be patient...hashcat: /usr/src/debug/rocm-llvm/"
            "llvm-project-rocm-6.0.2/llvm/include/llvm/ADT/GenericUniformityImpl.h:1016: const CycleT* "
            "llvm::getExtDivCycle(): Assertion `Cycle->getHeader() == JoinBlock' failed.",
            "compiler_crash", "llvm-fatal-error")
    got = run("python3: /src/csrc/ops.cpp:12: void f(): Assertion `n > 0' failed.")
    assert got.category == "unknown", "a program's own assertion is not the compiler's"


def test_a_library_under_an_install_prefix_missing_from_the_graph_is_missing_a_glob_is_the_projects_bug() -> None:
    # robertrosenbusch/gfx803_rocm62_pt24#2 (torch wants AOTriton's .a, only the .so is installed); justxi/rocm#187
    # (rocBLAS' CMakeLists names 'Tensile/*.hpp' as a dependency: a build-system bug, not a stale tree)
    got = read_as("ninja: error: '/opt/rocm/aotriton/lib/libaotriton_v2.a', needed by 'lib/libtorch_hip.so', "
                  "missing and no known rule to make it",
                  "missing_library", "installed-library-missing-from-build-graph")
    assert got.fields["library"] == "libaotriton_v2.a" and got.retryable is False
    glob = run("ninja: error: '/var/tmp/portage/sci-libs/rocBLAS-4.1.0/work/library/src/blas3/Tensile/*.hpp', "
               "needed by 'include/internal/rocblas-exported-proto.hpp', missing and no known rule to make it")
    assert glob.category == "unknown", glob


def test_device_library_symbols_undefined_say_which_side_is_missing() -> None:
    # hashcat/hashcat#4106 (-nocudalib dropped ockl.bc from the hipRTC link); ROCm/ROCm-Device-Libs#84 (an
    # upstream clang 14 with ROCm 5.2's device libraries: __oclc_ABI_version only a matching clang defines)
    read_as("hiprtcCompileProgram(): HIPRTC_ERROR_COMPILATION\n\nld.lld: error: undefined hidden symbol: "
            "__ockl_get_group_id\n>>> referenced by shared_kernel.o:(gpu_decompress)",
            "missing_library", "device-library-not-linked", line=3)
    read_as("lld: error: undefined symbol: __oclc_ABI_version\n>>> referenced by /tmp/hip-stream-gfx1032.o",
            "toolchain_missing", "device-library-abi-version-undefined")


def test_the_wrong_compiler_for_hip_reads_as_a_toolchain_problem() -> None:
    # tazz4843/whisper-rs#135 (GNU c++ handed -x hip); AdaptiveCpp/AdaptiveCpp#361 and #637 (clang 9 against a
    # ROCm whose device libraries moved); ROCm/hip#3069 (ROCm's OpenMP headers not installed);
    # ROCm/hipamd#16 (hipconfig, a Perl script, not where HIP_COMMON_DIR says)
    read_as("  c++: error: language hip not recognized\n"
            "  make[2]: *** [CMakeFiles/ggml-rocm.dir/build.make:79] Error 1",
            "toolchain_missing", "gcc-driver-given-hip", line=1)
    read_as("clang-9: error: no such file or directory: 'hip.amdgcn.bc'\n"
            "clang-9: error: no such file or directory: 'ocml.amdgcn.bc'", "toolchain_missing",
            "clang-device-bitcode-missing", line=1)
    read_as("hipcc -fopenmp test.cpp\ntest.cpp:2:10: fatal error: 'omp.h' file not found\n#include <omp.h>",
            "toolchain_missing", "compiler-openmp-header-missing", line=2)
    read_as('-- HIP_COMMON_DIR found at /root/ROCm-4.5/hipamd/hip\n'
            'Can\'t open perl script "/root/ROCm-4.5/hipamd/hip/bin/hipconfig": No such file or directory',
            "toolchain_missing", "hip-tool-not-found", line=2)


# ------------------------------------------------- round 12: tool wordings probed, then b47-b55's misses

@pytest.mark.parametrize(("log", "category", "signature"), [
    # PyTorch c10/util/C++17.h's own floor (pyro-ppl/pyro#3349, deepspeedai/DeepSpeed#7143, pytorch/vision#2509)
    ("/x/torch/include/c10/util/C++17.h:13:2: error: #error \"You're trying to build PyTorch with a too old "
     "version of GCC. We need GCC 9 or later.\"", "toolchain_missing", "torch-host-compiler-too-old"),
    # autoconf's AC_PROG_CC with no compiler at all; Triton's build.py; cargo's rust-version floor
    ("configure: error: no acceptable C compiler found in $PATH", "toolchain_missing",
     "autoconf-compiler-cannot-create-executables"),
    ("RuntimeError: Failed to find C compiler. Please specify via CC environment variable.", "toolchain_missing",
     "host-compiler-missing"),
    ("error: package `tokenizers v0.15.0` cannot be built because it requires rustc 1.70 or newer, while the "
     "currently active rustc version is 1.65.0", "toolchain_missing", "host-compiler-missing"),
    # pybind11's PYBIND11_CHECK_PYTHON_VERSION
    ("ImportError: Python version mismatch: module was compiled for Python 3.10, but the interpreter version is "
     "incompatible: 3.11.4.", "abi_mismatch", "undefined-symbol-python-c-api"),
    # Nix's filetransfer and rbuild's cget: a 404 in their words is gone for good
    ("error: unable to download 'https://x/y.tar.gz': HTTP error 404 (curl error: HTTP response code said error)",
     "network", "download-gone"),
    ("Download failed with error 404 for: //github.com/sqlite3/sqlite3/archive/3.43.2.tar.gz", "network",
     "download-gone"),
    # cargo, uv, docker's Go client, CPython's ssl: transient or proxy failures of a download
    ("error: failed to download from `https://static.crates.io/crates/serde/1.0.190/download`", "network",
     "connection-failed"),
    ("  Caused by: Request failed after 3 retries", "network", "connection-failed"),
    ("docker: Error response from daemon: Get \"https://registry-1.docker.io/v2/\": net/http: request canceled "
     "while waiting for connection (Client.Timeout exceeded while awaiting headers).", "network", "connection-failed"),
    # CMake's cache reset after a compiler change (irixxxx/picodrive#31, hypre-space/hypre#1549)
    ("-- Configuring incomplete, errors occurred!\nYou have changed variables that require your cache to be "
     "deleted.\nConfigure will be re-run and you may have to reset some variables.", "stale_build",
     "cmake-cache-reset-compiler-changed"),
    # a Fortran compiler identification, mixed case (ROCm/rocm-libraries#1608)
    ("[hipBLASLt configure] -- The Fortran compiler identification is unknown\n[hipBLASLt configure] CMake Error: "
     "Error required internal CMake variable not set, cmake may not be built correctly.", "toolchain_missing",
     "cmake-language-compiler-not-found"),
    # Bazel's process wrapper running a repository rule's git (ROCm/tensorflow-upstream#940)
    ("src/main/tools/process-wrapper-legacy.cc:58: \"execvp(git, ...)\": No such file or directory",
     "toolchain_missing", "build-tool-not-found"),
    # rocm-smi's C API left off the link (ROCm/TheRock#4353), AITER's C++ API (pytorch/pytorch#160105)
    ("/usr/libexec/gcc/x86_64-redhat-linux/13/ld: /w/build/lib/libtorch_hip.so: undefined reference to "
     "`rsmi_init'\ncollect2: error: ld returned 1 exit status", "missing_library", "undefined-reference-rocm-runtime"),
    ("ld.lld: error: undefined symbol: aiter::mha_fwd(fmha_fwd_args, ck_tile::stream_config const&, bool)",
     "missing_library", "undefined-reference-rocm-runtime"),
    # HIP's hip_impl:: internals, gone in later releases (ROCm/tensorflow-upstream#444)
    ("ImportError: /x/_pywrap_tensorflow_internal.so: undefined symbol: _ZN8hip_impl19Bundled_code_header13magic"
     "_string_E", "abi_mismatch", "undefined-symbol-rocm-runtime-skew"),
    # a Python table of targets without the GPU's arch (ROCm/aiter#1415, ROCm/aiter#1552)
    ("  File \"/x/aiter/jit/utils/chip_info.py\", line 63, in get_gfx_custom_op_core\n"
     "    return gfx_mapping[line.split(\":\")[-1].strip()]\nKeyError: 'gfx1151'", "unsupported_arch",
     "library-unsupported-gpu-target"),
    # a Fortran module another compiler wrote (spack/spack#27892, flang-compiler/flang#140)
    ("Fatal Error: File 'iso_c_binding.mod' opened at (1) is not a GNU Fortran module file", "abi_mismatch",
     "fortran-module-from-other-compiler"),
    # setuptools left as a namespace stub (ROCm/TheRock#3513)
    ("ImportError: cannot import name 'setup' from 'setuptools' (unknown location)", "missing_python_dependency",
     "build-backend-unavailable"),
    # cargo names the status on a later line (its 'failed to download from' comes first)
    ("error: failed to download from `https://static.crates.io/crates/x/1.0.0/download`\n\nCaused by:\n"
     "  failed to get successful HTTP response from `https://static.crates.io/crates/x/1.0.0/download` (1.2.3.4), "
     "got 404", "network", "download-gone"),
    # vLLM's logger before a Python exception (ROCm/aiter#1415)
    ("(EngineCore_DP0 pid=217) ERROR 08-14 09:27:31 [core.py:712] KeyError: 'gfx1151'", "unsupported_arch",
     "library-unsupported-gpu-target"),
    # the AMDGPU assembler's most target-specific wording
    ("<inline asm>:3:5: error: operands are not valid for this GPU or mode", "unsupported_arch",
     "device-asm-rejected-for-arch"),
    # gfortran reading a module another gfortran wrote; pybind11 before 2.6
    ("Fatal Error: Cannot read module file 'mpi.mod' opened at (1), because it was created by a different version "
     "of GNU Fortran", "abi_mismatch", "fortran-module-from-other-compiler"),
    ("ImportError: Python version mismatch: module was compiled for version 3.6, while the interpreter is running "
     "version 3.8.", "abi_mismatch", "undefined-symbol-python-c-api"),
    # each linker's wording for each ROCm C/C++ API
    ("/usr/bin/ld: x.o: undefined reference to `aiter::mha_fwd(fmha_fwd_args)'", "missing_library",
     "undefined-reference-rocm-runtime"),
    ("ld.lld: error: undefined symbol: rsmi_init", "missing_library", "undefined-reference-rocm-runtime"),
    ("src/x.cpp:2:10: fatal error: hipblas-common/hipblas-common.h: No such file or directory", "missing_library",
     "rocm-library-header-missing"),
])
def test_round_12_wordings(log: str, category: str, signature: str) -> None:
    read_as(log, category, signature)


def test_the_amdgpu_assemblers_operand_errors_read_by_their_wording_and_host() -> None:
    # "not a valid operand." is AMDGPUAsmParser's alone (ROCm/MIOpen#3793); "invalid operand for instruction" is
    # every LLVM assembler's, so it needs a ROCm build and clang's echo of a v_/s_ instruction to be specific
    # (ROCm/pytorch#718, ROCm/rocRAND#140)
    read_as("<inline asm>:14:20: error: not a valid operand.\nv_add_f32 v3 v3 v3 row_bcast:15 row_mask:0xa",
            "unsupported_arch", "device-asm-rejected-for-arch", 1)
    gpu = run("[ 86%] Building HIPCC object caffe2/x.hip.o\n<inline asm>:1:24: error: invalid operand for "
              "instruction\n        v_mad_u64_u32 v[2:3], s[10:11], s1, v42, v[8:9]")
    assert (gpu.category, gpu.signature, gpu.line, gpu.confidence) == (
        "unsupported_arch", "amdgpu-inline-asm-operand-rejected", 2, "high"), gpu
    x86 = run("<inline asm>:1:2: error: invalid operand for instruction\n        movq %rax, %xmm0")
    assert x86.category == "unknown", x86  # no ROCm in sight: every LLVM target says this


def test_a_tool_missing_from_the_rocm_root_is_the_toolchain_and_a_versioned_root_gone_is_stale() -> None:
    # rocm-arch/tensorflow-rocm#57: ROCm 5.6 removed /opt/rocm/hip/bin, so a build that hard-codes it finds no
    # hipcc; a versioned root that is gone is a cache made before an upgrade
    read_as("sh: line 1: /opt/rocm/hip/bin/hipcc: No such file or directory", "toolchain_missing",
            "hip-tool-not-found")
    read_as("/bin/sh: 1: /opt/rocm-6.1.0/bin/hipcc: No such file or directory", "stale_build",
            "cached-tool-path-gone")


def test_urllib3s_retries_before_the_last_are_not_the_failure() -> None:
    # a Retrying line is a warning while retries remain, whatever error it quotes (CERTIFICATE_VERIFY_FAILED
    # reads as a network failure on its own: pypi/warehouse#3395)
    got = run("  Retrying (Retry(total=2, connect=None, read=None, redirect=None, status=None)) after connection "
              "broken by 'SSLError(SSLError(1, '[SSL: CERTIFICATE_VERIFY_FAILED]'))': /simple/pip/")
    assert (got.signature, got.confidence) == ("pip-retrying-connection", "medium"), got  # the weak reading only
    cert = read_as("ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable "
                   "to get local issuer certificate (_ssl.c:1006)", "network", "ssl-certificate-verify-failed")
    assert not cert.retryable and "REQUESTS_CA_BUNDLE" in cert.advice  # a proxy or CA bundle: waiting won't help
    # Python logging's format puts the logger's name before the same warning (vladmandic/sdnext#4570)
    logged = run("WARNING:urllib3.connectionpool:Retrying (Retry(total=4, connect=None, read=None, redirect=None, "
                 "status=None)) after connection broken by 'SSLError(SSLCertVerificationError(1, '[SSL: "
                 "CERTIFICATE_VERIFY_FAILED] certificate verify failed'))': /x")
    assert logged.category == "unknown", logged


def test_a_dpp_form_rejected_at_O0_is_the_compiler_and_otherwise_the_target() -> None:
    # parthenon-hpc-lab/parthenon#1191 and ROCm/ROCm#5826: the same code builds at -O2; without -O0 in sight
    # the DPP form is a library's code for older GPUs (ROCm/rocPRIM#180)
    error = "error: Illegal instruction detected: Invalid dpp_ctrl value: wavefront shifts are not supported on GFX10+"
    at_o0 = run(f"/usr/bin/hipcc -DKOKKOS_DEPENDENCE -O0 --offload-arch=gfx1030 -c x.cpp\n{error}")
    assert (at_o0.category, at_o0.signature, at_o0.line) == ("compiler_crash", "llvm-machine-verifier", 2), at_o0
    read_as(f"/usr/bin/hipcc -O3 --offload-arch=gfx1030 -c x.cpp\n{error}", "unsupported_arch",
            "llvm-verifier-unsupported-on-gfx", 2)


def test_cmakes_cache_reset_gives_way_to_a_finished_rerun_and_to_any_specific_reading() -> None:
    # the notice, a re-run that generated, then a compile error: not a stale tree (unknown here)
    notice = "You have changed variables that require your cache to be deleted."
    specific = run(f"{notice}\n/usr/bin/ld: cannot find -lhipblas")
    assert (specific.category, specific.line) == ("missing_library", 2), specific
    alone = run(f"-- Configuring incomplete, errors occurred!\n{notice}")
    assert (alone.category, alone.confidence) == ("stale_build", "medium"), alone
    after = run(f"{notice}\n-- Generating done\n/src/foo.cpp:12:3: error: no matching function for call to 'bar'")
    assert after.category == "unknown", after
    rerun = run(f"{notice}\nConfigure will be re-run and you may have to reset some variables.\n-- Generating done\n"
                "-- Build files have been written to: /w/build")
    assert rerun.category == "unknown", rerun


def test_cgets_other_statuses_are_not_gone_for_good() -> None:
    # a 400 behind a proxy or a 408 is not a file removed from the server
    got = run("Download failed with error 400 for: //github.com/pfultz2/rocm-recipes/archive/HEAD.tar.gz")
    assert got.signature != "download-gone", got


def test_a_dpp_form_at_O0_in_a_quoted_flag_list_is_the_compiler() -> None:
    # torch.utils.cpp_extension prints the command as a Python list
    got = run("Command '['/opt/rocm/bin/hipcc', '-O0', '--offload-arch=gfx1030', '-c', 'x.hip']' failed\n"
              "error: Illegal instruction detected: Invalid dpp_ctrl value: broadcasts are not supported on GFX10+")
    assert (got.category, got.signature) == ("compiler_crash", "llvm-machine-verifier"), got


def test_an_unconfirmed_inline_asm_operand_error_on_a_rocm_build_is_only_a_weak_reading() -> None:
    # host x86 asm in a .hip file says the same words: without clang's echo of a GPU instruction the reading
    # is medium at most, so a specific reading anywhere else in the log wins over it
    got = run("[ 86%] Building HIPCC object x.hip.o\n<inline asm>:1:2: error: invalid operand for instruction\n"
              "        movq %rax, %xmm0")
    assert (got.signature, got.confidence) == ("amdgpu-inline-asm-operand-rejected", "medium"), got
    both = run("[ 86%] Building HIPCC object x.hip.o\n<inline asm>:1:2: error: invalid operand for instruction\n"
               "        movq %rax, %xmm0\n/usr/bin/ld: cannot find -lhipblas")
    assert (both.category, both.signature) == ("missing_library", "ld-cannot-find-library"), both


# ------------------------------------------------- round 13: b56-b61's misses, as the tools word them

@pytest.mark.parametrize(("log", "category", "signature"), [
    # the HIP runtime's string through a "runtime error" wrapper: composable_kernel's ck_tile HIP_CHECK_ERROR
    # (ROCm/TransformerEngine's CK fused attention) and PyTorch's old THCudaCheck (pytorch/pytorch#1557,
    # daerduoCarey/PyTorchEMD#11)
    ("RuntimeError: HIP runtime error: invalid device function. /w/3rdparty/composable_kernel/include/ck_tile/host/"
     "hip_check_error.hpp: 18in function: ", "arch_mismatch", "hip-runtime-no-code-for-gpu"),
    ("RuntimeError: cuda runtime error (8) : invalid device function at /w/torch/lib/THC/THCTensorCopy.cu:204",
     "arch_mismatch", "hip-runtime-no-code-for-gpu"),
    # a library compiled against one LLVM loaded with another (AdaptiveCpp/AdaptiveCpp#1395, thu-pacman/Spindle#2,
    # BinaryAnalysisPlatform/bap#649): the loader's wording, as each loader prints it
    ("[AdaptiveCpp Warning] /usr/local/lib/hipSYCL/llvm-to-backend/libllvm-to-backend.so: undefined symbol: "
     "_ZN4llvm10PGOOptionsD1Ev", "abi_mismatch", "undefined-symbol-llvm-abi"),
    ("error: unable to load plugin 'build/libSkeletonPass.so': 'build/libSkeletonPass.so: undefined symbol: "
     "_ZN4llvm23EnableABIBreakingChecksE'", "abi_mismatch", "undefined-symbol-llvm-abi"),
    ("error: unable to load plugin 'x.so': 'x.so: undefined symbol: _ZTIN4llvm10CallbackVHE'", "abi_mismatch",
     "undefined-symbol-llvm-abi"),
    # generated protobuf code against another release's headers (Cockatrice/Cockatrice#1653, qradiolink#3)
    ("/w/build/caffe2/proto/caffe2.pb.h:17:2: error: #error This file was generated by an older version of protoc "
     "which is\n #error This file was generated by an older version of protoc which is\n  ^~~~~", "abi_mismatch",
     "protoc-generated-code-version-skew"),
    ("/w/onnx/onnx-ml.pb.h:13:2: error: #error \"Protobuf C++ gencode is built with an incompatible version of\"",
     "abi_mismatch", "protoc-generated-code-version-skew"),
    # Bazel's launcher and TensorFlow's configure (rocm-arch/tensorflow-rocm#38 and #69, tensorflow/tensorflow#33169)
    ("ERROR: The project you're trying to build requires Bazel 3.2.0 (specified in /root/x/.bazelversion), but it "
     "wasn't found in /usr/bin.", "toolchain_missing", "bazel-version-not-installed"),
    # a Bazel built from source or by a distro names itself "X- (@non-git)"; bazel-skylib's versions.check
    ("You have bazel 0.24.0- (@non-git) installed.\nPlease upgrade your bazel installation to version 0.24.1 or "
     "higher to build TensorFlow!", "toolchain_missing", "tensorflow-bazel-version-out-of-range"),
    ("ERROR: /w/WORKSPACE:12:15: Traceback: Error in check: Current Bazel version is 5.3.0; expected at least 5.4.0",
     "toolchain_missing", "bazel-version-not-installed"),
    ("You have bazel 0.23.0 installed.\nPlease upgrade your bazel installation to version 0.24.1 or higher to build "
     "TensorFlow!", "toolchain_missing", "tensorflow-bazel-version-out-of-range"),
    # apt's own words for a connection that failed (pytorch/pytorch#94555, NVIDIA/libnvidia-container#71)
    ("E: Failed to fetch http://repo.radeon.com/rocm/apt/5.4.2/pool/main/r/x.deb  Connection failed "
     "[IP: 13.82.220.49 80]", "network", "connection-failed"),
    ("Failed to fetch https://nvidia.github.io/libnvidia-container/ubuntu18.04/amd64/InRelease  Connection failed "
     "[IP: 185.199.110.153 443]", "network", "connection-failed"),
    # a shared library's own reference, as lld words it for an executable's link (ROCm/rocBLAS#1290)
    ("ld.lld: error: undefined reference due to --no-allow-shlib-undefined: pthread_create\n>>> referenced by "
     "../../library/src/librocblas.so.0.1.50500", "missing_library", "ld-undefined-system-library-symbol"),
    # ROCm SMI's entry point undefined at import: libtorch_hip linked without librocm_smi64 (pytorch/pytorch#158725)
    ("    from torch._C import *  # noqa: F403\nImportError: /usr/lib64/libtorch_hip.so: undefined symbol: rsmi_init",
     "missing_runtime_library", "rocm-smi-api-unlinked"),
    # Bazel 6 reading a project written for Bazel 5 (rocm-arch/tensorflow-rocm#47 and #48)
    ("ERROR: /home/u/.cache/bazel/_bazel_u/d53f/external/bazel_tools/platforms/BUILD:19:6: in alias rule "
     "@bazel_tools//platforms:x86_64: Constraints from @bazel_tools//platforms have been removed. Please use "
     "constraints from @platforms repository embedded in Bazel", "toolchain_missing", "bazel-version-not-installed"),
    # std::filesystem in libstdc++fs, left off the link (AdaptiveCpp/AdaptiveCpp#667, kokkos/kokkos#7416)
    ("ld.lld: error: undefined symbol: std::filesystem::temp_directory_path[abi:cxx11]()", "missing_library",
     "std-filesystem-old-libstdcxx"),
])
def test_round_13_wordings(log: str, category: str, signature: str) -> None:
    read_as(log, category, signature)


def test_lld_naming_an_llvm_symbol_at_link_time_is_not_two_llvms_at_load() -> None:
    # lld's link-time wording (demangled, or mangled with --no-demangle) is a library left off the link
    for line in ("ld.lld: error: undefined symbol: llvm::ModulePass::createPrinterPass(llvm::raw_ostream&) const",
                 "ld.lld: error: undefined symbol: _ZN4llvm10PGOOptionsD1Ev"):
        assert run(line).signature != "undefined-symbol-llvm-abi", line


def test_tensorflows_bazel_line_counts_only_when_configure_refuses_it() -> None:
    # configure.py prints "You have bazel X installed." on every run; without the up/downgrade line right after it,
    # a later failure is not read as the wrong Bazel (the reading is taken back)
    got = run("You have bazel 6.1.0 installed.\nDo you wish to build TensorFlow with ROCm support? [y/N]: y\n"
              "src/x.cc:1:1: error: 'foo' was not declared in this scope")
    assert got.signature != "tensorflow-bazel-version-out-of-range" and got.category == "unknown", got
    refused = run("You have bazel 5.1.0 installed.\nPlease downgrade your bazel installation to version 4.99.0 or "
                  "lower to build TensorFlow!")
    assert (refused.category, refused.confidence, refused.fields["version"]) == ("toolchain_missing", "high", "5.1.0")


def test_a_failure_recognised_as_the_projects_own_bug_stays_unknown_but_says_what_it_is() -> None:
    # HIP's headers compiled without a platform: most threads fixed the project's build (icl-utk-edu/blaspp#104,
    # OPM/opm-simulators#6874, CHIP-SPV/chipStar#282, ROCm/hipFFT#90), so the diagnosis names the failure and says
    # what to do, but claims no category: nothing is retried and no ladder runs as if it were a toolchain problem
    log = ("In file included from src/Misc.cpp:3:\n/usr/include/hip/hip_runtime_api.h:6711:2: error: #error (\"Must "
           "define exactly one of __HIP_PLATFORM_AMD__ or __HIP_PLATFORM_NVIDIA__\");\n/usr/include/hip/"
           "hip_runtime_api.h:6736:61: error: 'hipHostMallocDefault' was not declared in this scope")
    got = run(log)
    assert (got.category, got.signature, got.line, got.confidence) == ("unknown", "hip-platform-undefined", 2, "low")
    assert (got.retryable, got.remedies, got.recognised) == (False, (), False)
    assert "__HIP_PLATFORM_AMD__" in got.advice and "hipcc" in got.advice
    # a live build does not stop early on it: only a category stops a build that may still succeed
    classifier = Classifier(CAT)
    for number, line in enumerate(log.split("\n"), 1):
        classifier.on_line(number, clean_line(line))
    assert classifier.current() is None
    # --fail-fast asks for it (stop at the first recognised failure, this one included)
    named = classifier.current(named=True)
    assert named is not None and (named.category, named.signature) == ("unknown", "hip-platform-undefined")


def test_a_rocm_librarys_flat_header_missing_is_read_as_nothing_its_threads_split() -> None:
    # ROCm 5.2 moved rocblas.h to rocblas/rocblas.h: the flat name is missing both when rocBLAS is not installed
    # (ROCm/ROCmValidationSuite#115) and when old code includes it beside a new rocBLAS (rocm-arch/rocm-arch#817)
    flat = run("src/rvs_blas.h:30:10: fatal error: 'rocblas.h' file not found")
    assert (flat.category, flat.signature, flat.line) == ("unknown", None, 1)
    read_as("src/x.hip:3:10: fatal error: 'rocblas/rocblas.h' file not found", "missing_library",
            "rocm-library-header-missing")


def test_apts_warnings_about_an_index_it_could_not_fetch_are_not_the_failure() -> None:
    # `apt-get update` warns (W:) and goes on with the old index; the build's own error later is the failure
    got = run("Err:2 http://repo.radeon.com/rocm/apt/6.2 jammy InRelease\n  Connection failed [IP: 13.82.220.49 80]\n"
              "W: Failed to fetch http://repo.radeon.com/rocm/apt/6.2/dists/jammy/InRelease  Connection failed "
              "[IP: 13.82.220.49 80]\nW: Some index files failed to download. They have been ignored, or old ones "
              "used instead.\nsrc/x.cpp:3:10: fatal error: foo.h: No such file or directory")
    assert (got.category, got.signature) == ("unknown", None), got


def test_rocm_smis_entry_point_unlinked_names_its_own_library() -> None:
    got = read_as("ImportError: /usr/lib64/libtorch_hip.so: undefined symbol: rsmi_init", "missing_runtime_library",
                  "rocm-smi-api-unlinked")
    assert "librocm_smi64" in got.advice and "libamdhip64" not in got.advice


# ------------------------------------------------- round 14: b65-b72's misses, as the tools word them


def test_a_cmake_command_of_a_later_release_says_cmake_is_too_old() -> None:
    # CMake's own "Unknown CMake command" for one of its commands that a later release added: pytorch/pytorch#128420
    # (AOTriton's cmake_path under CMake 3.18), CHIP-SPV/chipStar#502, KratosMultiphysics/Kratos#10655
    got = read_as('CMake Error at v2src/CMakeLists.txt:6 (cmake_path):\n  Unknown CMake command "cmake_path".',
                  "toolchain_missing", "cmake-command-newer-than-cmake")
    assert got.fields["command"] == "cmake_path" and "3.20" in got.advice
    read_as('  Unknown CMake command "target_precompile_headers".', "toolchain_missing",
            "cmake-command-newer-than-cmake")
    # a project's or a module's own command stays what it was: FindHIP's macros are the HIP SDK's modules missing
    read_as('  Unknown CMake command "hip_add_library".', "toolchain_missing", "cmake-unknown-hip-command")
    assert run('  Unknown CMake command "cmake_path_helper".').signature != "cmake-command-newer-than-cmake"


def test_kokkos_own_architecture_check_is_an_arch_mismatch() -> None:
    # Kokkos aborts at initialisation when its kernels do not run on the device: kokkos/kokkos#1944 (Volta70 on a
    # Maxwell), lammps/lammps#2086 and kokkos/kokkos#6565 (Kokkos_ARCH_* not the GPU's)
    read_as("Kokkos::Cuda::initialize ERROR: likely mismatch of architecture\n[gpu004:105080] *** Process received "
            "signal ***", "arch_mismatch", "kokkos-arch-mismatch", 1)
    got = read_as("Kokkos::Cuda::initialize ERROR: running kernels compiled for compute capability 3.5 (< 5.0) on "
                  "device with compute capability 7.0 (>=5.0), this would give incorrect results!", "arch_mismatch",
                  "kokkos-arch-mismatch")
    assert (got.fields["compiled"], got.fields["device"]) == ("3.5", "7.0") and "Kokkos_ARCH_" in got.advice
    # its warning for a minor difference is not the failure
    assert run("Kokkos::Cuda::initialize WARNING: running kernels compiled for compute capability 7.0 on device "
               "with compute capability 7.5 .").signature != "kokkos-arch-mismatch"


def test_an_llvm_tool_that_does_not_know_an_option_is_the_wrong_copy_of_it() -> None:
    # LLVM's command-line parser names the tool: ROCm/TheRock#206 (/opt/rocm's clang-offload-bundler without
    # --compress), nod-ai/amd-shark-ai#1964 (an iree-compile built without the HIP target)
    got = read_as("RuntimeError: Error with Bundling/compressing code object file (.co -> .co): "
                  "b\"clang-offload-bundler: Unknown command line argument '--compress'.  Try: "
                  "'/opt/rocm/lib/llvm/bin/clang-offload-bundler --help'\\nclang-offload-bundler: Did you mean "
                  "'--outputs'?\\n\"", "toolchain_missing",
                  "llvm-tool-unknown-option")
    assert (got.fields["tool"], got.fields["option"]) == ("clang-offload-bundler", "--compress")
    read_as("iree-compile: Unknown command line argument '--iree-hip-target=gfx942'.  Try: '/home/u/.local/bin/"
            "iree-compile --help'\niree-compile: Did you mean '--iree-vulkan-target=gfx942'?", "toolchain_missing",
            "llvm-tool-unknown-option", 1)
    # clang's -mllvm options are probed by projects that go on without them (ROCm/aiter#666): not the failure
    probe = run("clang (LLVM option parsing): Unknown command line argument '--amdgpu-use-amdgpu-trackers=1'.  Try: "
                "'clang (LLVM option parsing) --help'")
    assert probe.signature != "llvm-tool-unknown-option"


def test_xlas_returned_status_for_missing_device_bitcode_is_read_like_its_log_line() -> None:
    # XLA logs "bitcode module is required ... but was not found at" and returns "bitcode module not found at":
    # ROCm/tensorflow-upstream#2026 pasted the first, ROCm/legacy-rocm-build#1796 quoted the second
    got = read_as("With xla however, I got this error: ````bitcode module not found at ./opencl.bc````",
                  "toolchain_missing", "xla-device-bitcode-not-found")
    assert got.fields["path"] == "./opencl.bc"


def test_a_runtime_message_cut_mid_word_still_reads() -> None:
    # a paste cut inside the HIP runtime's hipErrorSharedObjectInitFailed string (leejet/stable-diffusion.cpp#192;
    # the whole string in the development set's ggml threads)
    read_as("CUDA error: shared object initialization fail", "arch_mismatch", "shared-object-init-failed")


def test_undefined_blas_functions_are_a_blas_left_off_the_link() -> None:
    # ggml-org/llama.cpp#634 and #1113 (Arch's openblas without CBLAS), OpenMathLib/OpenBLAS#3174, spcl/gemm_hls#22
    got = read_as("/usr/bin/ld: ggml.o: in function `ggml_compute_forward_mul_mat_f16_f32':\nggml.c:(.text+0x454b): "
                  "undefined reference to `cblas_sgemm'\ncollect2: error: ld returned 1 exit status", "missing_library",
                  "undefined-reference-blas", 2)
    assert got.fields["symbol"] == "cblas_sgemm" and "CBLAS" in got.advice
    read_as("RunHardware.cpp:(.text+0x1504): undefined reference to `cblas_sgemm(CBLAS_ORDER, CBLAS_TRANSPOSE, int)'",
            "missing_library", "undefined-reference-blas")
    read_as("/usr/bin/ld: solver.o: undefined reference to `dgetrf_'", "missing_library", "undefined-reference-blas")
    # rocBLAS's own names stay the ROCm library reading
    assert run("/usr/bin/ld: x.o: undefined reference to `rocblas_sgemm'").signature != "undefined-reference-blas"


def test_a_cpp_symbol_of_another_librarys_scope_missing_at_load_is_version_skew() -> None:
    # michellab/Sire#228 (Sire built against an older OpenMM), ROCm/MIVisionX#1015 (rpp against another Boost),
    # ROCm/tensorflow-upstream#444 (HIP's hip_impl:: internals, read by the ROCm-specific signature)
    got = read_as("Traceback (most recent call last):\n  File \"somd.py\", line 12, in <module>\nImportError: /home/u/"
                  "sire.app/lib/libSireMove.so.2018: undefined symbol: _ZN6OpenMM7Context12reinitializeEv",
                  "abi_mismatch", "undefined-symbol-other-cpp-library", 3)
    assert got.fields["scope"] == "OpenMM" and "libSireMove.so.2018 was compiled against" in got.advice
    read_as("ImportError: /opt/rocm-5.4.0/lib/libamd_rpp.so: undefined symbol: "
            "_ZN5boost10filesystem6detail11dir_itr_impD1Ev", "abi_mismatch", "undefined-symbol-other-cpp-library")
    # the project's own scope in its own path, or a free function, is the project's own build: not this reading
    own = run("ImportError: /venv/lib/python3.12/site-packages/vllm/_C.abi3.so: undefined symbol: "
              "_ZN4vllm14rms_norm_implEv")
    free = run("ImportError: /venv/lib/python3.12/site-packages/vllm/_C.abi3.so: undefined symbol: "
               "_Z28silu_and_mul_per_block_quantRN2at6TensorE")
    assert "undefined-symbol-other-cpp-library" not in (own.signature, free.signature)
    # the library's own scope counts where a path component or a library's name starts, not inside a word:
    # "packages" holds a `ge` scope, "mmcv" OpenCV's `cv`
    for line in ("ImportError: /venv/lib/python3.11/site-packages/foo/_ext.so: undefined symbol: "
                 "_ZN2ge5Graph5buildEv",
                 "ImportError: /venv/lib/python3.11/dist-packages/mmcv/_ext.cpython-311-x86_64-linux-gnu.so: "
                 "undefined symbol: _ZN2cv3MatD1Ev"):
        assert run(line).signature == "undefined-symbol-other-cpp-library", line
    assert run("ImportError: /home/roy/tensorflow/lib/libtensorflow.so.2: undefined symbol: "
               "_ZNK10tensorflow6Device19IsRemoteCallAllowedEv").signature != "undefined-symbol-other-cpp-library"
    # an anonymous namespace is always the library's own
    assert run("ImportError: /venv/foo/_ext.so: undefined symbol: _ZN12_GLOBAL__N_16helperEv").signature \
        != "undefined-symbol-other-cpp-library"
    # PyTorch's scopes keep their own reading, whose advice is about the torch version
    torch = run("ImportError: /venv/lib/python3.10/site-packages/flash_attn_2_cuda.so: undefined symbol: "
                "_ZN3c104cuda9SetDeviceEi")
    assert torch.category == "abi_mismatch" and torch.signature != "undefined-symbol-other-cpp-library"


@pytest.mark.parametrize("line", [
    "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: Illegal seek for GPU arch : gfx1036",
    "rocBLAS error: Cannot read /venv/lib/python3.11/site-packages/torch/lib/rocblas/library/TensileLibrary.dat: No "
    "such file or directory",
])
def test_rocblas_without_a_tensile_library_for_the_gpu_is_a_tie_in_either_releases_wording(line: str) -> None:
    # the same event, printed with the arch by newer rocBLAS and without it by older: threads split between a
    # build without the arch (b43 002, b46 006) and an arch the library does not support (b67 006-007); where the
    # printed arch decides (RDNA4, the APUs, the override siblings) the tests below read it, but gfx1036 (an RDNA2
    # iGPU: unsupported in b09's thread, enumerated ahead of the discrete GPU in b54's) and no arch stay a tie
    got = run(line)
    assert (got.category, got.confidence) == ("unknown", "low")
    assert {r.category for r in got.runners_up} >= {"arch_mismatch", "unsupported_arch"}
    # an arch-named lazy library that will not load stays the build-without-the-arch reading
    read_as("rocBLAS error: Could not load /opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1103.dat",
            "arch_mismatch", "tensile-library-missing")


def test_llvms_own_api_undefined_at_link_is_a_component_left_off() -> None:
    # ROCm/llvm#73 (LLVMAMDGPUCodeGen without Demangle and Linker), ROCm/ROCm-CompilerSupport#25 (comgr without the
    # libraries behind llvm::errs), 61bcdefg/Hikari-LLVM15#22 (llvm::Linker::linkModules), snu-sf-class/swpp202401#126
    got = read_as("/home/u/llvm-hcc/lib/Target/AMDGPU/AMDGPUConvertAtomicLibCalls.cpp:246: undefined reference to "
                  "`llvm::itaniumDemangle(char const*, char*, unsigned long*, int*)'\ncollect2: error: ld returned 1 "
                  "exit status", "missing_library", "undefined-reference-llvm-component", 1)
    assert "LLVM_LINK_COMPONENTS" in got.advice
    read_as("ld64.lld: error: undefined symbol: llvm::ReplaceInstWithInst(llvm::Instruction*, llvm::Instruction*)",
            "missing_library", "undefined-reference-llvm-component")
    # another LLVM release's library (a versioned symbol) is not a component left off
    versioned = run("/usr/bin/ld: /opt/rocm/lib/libamd_comgr.so.2: undefined reference to "
                    "`llvm::cl::Option::anchor()@LLVM_14'")
    assert versioned.signature != "undefined-reference-llvm-component"
    # nor is a shared library's own reference (built against another libLLVM), nor LLVM's ABI-breaking-checks marker
    for line in ("/usr/bin/ld: /opt/rocm/lib/libamd_comgr.so.2: undefined reference to `llvm::cl::Option::anchor()'",
                 "ld.lld: error: undefined symbol: llvm::DisableABIBreakingChecks"):
        assert run(line).signature != "undefined-reference-llvm-component", line


def test_curls_host_name_check_is_a_certificate_failure_not_a_flaky_network() -> None:
    # curl's verifyhost wording, as git prints it: pytorch/executorch#1163 (a submodule server's certificate named
    # another host until its owners fixed it); the same signature as CERTIFICATE_VERIFY_FAILED (vladmandic/sdnext#4570)
    got = read_as("fatal: unable to access 'https://git.mlplatform.org/ml/ethos-u/ethos-u-core-driver.git/': SSL: no "
                  "alternative certificate subject name matches target host name 'git.mlplatform.org'\nfatal: clone of "
                  "'https://git.mlplatform.org/ml/ethos-u/ethos-u-core-driver.git' into submodule path 'x' failed",
                  "network", "ssl-certificate-verify-failed", 1)
    assert got.retryable is False and "mirror" in got.advice
    read_as("curl: (60) SSL: certificate subject name 'a.example' does not match target host name 'b.example'",
            "network", "ssl-certificate-verify-failed")


def test_cmakes_other_directory_message_reads_from_its_first_line() -> None:
    # hyperledger-archives/avalon#271 quoted it with the paths elided; a long path wraps it the same way
    read_as("CMake Error: The current CMakeCache.txt directory\n. . . CMakeCache.txt is different than the directory\n"
            ". . . examples/build\nwhere CMakeCache.txt was created.", "stale_build", "cmakecache-other-directory", 1)


def test_tinygrads_own_arch_check_names_a_gfx_target_it_does_not_support() -> None:
    # tinygrad's AMD runtime (ops_amd.py) for a gfx target outside its range: tinygrad/tinygrad#7704 (gfx906)
    got = read_as("Error processing prompt (see logs with DEBUG>=2): Unsupported arch: gfx906", "unsupported_arch",
                  "unsupported-gpu-architecture")
    assert got.fields["arch"] == "gfx906"
    # the same words for a CPU machine name (many installers print them) are not a GPU arch
    assert run("RuntimeError: Unsupported arch: riscv64").category != "unsupported_arch"


# ----------------------------------------- wordings probed from the tools' own sources (after round 14)


def test_mesons_own_failures_read_like_cmakes() -> None:
    # Meson's DependencyException, as CMake's "Could NOT find" is read: kushview/element#768 (x11),
    # Quedale/OnvifDeviceManager#61 (libxml-2.0), mesonbuild/meson#4587 (the older wordings)
    got = read_as('src/meson.build:36:18: ERROR: Dependency "libxml-2.0" not found (tried pkg-config and cmake)',
                  "toolchain_missing", "meson-dependency-not-found")
    assert got.fields["package"] == "libxml-2.0" and "PKG_CONFIG_PATH" in got.advice
    read_as('src/juce/meson.build:131:17: ERROR: Dependency "x11" not found, tried pkgconfig and cmake',
            "toolchain_missing", "meson-dependency-not-found")
    # the status line of an optional dependency is not the failure
    assert run("Run-time dependency fmt found: NO (tried pkgconfig and cmake)").signature is None
    # the project's meson_version floor: xbelanch/OBS4Pi#18, fwupd/fwupd#4357, m-ab-s/media-autobuild_suite#1266
    got = read_as("meson.build:25:0: ERROR:  Meson version is 0.46.1 but project requires >= 0.47.0.",
                  "toolchain_missing", "meson-too-old")
    assert (got.fields["version"], got.fields["required"]) == ("0.46.1", ">= 0.47.0")


def test_condas_http_error_without_a_response_is_the_network() -> None:
    # conda's CondaHTTPError: HTTP 000 (no response: DNS, proxy) or a 5xx; conda/conda#9948, #7172, #6341 (a proxy)
    got = read_as("Collecting package metadata (current_repodata.json): failed\n\nCondaHTTPError: HTTP 000 CONNECTION "
                  "FAILED for url <https://repo.anaconda.com/pkgs/main/linux-64/current_repodata.json>\nElapsed: -",
                  "network", "conda-http-connection-failed", 3)
    assert got.fields["status"] == "000" and "proxy" in got.advice
    # a 404 is gone for good: never waited out
    gone = run("CondaHTTPError: HTTP 404 NOT FOUND for url <https://conda.anaconda.org/rocm/linux-64/repodata.json>")
    assert gone.signature != "conda-http-connection-failed" and gone.retryable is False


def test_mambas_unsolvable_specs_name_the_first_package_that_does_not_exist() -> None:
    # libmamba's solver, as mamba and conda's libmamba solver print it: olsson-group/RL-GraphINVENT#4 (libsolv's older
    # "nothing provides requested"), GONGJIA0208/Diffpose#18 and mave5/podalize#13 (an exported environment.yml's
    # build strings that do not exist on this platform)
    got = read_as("Could not solve for environment specs\nEncountered problems while solving:\n  - nothing provides "
                  "requested pytorch ==1.3.1 py3.6_cuda10.0.130_cudnn7.6.3_0", "missing_python_dependency",
                  "mamba-unsolvable", 1)
    assert got.fields["module"] == "pytorch"
    got = read_as("error    libmamba Could not solve for environment specs\n"
                  "    The following packages are incompatible\n"
                  "    ├─ _openmp_mutex ==5.1 1_gnu does not exist (perhaps a typo or a missing channel);",
                  "missing_python_dependency", "mamba-unsolvable", 1)
    assert got.fields["module"] == "_openmp_mutex"


# ----------------------------------------------------------- CUDA's own tools, probed before round 15's batches


def test_ptxas_without_the_target_is_an_unsupported_arch_like_nvcc() -> None:
    # ptxas names the target with --gpu-name where nvcc says --gpu-architecture: a CUDA older than the GPU
    # (utcs-scea/altis#19: sm_30 dropped by CUDA 11; triton-lang/triton#8539: Triton's bundled ptxas before sm_121a)
    got = read_as("    /usr/bin/nvcc     -x cu -c main.cu -o main.cu.o\n"
                  "    ptxas fatal   : Value 'sm_30' is not defined for option 'gpu-name'\n"
                  "    make[1]: *** [CMakeFiles/cmTC_a1746.dir/build.make:66: main.cu.o] Error 255",
                  "unsupported_arch", "unsupported-gpu-architecture", 2)
    assert got.fields["arch"] == "sm_30"
    assert run("ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-arch'").category == "unknown"


def test_nvcc_on_windows_reports_a_crashed_stage_by_its_ntstatus() -> None:
    # nvcc's Windows form of "died due to signal": cudafe++ (microsoft/onnxruntime#25239, fixed by a code change in
    # #25317), cicc (gunrock/essentials#90), the host cl.exe (owensgroup/GpuBTree#21)
    got = read_as("1>CUDACOMPILE : nvcc error : 'cudafe++' died with status 0xC0000005 (ACCESS_VIOLATION)\n"
                  "1>C:\\MSBuild\\CUDA 12.9.targets(799,9): error MSB3722: The command exited with code 5.",
                  "compiler_crash", "tool-died-due-to-signal", 1)
    assert got.fields["status"] == "0xC0000005"
    assert run("'cicc' died with status 0xC00000FD (STACK_OVERFLOW)").category == "compiler_crash"
    # out of memory on Windows is its own status, not a crash of the compiler
    assert run("nvcc error   : 'cicc' died with status 0xC0000017 (STATUS_NO_MEMORY)").category != "compiler_crash"


def test_torch_refuses_a_cuda_toolkit_of_another_major_version() -> None:
    # torch.utils.cpp_extension's CUDA_MISMATCH_MESSAGE, printed over two lines: icip-cas/AutoAlign#25,
    # PKUHaoWang/EmbodiedOcc2#6 (fixed by installing the torch of the detected CUDA),
    # kodenii/Responsible-Visual-Editing#4
    got = read_as("    raise RuntimeError(CUDA_MISMATCH_MESSAGE.format(cuda_str_version, torch.version.cuda))\n"
                  "RuntimeError: \nThe detected CUDA version (12.4) mismatches the version that was used to compile\n"
                  "PyTorch (11.8). Please make sure to use the same CUDA versions.",
                  "toolchain_missing", "torch-cuda-version-mismatch", 3)
    assert got.fields["version"] == "12.4" and "torch.version.cuda" in got.advice
    # a minor-version difference is only a warning and the build goes on
    assert run("UserWarning: The detected CUDA version (12.1) has a minor version mismatch with the version that was "
               "used to compile PyTorch (12.4). Most likely this shouldn't be a problem.").category == "unknown"


def test_meson_found_no_compiler_unless_the_one_it_tried_cannot_start() -> None:
    # Meson's "Unknown compiler(s)", in its older flat list and newer nested one: FeralInteractive/gamemode#318 and
    # mesonbuild/meson#12594 (none installed), mesonbuild/meson#5156 (MSVC's environment not set), #9040 (a broken icc)
    got = read_as("The Meson build system\nVersion: 1.2.2\n"
                  "../meson.build:21:0: ERROR: Unknown compiler(s): [['cc'], ['gcc'], ['clang'], ['nvc'], ['pgcc']]\n"
                  "The following exception(s) were encountered:\n"
                  "Running `pgcc --version` gave \"[Errno 2] No such file or directory: 'pgcc'\"",
                  "toolchain_missing", "meson-unknown-compiler", 3)
    assert (got.fields["kind"], got.fields["tool"]) == ("compiler", "cc")
    got = read_as("meson.build:1:0: ERROR: Unknown compiler(s): ['cc', 'gcc', 'clang', 'pgcc', 'icc']",
                  "toolchain_missing", "meson-unknown-compiler")
    assert got.fields["tool"] == "cc"
    # the compiler is there but cannot start: the loader's line says why (lowRISC/opentitan's riscv clang)
    got = run("meson.build:5:0: ERROR: Unknown compiler(s): [['/tools/riscv/bin/riscv32-unknown-elf-clang']]\n"
              "/tools/riscv/bin/riscv32-unknown-elf-clang: error while loading shared libraries: libtinfo.so.5: "
              "cannot open shared object file: No such file or directory")
    assert got.category == "missing_runtime_library"


def test_a_setup_py_that_drives_cmake_found_none() -> None:
    # the pybind11 cmake_example's setup.py, as dlib and others copied it: davisking/dlib#2307,
    # errno-mmd/VMD-Lifting#1 (a framed banner, with no error word on the line itself), henrywoo/kazam#65
    got = read_as("  RuntimeError:\n  *******************************************************************\n"
                  "   CMake must be installed to build the following extensions: dlib\n"
                  "  *******************************************************************",
                  "toolchain_missing", "cmake-executable-missing", 3)
    assert "pip install cmake" in got.advice


def test_uv_giving_up_after_its_retries_is_the_network() -> None:
    # uv retries only transient failures, so its summary line is the network even when the cause below it is cut:
    # astral-sh/uv#6072 (a proxy's certificate), eugr/spark-vllm-docker#172 (a timeout)
    got = read_as("error: Failed to install cpython-3.12.4-macos-aarch64-none: Request failed after 3 retries",
                  "network", "connection-failed")
    assert got.fields["retries"] == "3" and got.retryable
    got = run("  × Failed to download `nvidia-cuda-cupti==13.0.85`\n  ├─▶ Request failed after 3 retries in 129.2s\n"
              "  ├─▶ error sending request for url\n  ╰─▶ operation timed out")
    assert got.category == "network" and got.retryable


def test_gos_network_errors_as_docker_prints_them() -> None:
    # Go's resolver and transport, lower-case, as the docker daemon and buildkit relay them: a DNS server's SERVFAIL
    # (docker/for-mac#1317, docker-archive-public/docker.kitematic#1272), a reset, a TLS handshake timeout
    got = read_as('Error response from daemon: Get https://registry-1.docker.io/v2/: dial tcp: lookup '
                  'registry-1.docker.io on 192.168.65.1:53: server misbehaving', "network", "go-net-dial-failed")
    assert got.fields["host"] == "registry-1.docker.io"
    assert run("read tcp 172.17.0.2:45678->104.16.1.1:443: read: connection reset by peer").category == "network"
    # docker's embedded DNS at 127.0.0.11 is not the loopback a local service listens on
    assert run("go: lookup proxy.golang.org on 127.0.0.11:53: server misbehaving").category == "network"
    assert run('failed to do request: Head "https://registry-1.docker.io/v2/rocm/pytorch/manifests/latest": '
               'net/http: TLS handshake timeout').category == "network"


def test_bazels_downloader_failing_in_the_network() -> None:
    # Bazel's HttpDownloader with the java.net exception's message: tolikzinovyev/bazel-compilation-db#1 and
    # waymo-research/waymo-open-dataset#216 (connect timed out), bazel-contrib/rules_img#559 (Unknown host),
    # facebookresearch/CompilerGym#22 (a resumed download the server refused)
    got = read_as("ERROR: An error occurred during the fetch of repository 'com_github_tencent_rapidjson':\n"
                  "   java.io.IOException: Error downloading [https://github.com/Tencent/rapidjson/archive/v1.1.0.zip] "
                  "to /home/u/.cache/bazel/_bazel_u/570d/external/com_github_tencent_rapidjson/v1.1.0.zip: "
                  "connect timed out", "network", "bazel-download-failed", 2)
    assert got.fields["url"] == "https://github.com/Tencent/rapidjson/archive/v1.1.0.zip" and got.retryable
    got = read_as("Error in download: java.io.IOException: Error downloading [https://github.com/x/zstd] to /tmp/z: "
                  "Unknown host: github.com", "network", "bazel-download-failed")
    assert got.fields["host"] == "github.com"
    # a 404 is gone for good, never waited out
    gone = run("java.io.IOException: Error downloading [https://storage.googleapis.com/m/x.tar.gz] to /root/z: "
               "GET returned 404 Not Found")
    assert gone.signature != "bazel-download-failed" and gone.retryable is False


# ------------------------------------------------------------- round 15 (b76-b81): what their first looks missed


def test_ptxas_refuses_a_feature_the_targeted_gpu_lacks() -> None:
    # ptxas's "requires .target sm_NN or higher": kernels written for a newer GPU than one in the arch list
    # (vllm-project/vllm#1063, NVIDIA/FasterTransformer#250, EricLBuehler/candle-vllm#207, unslothai/unsloth#434)
    got = read_as("  ptxas /tmp/tmpxft_00001f6c_00000000-6_gemm_cuda_gen.ptx, line 1866; error   : Feature '.m16n8k16' "
                  "requires .target sm_80 or higher\n  ptxas fatal   : Ptx assembly aborted due to errors",
                  "unsupported_arch", "ptxas-feature-needs-newer-target", 1)
    assert got.fields["required"] == "sm_80" and "TORCH_CUDA_ARCH_LIST" in got.advice
    got = run("65.86   ptxas /tmp/x.ptx, line 28497; error   : Modifier '.m8n8' requires .target sm_75 or higher")
    assert (got.category, got.fields["required"]) == ("unsupported_arch", "sm_75")


def test_an_extension_in_a_jit_cache_built_by_another_torch_is_stale() -> None:
    # the JIT caches keep a .so across torch upgrades: huggingface/transformers#18868 (torch_extensions on a CI
    # runner), rosinality/stylegan2-pytorch#5 (/tmp/torch_extensions), pytorch/pytorch#108868 (torchinductor)
    got = read_as("E   ImportError: /github/home/.cache/torch_extensions/py38_cu113/fused_adam/fused_adam.so: "
                  "undefined symbol: _ZN3c104impl8GPUTrace13gpuTraceStateE", "stale_build", "jit-cache-stale-extension")
    assert got.fields["library"].endswith("fused_adam/fused_adam.so") and not got.retryable and not got.remedies
    assert "torch_extensions" in got.advice
    got = run("ImportError: /tmp/torchinductor_u/triton/0/d5f8/__triton_launcher.so: undefined symbol: cuLaunchKernel")
    assert got.category == "stale_build"
    # the same symbol from an installed extension is the torch ABI, as before
    got = run("ImportError: /usr/lib/python3/dist-packages/vllm/_C.abi3.so: undefined symbol: "
              "_ZN3c106detail19maybe_wrap_dim_slowEllb")
    assert got.category == "abi_mismatch"


def test_xformers_built_for_a_gpu_torch_on_a_cpu_torch_is_the_wrong_torch() -> None:
    # the installed torch's local version says +cpu: open-mmlab/PIA#30 (answered: install a CUDA torch),
    # invoke-ai/InvokeAI#4788, facebookresearch/xformers#982; any other torch is the ABI reading (b01's, b05's)
    got = read_as("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
                  "    PyTorch 2.1.2+cu121 with CUDA 1201 (you have 2.1.2+cpu)\n    Python  3.10.11 (you have 3.10.11)",
                  "toolchain_missing", "torch-cpu-build-for-gpu-extension", 2)
    assert got.fields["installed"] == "2.1.2+cpu" and "index-url" in got.advice
    got = run("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
              "    PyTorch 2.1.2+cu121 with CUDA 1201 (you have 2.2.2+cu121)")
    assert (got.category, got.signature) == ("abi_mismatch", "extension-built-for-other-torch")


def test_automake_refuses_a_source_directory_configured_in_tree() -> None:
    # automake's AM_INIT_AUTOMAKE check, often from a stage an earlier build left: spack/spack#5361 and #6246
    # (`spack install --restage`), bitcoin-core/secp256k1#632, pnggroup/libpng#544 (an old in-tree configuration)
    got = read_as("checking whether make supports nested variables... yes\n"
                  'configure: error: source directory already configured; run "make distclean" there first',
                  "stale_build", "automake-source-already-configured", 2)
    # the ladder's clean paths do not hold an in-tree config.status: nothing to retry with
    assert "distclean" in got.advice and not got.remedies and got.retryable is False


def test_mpi4py_without_a_working_mpi_is_the_toolchain() -> None:
    # mpi4py's configuration check: Yale-LILY/SummerTime#72 and dso-org/deep-symbolic-optimization#61 (no mpi.h:
    # installing MPICH fixed it), EleutherAI/gpt-neox#601, spack/spack#12191 (link: the Cray wrapper)
    got = read_as("   _configtest.c:2:10: fatal error: mpi.h: No such file or directory\n    compilation terminated.\n"
                  "    failure.\n    removing: _configtest.c _configtest.o\n"
                  "    error: Cannot compile MPI programs. Check your configuration!!!",
                  "toolchain_missing", "mpi4py-cannot-build-mpi-programs", 5)
    assert got.fields["step"] == "compile" and "libopenmpi-dev" in got.advice
    assert run("  >> 145    error: Cannot link MPI programs. Check your configuration!!").fields["step"] == "link"


def test_protoc_llvm_config_and_findcudatoolkit_name_their_missing_tool() -> None:
    # onnx's own check (ZhangGe6/onnx-modifier#134, onnx/onnx#1534, microsoft/onnxruntime#17234); llvmlite's
    # ffi/build.py, old and new wording (numba/llvmlite#55, fatchord/WaveRNN#251); CMake's FindCUDAToolkit
    # (NixOS/nixpkgs#544701: CUDAToolkit_ROOT without bin/nvcc)
    read_as("      CMake Error at CMakeLists.txt:303 (message):\n        Protobuf compiler not found\n"
            "      Call Stack (most recent call first):", "toolchain_missing", "protoc-not-found", 2)
    got = read_as("RuntimeError: llvm-config failed executing, please point LLVM_CONFIG to the path for llvm-config",
                  "toolchain_missing", "llvmlite-llvm-config-missing")
    assert got.fields["tool"] == "llvm-config"
    read_as("RuntimeError: Could not find a `llvm-config` binary. There are a number of reasons this could happen.",
            "toolchain_missing", "llvmlite-llvm-config-missing")
    read_as("CMake Error at /nix/store/x-cmake-4.3.4/share/cmake-4.3/Modules/FindCUDAToolkit.cmake:911 (message):\n"
            "  Could not find `nvcc` executable in path specified by variable\n  CUDAToolkit_ROOT=/nix/store/y-cudart",
            "toolchain_missing", "cmake-language-compiler-not-found", 2)
    # FindCUDAToolkit's QUIET status line is not the failure
    quiet = run("-- Could not find `nvcc` executable in any searched paths, please set CUDAToolkit_ROOT")
    assert quiet.signature is None
    # CMake 3.25's FATAL wording (no backticks) is the same failure; its quiet form is not (mkiol/dsnote#322)
    assert run("CMake Error at FindCUDAToolkit.cmake:730 (message):\n  Could not find nvcc, please set "
               "CUDAToolkit_ROOT.").signature == "cmake-language-compiler-not-found"
    assert run("-- Could not find nvcc, please set CUDAToolkit_ROOT.").signature is None


def test_ggml_running_on_a_gpu_it_has_no_kernels_for() -> None:
    # ggml's NO_DEVICE_CODE: leejet/stable-diffusion.cpp#541 (fixed by building for the GPU's arch),
    # qualcomm/GenieX#419,
    # mozilla-ai/llamafile#434; the message itself from ggml-org/llama.cpp#5088
    got = read_as("/w/ggml-cuda/template-instances/../mmq.cuh:2589: ERROR: CUDA kernel mul_mat_q has no device "
                  "code compatible with CUDA arch 520. ggml-cuda.cu was compiled for: 520",
                  "arch_mismatch", "ggml-no-device-code-for-arch")
    assert (got.fields["kernel"], got.fields["arch"]) == ("mul_mat_q", "520")


def test_nvcc_handed_an_empty_arch_or_cmakes_detection_text() -> None:
    # CMAKE_CUDA_ARCHITECTURES left empty or 'native' with no GPU in the build container: colmap/colmap#1822
    # (fixed by naming the arch), ggml-org/llama.cpp#18430 (the detection's own message became the arch)
    got = read_as("  nvcc fatal : Unsupported gpu architecture 'compute_'", "unsupported_arch",
                  "unsupported-gpu-architecture")
    assert got.fields["arch"] == "compute_"
    detected = run("nvcc fatal   : Unsupported gpu architecture 'compute_No CUDA devices found.'")
    assert detected.category == "unsupported_arch"


def test_apple_ld_names_an_undefined_gpu_library_symbol_on_its_own_line() -> None:
    # ld64 prints the symbol under "Undefined symbols for architecture": pytorch/pytorch#1295 (cuSPARSE not linked),
    # quoted in a markdown reply
    got = read_as("> [1%] Linking CXX shared library libTHC.dylib\n> Undefined symbols for architecture x86_64:\n"
                  '>   "_cusparseCreate", referenced from:\n>       _THCState_reserveDevice in THCGeneral.c.o\n'
                  "> ld: symbol(s) not found for architecture x86_64", "missing_library",
                  "undefined-reference-rocm-runtime", 3)
    assert got.fields["symbol"] == "cusparseCreate"


# ----------------------------------------------------------------- round 15 (b82, b83): after their first looks


def test_invalid_device_function_in_any_error_wrapper_is_the_arch() -> None:
    # cudaErrorInvalidDeviceFunction's string through each project's own check: caffe's CHECK (niuzhiheng/caffe#1,
    # rbgirshick/py-faster-rcnn#118), a cudaSafeCall (mp3guy/ICPCUDA#17), a TensorRT wrapper
    # (laugh12321/TensorRT-YOLO#74): every log in the corpus with this string (24) is labelled arch_mismatch
    for line in ("F0319 16:42:04.865949  3385 roi_pooling_layer.cu:91] Check failed: error == cudaSuccess (8 vs. 0)  "
                 "invalid device function",
                 "Best: 224 threads, 96 blocks (3.40282e+38ms)Error: invalid device function",
                 "    Error text: invalid device function"):
        assert run(line).category == "arch_mismatch", line
    assert run("test_invalid_device_function_error_path PASSED").category == "unknown"


def test_compiler_front_ends_and_stages_that_crash_in_their_own_words() -> None:
    # EDG's assertion inside cudafe++ (ComputationalRadiationPhysics/picongpu#2048, NVIDIA/thrust#1624,
    # IntelligentSoftwareSystems/Galois#195); the HPC SDK's driver (NVIDIA/thrust#1591, NVIDIA/cub#469,
    # FluidNumerics/SELF#55); make's status 139 for an object (AMReX-Codes/amrex#3215, BLAST-WarpX/warpx#4613)
    got = read_as('src/DeviceBufferIntern.hpp(50): internal error: assertion failed at: "/dvs/p4/build/sw/rel/gpu_drv/'
                  'r361/r361_00/drivers/compiler/edg/EDG_4.10/src/types.c", line 7537',
                  "compiler_crash", "edg-internal-assertion")
    assert "compiler" in got.advice
    got = read_as("nvdd-Fatal-/opt/nvidia/hpc_sdk/Linux_x86_64/22.1/compilers/bin/tools/nvvmd TERMINATED by signal 11",
                  "compiler_crash", "nvhpc-tool-terminated-by-signal")
    assert got.fields["signal"] == "11"
    killed = run("nvfortran-Fatal-/opt/nvidia/hpc_sdk/bin/tools/fort2 TERMINATED by signal 9")
    assert killed.category != "compiler_crash"
    got = read_as("[  8%] Building CUDA object Src/CMakeFiles/amrex.dir/Base/AMReX_DistributionMapping.cpp.o\n"
                  "Segmentation fault (core dumped)\n"
                  "make[2]: *** [Src/CMakeFiles/amrex.dir/build.make:202: Src/CMakeFiles/amrex.dir/Base/"
                  "AMReX_DistributionMapping.cpp.o] Error 139", "compiler_crash", "make-object-segfault", 3)
    assert got.fields["target"].endswith("AMReX_DistributionMapping.cpp.o")
    # a test program (not an object) that segfaults is not the compiler
    assert run("make[2]: *** [bin/test_runner] Error 139").signature != "make-object-segfault"
    # Windows: a stack buffer overrun in cudafe++ (NVIDIA/cutlass#894)
    assert run("nvcc error   : 'cudafe++' died with status 0xC0000409").category == "compiler_crash"


def test_no_code_object_for_a_gpu_rocm_never_built_for_is_an_unsupported_arch() -> None:
    # the device's gfx name decides: Raven's gfx902 (rocm-arch/python-pytorch-rocm#26) and Navi 14's gfx1012
    # (ROCm/legacy-rocm-build#1525: "We are not supporting Navi14") are in no ROCm release's libraries
    got = read_as('ERROR："hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\n\nDEVICE\n'
                  "Name:                            gfx1012\nMarketing Name:          Navi 14 [Radeon RX 5500/5500M]",
                  "unsupported_arch", "hip-no-binary-for-never-supported-gpu", 1)
    assert "ship no code objects" in got.advice
    # a GPU ROCm builds for (or none named) is code built for another arch, as before
    for gpu in ("gfx1100", "gfx90a"):
        other = run('"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\n'
                    f"Name:                            {gpu}")
        assert (other.category, other.signature) == ("arch_mismatch", "hip-no-binary-for-gpu"), gpu
    alone = run("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!")
    assert alone.category == "arch_mismatch"
    # an arch list that merely contains such a target is not the device
    listed = run('"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\n'
                 "-- AMDGPU_TARGETS: gfx900;gfx906;gfx1010;gfx1030\nName:                            gfx1100")
    assert listed.category == "arch_mismatch"


# ------------------------------------------------------------- round 15b (b84-b87): what their first looks missed


def test_cudnn_cannot_load_its_own_sublibraries() -> None:
    # cuDNN 9's loader, Linux and Windows: OpenNMT/CTranslate2#1826 (fixed with LD_LIBRARY_PATH),
    # SYSTRAN/faster-whisper#1182, MahmoudAshraf97/whisper-diarization#259, petermg/Chatterbox-TTS-Extended#48
    got = read_as("INFO:faster_whisper:Processing audio with duration 03:52.176\n"
                  "Unable to load any of {libcudnn_cnn.so.9.1.0, libcudnn_cnn.so.9.1, libcudnn_cnn.so.9, "
                  "libcudnn_cnn.so}\n"
                  "Invalid handle. Cannot load symbol cudnnCreateConvolutionDescriptor",
                  "missing_runtime_library", "cudnn-sublibrary-not-loaded", 2)
    assert got.fields["library"] == "libcudnn_cnn.so.9.1.0" and "LD_LIBRARY_PATH" in got.advice
    assert run("Could not locate cudnn_ops64_9.dll. Please make sure it is in your library path!").category == \
        "missing_runtime_library"


def test_a_go_older_than_the_sources_build_lines() -> None:
    # Go 1.16 meeting //go:build: ollama/ollama#1373, fraenky8/tables-to-go#39, bitfield/script#131 (upgrading Go fixed)
    got = read_as("../go/pkg/mod/github.com/gin-gonic/gin@v1.9.1/context.go:23:2: //go:build comment without // +build "
                  "comment", "toolchain_missing", "go-build-constraint-too-new")
    assert "1.17" in got.advice


def test_pip_refusing_the_interpreter_names_the_range() -> None:
    # pip's Requires-Python check: ycyy/ComfyUI-Yolo-World-EfficientSAM#1, seemoo-lab/opendrop#44, pypa/pipx#1567
    got = read_as("ERROR: Package 'inference-gpu' requires a different Python: 3.11.8 not in '<=3.11,>=3.8'",
                  "missing_python_dependency", "pip-requires-different-python")
    assert (got.fields["module"], got.fields["python"], got.fields["required"]) == (
        "inference-gpu", "3.11.8", "<=3.11,>=3.8")
    # pip's verbose skip of one link is not the failure
    skipped = run("  Link requires a different Python (2.7.17 not in: u'>=3.5'): https://x/numpy.zip")
    assert skipped.category == "unknown"


def test_windows_socket_errors_are_the_network() -> None:
    # Winsock's own strings through Python: jeffheaton/t81_558_deep_learning#27, pypi/warehouse#13987,
    # microsoft/PTVS#6465; jax-ml/jax#2315's build (b86) hit WinError 10054 downloading a dependency
    for line in ("error: [WinError 10054] An existing connection was forcibly closed by the remote host",
                 "ERROR: Could not install packages due to an EnvironmentError: HTTPSConnectionPool(host='files."
                 "pythonhosted.org', port=443): Max retries exceeded with url: /p.whl (Caused by ProtocolError("
                 "'Connection aborted.', ConnectionResetError(10054, 'An existing connection was forcibly closed by "
                 "the remote host', None, 10054, None)))"):
        got = run(line)
        assert (got.category, got.retryable) == ("network", True), line


def test_onnxruntimes_build_script_without_cuda_or_cudnn() -> None:
    # microsoft/onnxruntime#1777, triton-inference-server/onnxruntime_backend#33: cudnn_home was None
    read_as("2019-09-07 15:39:21,386 Build [ERROR] - cuda_home and cudnn_home paths must be specified and valid.\n"
            "cuda_home='/usr/local/cuda' valid=True. cudnn_home='None' valid=False",
            "toolchain_missing", "onnxruntime-cuda-home-invalid", 1)


def test_a_kernel_image_missing_behind_a_failed_call() -> None:
    # XLA's status wording has no "error", only "Failed call to" (jax-ml/jax#22723: rebuilt for sm_87)
    got = run("F0729 12:58:37.236422  109 stream_executor_util.cc:504] Could not create RepeatBufferKernel: INTERNAL: "
              "Failed call to cudaGetFuncBySymbol: no kernel image is available for execution on the device")
    assert got.category == "arch_mismatch"


def test_torch_compiles_triton_backend_refusing_an_old_gpu() -> None:
    # inductor's create_backend: MIC-DKFZ/nnUNet#2188 (answered: disable torch.compile), 2noise/ChatTTS#341,
    # karpathy/nanoGPT#157; the same text as a suppressed-error [WARNING] is not the failure (2noise/ChatTTS#235)
    got = read_as("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
                  "RuntimeError: Found NVIDIA GeForce "
                  "GTX 1070 which is too old to be supported by the triton GPU compiler, which is used as the backend. "
                  "Triton only supports devices of CUDA Capability >= 7.0, but your device is of CUDA capability 6.1",
                  "unsupported_arch", "torch-inductor-gpu-too-old", 2)
    assert got.fields["gpu"] == "NVIDIA GeForce GTX 1070" and "TORCHDYNAMO_DISABLE" in got.advice
    warned = run("[2024-06-18 23:38:49,504] torch._dynamo.convert_frame: [WARNING] RuntimeError: Found NVIDIA "
                 "GeForce GTX TITAN X which is too old to be supported by the triton GPU compiler, which is used as "
                 "the backend.")
    assert warned.signature != "torch-inductor-gpu-too-old"
    glog = run("W0618 12:00:01.123000 4242 torch/_dynamo/convert_frame.py:1009] RuntimeError: Found Tesla P100 "
               "which is too old to be supported by the triton GPU compiler, which is used as the backend.")
    assert glog.signature != "torch-inductor-gpu-too-old"


def test_flash_attention_refusing_a_gpu_older_than_its_kernels() -> None:
    # flash_api.cpp's check: Dao-AILab/flash-attention#762 (a Turing card: "not currently supported"),
    # vllm-project/vllm#8189, if-ai/ComfyUI-IF_Trellis#40 (ComfyUI's own prefix, no "error" on the line)
    got = read_as("!!! Exception during processing !!! FlashAttention only supports Ampere GPUs or newer.",
                  "unsupported_arch", "library-unsupported-gpu-target")
    assert (got.fields["library"], got.fields["supported"]) == ("FlashAttention", "Ampere")
    assert run("RuntimeError: FlashAttention only supports AMD MI200 GPUs or newer.").fields["supported"] == "MI200"
    # a library that says so and falls back is not the failure
    for line in ("WARNING: FlashAttention only supports Ampere GPUs or newer, falling back to sdpa attention",
                 "FlashAttention only supports AMD MI200 GPUs or newer. Falling back to the math kernel."):
        assert run(line).category == "unknown", line


# ------------------------------------------------------------------ round 15c (b90, b91): after their first looks


def test_wget_refusing_a_certificate_is_not_retried() -> None:
    # GNU wget's own certificate wording: cp2k/cp2k#442 (ELPA's server; fixed by a mirror), xbmc/xbmc#16872
    # (wget.exe's outdated store), wp-cli/wp-cli#1688
    got = read_as("Connecting to elpa.mpcdf.mpg.de|130.183.1.1|:443... connected.\n"
                  "ERROR: cannot verify elpa.mpcdf.mpg.de's certificate, issued by 'CN=MPG CA - G02,O=Max-Planck':\n"
                  "  Unable to locally verify the issuer's authority.", "network", "ssl-certificate-verify-failed", 2)
    assert got.fields["host"] == "elpa.mpcdf.mpg.de" and got.retryable is False
    assert run("ERROR: The certificate of 'nodejs.org' is not trusted.").signature == "ssl-certificate-verify-failed"


def test_the_oom_killers_task_dump_names_the_compilers_it_weighed() -> None:
    # mm/oom_kill.c dump_tasks rows, printed only while the OOM killer chooses (ggml-org/llama.cpp#17844: an
    # unbounded -j docker build); the row's last field is the process, here nvcc's front end
    got = read_as("Dec 07 15:40:35 user kernel: [   8068]     0  8068   724    24  49152    0    0 sh\n"
                  "Dec 07 15:40:35 user kernel: [   8069]     0  8069  42686 39552 380928    0    0 cudafe++",
                  "out_of_memory", "oom-killer-task-dump", 2)
    assert got.fields["process"] == "cudafe++" and "MAX_JOBS" in got.advice
    # a row for a shell alone is not read, nor is ninja's progress
    assert run("Dec 07 15:40:35 user kernel: [   8068]     0  8068      724       24    49152        0       0 sh"
               ).category == "unknown"


def test_a_compiler_the_shell_cannot_find() -> None:
    # the shell's "not found" for a compiler that is not ROCm's own: CHIP-SPV/chipStar#148 (icpx, fixed by putting
    # oneAPI on PATH), the same wording build-tool-not-found reads for gcc or ninja
    got = read_as("/bin/sh: 1: icpx: not found", "toolchain_missing", "build-tool-not-found")
    assert got.fields["tool"] == "icpx"
    # configure probing for an optional compiler, or a tool that says what it does instead, is not the failure
    for line in ("./configure: line 2345: gfortran: command not found", "which: icx: not found, using gcc instead"):
        assert run(line).category == "unknown", line


# ------------------------------------------------------------------ round 16 (b94-b99): after their first looks


def test_windows_disk_full_wording_is_disk_full() -> None:
    # Windows' ERROR_DISK_FULL text, in MSBuild's FileTracker (nodejs/build#2851) and vcpkg's copy step
    # (microsoft/vcpkg#16909); it belongs to the ENOSPC family, not to ptxas's write failure
    read_as("failed: C:\\vcpkg\\installed\\x64-windows-static-md\\tools/qt5/debug/bin/qtdiag.pdb: "
            "There is not enough space on the disk.", "disk_full", "no-space-left-on-device")
    assert run("FileTracker : error FTK1005: could not write rooting file marker to the file tracking log file: "
               "C:\\w\\link.read.1.tlog. There is not enough space on the disk.").signature == "no-space-left-on-device"
    # a tool that says so and goes on is not the failure
    assert run("warning: not enough space on the disk for the debug symbols cache; continuing without it"
               ).category == "unknown"


def test_an_arch_list_left_at_none_is_an_unsupported_arch() -> None:
    # a recipe turning cuda_arch=none into -gencode arch=compute_none (spack/spack-packages#6546), the same
    # empty-arch-list shape as nvcc's "compute_" (the advice says to set the arch list)
    got = read_as("nvcc fatal   : Unsupported gpu architecture 'compute_none'", "unsupported_arch",
                  "unsupported-gpu-architecture")
    assert got.fields["arch"] == "compute_none"


def test_xcrun_without_the_command_line_tools_is_a_missing_toolchain() -> None:
    # Apple's xcrun after a macOS update removed the Command Line Tools: muquit/applehealth2csv#1 (behind a
    # Homebrew tap install), arguablykomodo/shadowfox-updater#25 (make; quoted in markdown backticks)
    got = read_as("==> Installing applehealth2csv from muquit/applehealth2csv\n"
                  "xcrun: error: invalid active developer path (/Library/Developer/CommandLineTools), missing xcrun "
                  "at: /Library/Developer/CommandLineTools/usr/bin/xcrun", "toolchain_missing",
                  "xcode-developer-tools-missing", 2)
    assert got.fields["path"] == "/Library/Developer/CommandLineTools" and "xcode-select --install" in got.advice
    assert run("`xcrun: error: invalid active developer path (/Library/Developer/CommandLineTools), missing xcrun "
               "at: /Library/Developer/CommandLineTools/usr/bin/xcrun`").signature == "xcode-developer-tools-missing"
    metal = run('xcrun: error: unable to find utility "metal", not a developer tool or in PATH')
    assert metal.fields["tool"] == "metal"
    # gyp's harmless probe on a Mac with only the Command Line Tools, and a utility a build only probes for
    for line in ("xcode-select: error: tool 'xcodebuild' requires Xcode, but active developer directory "
                 "'/Library/Developer/CommandLineTools' is a command line tools instance",
                 'xcrun: error: unable to find utility "xctest", not a developer tool or in PATH'):
        assert run(line).category == "unknown", line


def test_the_go_compiler_killed_is_out_of_memory() -> None:
    # cmd/go's "go build <pkg>: <tool>: signal: killed": gravitational/teleport#387 (512 MB droplet, dmesg shows
    # the OOM killer), beego/wetalk#32 (old Go's shorter form), yuin/goldmark#159, cycloidio/terracognita#217
    # (an AUR build; swap fixed it)
    got = read_as("==> Starting build()...\n"
                  "go build github.com/Azure/azure-sdk-for-go/services/datafactory/mgmt/2018-06-01/datafactory: "
                  "/usr/lib/go/pkg/tool/linux_amd64/compile: signal: killed\n"
                  "==> ERROR: A failure occurred in build().", "out_of_memory", "go-toolchain-killed", 2)
    assert got.fields["program"] == "compile" and "swap" in got.advice
    assert run("go build github.com/astaxie/beego: signal: killed").category == "out_of_memory"
    assert run("C:\\Go\\pkg\\tool\\windows_amd64\\link.exe: signal: killed").fields["program"] == "link"
    # a program the user ran being killed says nothing about the build's memory, even one named link
    for line in ("signal: killed", "Error: signal: killed", "exec: \"./server\": signal: killed",
                 "/tmp/go-build123/b001/exe/link: signal: killed"):
        assert run(line).category == "unknown", line


def test_an_extension_with_cuda_version_zero_was_built_without_cuda() -> None:
    # torch_sparse's import check after a build on a GPU-less host (rusty1s/pytorch_sparse#41, fixed by
    # FORCE_CUDA=1): "0.0" is no CUDA at all, not a second version, so the ABI reading does not take it
    line = ("RuntimeError: Detected that PyTorch and torch_sparse were compiled with different CUDA versions. "
            "PyTorch has CUDA version 10.1 and torch_sparse has CUDA version {}. Please reinstall the torch_sparse "
            "that matches your PyTorch install.")
    assert run(line.format("0.0")).category == "unknown"
    assert run(line.format("10.0")).signature == "compiled-with-different-versions"


@pytest.mark.parametrize(("line", "signature", "tool"), [
    # Ubuntu's command-not-found handler: ROCm/hip#3310 (hipcc off PATH on a HIP-on-NVIDIA install, fixed by
    # PATH), b43's "Command '~python' not found" typo shows a name outside the lists is not read
    ("Command 'hipcc' not found, -> Error while running hipcc", "hip-tool-not-found", "hipcc"),
    ("Command 'nvcc' not found, but can be installed with:", "hip-tool-not-found", "nvcc"),
    ("Command 'make' not found, but can be installed with:", "build-tool-not-found", "make"),
    ("Command 'cmake' not found, but can be installed with:", "cmake-executable-missing", None),
])
def test_ubuntus_command_not_found_names_a_missing_tool(line: str, signature: str, tool: str | None) -> None:
    got = read_as(line, "toolchain_missing", signature)
    assert got.fields.get("tool") == tool
    assert run("Command '~python' not found, did you mean:").category == "unknown"


def test_nvccs_own_internal_compiler_error_is_a_compiler_crash() -> None:
    # cicc's banner, with no GCC or clang ICE text: kokkos/kokkos#307 (CUDA 8 EA on POWER8), TheHPXProject/hpx#4668,
    # gunrock/gunrock#302 and #1059 (a source file's diagnostic form), alpaka-group/alpaka#1130 (MSBuild's form)
    got = read_as("/k/Kokkos_Atomic_Decrement.hpp(61): warning: integer conversion resulted in a change of sign\n"
                  "Error: Internal Compiler Error (codegen): \"there was an error in verifying the lgenfe output!\"\n"
                  "make[2]: *** [TestDefaultDeviceType.cpp.o] Error 2", "compiler_crash",
                  "nvcc-internal-compiler-error", 2)
    assert got.fields["phase"] == "codegen" and "CUDA" in got.advice
    assert run("Error #3246 : Internal Compiler error (codegen): \"there was an error in verifying the lgenfe "
               "output!\" [D:\\a\\alpaka\\math.vcxproj]").signature == "nvcc-internal-compiler-error"
    assert run("-- Checking for an Internal Compiler Error (codegen) workaround").category == "unknown"


def test_a_debian_packaging_tool_the_shell_cannot_find() -> None:
    # NVIDIA/nccl#135: `make pkg.debian.build` runs debuild, which devscripts provides
    got = read_as("/bin/sh: 1: debuild: not found", "toolchain_missing", "build-tool-not-found")
    assert got.fields["tool"] == "debuild"
    assert run("make: dpkg-buildpackage: Command not found").fields["tool"] == "dpkg-buildpackage"


def test_cmakes_download_retries_with_no_final_error_are_a_weak_network_reading() -> None:
    # ExternalProject's sleep_before_download: NVIDIA/TensorRT#817 (an offline host, the paste ends retrying),
    # NixOS/nixpkgs#21456 (the retries, then "Each download failed!", which decides)
    got = read_as("[  0%] Performing download step (download, verify and extract) for 'third_party.protobuf'\n"
                  "-- Using src='https://github.com/google/protobuf/releases/download/v3.0.0/protobuf-cpp-3.0.0.tar.gz'\n"
                  "-- Retrying...\n"
                  "-- Retry after 5 seconds (attempt #2) ...", "network", "cmake-download-retrying", 4)
    assert got.confidence != "high"
    # any specific failure in view decides instead
    assert run("-- Retry after 5 seconds (attempt #2) ...\n"
               "/usr/bin/ld: cannot find -lnvinfer").category == "missing_library"
    # a later attempt that succeeded dismisses the retries, and an error line nothing reads is left to a person
    assert run("-- Retry after 5 seconds (attempt #2) ...\n-- Using src='https://x/y.tar.gz'\n"
               "-- Downloading... done\n-- GPU_TARGETS was not set").category == "unknown"
    assert run("-- Retry after 5 seconds (attempt #2) ...\n"
               "CMake Error at CMakeLists.txt:12 (message):\n  the frobnicator is misconfigured").category == "unknown"


def test_an_in_source_guard_without_the_hyphen() -> None:
    # TriBITS' "<Project> does not support in source builds!" (trilinos/Trilinos#2324: a CMakeCache.txt left in the
    # source tree by an earlier configure) beside LLVM's "In-source builds are not allowed" (b06's thread)
    got = read_as("CMake Error at cmake/tribits/core/package_arch/TribitsGlobalMacros.cmake:88 (MESSAGE):\n"
                  "  ERROR!\n"
                  "  Trilinos does not support in source builds!", "stale_build", "cmake-in-source-build-refused", 3)
    assert got.line == 3
    # a project turning its own in-source tests off, or a warning, is not the guard
    for line in ("-- Testing in source builds is disabled",
                 "CMake Warning: Precompiled headers in source builds are not supported, disabling"):
        assert run(line).category == "unknown", line


# ------------------------------------------------------------------ round 16 (b100, b101): after their first looks


def test_llvmlite_refusing_the_llvm_it_found() -> None:
    # ffi/build.py's version check: numba/llvmlite#187 (LLVM 3.8 for a 3.7 llvmlite), chubin/wttr.in#641 (a Docker
    # image's LLVM 10 for an llvmlite needing 11; the fix moved the image to llvm-11)
    got = read_as("  LLVM version... 10.0.1\n  Traceback (most recent call last):\n"
                  "      raise RuntimeError(msg)\n  RuntimeError: Building llvmlite requires LLVM 11",
                  "toolchain_missing", "llvmlite-llvm-config-missing", 4)
    assert got.fields["required"] == "11"
    assert run("RuntimeError: Building llvmlite requires LLVM 3.7.x. Be sure to set LLVM_CONFIG to the right "
               "executable path.").fields["required"] == "3.7"


def test_mpi4pys_config_test_missing_mpi_h_is_no_mpi_installed() -> None:
    # the config test program's compile error: BoyuanChen/neural-state-variables#1 (pipenv building mpi4py 3.0.3,
    # fixed by mpi-default-dev) and b77's thread; a project's own source missing <mpi.h> is not read, since there it
    # can be the project's include path (lanl/branson#72, a HIP build's CMake bug)
    got = read_as("_configtest.c:2:10: fatal error: mpi.h: No such file or directory", "toolchain_missing",
                  "mpi-config-test-header-missing")
    assert got.fields["header"] == "mpi.h" and "libopenmpi-dev" in got.advice
    assert run("src/solver.c:3:10: fatal error: mpi.h: No such file or directory").category == "unknown"


def test_a_bare_killed_with_a_full_stop() -> None:
    # rust-lang/rust#51309: rustc killed on a small VPS, the shell's "Killed." after the command line (more memory
    # fixed it), the bare-Killed family's weak reading
    read_as("> rustc --crate-name http /root/.cargo/registry/src/http-0.1.5/src/lib.rs --crate-type lib\n"
            "Killed.", "out_of_memory", "bare-killed", 2)
    assert run("Process Killed. Restarting").category == "unknown"


def test_msvcs_linker_out_of_disk_is_disk_full() -> None:
    # link.exe's LNK1180 (lance-format/lance#905: a CI runner's disk, fixed by more storage), the same family as
    # Windows' ERROR_DISK_FULL text above
    read_as("  = note: D:\\a\\lance\\target\\debug\\deps\\lance-f6d4.exe : fatal error LNK1180: insufficient disk "
            "space to complete link", "disk_full", "no-space-left-on-device")


def test_bazels_jgit_clone_failure_is_network() -> None:
    # JGit's "cannot open git-upload-pack" behind Bazel's native git_repository: tensorflow/tensorflow#1413 (a
    # firewall), bazelbuild/bazel#853 (an empty Java trust store), tensorflow/models#283 (a proxy)
    got = read_as("ERROR: /w/tensorflow/core/distributed_runtime/rpc/BUILD:87:1: no such package '@grpc//': Error "
                  "cloning repository: https://boringssl.googlesource.com/boringssl: cannot open git-upload-pack "
                  "caused by https://boringssl.googlesource.com/boringssl: cannot open git-upload-pack and referenced "
                  "by '//tensorflow/core/distributed_runtime/rpc:grpc_channel'.", "network", "git-transfer-failed")
    assert got.fields["url"] == "https://boringssl.googlesource.com/boringssl"


# ------------------------------------------------------------------ round 16b (b102, b103): after their first looks


def test_node_gyp_without_visual_studio_is_a_missing_toolchain() -> None:
    # node-gyp's find-visualstudio.js: tensorflow/tfjs#5040 (tfjs-node's addon built from source), the starred box
    # in nodejs/node-gyp#2867, its "could not find a version" line and stack Error in nodejs/node-gyp#2203
    got = read_as("npm ERR! gyp ERR! find VS **************************************************************\n"
                  "npm ERR! gyp ERR! find VS You need to install the latest version of Visual Studio\n"
                  "npm ERR! gyp ERR! find VS including the \"Desktop development with C++\" workload.",
                  "toolchain_missing", "node-gyp-visual-studio-missing", 2)
    assert "Desktop development with C++" in got.advice
    assert run("77 error gyp ERR! find VS could not find a version of Visual Studio 2017 or newer to use"
               ).fields["required"] == "2017"
    assert run("gyp ERR! stack Error: Could not find any Visual Studio installation to use"
               ).signature == "node-gyp-visual-studio-missing"
    # node-gyp's own search chatter is not the failure
    assert run("gyp info find VS using VS2022 (17.5.33502.453) found at:").category == "unknown"


def test_rusts_cmake_crate_without_cmake() -> None:
    # the cmake crate's panic in a build script: fastrepl/anarlog#297 (whisper-rs-sys; brew install cmake),
    # cloudwalk/stratus#133 (a Docker image without cmake), argotorg/fe#20 (CI)
    got = read_as("  failed to execute command: No such file or directory (os error 2)\n  is `cmake` not installed?\n\n"
                  "  build script failed, must exit now", "toolchain_missing", "cmake-executable-missing", 2)
    assert "install CMake" in got.advice


@pytest.mark.parametrize("log", [
    # Rust's find_cuda_helper: tmrlvi/kaspa-miner#44 (no toolkit; installing it fixed the build), risc0/risc0#1022
    # (a toolkit under /usr that the helper does not search)
    "  thread 'main' panicked at 'Could not find a cuda installation', C:\\Users\\k\\.cargo\\registry\\src\\"
    "find_cuda_helper-0.2.0\\src\\lib.rs:12:13",
    "  thread 'main' panicked at /home/cj/.cargo/registry/src/find_cuda_helper-0.2.0/src/lib.rs:12:13:\n"
    "  Could not find a cuda installation",
    # vcpkg's cuda port: microsoft/vcpkg#37914, microsoft/vcpkg#42310
    "-- Executing NVCC-NOTFOUND --version resulted in error: 1\n"
    "CMake Error at ports/cuda/vcpkg_find_cuda.cmake:69 (message):\n"
    "  Could not find CUDA.  Before continuing, please download and install CUDA",
])
def test_a_cuda_build_without_the_cuda_toolkit(log: str) -> None:
    got = run(log)
    assert (got.category, got.signature) == ("toolchain_missing", "cuda-home-demanded"), got
    assert got.line is not None


def test_the_cuda_driver_apis_name_for_no_kernel_image() -> None:
    # CUresult CUDA_ERROR_NO_BINARY_FOR_GPU (209) is the driver API's "no kernel image is available", the
    # family of the runtime's wording (bitsandbytes-foundation/bitsandbytes#582, ROCm/rocm-examples#225)
    read_as("cuModuleLoadData failed: CUDA_ERROR_NO_BINARY_FOR_GPU", "arch_mismatch", "hip-invalid-device-function")
    read_as("error: cuLaunchKernel returned CUDA_ERROR_NO_BINARY_FOR_GPU (209)", "arch_mismatch",
            "hip-invalid-device-function")
    # the name in source a compiler echoes, or in a header's enum, is not the failure
    for line in ("  123 |     if (err == CUDA_ERROR_NO_BINARY_FOR_GPU) {",
                 '    case CUDA_ERROR_NO_BINARY_FOR_GPU: return "x";', "    CUDA_ERROR_NO_BINARY_FOR_GPU = 209,"):
        assert run(line).category == "unknown", line


def test_therocks_family_check_beside_its_target_check() -> None:
    # cmake/therock_amdgpu_targets.cmake's message(FATAL_ERROR "THEROCK_AMDGPU_FAMILIES value '${_family}' unknown.
    # Available: ...") beside its "Unknown AMDGPU target" (ROCm/TheRock#1992: a target given as a family)
    got = read_as("CMake Error at cmake/therock_amdgpu_targets.cmake:294 (message):\n"
                  "  THEROCK_AMDGPU_FAMILIES value 'gfx1153' unknown.  Available:", "unsupported_arch",
                  "library-unsupported-gpu-target", 2)
    assert got.fields["arch"] == "gfx1153"
    assert run("  THEROCK_DIST_AMDGPU_FAMILIES value 'gfx9999-all' unknown. Available:").fields["arch"] == "gfx9999-all"


# ------------------------------------------------------------------ rocBLAS's missing Tensile library: the arch decides

_ROCBLAS = "rocBLAS error: Cannot read {path}/TensileLibrary.dat: {why} for GPU arch : {arch}"
_LINUX = "/opt/rocm/lib/rocblas/library"
_WINDOWS = "C:\\Program Files\\AMD\\ROCm\\5.7\\bin\\/rocblas/library"  # the HIP SDK's path, spaces and all


@pytest.mark.parametrize(("arch", "signature"), [
    # RDNA4 before the ROCm that added it: ROCm/AMDMIGraphX#3517, githubcto/FramePack-ZLUDA#4 and
    # CS1o/Stable-Diffusion-Info#33 (the Windows HIP SDK 6.2 under ZLUDA)
    ("gfx1200", "rocblas-no-library-for-rdna4"), ("gfx1201", "rocblas-no-library-for-rdna4"),
    # a Vega APU no rocBLAS targets: ROCm/rocBLAS#1398 (gfx90c)
    ("gfx90c", "rocblas-no-library-for-apu"), ("gfx902", "rocblas-no-library-for-apu"),
    ("gfx909", "rocblas-no-library-for-apu"),
    # an unlisted sibling that the override runs: leejet/stable-diffusion.cpp#160 (gfx1031), mozilla-ai/llamafile#208
    # and ollama/ollama#2823 (gfx1032), ROCm/legacy-rocm-build#5452 (gfx1103)
    ("gfx1031", "rocblas-no-library-for-override-sibling"), ("gfx1032", "rocblas-no-library-for-override-sibling"),
    ("gfx1033", "rocblas-no-library-for-override-sibling"), ("gfx1034", "rocblas-no-library-for-override-sibling"),
    ("gfx1035", "rocblas-no-library-for-override-sibling"), ("gfx1103", "rocblas-no-library-for-override-sibling"),
])
@pytest.mark.parametrize("path", [_LINUX, _WINDOWS])
def test_rocblas_missing_tensile_library_is_decided_by_the_arch(arch: str, signature: str, path: str) -> None:
    category = "arch_mismatch" if signature.endswith("sibling") else "unsupported_arch"
    got = read_as(_ROCBLAS.format(path=path, why="No such file or directory", arch=arch), category, signature)
    assert got.fields["arch"] == arch
    # nothing a rebuild of the project does adds kernels to a prebuilt rocBLAS: never retried
    assert (got.retryable, got.remedies) == (False, ())
    if category == "arch_mismatch":
        assert "HSA_OVERRIDE_GFX_VERSION" in got.advice and ("11.0.0" if arch == "gfx1103" else "10.3.0") in got.advice
        assert "Windows" in got.advice  # where the HIP SDK ignores the override


@pytest.mark.parametrize("line", [
    # an arch the threads split on (gfx1036: unsupported in b09's thread, enumerated ahead of the discrete GPU in
    # b54's), on Linux and Windows, stays the tie, naming both readings
    _ROCBLAS.format(path=_LINUX, why="Illegal seek", arch="gfx1036"),
    _ROCBLAS.format(path=_WINDOWS, why="No such file or directory", arch="gfx1036"),
    # RDNA4 with a ROCm that has it (a library built without the arch there is the tie's other side)
    _ROCBLAS.format(path="/opt/rocm-6.4.1/lib/rocblas/library", why="Illegal seek", arch="gfx1201"),
])
def test_rocblas_missing_tensile_library_stays_a_tie_where_the_arch_does_not_decide(line: str) -> None:
    got = run(line)
    assert (got.category, got.confidence) == ("unknown", "low"), got
    assert {r.category for r in got.runners_up} >= {"arch_mismatch", "unsupported_arch"}


@pytest.mark.parametrize("arch", ["gfx12001", "gfx9020", "gfx11030", "gfx1030", "gfx90a", "gfx942"])
def test_rocblas_arch_lists_take_whole_names_only(arch: str) -> None:
    got = run(_ROCBLAS.format(path=_LINUX, why="Illegal seek", arch=arch))
    assert got.signature not in {"rocblas-no-library-for-rdna4", "rocblas-no-library-for-apu",
                                 "rocblas-no-library-for-override-sibling"}, got


# ------------------------------------------------------------- round 17 probes (MSVC, MSBuild, CMake VS generator)


@pytest.mark.parametrize(("line", "signature", "header"), [
    # MSVC's C1083 beside GCC's and clang's wording: Jimver/cuda-toolkit#109 (nvcc on a Windows runner),
    # NVlabs/tiny-cuda-nn#359 and msracver/FCIS#72 show the zh-CN toolset's "无法打开包括文件: “...”"
    ("C:\\src\\x.cu(3): fatal error C1083: Cannot open include file: 'cuda_runtime.h': No such file or directory",
     "cuda-toolkit-header-missing", "cuda_runtime.h"),
    ("C:\\x\\crt/host_config.h(231): fatal error C1083: 无法打开包括文件: “cublas_v2.h”: No such file or directory",
     "cuda-toolkit-header-missing", "cublas_v2.h"),
    ("src\\m.c(1): fatal error C1083: Cannot open include file: 'Python.h': No such file or directory",
     "host-sdk-header-missing", "Python.h"),
])
def test_msvc_cannot_open_include_reads_as_gcc_and_clang_do(line: str, signature: str, header: str) -> None:
    got = read_as(line, "toolchain_missing", signature, 1)
    assert got.fields["header"] == header


@pytest.mark.parametrize("line", [
    "C:\\src\\x.cpp(3): fatal error C1083: Cannot open include file: 'my_cuda_runtime.h': No such file or directory",
    "C:\\src\\x.cpp(3): fatal error C1083: Cannot open include file: 'crtdefs.h': No such file or directory",
])
def test_msvc_cannot_open_include_names_the_header_exactly(line: str) -> None:
    assert run(line).signature not in {"cuda-toolkit-header-missing", "host-sdk-header-missing"}


@pytest.mark.parametrize(("line", "symbol"), [
    # link.exe's LNK2019/LNK2001 beside ld's "undefined reference": opencv/opencv#14237 (cuInit & co. until
    # cuda.lib was linked), flann-lib/flann#48 (cudaLaunch & co. from a CUDA static library)
    ("foo.obj : error LNK2019: unresolved external symbol cuInit referenced in function cv_cuda_init", "cuInit"),
    ("opencv_world.lib(x.obj) : error LNK2001: unresolved external symbol __imp_cublasCreate_v2", "cublasCreate_v2"),
    ("x.obj : error LNK2019: 无法解析的外部符号 hipMalloc，函数 main 中引用了该符号", "hipMalloc"),
])
def test_msvc_unresolved_externals_of_gpu_libraries_are_a_missing_library(line: str, symbol: str) -> None:
    assert read_as(line, "missing_library", "undefined-reference-rocm-runtime", 1).fields["symbol"] == symbol


@pytest.mark.parametrize("line", [
    # nvcc's relocatable-device-code registration (a device-link step the project skipped), a C++ name, a
    # project's own function that only starts like a CUDA API
    "a.obj : error LNK2019: unresolved external symbol __cudaRegisterLinkedBinary_39_tmpxft_0000 referenced in",
    'a.obj : error LNK2019: unresolved external symbol "void __cdecl cudaFoo(void)" (?cudaFoo@@YAXXZ) referenced in',
    "foo.obj : error LNK2019: unresolved external symbol cuda_helper_init referenced in function main",
])
def test_msvc_unresolved_externals_that_are_no_gpu_library(line: str) -> None:
    assert run(line).signature != "undefined-reference-rocm-runtime"


def test_cmake_visual_studio_generator_without_cudas_integration() -> None:
    # CMakeDetermineCompilerId.cmake's FATAL_ERROR: ggml-org/llama.cpp#9144, wang-xinyu/tensorrtx#768 (fixed by
    # copying the MSBuildExtensions), NVlabs/instant-ngp#108, ollama/ollama#2040 (CI without the integration)
    got = read_as("CMake Error at C:/Program Files/CMake/share/cmake-3.27/Modules/CMakeDetermineCompilerId.cmake:503"
                  " (message):\n  No CUDA toolset found.\nCall Stack (most recent call first):\n"
                  "  CMakeLists.txt:302 (enable_language)",
                  "toolchain_missing", "cmake-visual-studio-cuda-toolset-missing", 2)
    assert "MSBuildExtensions" in got.advice and "Ninja" in got.advice
    # a project's own status message that carries the words is not CMake's error
    assert run("-- No CUDA toolset found, building without CUDA").category == "unknown"


def test_msbuild_without_the_platform_toolset() -> None:
    # MSBuild's MSB8020: microsoft/vcpkg#7065, GrowtopiaNoobs/GrowtopiaServer#1121 (installing the tools fixed it);
    # a console hard-wraps the line mid-word ("er" / "ror MSB8020") in libusb/libusb#1116's paste
    got = read_as("C:\\Program Files\\Microsoft Visual Studio\\2022\\Community\\MSBuild\\Microsoft\\VC\\v170\\"
                  "Microsoft.CppBuild.targets(440,5): er\nror MSB8020: The build tools for Visual Studio 2013 "
                  "(Platform Toolset = 'v120') cannot be found. To build using the v12",
                  "toolchain_missing", "msbuild-platform-toolset-missing", 2)
    assert got.fields["toolset"] == "v120" and "v120" in got.advice


# GCC, binutils and glibc in the zh_CN locale (their po/zh_CN.po): Chinese-language build logs print
# 致命错误 / 内部编译器错误 / 对‘…’未定义的引用 / 设备上没有空间 where the English ones say fatal error /
# internal compiler error / undefined reference to / No space left on device (the openjdk notes' "致命错误：ft2build.h：
# 没有那个文件或目录", a WRF guide's "对‘jpc_decode’未定义的引用", an aet-gcc dump's "请提交一份完整的错误报告", found
# with the look-up verbs; none is a fixture of ours)
@pytest.mark.parametrize(("log", "category", "signature"), [
    ("/usr/include/foo.h:5:10: 致命错误：cuda_runtime.h：没有那个文件或目录\n #include <cuda_runtime.h>\n编译中断。",
     "toolchain_missing", "cuda-toolkit-header-missing"),
    ("x.c:1:10: 致命错误：Python.h：没有那个文件或目录", "toolchain_missing", "host-sdk-header-missing"),
    ("k.cpp:2:10: 致命错误：rocblas/rocblas.h：没有那个文件或目录", "missing_library", "rocm-library-header-missing"),
    ("foo.cc:(.text+0x1b)：对‘cudaMalloc’未定义的引用\ncollect2: 错误：ld 返回 1", "missing_library",
     "undefined-reference-rocm-runtime"),
    ("foo.cc:10:1: 内部编译器错误：段错误\n请提交一份完整的错误报告，\n如有可能请附上经预处理后的源文件。",
     "compiler_crash", "gcc-internal-compiler-error"),
    ("请提交一份完整的错误报告，\n如有可能请附上经预处理后的源文件。", "compiler_crash", "gcc-ice-banner"),
    ("/usr/bin/ld: final link failed: 设备上没有空间\ncollect2: 错误：ld 返回 1", "disk_full",
     "no-space-left-on-device"),
])
def test_gcc_binutils_and_glibc_in_the_zh_cn_locale(log: str, category: str, signature: str) -> None:
    read_as(log, category, signature, 1)


@pytest.mark.parametrize("log", ["g++: 内部编译器错误：已杀死 (program cc1plus)",
                                 "g++: 内部编译器错误：已杀死 (程序 cc1plus)"])
def test_the_oom_killed_ice_in_chinese_is_memory(log: str) -> None:
    read_as(log, "out_of_memory", "killed-signal-terminated-program", 1)


@pytest.mark.parametrize(("line", "signature"), [
    # GCC's plain error in Chinese, and zh GCC with an English glibc strerror
    ("x.cpp:1:10: 错误：cuda_runtime.h：没有那个文件或目录", "cuda-toolkit-header-missing"),
    ("x.c:1:10: 致命错误：Python.h: No such file or directory", "host-sdk-header-missing"),
    ("x.c:1:10: 致命错误：omp.h：没有那个文件或目录", "compiler-openmp-header-missing"),
])
def test_zh_cn_header_lines_reach_their_patterns(line: str, signature: str) -> None:
    assert run(line).signature == signature


def test_a_projects_own_symbol_in_chinese_is_no_gpu_library() -> None:
    assert run("foo.cc:(.text+0x1b)：对‘cuda_helper_init’未定义的引用").signature != "undefined-reference-rocm-runtime"


# ------------------------------------------------------------------ round 17 (b104-b109): after their first looks


def test_lto_bytecode_of_another_gcc_is_a_stale_tree() -> None:
    # lto1's version check: rr-debugger/rr#2884 (objects of GCC 9.2 after an upgrade to 11), wolfpld/tracy#320
    # (GCC 11.2 objects read by 9.4, typographic quotes); a clean build fixed both
    got = read_as("lto1: fatal error: bytecode stream in file ‘obj/release/o/debug.o’ generated with LTO version 11.2 "
                  "instead of the expected 9.4\ncompilation terminated.",
                  "stale_build", "lto-bytecode-from-another-gcc", 1)
    assert (got.fields["version"], got.fields["expected"]) == ("11.2", "9.4") and "clean_build" in got.remedies
    assert run("note: bytecode streams are versioned").category == "unknown"


@pytest.mark.parametrize(("line", "field", "value"), [
    # bionic's linker: termux/x11-packages#108 (a nettle soname bump), termux/termux-root-packages#33 (a symbol)
    ('CANNOT LINK EXECUTABLE "qemu-system-i386": cannot find "libnettle.so.6" from verneed[7] in DT_NEEDED list for '
     '"/data/data/com.termux/files/usr/bin/qemu-system-i386"', "library", "libnettle.so.6"),
    ('CANNOT LINK EXECUTABLE "nethogs": cannot locate symbol "_Unwind_Resume" referenced by "/data/nethogs"...',
     "symbol", "_Unwind_Resume"),
    ('CANNOT LINK EXECUTABLE "python3": library "libpython3.12.so.1.0" not found', "library", "libpython3.12.so.1.0"),
])
def test_androids_linker_cannot_start_a_program(line: str, field: str, value: str) -> None:
    got = read_as(line, "missing_runtime_library", "android-linker-cannot-link-executable", 1)
    assert got.fields[field] == value


def test_clangs_attach_files_banner_is_a_crash_without_the_backtrace() -> None:
    # clang's generateCompilationDiagnostics: Homebrew/homebrew-core#170773 (the backtrace went to a .crash
    # file), llvm/llvm-project#59923 and #136481 (clang-cl, MSBuild-prefixed lines)
    read_as("PLEASE ATTACH THE FOLLOWING FILES TO THE BUG REPORT:\nPreprocessed source(s) and associated run script(s) "
            "are located at:\nclang: note: diagnostic msg: /tmp/parser-455ae9.c",
            "compiler_crash", "llvm-crash-report", 1)


@pytest.mark.parametrize("log", [
    # nvcc's host-compiler probe: LizardByte/Sunshine#3458 (a configured /usr/bin/cuda host compiler gone),
    # NVlabs/DeepIM-PyTorch#7 and nicolasavru/ppf-registration-spatial-hashing#2 (gcc / g++-5 missing)
    "  /usr/bin/cuda: No such file or directory\n\n  nvcc fatal : Failed to preprocess host compiler properties.",
    "gcc: No such file or directory\nnvcc fatal   : Failed to preprocess host compiler properties.",
    "nvcc fatal   : Failed to detect host compiler properties.",
])
def test_nvcc_without_a_usable_host_compiler(log: str) -> None:
    assert run(log).signature == "nvcc-host-compiler-unusable"


def test_torchvisions_unloadable_ops_are_a_torch_version_skew() -> None:
    # torchvision/extension.py: archlinuxcn/repo#2564 (a package not rebuilt for the new torch), Xilinx/Vitis-AI#943,
    # microsoft/scene_graph_benchmark#60 (reinstalling a matching pair fixed it; the message without "RuntimeError")
    got = read_as("RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and torchvision "
                  "versions are incompatible, or if you had errors while compiling torchvision", "abi_mismatch",
                  "torchvision-custom-ops-unloadable", 1)
    assert "torchvision" in got.advice
    assert run("Couldn't load custom C++ ops. This can happen if your PyTorch and torchvision versions are "
               "incompatible").signature == "torchvision-custom-ops-unloadable"


@pytest.mark.parametrize("line", [
    # Apple's clang: ccsb-scripps/AutoGrid#5 (meson), karpathy/llama2.c#49 (make), salimamoukou/acv00#7 (Cython)
    "clang: error: unsupported option '-fopenmp'",
    "clang++: error: unsupported option '-fopenmp'",
])
def test_apple_clang_without_openmp(line: str) -> None:
    got = read_as(line, "toolchain_missing", "apple-clang-without-openmp", 1)
    assert "libomp" in got.advice
    assert run("clang: warning: unsupported option '-fopenmp' ignored").signature != "apple-clang-without-openmp"


def test_the_edg_front_end_out_of_memory() -> None:
    # cudafe++'s "catastrophic error": microsoft/onnxruntime#21676 (fewer parallel jobs fixed it),
    # unslothai/unsloth#7091
    got = read_as("C:\\build\\cutlass-src\\include\\cute/int_tuple.hpp(51): catastrophic error : out of memory "
                  "[C:\\build\\onnxruntime_providers_cuda.vcxproj]",
                  "out_of_memory", "compiler-front-end-out-of-memory", 1)
    assert "reduce_jobs" in got.remedies
    assert run('1 catastrophic error detected in the compilation of "kernel.cu".').category != "out_of_memory"


@pytest.mark.parametrize("line", [
    # git over Windows' TLS stack: nerfstudio-project/nerfstudio#1545, desktop/desktop#16107, gogs/gogs#5465
    "fatal: unable to access 'https://github.com/NVlabs/tiny-cuda-nn/': Recv failure: Connection was reset",
    "fatal: unable to access 'https://github.com/x/y.git/': Send failure: Connection was reset",
])
def test_windows_connection_was_reset_is_the_network(line: str) -> None:
    assert run(line).category == "network"


def test_a_cuda_error_printed_with_its_number() -> None:
    # jetson-utils' CUDA(...) macro: "<string> (error <n>) (hex ...)": dusty-nv/jetson-inference#7 (no sm_53 in the
    # -gencode list), the same string and number as cudaErrorInvalidDeviceFunction in ported code
    got = read_as("[cuda]   cudaGetLastError()\n[cuda]      invalid device function (error 8) (hex 0x08)",
                  "arch_mismatch", "hip-runtime-no-code-for-gpu", 2)
    assert got.fields["message"] == "invalid device function"
    assert run("invalid device function (error 81)").category != "arch_mismatch"


def test_xcodes_metal_toolchain_component_missing() -> None:
    # Xcode 26 ships Metal as a download: elixir-nx/emlx#127 (libmlx from source), beside xcrun's older wording
    got = read_as("error: cannot execute tool 'metal' due to missing Metal Toolchain; use: xcodebuild "
                  "-downloadComponent MetalToolchain", "toolchain_missing", "xcode-developer-tools-missing", 1)
    assert got.fields["tool"] == "metal"


@pytest.mark.parametrize(("log", "module"), [
    # find_python_module()'s PY_<module> package: PaddlePaddle/Paddle#48225 (pip missing for the build's python3),
    # ROS catkin's empy check (its troubleshooting notes: pip install empy)
    ("CMake Error at /usr/share/cmake/FindPackageHandleStandardArgs.cmake:230 (message):\n"
     "  Could NOT find PY_pip (missing: PY_PIP)", "pip"),
    ("-- Could NOT find PY_em (missing: PY_EM)\nCMake Error at /opt/ros/noetic/share/catkin/cmake/empy.cmake:30 "
     "(message):\n  Unable to find either executable 'empy' or Python module 'em'...  try", "em"),
    ("CMake Error at /usr/share/cmake/FindPackageHandleStandardArgs.cmake:230 (message):\n"
     "  Could NOT find PY_google.protobuf (missing: PY_GOOGLE.PROTOBUF)", "google.protobuf"),
])
def test_cmakes_python_module_check(log: str, module: str) -> None:
    got = run(log)
    assert (got.category, got.signature, got.fields["module"]) == (
        "missing_python_dependency", "cmake-python-module-missing", module), got
    # a CMake package that is no Python module stays the package reading
    assert run("  Could NOT find Protobuf (missing: Protobuf_LIBRARIES)").signature == "cmake-could-not-find-package"


def test_an_optional_python_module_check_does_not_stop_a_configure() -> None:
    # CMake's status line (`-- Could NOT find ...`) is an optional check: the configure goes on
    got = run("-- Could NOT find PY_sphinx (missing: PY_SPHINX)\n-- Documentation disabled\n-- Configuring done")
    assert got.category == "unknown", got


def test_msvc_c1083_in_the_russian_toolset_without_quotes() -> None:
    # woct0rdho/triton-windows#77: an embedded Python without include\ (Russian MSVC prints the name unquoted)
    got = read_as("C:\\Temp\\cuda_utils.c(12): fatal error C1083: Не удается открыть файл включение: Python.h: No such "
                  "file or directory,", "toolchain_missing", "host-sdk-header-missing", 1)
    assert got.fields["header"] == "Python.h"


# ------------------------------------------------------------------ round 17 (b110, b111): after their first looks


def test_the_kernels_memory_report_with_no_swap_left() -> None:
    # the show_mem report an OOM kill prints, pasted without its "Killed process" line: ninja-build/ninja#1340 (LLVM
    # built at full parallelism on 8 GB, swap configured and used up)
    got = read_as("Oct  8 13:00:27 marin kernel: [49077.824581] Swap cache stats: add 12697181, delete 12696426\n"
                  "Oct  8 13:00:27 marin kernel: [49077.824582] Free swap  = 0kB\n"
                  "Oct  8 13:00:27 marin kernel: [49077.824583] Total swap = 8176636kB",
                  "out_of_memory", "kernel-memory-report-swap-exhausted", 2)
    assert "reduce_jobs" in got.remedies and got.confidence == "high"
    # journalctl's prefix has no [seconds]
    assert run("Oct  8 13:00:27 marin kernel: Free swap  = 0kB\nOct  8 13:00:27 marin kernel: Total swap = 8176636kB"
               ).signature == "kernel-memory-report-swap-exhausted"
    # a machine with no swap at all prints 0kB in every report (a page-allocation warning too): weak, never high
    weak = run("host kernel: [  100.000000] Free swap  = 0kB\nhost kernel: [  100.000001] Total swap = 0kB")
    assert weak.confidence != "high", weak
    sig = CAT.get("kernel-memory-report-swap-exhausted")
    assert sig.match_candidate("Free swap  = 0kB") is None  # the kernel's prefix is part of the wording
    assert sig.match_candidate("host kernel: [ 1.0] Free swap  = 1024kB") is None


@pytest.mark.parametrize(("line", "module"), [
    # Meson's find_installation(modules: ...): flightlessmango/MangoHud#521 (a conda python3 without mako),
    # microsoft/wslg#858 (mesa's generators)
    ("meson.build:10:0: ERROR: python3 is missing modules: mako", "mako"),
    ("meson.build:7:0: ERROR: python3 is missing modules: mako, markupsafe", "mako, markupsafe"),
])
def test_mesons_python_missing_modules(line: str, module: str) -> None:
    got = read_as(line, "missing_python_dependency", "meson-python-missing-modules", 1)
    assert got.fields["module"] == module and "python3 -m pip install" in got.advice


# ------------------------------------------------------------------ round 17b (b112, b113): after their first looks


@pytest.mark.parametrize(("line", "tool"), [
    # CPython's FileNotFoundError for a program subprocess could not spawn, as setuptools re-raises it:
    # Docker-Hub-frolvlad/docker-alpine-python3#14 (grpcio on Alpine without gcc), and the bare exception
    ("  error: [Errno 2] No such file or directory: 'cc': 'cc'", "cc"),
    ("FileNotFoundError: [Errno 2] No such file or directory: 'gcc'", "gcc"),
])
def test_python_could_not_spawn_the_compiler(line: str, tool: str) -> None:
    assert read_as(line, "toolchain_missing", "build-tool-not-found", 1).fields["tool"] == tool


def test_a_missing_file_that_is_no_build_tool_is_not_read_as_one() -> None:
    got = run("FileNotFoundError: [Errno 2] No such file or directory: 'ccache.conf'")
    assert got.signature != "build-tool-not-found"
    assert run("error: [Errno 2] No such file or directory: 'build/cc'").signature != "build-tool-not-found"


@pytest.mark.parametrize("line", [
    # cargo too old for a crate's edition: piwheels/packages#304 (watchfiles on Debian's old Rust), and the older
    # cargo's wording for the same manifest
    "    this version of Cargo is older than the `2021` edition, and only supports `2015` and `2018` editions.",
    "  feature `edition2021` is required",
])
def test_cargo_older_than_the_crates_edition(line: str) -> None:
    got = read_as(line, "toolchain_missing", "host-compiler-missing", 1)
    assert got.fields["edition"] == "2021"


def test_the_assembler_reading_a_truncated_compiler_output() -> None:
    # gas at the end of a piped, cut-off .s: dealii/dealii#16148 (the compile was killed), rocm-arch/rocm-arch#309
    got = read_as("[ 33%] Building CXX object source/fe/CMakeFiles/fe_values_inst5.cc.o\n{standard input}: Assembler "
                  "messages:\n{standard input}: Error: open CFI at the end of file; missing .cfi_endproc directive",
                  "out_of_memory", "assembler-input-truncated", 3)
    assert got.confidence != "high" and "reduce_jobs" in got.remedies
    # the kill itself, when pasted, is the reading; a hand-written .s with the mistake is not the compiler's output
    assert run("{standard input}: Error: open CFI at the end of file; missing .cfi_endproc directive\n"
               "c++: fatal error: Killed signal terminated program cc1plus"
               ).signature == "killed-signal-terminated-program"
    assert run("foo.s: Error: open CFI at the end of file; missing .cfi_endproc directive").category == "unknown"


# ------------------------------------------------------------------ round 17: the review's mends


@pytest.mark.parametrize("line", [
    # the compiler echoing a source line that carries a tool's words is no failure of that tool
    '   12 |     die("nvcc fatal   : Failed to preprocess host compiler properties.");',
    '   12 |     die("catastrophic error: out of memory");',
    '   12 |     printf("invalid device function (error 98)");',
    '   12 |     puts("PLEASE ATTACH THE FOLLOWING FILES TO THE BUG REPORT:");',
    'sccache: caused by: Compiler not supported: "nvcc fatal   : Failed to preprocess host compiler properties.\\n"',
])
def test_tool_wordings_echoed_from_source_are_not_read(line: str) -> None:
    got = run("src/a.cu:12:5: warning: unused result [-Wunused-result]\n" + line)
    assert got.signature not in {"nvcc-host-compiler-unusable", "compiler-front-end-out-of-memory",
                                 "hip-runtime-no-code-for-gpu", "llvm-crash-report"}, got


def test_the_edg_out_of_memory_explains_a_later_error() -> None:
    # resource exhaustion outranks what it causes (a half-written object read later)
    got = run("/x/cute/layout.hpp(478): catastrophic error: out of memory\n"
              "1 catastrophic error detected in the compilation of \"gemm.cu\".\n"
              "/x/b.cpp:3:10: fatal error: cuda_runtime.h: No such file or directory")
    assert (got.category, got.signature) == ("out_of_memory", "compiler-front-end-out-of-memory"), got


@pytest.mark.parametrize("line", [
    "C:\\src\\x.cpp(3): fatal error C1083: Cannot open include file: 'cuda.hpp': No such file or directory",
    "C:\\src\\x.cpp(3): fatal error C1083: Cannot open include file: 'Python.h': Permission denied",
])
def test_msvc_c1083_reads_only_a_missing_listed_header(line: str) -> None:
    assert run(line).signature not in {"cuda-toolkit-header-missing", "host-sdk-header-missing"}


def test_apple_clang_openmp_reading_takes_versioned_drivers_but_not_other_targets() -> None:
    assert run("clang-14: error: unsupported option '-fopenmp'").signature == "apple-clang-without-openmp"
    assert run("clang: error: unsupported option '-fopenmp' for target 'wasm32-unknown-emscripten'"
               ).signature != "apple-clang-without-openmp"


def test_no_cuda_toolset_only_as_cmakes_own_line_and_not_when_configure_goes_on() -> None:
    assert run("Warning: No CUDA toolset found.").signature != "cmake-visual-studio-cuda-toolset-missing"
    got = run("CMake Warning at CMakeLists.txt:10 (message):\n  No CUDA toolset found.\n-- Configuring done")
    assert got.category == "unknown", got


def test_lto_objects_from_outside_the_tree_are_not_a_stale_tree() -> None:
    got = run("lto1: fatal error: bytecode stream in file '/usr/lib/x86_64-linux-gnu/libfoo.a' generated with LTO "
              "version 12.0 instead of the expected 13.1")
    assert got.signature != "lto-bytecode-from-another-gcc"
    assert run("lto1: fatal error: bytecode stream in file 'a.o' is corrupted").signature != \
        "lto-bytecode-from-another-gcc"


def test_msvc_unresolved_openmp_is_no_gpu_library() -> None:
    # on MSVC an unresolved omp_ symbol is /openmp missing from the link, not a library to add
    got = run("a.obj : error LNK2019: unresolved external symbol omp_get_thread_num referenced in function main")
    assert got.signature != "undefined-reference-rocm-runtime"


def test_a_wrapped_connection_was_reset_line_is_still_the_network() -> None:
    assert run("Recv failure: Connection was reset").category == "network"


def test_advice_for_the_new_wordings_says_the_specific_step() -> None:
    metal = run("error: cannot execute tool 'metal' due to missing Metal Toolchain; use: xcodebuild "
                "-downloadComponent MetalToolchain")
    assert "xcodebuild -downloadComponent MetalToolchain" in metal.advice
    tv = run("RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and torchvision versions "
             "are incompatible")
    assert "import torchvision._C" in tv.advice


# ------------------------------------------------------------- after round 17: CMake's CUDA and HIP language modules


def test_cmakes_hip_language_given_the_hipcc_wrapper() -> None:
    # CMakeDetermineHIPCompiler.cmake refuses hipcc since 3.21.3 (spack/spack#26187 quotes the release note;
    # ggml-org/llama.cpp#5966 moved to HIPCXX=clang for it)
    got = read_as("CMake Error at /usr/share/cmake/Modules/CMakeDetermineHIPCompiler.cmake:75 (message):\n"
                  "  CMAKE_HIP_COMPILER is set to the hipcc wrapper:\n\n   /opt/rocm/bin/hipcc\n\n"
                  "  This is not supported.  Use Clang directly, or let CMake pick a default.",
                  "toolchain_missing", "cmake-hip-compiler-is-hipcc", 2)
    assert "llvm/bin/clang++" in got.advice
    got = run("  The HIPCXX environment variable is set to the hipcc wrapper:")
    assert got.signature == "cmake-hip-compiler-is-hipcc"


@pytest.mark.parametrize(("line", "variable"), [
    # the old wording and CMake 3.27's: Guangxuan-Xiao/torch-int#25 and NVIDIA/cutlass#1269 (a CUDACXX path that
    # did not exist), the same family for HIP and for the host compiler variable
    ("  Could not find compiler set in environment variable CUDACXX:", "CUDACXX"),
    ("  Could not find the compiler specified in the environment variable HIPCXX:", "HIPCXX"),
    ("  Could not find the compiler specified in the variable CMAKE_CUDA_HOST_COMPILER:",
     "CMAKE_CUDA_HOST_COMPILER"),
])
def test_cmake_cannot_find_the_compiler_a_variable_names(line: str, variable: str) -> None:
    got = read_as(line, "toolchain_missing", "cmake-language-compiler-not-found", 1)
    assert got.fields["variable"] == variable


@pytest.mark.parametrize("line", [
    # CMakeCUDAFindToolkit: NVIDIA-AI-IOT/deepstream_tao_apps#65, negativo17/cuda#32 and #36 (a distribution's
    # split CUDA layout), NVlabs/instant-ngp#104, cdcseacave/openMVS#772 (a conda CMake)
    "  Couldn't find CUDA library root.",
    '  Unable to find cuda_runtime.h in "/usr/local/cuda/targets/x86_64-linux/include" for _CUDA_INCLUDE_DIRS.',
])
def test_cmake_found_nvcc_but_not_its_toolkit(line: str) -> None:
    got = read_as(line, "toolchain_missing", "cmake-cuda-toolkit-layout-not-found", 1)
    assert "CUDAToolkit_ROOT" in got.advice
    assert run("-- Couldn't find CUDA library root, trying stubs").signature != "cmake-cuda-toolkit-layout-not-found"


def test_cmakes_hip_root_not_found() -> None:
    read_as("CMake Error at /usr/share/cmake/Modules/CMakeDetermineHIPCompiler.cmake:210 (message):\n"
            "  Failed to find HIP root directory.", "toolchain_missing", "rocm-root-not-found", 2)


# ------------------------------------------------------------------ round 18 probes (Bazel, Spack, Go, cargo)


def test_the_go_runtime_out_of_memory_during_go_build() -> None:
    # muesli/beehive#175, golang/go#41058, projectcalico/node#113
    log = "# github.com/yuin/goldmark/util\nfatal error: runtime: out of memory\n\nruntime stack:\nruntime.throw(0xc5)"
    got = read_as(log, "out_of_memory", "go-runtime-out-of-memory", 2)
    assert "GOFLAGS=-p=1" in got.advice
    assert run("runtime: out of memory: cannot allocate 4194304-byte block (1234 in use)").category == "out_of_memory"
    assert run("RuntimeError: HIP out of memory. Tried to allocate 2.00 GiB").signature != "go-runtime-out-of-memory"
    # golang/go#13728: the mcache refill's own line
    assert run("fatal error: out of memory\n\nruntime stack:").signature == "go-runtime-out-of-memory"


def test_cargos_rustc_killed_by_sigkill_is_memory_but_a_killed_build_script_is_not() -> None:
    # sigp/lighthouse#3636, rust-lang/rust#115216, hyperium/http#341; bbqsrc/cargo-ndk#129 (build scripts on macOS)
    log = ("error: could not compile `lumen`\n\nCaused by:\n  process didn't exit successfully: `rustc --crate-name "
           "lumen --edition=2018 lumen/src/main.rs --crate-type bin -C opt-level=3 -C lto=fat` "
           "(signal: 9, SIGKILL: kill)")
    got = read_as(log, "out_of_memory", "cargo-rustc-killed", 4)
    assert "CARGO_BUILD_JOBS" in got.advice
    script = ("  process didn't exit successfully: `/var/folders/03/T/cargo-installAxtc9W/release/build/syn-8a34/"
              "build-script-build` (signal: 9, SIGKILL: kill)")
    assert run(script).signature != "cargo-rustc-killed"
    # a build script whose crate name holds "rustc" is still a build script (the review's mutation)
    demangle = ("  process didn't exit successfully: `/t/release/build/rustc-demangle-1a2b/build-script-build` "
                "(signal: 9, SIGKILL: kill)")
    assert run(demangle).signature != "cargo-rustc-killed"
    assert run("  process didn't exit successfully: `rustc --crate-name x src/lib.rs` (exit status: 1)").category \
        == "unknown"


def test_the_bazel_server_dying_is_a_weak_memory_reading_that_gives_way() -> None:
    # tensorflow/models#3647, tensorflow/tensorflow#41480, bazelbuild/bazel#3020
    line = ("Server terminated abruptly (error code: 14, error message: 'Socket closed', log file: "
            "'/root/.cache/bazel/_bazel_root/d4ef/server/jvm.out')")
    got = read_as("INFO: Analyzed target //tensorflow:libtensorflow.so\n" + line, "out_of_memory",
                  "bazel-server-terminated", 2)
    assert "--local_ram_resources" in got.advice
    shown = run("x.cc:3:10: fatal error: 'cuda_runtime.h' file not found\n" + line)
    assert shown.signature != "bazel-server-terminated"
    # a plain error line of no signature also takes the guess back (alone, not merely fallback)
    plain = run("ERROR: /w/x/BUILD:3:1: C++ compilation of rule '//x:y' failed (Exit 1)\n" + line)
    assert plain.signature != "bazel-server-terminated"
    assert run("Server terminated abruptly (error code: 2, error message: 'Stream removed', log file: 'C:/b/"
               "jvm.out')").category == "unknown"


@pytest.mark.parametrize(("log", "requirements", "package"), [
    # pkg.m4: flux-framework/flux-core#1756 (the -devel package), fontforge/fontforge#564; pkg-config's own line names
    # the module that failed when the requirement list holds several (the second review's case)
    ("configure: error: Package requirements (liblz4) were not met:\n\nNo package 'liblz4' found", "liblz4", "liblz4"),
    ("checking for GLIB... configure: error: Package requirements (glib-2.0 >= 2.6 gio-2.0 libudev) were not met:\n\n"
     "No package 'libudev' found", "glib-2.0 >= 2.6 gio-2.0 libudev", "libudev"),
])
def test_pkg_m4_names_the_module_pkg_config_could_not_find(log: str, requirements: str, package: str) -> None:
    got = read_as(log, "toolchain_missing", "pkgconfig-module-not-found", 1)
    assert (got.fields["requirements"], got.fields["package"]) == (requirements, package)
    assert f"the module is {package}:" in got.advice and "PKG_CONFIG_PATH" in got.advice


@pytest.mark.parametrize(("line", "package"), [
    # pkg-config-rs, new and old: cosmic-utils/cosmic-ext-applet-external-monitor-brightness#15, glzr-io/zebar#165,
    # pdf-rs/pdf_render#5
    ('  called `Result::unwrap()` on an `Err` value: "\\npkg-config exited with status code 1\\n> pkg-config --libs '
     '--cflags libudev\\n\\nThe system library `libudev` required by crate `libudev-sys` was not found.\\n"',
     "libudev"),
    ("  error: could not find system library 'egl' required by the 'khronos-egl' crate", "egl"),
])
def test_a_sys_crate_without_the_development_package(line: str, package: str) -> None:
    got = read_as(line, "toolchain_missing", "pkgconfig-rs-library-not-found", 1)
    assert got.fields["package"] == package
    assert f"{package}.pc" in got.advice


@pytest.mark.parametrize("line", [
    # the review's lines: a crate that falls back to its bundled copy, a configure warning
    "warning: libz-sys@1.1.20: The system library `zlib` required by crate `libz-sys` was not found.",
    "[curl-sys 0.4.72] Couldn't find libcurl from pkgconfig (The system library `libcurl` required by crate "
    "`curl-sys` was not found.), compiling it from source...",
    "configure: WARNING: Package requirements (x) were not met",
    # a crate's own verbose line, with no fallback words on it
    "[openssl-sys 0.9.80] The system library `openssl` required by crate `openssl-sys` was not found.",
])
def test_pkg_config_misses_a_build_goes_on_after_are_not_read(line: str) -> None:
    assert run(line).signature not in ("pkgconfig-module-not-found", "pkgconfig-rs-library-not-found")


def test_pkg_m4_with_spaces_and_a_version_too_old() -> None:
    got = read_as("configure: error: Package requirements ( glib-2.0 ) were not met:", "toolchain_missing",
                  "pkgconfig-module-not-found", 1)
    assert got.fields["requirements"] == "glib-2.0"
    got = run("checking for glib-2.0 >= 2.6... configure: error: Package requirements (gtk+-3.0 >= 3.22) were not "
              "met:\n\nRequested 'gtk+-3.0 >= 3.22' but version of GTK+ is 3.18.9")
    assert got.fields["found_version"] == "3.18.9"
    assert "a newer one" in got.advice


def test_pkg_configs_own_not_found_lines_alone_are_not_read() -> None:
    # printed by optional checks too (MonetDB/MonetDB#2562: harmless probes during a configure that went on)
    assert run("Package cfitsio was not found in the pkg-config search path.\nPerhaps you should add the directory "
               "containing `cfitsio.pc'\nto the PKG_CONFIG_PATH environment variable\nNo package 'cfitsio' found"
               ).category == "unknown"


# ------------------------------------------------------------------ round 18 (b116, b117): after their first looks


@pytest.mark.parametrize("line", [
    # ispc/ispc#1385: ispc built against an assertions-enabled LLVM unpacked as llvm-6.0/
    "ispc: /usr/local/src/llvm/llvm-6.0/lib/CodeGen/SelectionDAG/SelectionDAG.cpp:3099: unsigned int llvm::"
    "SelectionDAG::ComputeNumSignBits(llvm::SDValue, const llvm::APInt &, unsigned int) const: Assertion `Tmp <= "
    "VTBits && \"Failed to determine minimum sign bits\"' failed.",
    # a release tarball's or a distribution's debug-source layout
    "julia: /usr/src/debug/llvm/llvm-21.1.5.src/lib/CodeGen/SelectionDAG/SelectionDAGISel.cpp:4439: void f(): "
    "Assertion `false' failed.",
])
def test_an_llvm_assertion_in_any_embedding_program_and_any_source_layout(line: str) -> None:
    read_as(line, "compiler_crash", "llvm-fatal-error", 1)


def test_an_assertion_in_a_projects_own_sources_is_not_llvms() -> None:
    assert run("myprog: src/main.c:10: main: Assertion `x > 0' failed.").category == "unknown"
    assert run("python: /w/llvm-cfg/src/lib/Foo.cpp:10: int f(): Assertion `false' failed.").category == "unknown"
    # a versioned LLVM directory has a dotted version (or .src): a project's clang-2/ or llvm-cfg/ is not LLVM's
    assert run("python: /w/llvm-cfg/lib/Foo.cpp:10: int f(): Assertion `false' failed.").category == "unknown"
    assert run("mytool: /home/u/clang-2/lib/mine.c:10: main: Assertion `x' failed.").category == "unknown"


def test_llvms_assertion_in_the_bsd_and_windows_assert_wording() -> None:
    read_as("Assertion failed: (Tmp <= VTBits), function ComputeNumSignBits, file /tmp/llvm-6.0/lib/CodeGen/"
            "SelectionDAG/SelectionDAG.cpp, line 3099.", "compiler_crash", "llvm-fatal-error", 1)


# ------------------------------------------------------------------ round 18 (b114): after its first look


@pytest.mark.parametrize(("line", "tool"), [
    # libmbd/libmbd#64 (nvfortran), flang-compiler/flang#175 (classic Flang's F90 front end)
    ("NVFORTRAN-S-0000-Internal compiler error. unexpected ast type in initialization expr    3210  "
     "(/home/u/q-e/libmbd/src/mbd_c_api.F90: 48)", "NVFORTRAN"),
    ("F90-F-0000-Internal compiler error. print_token(): missing token       0 (forces_tmp.f90: 421)", "F90"),
    ("PGCC-S-0000-Internal compiler error. gen_llvm_expr(): no incoming ili     0  (x.c: 12)", "PGCC"),
])
def test_the_pgi_line_of_compilers_internal_error(line: str, tool: str) -> None:
    got = read_as(line, "compiler_crash", "pgi-internal-compiler-error", 1)
    assert got.fields["tool"] == tool
    assert tool in got.advice


def test_a_pgi_warning_numbered_like_an_ice_is_not_one() -> None:
    assert run("NVFORTRAN-W-0155-Constant or Parameter used as DO loop variable (x.f90: 3)").category == "unknown"
    assert run("NVC++-W-0000-Internal compiler error. non-fatal note (x.cpp: 1)").category == "unknown"
    # informational 0000 goes on too (the review's line); PGF77 is of the line
    assert run("NVFORTRAN-I-0000-Internal compiler error. flowgraph: node is zero-trip 0 (x.f90: 10)").category \
        == "unknown"
    assert run("PGF77-S-0000-Internal compiler error. bad ast (a.f: 1)").signature == "pgi-internal-compiler-error"


def test_a_script_that_cannot_find_nvcc_but_not_one_that_goes_on_without_it() -> None:
    # cp2k/cp2k#2461: the toolchain script stops; PATH lacked the CUDA bin directory
    got = read_as("ERROR: (./scripts/generate_arch_files.sh) Cannot find nvcc, please check if the package cuda is "
                  "installed or in system search path", "toolchain_missing", "script-cannot-find-nvcc", 1)
    assert got.fields["tool"] == "nvcc"
    assert "CUDA_HOME" in got.advice and "ROCM_PATH" not in got.advice
    # scripts that go on without CUDA say so, on a warning or a plain line (the review's lines)
    for going_on in ("WARNING: Could not find nvcc, building without CUDA",
                     "Could not find nvcc; skipping the CUDA kernels",
                     "warning: could not find nvcc; assuming a ROCm build",
                     "setup.py:12: UserWarning: Could not find nvcc, using the ROCm/HIP toolchain",
                     "Could not find NVCC; CUDA_HOME is not set, HIP is used",
                     "CMake Warning at CMakeLists.txt:42 (message):\n"
                     "  Could not find nvcc, building the HIP backend only"):
        assert run(going_on).category == "unknown", going_on


# ------------------------------------------------------------------ round 18 (b115): after its first look


@pytest.mark.parametrize(("line", "header"), [
    # inducer/pyopencl#101 (b115), fastfetch-cli/fastfetch#281, xbarin02/collatz#6, intel/compute-runtime#49,
    # ihaque/memtestCL#12: installing the OpenCL headers (or pointing at the SDK) fixed each
    ("build/temp.linux-x86_64-2.7/pyopencl._cffi.cpp:403:31: fatal error: CL/cl.h: No such file or directory",
     "CL/cl.h"),
    ("/w/cclang/common_clang.h:20:10: fatal error: 'CL/cl.h' file not found", "CL/cl.h"),
    ("memtestCL_core.h:45:13: fatal error: CL/opencl.h: No such file or directory", "CL/opencl.h"),
    ("src/x.cpp:2:10: fatal error: CL/cl2.hpp: No such file or directory", "CL/cl2.hpp"),
    ("x.cpp(3): fatal error C1083: Cannot open include file: 'CL/cl.h': No such file or directory", "CL/cl.h"),
])
def test_the_opencl_headers_missing(line: str, header: str) -> None:
    got = read_as(line, "toolchain_missing", "opencl-header-missing", 1)
    assert got.fields["header"] == header
    assert "opencl-headers" in got.advice


def test_a_projects_own_header_under_a_cl_directory_is_not_the_sdk() -> None:
    assert run("fatal error: mylib/CL/cl_helpers.h: No such file or directory").category == "unknown"
    assert run("fatal error: mylib/CL/cl.h: No such file or directory").category == "unknown"
    sig = next(s for s in CAT.signatures if s.id == "opencl-header-missing")
    assert sig.match("warning: CL/cl.h: No such file or directory") is None


@pytest.mark.parametrize("line", [
    "x.c:1:10: schwerwiegender Fehler: CL/cl.h: Datei oder Verzeichnis nicht gefunden",
    "x.c:1:10: фатальная ошибка: CL/cl.h: Нет такого файла или каталога",
    "x.cpp(1): fatal error C1083: Cannot open include file: 'CL/cl_gl.h': No such file or directory",
])
def test_the_opencl_headers_in_other_locales_and_msvc(line: str) -> None:
    assert run(line).signature == "opencl-header-missing"


@pytest.mark.parametrize(("line", "signature"), [
    ("_configtest.cpp:1:10: fatal error: filesystem: No such file or directory",
     "cxx-std-header-newer-than-compiler"),
    ("_configtest.c:1:10: fatal error: CL/cl.h: No such file or directory", "opencl-header-missing"),
    ("conftest.c:3:10: fatal error: CL/cl.h: No such file or directory", "opencl-header-missing"),
])
def test_a_probe_compile_that_falls_back_is_no_failure(line: str, signature: str) -> None:
    assert run(line).signature != signature


# ------------------------------------------------------------------ round 18 (b118, b119): after their first looks


@pytest.mark.parametrize(("line", "header"), [
    # NVIDIA/TransformerEngine#459 (b118), preda/gpuowl#115, EQMG/Acid#78, OpenModelica/OpenModelica#11472: GCC 7
    ("/tmp/pip-req-build-j2/transformer_engine/common/util/cuda_driver.cpp:8:10: fatal error: filesystem: No such "
     "file or directory", "filesystem"),
    ("src/log.cpp:3:10: fatal error: 'format' file not found", "format"),
    ("x.cpp(2): fatal error C1083: Cannot open include file: 'span': No such file or directory", "span"),
])
def test_a_newer_standard_header_than_the_compiler_has(line: str, header: str) -> None:
    got = read_as(line, "toolchain_missing", "cxx-std-header-newer-than-compiler", 1)
    assert got.fields["header"] == header
    assert f"<{header}>" in got.advice


def test_a_newer_standard_header_under_clang_says_libstdcxx_and_in_zh_cn() -> None:
    got = run("src/x.hip:3:10: fatal error: 'filesystem' file not found")
    assert "Selected GCC installation" in got.advice and "--gcc-install-dir" in got.advice
    assert run("x.cpp:1:10: 致命错误：filesystem：没有那个文件或目录").signature == "cxx-std-header-newer-than-compiler"


def test_the_experimental_header_or_a_projects_own_is_not_the_standard_one() -> None:
    assert run("fatal error: experimental/filesystem: No such file or directory").category == "unknown"
    assert run("fatal error: myproj/filesystem: No such file or directory").category == "unknown"
    # the old headers every C++ library has: its development package is missing (the other reading)
    assert run("fatal error: 'cmath' file not found").signature == "cxx-std-header-missing"


# ------------------------------------------------------------------ round 18b (b120): after its first look


@pytest.mark.parametrize("log", [
    # carla-simulator/carla#8606 (b120), NVIDIA/cudf-spark-jni#1671: boostorg.jfrog.io's landing page saved as .tar.gz
    "Length: 11534 (11K) [text/html]\nSaving to: ‘boost_1_80_0.tar.gz’\n\ngzip: stdin: not in gzip format\n"
    "tar: Child returned status 1\ntar: Error is not recoverable: exiting now",
    " #12 1.724 gzip: stdin: not in gzip format\n #12 1.728 /usr/bin/tar: Child returned status 1",
    # expo/expo#26184, software-mansion/react-native-reanimated#5542 (Gradle)
    "> Could not read /tmp/x/android/build/downloads/boost_1_76_0.tar.gz.\n   > Not in GZIP format",
])
def test_a_download_that_is_not_the_archive_is_gone_not_waited_for(log: str) -> None:
    got = run(log)
    assert (got.category, got.signature) == ("network", "download-not-an-archive")
    assert not got.retryable
    assert "[text/html]" in got.advice


def test_gzips_name_in_a_configure_check_is_not_a_failed_download() -> None:
    assert run("checking whether gzip: stdin: not in gzip format is handled... yes").category == "unknown"


# ------------------------------------------------------------------ round 18b (b121): after its first look


def test_an_abort_in_gdb_with_no_llvm_frame_after_it_is_no_reading() -> None:
    # baidu-research/warp-ctc#40: warp-ctc's own runtime_error (kernels missing for the GPU), the bt cut after
    # libstdc++'s terminate handler; an unconfirmed abort says nothing about LLVM (confirm_required)
    cut = ("terminate called after throwing an instance of 'std::runtime_error'\n"
           "  what():  Error: compute_ctc_loss in small_test, stat = execution failed\n(gdb) bt\n"
           "#0  0x00007ffff6d55c37 in __GI_raise (sig=sig@entry=6) at ../nptl/sysdeps/unix/sysv/linux/raise.c:56\n"
           "#1  0x00007ffff6d59028 in __GI_abort () at abort.c:89\n"
           "#2  0x00007ffff7660535 in __gnu_cxx::__verbose_terminate_handler() () from /usr/lib/libstdc++.so.6")
    assert run(cut).signature != "gdb-abort-inside-llvm"
    assert run(cut).category == "unknown"
    # an uncaught C++ exception aborts through the terminate handler: an LLVM thread-pool frame further down (comgr
    # loaded in the process) does not make it LLVM's crash (the second review's case)
    pool = cut + "\n#5  0x00007fff1234abcd in llvm::StdThreadPool::processTasks(llvm::ThreadPoolTaskGroup*) () from " \
        "/opt/rocm/lib/libamd_comgr.so.2"
    assert run(pool).signature != "gdb-abort-inside-llvm"
    # LLVM's own fatal error (apache/tvm#4087): abort, then LLVM's frames, no terminate handler
    confirmed = ("(gdb) bt\n#0  0x00007ffff6d55c37 in raise () from /lib/x86_64-linux-gnu/libc.so.6\n"
                 "#1  0x00007ffff6d59028 in abort () from /lib/x86_64-linux-gnu/libc.so.6\n"
                 "#2  0x00007fff1234abcd in llvm::report_fatal_error(llvm::Twine const&, bool) () from libLLVM-9.so")
    assert run(confirmed).signature == "gdb-abort-inside-llvm"


def test_confirm_required_without_confirm_patterns_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[signature]]\nid = "x"\ncategory = "network"\ndescription = "d"\npatterns = ["zz"]\n'
                   'keywords = ["zz"]\nexamples = ["zz"]\nconfirm_required = true\n')
    with pytest.raises(CatalogueError, match="needs 'confirm' patterns"):
        load_catalogue([bad], user=False)


def test_signatures_check_reads_a_confirm_required_example_whole_and_its_first_line_alone(tmp_path: Path) -> None:
    from rocmbuild.diagnosis.signature_check import check_signatures
    ok = tmp_path / "ok.toml"
    ok.write_text('[[signature]]\nid = "zz-confirmed"\ncategory = "network"\ndescription = "d"\n'
                  'patterns = ["^zzfail"]\nkeywords = ["zzfail"]\nconfirm = ["^yyproof"]\nconfirm_required = true\n'
                  'examples = ["zzfail now\\nyyproof here"]\n')
    assert check_signatures(load_catalogue([ok], user=False), only=["zz-confirmed"]) == []
    alone = tmp_path / "alone.toml"
    alone.write_text(ok.read_text().replace('examples = ["zzfail now\\nyyproof here"]', 'examples = ["zzfail now"]'))
    failures = check_signatures(load_catalogue([alone], user=False), only=["zz-confirmed"])
    assert failures and "unknown" in failures[0]


def test_confirm_required_is_a_boolean_in_user_catalogues(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[signature]]\nid = "x"\ncategory = "network"\ndescription = "d"\npatterns = ["zz"]\n'
                   'keywords = ["zz"]\nexamples = ["zz"]\nconfirm = ["yy"]\nconfirm_required = "yes"\n')
    with pytest.raises(CatalogueError, match="confirm_required"):
        load_catalogue([bad], user=False)


# ------------------------------------------------------------------ round 18b (b122, b123): after their first looks


@pytest.mark.parametrize("line", [
    # facebookresearch/faiss#1524 (b123), CannyLab/tsne-cuda#54 (FAISS bundled): compute capability 7.5 unknown to it
    "/opt/faiss/faiss/gpu/utils/DeviceDefs.cuh:24:2: error: #error Unknown __CUDA_ARCH__; please define parameters "
    "for compute capability",
    "src/k.cu(12): error: #error directive: \"Unsupported GPU architecture\"",
    "x.hip:4:2: error: #error \"gfx1151 is not supported by this kernel\"",
])
def test_a_projects_own_error_directive_refusing_the_gpu_arch(line: str) -> None:
    got = read_as(line, "unsupported_arch", "error-directive-gpu-arch", 1)
    assert "CMAKE_CUDA_ARCHITECTURES" in got.advice


@pytest.mark.parametrize("line", [
    "x.h:5:2: error: #error Unsupported architecture",          # a CPU-arch guard: no GPU word
    "x.h:3:2: error: #error \"This file requires C++17\"",
    "// #if !defined(__CUDA_ARCH__) the kernel is unsupported on the host",  # no #error directive
])
def test_error_directives_that_name_no_gpu_arch_are_not_read(line: str) -> None:
    assert run(line).signature != "error-directive-gpu-arch"


def test_hips_own_wave64_guard_keeps_its_specific_reading() -> None:
    got = run("ginkgo-hpc-hip> #error HIP is not supported on the specified GPU ARCH with wavefront size 64")
    assert got.signature == "hip-wave64-unsupported-arch"


# ------------------------------------------------------------------ round 18: the second review's cases


def test_a_not_gzip_line_is_a_weak_reading_that_never_stops_a_live_build() -> None:
    # a script may try gzip and fall back to a plain tar: no live verdict, and a later specific error wins
    live = Classifier(CAT)
    for number, line in enumerate(["+ tar xzf boost.tar.gz", "gzip: stdin: not in gzip format",
                                   "tar: Child returned status 1", "+ tar xf boost.tar.gz"], 1):
        live.on_line(number, clean_line(line))
    assert live.current() is None      # no live verdict: nothing stops the build
    later = run("gzip: stdin: not in gzip format\n"
                "x.cpp:3:10: fatal error: hip/hip_runtime.h: No such file or directory")
    assert later.signature != "download-not-an-archive"
    assert run("gzip: stdin: not in gzip format").signature == "download-not-an-archive"


@pytest.mark.parametrize(("line", "read"), [
    ("/usr/bin/gzip: boost_1_80_0.tar.gz: not in gzip format", True),
    ("java.util.zip.ZipException: Not in GZIP format", True),
    ("+ echo gzip: stdin: not in gzip format", False),
])
def test_the_not_an_archive_wordings_and_a_traced_echo(line: str, read: bool) -> None:
    assert (run(line).signature == "download-not-an-archive") is read
    if read:
        assert "`file`" in run(line).advice


@pytest.mark.parametrize("line", [
    "x.hip:4:2: error: #error \"gfx1151 is not supported\"",
    "k.cu:9:2: error: #error Unsupported sm_35",
    "k.hip:9:2: error: #error \"Unknown HIP architecture\"",
    "x.cu(3): fatal error C1189: #error:  Unsupported GPU architecture",
])
def test_the_gpu_arch_error_directive_in_each_compilers_words(line: str) -> None:
    assert run(line).signature == "error-directive-gpu-arch"


@pytest.mark.parametrize("line", [
    "+ echo '#error Unknown __CUDA_ARCH__' > probe.cu",
    "include/kern.cuh:12:#error \"Unsupported GPU architecture\"",
    "/w/build/CMakeFiles/CMakeScratch/TryCompile-x3/src.cu(3): error: #error directive: "
    "\"Unsupported GPU architecture\"",
    "x.h:2:2: error: #error \"unsupported host compiler; __CUDA_ARCH__ must not be used\"",
    "x.h:2:2: error: #error \"Unsupported platform (not Linux); GPU target code disabled\"",
    "x.h:2:2: error: #error \"invalid value in __HIP_ARCH_HAS_WARP_SHUFFLE__ macro\"",
])
def test_error_directives_that_are_not_the_compiler_refusing_the_arch(line: str) -> None:
    assert run(line).signature != "error-directive-gpu-arch"


@pytest.mark.parametrize("line", [
    "ERROR: Cannot find nvcc, trying hipcc instead",
    "Error: could not find nvcc. Continuing with a CPU-only build.",
])
def test_a_script_that_reports_nvcc_missing_as_an_error_but_goes_on(line: str) -> None:
    assert run(line).signature != "script-cannot-find-nvcc"


def test_findcudatoolkits_own_nvcc_wording_after_an_error_prefix_is_cmakes() -> None:
    got = run("CMake Error: Could not find `nvcc` executable in path specified by variable CUDAToolkit_ROOT=/x")
    assert got.signature != "script-cannot-find-nvcc"
    assert run("RuntimeError: Could not find nvcc; set CUDAToolkit_ROOT").signature != "script-cannot-find-nvcc"


@pytest.mark.parametrize("line", [
    "/tmp/tmpk2j3/conftest.c:1:10: fatal error: CL/cl.h: No such file or directory",
    "/w/b/CMakeFiles/CMakeScratch/TryCompile-ab/src.cxx:1:10: fatal error: 'span' file not found",
])
def test_probe_compiles_under_a_path_are_no_failure(line: str) -> None:
    assert run(line).category == "unknown"


# Crafted lines that made a signature's patterns backtrack, by signature: each must read them in well under 50 ms.
# llvm-fatal-error: the reviews' lines took 155 and 226 ms on the unbounded patterns.  The script-error readings: a
# line of punctuation before the error word made the unpossessive lead quadratic (525 ms on 4 KB).
_SCRIPT_ERROR_LINES = ("-:" * 2000 + "rror", "=" * 4000 + " ERROR", "-" * 4000 + "Error", "a:" * 2000 + "Error:",
                       "RuntimeError: " + "requires CUDA 1" * 300, "Error: " + "x" * 4000 + " required",
                       "Error: require " + "ROCm 1" * 600, "Error:" + " CUDA 1." * 600)
CRAFTED_LINES = {
    "llvm-fatal-error": ("llvm: a Assertion `x' failedx" * 140, "/llvm-6.0/lib/a:1: Assertion `" * 130 + " error"),
    "cuda-toolkit-older-than-required": _SCRIPT_ERROR_LINES,
    "rocm-older-than-required": _SCRIPT_ERROR_LINES,
    "script-cannot-find-nvcc": _SCRIPT_ERROR_LINES,
}


@pytest.mark.parametrize("sig_id", sorted(CRAFTED_LINES))
def test_patterns_are_bounded_on_the_lines_crafted_against_them(sig_id: str) -> None:
    import time
    sig = next(s for s in CAT.signatures if s.id == sig_id)
    for line in CRAFTED_LINES[sig_id]:
        start = time.perf_counter()
        sig.match(line)
        assert time.perf_counter() - start < 0.05, line[:20]


def test_a_projects_own_bsd_style_assertion_is_not_llvms() -> None:
    assert run("Assertion failed: (x > 0), function main, file /w/src/main.c, line 3.").category == "unknown"
    assert run("Assertion failed: (x), function f, file /w/llvm-19.src/lib/IR/Value.cpp, line 9.").signature \
        == "llvm-fatal-error"


def test_cargos_rustc_exe_on_windows_killed() -> None:
    line = ("  process didn't exit successfully: `C:\\Users\\u\\.rustup\\toolchains\\stable\\bin\\rustc.exe "
            "--crate-name x src\\lib.rs` (signal: 9, SIGKILL: kill)")
    assert run(line).signature == "cargo-rustc-killed"


def test_msvc_c1083_for_a_newer_standard_header_ends_at_its_quote() -> None:
    assert run("x.cpp(2): fatal error C1083: Cannot open include file: 'format': No such file or directory"
               ).signature == "cxx-std-header-newer-than-compiler"
    assert run("x.cpp(2): fatal error C1083: Cannot open include file: 'format_helpers.h': No such file or directory"
               ).signature != "cxx-std-header-newer-than-compiler"


def test_a_dot_venv_under_opt_is_a_python_environment_not_an_install_prefix() -> None:
    # the exclusion was written '/\\.venv' in a TOML literal string (a literal backslash): it never matched
    line = ("ninja: error: '/opt/app/.venv/lib/libfoo.so', needed by 'x.so', missing and no known rule to make it")
    assert run(line).signature != "installed-library-missing-from-build-graph"
    assert run(line.replace("/app/.venv/lib/", "/acme/lib/")).signature == "installed-library-missing-from-build-graph"


# ------------------------------------------------------------------ round 19b (b130, b131): after their first looks


@pytest.mark.parametrize(("line", "signature", "toolkit", "required"), [
    # thu-ml/SageAttention#130 and amap-cvlab/ABot-World#8 (b130): the setup.py check vLLM's early releases wrote
    ("RuntimeError: CUDA 12.4 or higher is required for compute capability 8.9.", "cuda", "CUDA", "12.4"),
    ("      RuntimeError: CUDA 12.0 or higher is required to build the package.", "cuda", "CUDA", "12.0"),
    # flash-attention's setup.py, copied by causal-conv1d and mamba
    ("RuntimeError: FlashAttention is only supported on CUDA 11.7 and above.  Note: make sure nvcc has a "
     "supported version by running nvcc -V.", "cuda", "CUDA", "11.7"),
    ("AssertionError: Transformer Engine requires CUDA 12.0 or newer", "cuda", "CUDA", "12.0"),
    ("RuntimeError: Flash Attention requires CUDA >= 11.6", "cuda", "CUDA", "11.6"),
    ("ERROR: CUDA version must be >= 11.8", "cuda", "CUDA", "11.8"),
    ("ERROR: nvcc 11.8 or newer is required", "cuda", "nvcc", "11.8"),
    ("RuntimeError: this extension needs the CUDA Toolkit version 12.1 or higher", "cuda", "CUDA", "12.1"),
    ("RuntimeError: mamba requires CUDA 11.6+", "cuda", "CUDA", "11.6"),
    ("Exception: CUDA 11.0 or higher is required", "cuda", "CUDA", "11.0"),
    ("FATAL: CUDA 11.0 or higher needed", "cuda", "CUDA", "11.0"),
    ("/src/setup.py: error: CUDA 11.0 or higher is required", "cuda", "CUDA", "11.0"),
    ("RuntimeError: FlashAttention-2 on ROCm requires ROCm 6.0 or higher", "rocm", "ROCm", "6.0"),
    ("RuntimeError: ROCm version must be at least 5.7", "rocm", "ROCm", "5.7"),
    ("error: this build needs HIP 5.7 or later", "rocm", "HIP", "5.7"),
])
def test_a_build_script_refusing_a_gpu_toolkit_older_than_it_needs(line: str, signature: str, toolkit: str,
                                                                  required: str) -> None:
    name = "cuda-toolkit-older-than-required" if signature == "cuda" else "rocm-older-than-required"
    got = read_as(line, "toolchain_missing", name, 1)
    assert (got.fields["toolkit"], got.fields["required"]) == (toolkit, required)
    assert not got.retryable
    if signature == "cuda":   # each stack's own checks in its advice, never the other's
        assert f"CUDA >= {required}" in got.advice and "torch.version.cuda" in got.advice
        assert "ROCM_PATH" not in got.advice
    else:
        assert f"ROCm >= {required}" in got.advice and ".info/version" in got.advice
        assert "CUDA_HOME" not in got.advice


@pytest.mark.parametrize("line", [
    '    raise RuntimeError("CUDA 12.0 or higher is required to build the package.")',  # a traceback's source line
    '    RuntimeError("CUDA 12.0 or higher is required to build the package.")',
    '        error = RuntimeError("CUDA 12.0 or higher is required")',
    "UserWarning: CUDA 12.0 or higher is recommended for this package",
    "ERROR: CUDA 12.0 or higher is recommended; the minimum supported is 11.8",
    "ERROR: found CUDA 12.0 or newer, but no GPU is visible",             # no floor: nothing required
    "WARNING: RuntimeError: CUDA 12.0 or higher is required for FP8; building without it",
    "Error: CUDA 11.0 or higher is required for FP8; skipping FP8 kernels",
    "Error: CUDA 12.0 or higher is required for FP8 kernels, disabling them",
    "NotSupportedError: feature X needs CUDA 12.0 or higher; falling back",
    "ERROR: This package requires CUDA 11.8 or higher, found CUDA 12.1 (OK)",
    "Error: needs CUDA 12.0 or higher: satisfied by 12.4",
    "-- Error handling: CUDA 11.0 or higher is required for async copy",   # a CMake status line
    "-- Error handling: HIP 5.0 or higher required",
    "-- ERROR: CUDA 11.0 or higher is required for the async copy kernels",  # message(STATUS): never fatal
    "RuntimeError: torch 2.1 or higher is required",                       # not the toolkit
    "ERROR: Package 'flash-attn' requires a different Python: 3.8.10 not in '>=3.9'",
    "-- CUDA 12.0 or higher is required for the FP8 kernels: skipping them",  # a configure message, no error
    "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    # the GPU's compute capability, the driver, torch's CUDA: other failures
    "RuntimeError: FlashAttention requires CUDA 8.0 or above compute capability",
    "RuntimeError: GPU with CUDA 7.0 or higher compute capability is required",
    "RuntimeError: FlashAttention needs CUDA >= 8.0 capability",
    "RuntimeError: Detected CUDA driver 11.4; CUDA 12.0 or higher driver is required",
    "RuntimeError: This wheel requires CUDA 12.0 or newer drivers",
    "Error: the NVIDIA driver on your system is too old; this requires CUDA 12.0 or higher",
    "RuntimeError: flashinfer requires torch built with CUDA 12.0 or higher",
    "RuntimeError: xformers requires PyTorch with CUDA 11.8 or higher",
    "RuntimeError: torch.version.cuda 11.8 found but CUDA 12.0 or higher is required",
    "RuntimeError: torch built with ROCm 6.0 or higher is required",
])
def test_lines_that_name_a_toolkit_version_but_are_no_refusal_of_it(line: str) -> None:
    assert run(line).signature not in ("cuda-toolkit-older-than-required", "rocm-older-than-required")


def test_a_traceback_ending_in_the_refusal_is_read_on_its_exception_line() -> None:
    log = ('Traceback (most recent call last):\n  File "setup.py", line 131, in <module>\n'
           '    raise RuntimeError("CUDA 12.0 or higher is required to build the package.")\n'
           "RuntimeError: CUDA 12.0 or higher is required to build the package.")
    read_as(log, "toolchain_missing", "cuda-toolkit-older-than-required", 4)


def test_a_specific_error_before_the_refusal_keeps_its_reading() -> None:
    # the first error wins at equal priority: a build that first could not find nvcc, then refused "CUDA 0.0"
    got = run("RuntimeError: Could not find nvcc in PATH\nRuntimeError: CUDA 11.0 or higher is required")
    assert got.signature == "script-cannot-find-nvcc", got


def test_a_script_error_line_that_cannot_find_nvcc_under_fatal() -> None:
    read_as("FATAL: cannot find nvcc", "toolchain_missing", "script-cannot-find-nvcc", 1)


@pytest.mark.parametrize("requested", [
    "/app/llama-cpp-b3131/scripts/build-info.cmake",         # abgulati/LARS#7 (b131): a vendored copy's script
    "/home/u/koboldcpp-rocm/scripts/build-info.cmake",       # a checkout named after ROCm is no ROCm install
    "/src/ownership-tool/cmake/Helpers.cmake",
    "/work/hip-samples/cmake/common.cmake",
    "/opt/tools/cmake/Helpers.cmake",                        # under /opt, not a ROCm root
    "/usr/lib/llvm-21/lib/cmake/llvm/LLVMExports.cmake",    # another package's install: not ROCm's
])
def test_an_include_missing_outside_a_rocm_install_is_no_rocm_reading(requested: str) -> None:
    log = f"CMake Error at CMakeLists.txt:145 (include):\n  include could not find requested file:\n\n    {requested}\n"
    assert run(log).signature != "cmake-rocm-package-file-missing"


@pytest.mark.parametrize(("requested", "blank_lines"), [
    ("/opt/rocm/lib/cmake/hip/hip-targets.cmake", 1),
    ("/opt/rocm-6.2.0/lib/cmake/hip/hip-targets.cmake", 2),                    # two blank lines between
    ("/usr/lib/x86_64-linux-gnu/cmake/hip/hip-targets.cmake", 1),            # Debian's multiarch prefix
    ("/spack/opt/linux/gcc-11/rocblas-5.2.0-abc/lib/cmake/rocblas/rocblas-targets.cmake", 1),
    ("C:/Program Files/AMD/ROCm/6.1/lib/cmake/hip/hip-targets.cmake", 1),
    ("ROCMClients", 1),                                                       # a rocm-cmake module
    ("/usr/local/rocm-6.2/share/rocm/cmake/ROCMConfig.cmake", 1),             # a versioned ROCm root
])
def test_an_include_missing_from_a_rocm_install_is_read(requested: str, blank_lines: int) -> None:
    log = ("CMake Error at /opt/rocm/lib/cmake/hip/hip-config.cmake:120 (include):\n"
           "  include could not find requested file:\n" + "\n" * blank_lines + f"    {requested}\n")
    read_as(log, "toolchain_missing", "cmake-rocm-package-file-missing", 2)


# ------------------------------------------------------------- round 20 (b132, b133, b137): after their first looks
# CMake's config-mode find_package message, wrapped at its width; its first line names the package whole
# (answers.ros.org/question/418104 was cut right after the wrapped name; Tencent/ncnn#2012 before the rest).
_CMAKE_CONFIG_MISSING = (
    "CMake Error at cmake/ROS2.cmake:53 (find_package):\n"
    '  By not providing "Findevent_camera_msgs.cmake" in CMAKE_MODULE_PATH this\n'
    "  project has asked CMake to find a package configuration file provided by\n"
    '  "event_camera_msgs", but CMake did not find one.\n'
)


def test_a_config_mode_find_package_cut_after_its_wrapped_name_is_read_on_its_first_line() -> None:
    got = read_as(_CMAKE_CONFIG_MISSING, "toolchain_missing", "cmake-package-config-missing-first-line", 2)
    assert got.fields["package"] == "event_camera_msgs"
    assert got.confidence == "medium"       # a fallback: the message's later lines say more
    assert "event_camera_msgs" in got.advice


def test_a_long_package_name_wraps_cmake_module_path_off_the_first_line() -> None:
    log = ("CMake Error at CMakeLists.txt:20 (find_package):\n"
           '  By not providing "Findrosidl_typesupport_introspection_cpp.cmake" in\n'
           "  CMAKE_MODULE_PATH this project has asked CMake to find a package\n")
    got = read_as(log, "toolchain_missing", "cmake-package-config-missing-first-line", 2)
    assert got.fields["package"] == "rosidl_typesupport_introspection_cpp"


@pytest.mark.parametrize("header", [
    "CMake Warning at CMakeLists.txt:40 (find_package):",
    "CMake Warning at C:/Program Files/x/CMakeLists.txt:40 (find_package):",        # a path with spaces
    "CMake Warning at scripts/buildsystems/vcpkg.cmake:859 (_find_package):",       # vcpkg's wrapper
])
def test_an_optional_package_is_not_blamed_when_the_configure_fails_for_another_reason(header: str) -> None:
    # CMake prints the whole message, its later lines included
    log = (f"{header}\n"
           '  By not providing "Findevent_camera_msgs.cmake" in CMAKE_MODULE_PATH this\n'
           "  project has asked CMake to find a package configuration file provided by\n"
           '  "event_camera_msgs", but CMake did not find one.\n\n'
           '  Could not find a package configuration file provided by "event_camera_msgs"\n'
           "  with any of the following names:\n\n"
           "CMake Error at CMakeLists.txt:90 (message):\n  Frobnicator requires C++20\n\n"
           "-- Configuring incomplete, errors occurred!\n")
    got = run(log)
    assert got.fields.get("package") != "event_camera_msgs", got


def test_the_full_config_mode_message_is_read_by_its_later_lines() -> None:
    full = _CMAKE_CONFIG_MISSING.replace("event_camera_msgs", "hsa-runtime64") + (
        "\n  Could not find a package configuration file provided by \"hsa-runtime64\" with any of\n"
        "  the following names:\n")
    got = run(full)
    assert (got.category, got.signature) == ("toolchain_missing", "cmake-hip-package-missing"), got


def test_an_optional_find_package_that_the_configure_goes_past_is_no_failure() -> None:
    # the warning form: the configure goes on past it, some lines later
    log = ("CMake Warning at CMakeLists.txt:40 (find_package):\n"
           '  By not providing "FindOpenEXR.cmake" in CMAKE_MODULE_PATH this project has\n'
           '  asked CMake to find a package configuration file provided by "OpenEXR", but\n'
           "  CMake did not find one.\n\n-- OpenEXR not found: EXR output disabled\n"
           "-- Found ZLIB: /usr/lib/libz.so\n-- Configuring done\n-- Generating done\n")
    assert run(log).signature != "cmake-package-config-missing-first-line"


@pytest.mark.parametrize(("line", "header"), [
    ("/opt/intel/oneapi/mkl/2024.1/include/oneapi/mkl/bfloat16.hpp:18:10: fatal error: 'sycl/sycl.hpp' file not found",
     "sycl/sycl.hpp"),                                                          # CHIP-SPV/chipStar#821
    ("ggml/src/ggml-sycl/fattn-tile.hpp:2:10: fatal error: 'sycl/ext/oneapi/work_group_static.hpp' file not found",
     "sycl/ext/oneapi/work_group_static.hpp"),                                  # ggml-org/llama.cpp#20368
    ("ggml/src/ggml-vulkan/ggml-vulkan.cpp:35:14: fatal error: 'spirv/unified1/spirv.hpp' file not found",
     "spirv/unified1/spirv.hpp"),                                               # Android-Termux-LLM-Tutorial#2
    ("src/gpu.cpp:3:10: fatal error: vulkan/vulkan.h: No such file or directory", "vulkan/vulkan.h"),
    ("src/shaders.cpp:2:10: fatal error: shaderc/shaderc.hpp: No such file or directory", "shaderc/shaderc.hpp"),
    ("src/ze.cpp:1:10: fatal error: level_zero/ze_api.h: No such file or directory", "level_zero/ze_api.h"),
    ("tracer.cpp:3:10: fatal error: level_zero/layers/zel_tracing_api.h: No such file or directory",
     "level_zero/layers/zel_tracing_api.h"),
    ("kernels.cpp:1:10: fatal error: 'sycl/detail/core.hpp' file not found", "sycl/detail/core.hpp"),
    ("gpu.cpp:2:10: fatal error: vulkan/vulkan.hpp: No such file or directory", "vulkan/vulkan.hpp"),
    ("gpu.cpp:2:10: fatal error: vulkan/vk_platform.h: No such file or directory", "vulkan/vk_platform.h"),
    ("main.cpp(4): fatal error C1083: Cannot open include file: 'CL/sycl.hpp': No such file or directory",
     "CL/sycl.hpp"),
])
def test_a_gpu_sdks_header_missing_is_a_missing_sdk(line: str, header: str) -> None:
    got = read_as(line, "toolchain_missing", "sycl-vulkan-sdk-header-missing", 1)
    assert got.fields["header"] == header
    assert header in got.advice


def test_the_old_sycl_header_gets_the_porting_advice() -> None:
    got = run("main.cpp:1:10: fatal error: 'CL/sycl.hpp' file not found")
    assert got.signature == "sycl-vulkan-sdk-header-missing" and "sycl/sycl.hpp" in got.advice


@pytest.mark.parametrize("line", [
    "fatal error: ggml-sycl/common.hpp: No such file or directory",            # the project's own sycl directory
    "fatal error: 'mylib/sycl/sycl.hpp' file not found",
    "fatal error: vulkan/my_helpers.h: No such file or directory",             # not a Vulkan SDK header
    "fatal error: vulkan/vulkan_context.h: No such file or directory",         # a project's own vulkan/ directory
    "fatal error: 'vulkan/vulkan_utils.hpp' file not found",
    "fatal error: vulkan/vk_mem_alloc.h: No such file or directory",           # VMA: vendored, not the SDK
    "meson-private/tmpabcd/testfile.c:1:10: fatal error: vulkan/vulkan.h: No such file or directory",   # a probe
    "conftest.c:12:10: fatal error: sycl/sycl.hpp: No such file or directory",                          # autoconf's
    "warning: sycl/sycl.hpp: No such file or directory",
    "CMakeFiles/CMakeScratch/TryCompile-x/src.cxx:1:10: fatal error: 'vulkan/vulkan.h' file not found",
])
def test_headers_that_are_no_gpu_sdks_are_not_read_as_one(line: str) -> None:
    assert run(line).signature != "sycl-vulkan-sdk-header-missing"


@pytest.mark.parametrize(("line", "option"), [
    ("c++: error: unrecognized command line option ‘-fsycl’", "-fsycl"),     # Apress/data-parallel-CPP#3
    ("g++: error: unrecognized command-line option '-fsycl-targets=spir64_gen'", "-fsycl-targets"),
    ("g++: error: unrecognized command-line option ‘-fsycl-device-code-split=per_kernel’", "-fsycl-device-code-split"),
    ("c++: error: unrecognized command-line option ‘--offload-arch=gfx942’", "--offload-arch"),
])
def test_gcc_handed_an_offload_compilers_flag_names_the_flag(line: str, option: str) -> None:
    got = read_as(line, "toolchain_missing", "gcc-given-hip-flags", 1)
    assert got.fields["option"] == option
    assert option in got.advice and "icpx" in got.advice and "hipcc" in got.advice


def test_a_flag_that_only_starts_like_sycls_is_no_offload_flag() -> None:
    assert run("g++: error: unrecognized command-line option '-fsyclx'").signature != "gcc-given-hip-flags"


@pytest.mark.parametrize(("line", "category", "signature"), [
    # intel/llvm#14284
    ("llvm-foreach: Segmentation fault (core dumped)", "compiler_crash", "unable-to-execute-crashed"),
    ("llvm-foreach: command failed with error code: 254: Segmentation fault (core dumped)", "compiler_crash",
     "unable-to-execute-crashed"),
    ("llvm-foreach: Killed", "out_of_memory", "unable-to-execute-killed"),
    ("llvm-foreach: Aborted (core dumped)", "compiler_crash", "unable-to-execute-crashed"),
    ("llvm-foreach: Illegal instruction (core dumped)", "compiler_crash", "unable-to-execute-crashed"),
    ("llvm-foreach: command failed with error code: -6: Aborted (core dumped)", "compiler_crash",
     "unable-to-execute-crashed"),
    ("llvm-foreach: command failed with error code: 137: Killed", "out_of_memory", "unable-to-execute-killed"),
])
def test_dpcpps_llvm_foreach_reports_its_childs_signal(line: str, category: str, signature: str) -> None:
    read_as(f"icpx: note: building for spir64\n{line}\nicpx: error: llvm-spirv command failed", category, signature, 2)


def test_llvm_foreach_failing_without_a_signal_is_no_crash() -> None:
    assert run("llvm-foreach: command failed with error code: 1").category != "compiler_crash"


# ------------------------------------------------- round 20 (b135, b136, b138): after the held-back pair's first look
@pytest.mark.parametrize(("line", "code"), [
    ("Error: connect ETIMEDOUT 54.230.45.109:443", "ETIMEDOUT"),               # mongodb-js/mongodb-prebuilt#18
    ("Error: read ECONNRESET", "ECONNRESET"),                                  # electron/rebuild#530
    ("│ sharp: Installation error: connect ETIMEDOUT 185.199.111.133:443", "ETIMEDOUT"),   # penxio/penx#25
    ("gyp ERR! stack FetchError: request to https://nodejs.org/download/release/v16.20.0/node-v16.20.0-headers.tar.gz"
     " failed, reason: connect ETIMEDOUT 104.20.22.46:443", "ETIMEDOUT"),        # elunez/eladmin#859
    ("npm ERR! network request to https://registry.npmjs.org/sharp failed, reason: socket hang up", "socket hang up"),
    ("Error: ESOCKETTIMEDOUT", "ESOCKETTIMEDOUT"),
    ('error An unexpected error occurred: "https://registry.yarnpkg.com/sharp: ESOCKETTIMEDOUT".', "ESOCKETTIMEDOUT"),
    ("RequestError: socket hang up", "socket hang up"),                         # got, as @electron/get uses it
    ("Error: connect ECONNREFUSED 151.101.1.194:443", "ECONNREFUSED"),          # a registry's address
    ("Error: getaddrinfo EAI_AGAIN registry.npmjs.org", "EAI_AGAIN"),
    ("npm ERR! network request to https://registry.npmjs.org/sharp failed, reason: getaddrinfo ENOTFOUND "
     "registry.npmjs.org", "ENOTFOUND"),
])
def test_nodes_socket_errors_are_the_network(line: str, code: str) -> None:
    got = run(line)
    assert (got.category, got.signature) == ("network", "connection-failed"), got
    assert got.fields["node_code"] == code


@pytest.mark.parametrize("line", [
    "Error: connect ECONNREFUSED 127.0.0.1:6379",                  # a local service: no download
    "Error: connect ECONNREFUSED ::1:5432",
    "src/uv/unix/core.c:412:10: error: 'ETIMEDOUT' undeclared (first use in this function)",   # a compile error
    "Error: getaddrinfo ENOTFOUND postgres",                       # a CI service's name: no download
    "Error: getaddrinfo EAI_AGAIN db",
    "Error: getaddrinfo ENOTFOUND host.docker.internal",
    "Error: getaddrinfo ENOTFOUND printer.local",
    "Error: connect ECONNREFUSED 172.17.0.2:5432",                 # a test database
    "Error: connect ECONNREFUSED 0.0.0.0:3000",
    "    Error: socket hang up",                                   # a test's own HTTP server (supertest, mocha)
    "error: expected ';' after 'connect ETIMEDOUTx'",
])
def test_node_error_codes_that_are_no_download_failure(line: str) -> None:
    assert run(line).signature != "connection-failed"


@pytest.mark.parametrize(("line", "tool"), [
    ("gyp ERR! stack Error: not found: make", "make"),                         # WiseLibs/better-sqlite3#504
    ('gyp ERR! stack Error: Can\'t find Python executable "python", you can set the PYTHON env variable.',
     "python"),                                                                # discord/erlpack#18
    ('gyp ERR! stack Error: Can\'t find Python executable "python2.7", you can set the PYTHON env variable.',
     "python2.7"),
    ('gyp ERR! stack Error: Can\'t find Python executable "/usr/bin/python3", you can set the PYTHON env variable.',
     "/usr/bin/python3"),
    ("gyp ERR! find Python Could not find any Python installation to use", "Python"),   # node-gyp 5 and later
])
def test_node_gyp_without_a_build_tool(line: str, tool: str) -> None:
    got = read_as(line, "toolchain_missing", "build-tool-not-found", 1)
    assert got.fields["tool"] == tool


def test_which_not_finding_a_file_that_is_no_build_tool() -> None:
    assert run("Error: not found: libfoo.so in cache").signature != "build-tool-not-found"


@pytest.mark.parametrize(("line", "expected", "found"), [
    ("Error: this tch version expects PyTorch 2.0.0, got 2.0.1", "2.0.0", "2.0.1"),   # LaurentMazare/tch-rs#742
    ("Error: this tch version expects PyTorch 2.7.0, got 2.2.2, this check can be bypassed by setting the "
     "LIBTORCH_BYPASS_VERSION_CHECK environment variable", "2.7.0", "2.2.2"),          # LaurentMazare/tch-rs#949
    ("Error: this tch version expects PyTorch 2.5.0, got 2.5.0a0, this check can be bypassed", "2.5.0", "2.5.0a0"),
    ("Error: this tch version expects PyTorch 2.6.0, got 2.6.0.dev20241112", "2.6.0", "2.6.0.dev20241112"),
])
def test_the_tch_crate_refusing_its_libtorch_is_an_abi_mismatch(line: str, expected: str, found: str) -> None:
    got = read_as(line, "abi_mismatch", "tch-libtorch-version-pinned", 1)
    assert (got.fields["expected"], got.fields["found"]) == (expected, found)
    assert expected in got.advice and found in got.advice and "LIBTORCH_BYPASS_VERSION_CHECK" in got.advice


@pytest.mark.parametrize(("hashes", "got_start"), [
    ("80685bf2fd46edc5c6f47b61ec9d747f2b17dec6a8c304eeeb196f8d4bda68a5 but wanted "
     "99c732b92b1b37fc243a559e02f9aef5671771e272758aa4aec7f34dc92dac48", "80685bf2"),
    ("sha256-gEZcDVh0j5zMkGoaIH0rRkrVvVS14DWbfAFu0UXmYGk= but wanted "
     "sha256-J/ZKbbwrWRpbV1aqy1lIOeVUkYT5AT+L+y2lB9F7REM=", "sha256-gEZc"),         # bzlmod's SRI integrity
])
def test_bazels_checksum_mismatch_is_a_download_integrity_failure_refetched_once(hashes: str, got_start: str) -> None:
    # pytorch/xla#4535, tensorflow/addons#2802: a pinned GitHub archive whose tarball changed. The per-mirror
    # "WARNING: Download from ... failed" comes first; the verdict is the "Error downloading" line.
    log = ("WARNING: Download from https://github.com/tensorflow/tensorflow/archive/refs/tags/v2.11.0.tar.gz failed: "
           "class com.google.devtools.build.lib.bazel.repository.downloader.UnrecoverableHttpException Checksum was "
           f"{hashes}\n"
           "ERROR: An error occurred during the fetch of repository 'org_tensorflow':\n"
           "Error in download_and_extract: java.io.IOException: Error downloading "
           "[https://github.com/tensorflow/tensorflow/archive/refs/tags/v2.11.0.tar.gz] to /root/.cache/x.tar.gz: "
           f"Checksum was {hashes}")
    got = read_as(log, "network", "download-integrity", 3)
    assert got.fields["got"].startswith(got_start)
    assert got.remedies == ("refetch_download",)


@pytest.mark.parametrize("line", [
    "sha256 did not match, verification failed",        # lines "failed" alone must not open the other patterns
    "ok 12 - sha1 did not match as expected (test failed intentionally)",
])
def test_a_failed_line_is_no_hash_mismatch_by_that_word(line: str) -> None:
    assert run(line).signature != "download-integrity"


def test_a_checksum_sentence_without_hashes_is_not_bazels() -> None:
    assert run("error: Checksum was wrong but wanted to continue").signature != "download-integrity"


def test_an_ipv6_address_ending_in_1_is_no_loopback() -> None:
    assert run("Error: connect ETIMEDOUT fe80::1:443").signature == "connection-failed"
    assert run("Error: connect ETIMEDOUT 2001:db8::1:443").signature == "connection-failed"


def test_npms_retry_line_that_later_succeeds_is_no_verdict() -> None:
    # make-fetch-happen logs each failed attempt; the next one often succeeds and the build fails for another reason
    log = ("gyp http fetch GET https://nodejs.org/dist/v16.20.0/node-v16.20.0-headers.tar.gz attempt 1 failed with "
           "ETIMEDOUT\ngyp http fetch GET 200 https://nodejs.org/dist/v16.20.0/node-v16.20.0-headers.tar.gz (12345ms)\n"
           "../src/foo.cc:12:3: error: 'frobnicate' was not declared in this scope\nmake: *** [foo.o] Error 1")
    assert run(log).category != "network"


@pytest.mark.parametrize("line", [
    "[FAILED] Error: request to https://www.electronjs.org/headers/v26.2.1/node-v26.2.1-headers.tar.gz failed, "
    "reason: write EPROTO A42E0000:error:0A000152:SSL routines:final_renegotiate:unsafe legacy renegotiation disabled",
    "Error: write EPROTO 140:error:1408F10B:SSL routines:ssl3_get_record:wrong version number",
])
def test_nodes_tls_protocol_error_is_the_network_but_not_retried(line: str) -> None:
    got = read_as(line, "network", "node-tls-protocol-error", 1)      # electron/electron#39953
    assert not got.retryable and got.remedies == ()
    assert "proxy" in got.advice


def test_a_transient_reset_before_the_tls_failure_does_not_make_it_retryable() -> None:
    got = run("Error: read ECONNRESET\nError: write EPROTO 140:error:1408F10B:SSL routines:ssl3_get_record:wrong "
              "version number")
    assert got.signature == "node-tls-protocol-error" and not got.retryable


# --------------------------------------------------- round 20b (b139, b140): after the held-back pair's first look
def test_maturins_python_shim_without_cargo_is_a_missing_host_toolchain() -> None:
    # morphik-org/morphik-core#125: orjson from source with no Rust
    got = read_as("         Cargo, the Rust package manager, is not installed or is not on PATH.", "toolchain_missing",
                  "host-compiler-missing", 1)
    assert got.fields["tool"] == "Cargo"


_MATURIN = "💥 maturin failed\n  Caused by: Cargo metadata failed. Do you have cargo in your PATH?\n  Caused by: "


@pytest.mark.parametrize("cause", ["No such file or directory (os error 2)", "program not found"])
def test_maturin_that_could_not_run_cargo_is_a_missing_toolchain(cause: str) -> None:
    got = read_as(_MATURIN + cause, "toolchain_missing", "maturin-cargo-missing", 2)   # langflow-ai/langflow#7739
    assert "rustup" in got.advice


@pytest.mark.parametrize("cause", [
    "`cargo metadata` exited with an error: error: cannot create the lock file because --locked was passed",
    "`cargo metadata` exited with an error: error: failed to select a version for the requirement `pyo3 = \"^0.99\"`",
    "`cargo metadata` exited with an error: error: current package believes it's in a workspace when it's not",
])
def test_maturins_cargo_metadata_failing_for_the_crates_own_reason_is_no_missing_cargo(cause: str) -> None:
    # older maturin adds "Do you have cargo in your PATH?" to every failure of cargo metadata
    assert run(_MATURIN + cause).signature != "maturin-cargo-missing"


def test_a_cargo_warning_that_retries_is_no_missing_toolchain() -> None:
    assert run("warning: cargo metadata failed to read the lock file, retrying").category != "toolchain_missing"


@pytest.mark.parametrize(("line", "library"), [
    ("System.DllNotFoundException: Unable to load shared library 'tensorflow' or one of its dependencies. In order "
     "to help diagnose loading problems, consider setting the LD_DEBUG environment variable: libtensorflow: cannot "
     "open shared object file: No such file or directory", "tensorflow"),       # SciSharp/TensorFlow.NET#609
    ("Unexpected exception: Unable to load shared library 'lib_lightgbm' or one of its dependencies. In order to help "
     "diagnose loading problems, consider setting the DYLD_PRINT_LIBRARIES environment variable: dlopen(liblib_lightg"
     "bm, 1): image not found", "lib_lightgbm"),                                 # dotnet/machinelearning#1282
    ("Unhandled exception. System.DllNotFoundException: Unable to load DLL 'onnxruntime' or one of its dependencies: "
     "The specified module could not be found. (0x8007007E)", "onnxruntime"),
    ("  System.DllNotFoundException : Unable to load DLL 'lib_lightgbm': The specified module could not be found.",
     "lib_lightgbm"),                                                            # NUnit's form
])
def test_the_dotnet_runtime_not_loading_a_native_library(line: str, library: str) -> None:
    got = read_as(line, "missing_runtime_library", "dotnet-native-library-not-loaded", 1)
    assert got.fields["library"] == library and library in got.advice


@pytest.mark.parametrize(("reason", "reading"), [
    ("/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by /x/libtensorflow.so)",
     "glibc-version-not-found"),
    ("/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.29' not found (required by /x/libtensorflow.so)",
     "glibcxx-version-not-found"),
    ("libhsa-runtime64.so.1: cannot open shared object file: No such file or directory", "cannot-open-shared-object"),
])
def test_the_loaders_own_reason_after_the_dotnet_sentence_decides(reason: str, reading: str) -> None:
    line = ("System.DllNotFoundException: Unable to load shared library 'tensorflow' or one of its dependencies. In "
            f"order to help diagnose loading problems, consider setting the LD_DEBUG environment variable: {reason}")
    assert run(line).signature == reading


@pytest.mark.parametrize("line", [
    "System.DllNotFoundException: Unable to load DLL 'x' or one of its dependencies: %1 is not a valid Win32 "
    "application. (0x800700C1)",
    "System.DllNotFoundException: Unable to load shared library 'x' or one of its dependencies. In order to help "
    "diagnose loading problems, consider setting the DYLD_PRINT_LIBRARIES environment variable: dlopen(libx.dylib, 1):"
    " tried: 'libx.dylib' (mach-o file, but is an incompatible architecture (have 'x86_64', need 'arm64'))",
])
def test_a_dotnet_load_failure_for_the_wrong_architecture_is_no_missing_library(line: str) -> None:
    assert run(line).category != "missing_runtime_library"


def test_a_missing_entry_point_is_no_missing_library() -> None:
    # TensorFlow.NET against a newer tensorflow.dll: the library loaded, a function is gone (an ABI skew)
    line = "System.EntryPointNotFoundException: Unable to find an entry point named 'TF_StringEncodedSize' in DLL 'x'."
    assert run(line).signature != "dotnet-native-library-not-loaded"


@pytest.mark.parametrize(("log", "symbol"), [
    ("dyld: lazy symbol binding failed: Symbol not found: __ZN3c104impl23ExcludeDispatchKeyGuardC1ENS_11DispatchKeyE\n"
     "  Referenced from: /Users/u/.djl.ai/pytorch/1.7.0-cpu-osx-x86_64/0.8.0-cpu-libdjl_torch.dylib\n"
     "  Expected in: /Users/u/.djl.ai/pytorch/1.7.0-cpu-osx-x86_64/libc10.dylib",
     "_ZN3c104impl23ExcludeDispatchKeyGuardC1ENS_11DispatchKeyE"),              # deepjavalibrary/djl#332
    ("dyld[4123]: Symbol not found: __ZN2cv3Mat10deallocateEv", "_ZN2cv3Mat10deallocateEv"),
    ("ImportError: dlopen(/x/_C.cpython-311-darwin.so, 0x0002): symbol not found in flat namespace "
     "'__ZN3c1015SmallVectorBaseIjE8grow_podEPKvmm'", "_ZN3c1015SmallVectorBaseIjE8grow_podEPKvmm"),
])
def test_macos_loader_missing_a_cpp_symbol_is_an_abi_mismatch(log: str, symbol: str) -> None:
    got = read_as(log, "abi_mismatch", "dyld-cpp-symbol-not-found", 1)
    assert got.fields["symbol"] == symbol


@pytest.mark.parametrize("line", [
    "dyld: lazy symbol binding failed: Symbol not found: _cblas_sgemm",           # a C function: a library missing
    "ImportError: dlopen(x.so, 2): symbol not found in flat namespace '_PyCMethod_New'",
])
def test_macos_loader_missing_a_c_symbol_is_not_read_as_cpp_abi(line: str) -> None:
    assert run(line).signature != "dyld-cpp-symbol-not-found"


@pytest.mark.parametrize("line", [
    "ImportError: dlopen(/x/vllm/_C.abi3.so, 0x0002): symbol not found in flat namespace "
    "'__ZN4vllm15rms_norm_kernelEv'",
    "ImportError: dlopen(/Users/u/proj/build/lib/mypkg/_core.cpython-311-darwin.so, 0x0002): symbol not found in flat "
    "namespace '__ZN5mypkg6detail4initEv'",
])
def test_a_projects_own_symbol_missing_at_dlopen_is_its_own_build(line: str) -> None:
    assert run(line).signature != "dyld-cpp-symbol-not-found"


# --------------------------------------------------------- round 21 (b141, b142): after their first look
_PYTORCH_OLD_SUBMODULE_CHECK = """\
    Running command python setup.py egg_info
    Could not find /tmp/pip-build/torch/lib/gloo/CMakeLists.txt
    Did you run 'git submodule update --init'?
Command "python setup.py egg_info" failed with error code 1 in /tmp/pip-build/"""


@pytest.mark.parametrize(("log", "line"), [
    (_PYTORCH_OLD_SUBMODULE_CHECK, 3),                                           # pytorch/pytorch#2862
    ("Could not find any of CMakeLists.txt, Makefile, setup.py, LICENSE, LICENSE.md, LICENSE.txt in "
     "/src/pytorch/third_party/ios-cmake\nDid you run 'git submodule update --init --recursive'?", 2),
    ("error: vendor/gpui/Cargo.toml not found — did you run `git submodule update --init --recursive`?", 1),
    ("Did you run 'git submodule update --recursive --init'?", 1),
    ("Have you run 'git submodule init && git submodule update'?", 1),
    ("CMake Error at CMakeLists.txt:12 (message):\n  The git submodule third_party/composable_kernel is missing.  "
     "Did you run\n  'git submodule update --init --recursive'?", 3),
    # PyTorch ran `git submodule update` itself in a tarball, which is no git repository
    ("fatal: not a git repository (or any of the parent directories): .git\n --- Submodule initalization failed\n"
     "Please run:\n\tgit submodule update --init --recursive", 2),
])
def test_a_projects_own_empty_submodule_check_is_named_but_no_category(log: str, line: int) -> None:
    # the uninitialised-submodule threads (openvinotoolkit/openvino#307, ROCm/aotriton#28, AdaptiveCpp#136) fixed
    # the checkout; pip's egg_info line after the hint is no missing Python dependency
    got = read_as(log, "unknown", "submodules-not-checked-out", line)
    assert "git submodule update --init --recursive" in got.advice


def test_a_submodule_that_could_not_be_cloned_is_the_network_not_the_hint() -> None:
    got = run("fatal: unable to access 'https://github.com/x/gloo.git/': Could not resolve host: github.com\n"
              "fatal: clone of 'https://github.com/x/gloo.git' into submodule path '/src/third_party/gloo' failed\n"
              "Did you run 'git submodule update --init'?")
    assert got.category == "network", got


@pytest.mark.parametrize(("log", "line"), [
    ("git@github.com: Permission denied (publickey).\nfatal: Could not read from remote repository.\n"
     "fatal: clone of 'git@github.com:x/y.git' into submodule path '/src/third_party/y' failed", 2),
    ("fatal: could not read Username for 'https://github.com': terminal prompts disabled", 1),
    ("bash: git: command not found", 1),
    ("fatal: transport 'file' not allowed\n"
     "fatal: clone of '/src/y' into submodule path '/src/third_party/y' failed", 1),
])
def test_gits_own_failure_above_the_hint_stays_the_decisive_line(log: str, line: int) -> None:
    got = run(log + "\nDid you run 'git submodule update --init --recursive'?")
    assert (got.signature, got.line) == (None, line), got


@pytest.mark.parametrize("line", [
    "-- Sub-module CLI11 missing: running git submodule update --init",
    " --- Submodule initialization took 3.20 sec",
    "Submodule path 'third_party/fmt': checked out '7bdf0628b1276379886c7f6dda2cef2b3b374f0b'",
])
def test_a_submodule_fetched_or_reported_is_no_failure(line: str) -> None:
    assert run(line).signature is None


@pytest.mark.parametrize("line", [
    "ImportError: No module named _C",                                          # pytorch/pytorch#574
    "ModuleNotFoundError: No module named 'amp_C'",                             # NVIDIA/apex#1208
    "ImportError: No module named 'amp_C'",
    "ModuleNotFoundError: No module named 'torch._C'",
])
def test_a_packages_own_compiled_extension_is_no_missing_dependency(line: str) -> None:
    # `_C` is PyTorch's name for a package's compiled extension: the package is there, its extension was not built
    # or the source tree shadowed it, and no PyPI install fixes that
    got = run('Traceback (most recent call last):\n  File "<stdin>", line 1, in <module>\n' + line)
    assert (got.category, got.signature) == ("unknown", None), got


@pytest.mark.parametrize("line", [
    "ModuleNotFoundError: No module named 'my_Cache'",
    "ImportError: No module named yaml",
    "ImportError: No module named foo_C.bar",           # Python 2 names the dotted rest only when foo_C is missing
    "ImportError: No module named 'foo_C.bar'",
    "ModuleNotFoundError: No module named 'Cython'",
])
def test_modules_that_merely_contain_a_capital_c_are_still_missing_dependencies(line: str) -> None:
    assert run(line).signature == "module-not-found"


def test_the_compile_error_that_left_the_extension_unbuilt_stays_the_decisive_line() -> None:
    got = run("/src/vllm/csrc/attention/attention_kernels.hip:12:10: error: use of undeclared identifier 'foo'\n"
              "1 error generated when compiling for gfx1100.\nninja: build stopped: subcommand failed.\n"
              'Traceback (most recent call last):\n  File "/src/vllm/vllm/_custom_ops.py", line 9, in <module>\n'
              "    import vllm._C\nModuleNotFoundError: No module named 'vllm._C'")
    assert (got.category, got.line) == ("unknown", 1), got


def test_a_build_failure_before_the_missing_extension_is_the_cause() -> None:
    got = run("c++: fatal error: Killed signal terminated program cc1plus\n"
              "ModuleNotFoundError: No module named 'vllm._C'")
    assert got.category == "out_of_memory", got


def test_pytorchs_setup_names_the_build_dependency_it_cannot_import() -> None:
    log = ('Traceback (most recent call last):\n  File "setup.py", line 308, in build_deps\n'
           "    check_pydep('yaml', 'pyyaml')\n  File \"setup.py\", line 367, in check_pydep\n"
           "    raise RuntimeError(missing_pydep.format(importname=importname, module=module))\n"
           "RuntimeError: Missing build dependency: Unable to `import yaml`.\n"
           "Please install it via `conda install pyyaml` or `pip install pyyaml`")     # DavHau/mach-nix#145
    got = read_as(log, "missing_python_dependency", "setup-missing-build-dependency", 6)
    assert got.fields["module"] == "yaml" and got.remedies == ("install_build_requirements",)


# --------------------------------------------------------- round 22 (b145, b146): after the last two's first look
@pytest.mark.parametrize(("line", "setting"), [
    # onnx/onnx#1784: protobuf built /MT Release, onnx /MDd Debug
    ("libprotobufd.lib(stringpiece.obj) : error LNK2038: mismatch detected for 'RuntimeLibrary': value "
     "'MDd_DynamicDebug' doesn't match value 'MT_StaticRelease' in cpp2py_export.obj", "RuntimeLibrary"),
    ("opencv_core.lib(alloc.obj) : error LNK2038: mismatch detected for '_ITERATOR_DEBUG_LEVEL': value '0' doesn't "
     "match value '2' in main.obj [C:\\src\\build\\app.vcxproj]", "_ITERATOR_DEBUG_LEVEL"),
    ("boost_log.lib(core.obj) : error LNK2038: mismatch detected for 'boost_log_abi': value 'v2_mt_nt6' doesn't "
     "match value 'v2s_mt_nt6' in app.obj", "boost_log_abi"),
])
def test_msvcs_detect_mismatch_is_an_abi_mismatch(line: str, setting: str) -> None:
    got = read_as(line, "abi_mismatch", "msvc-detect-mismatch", 1)
    assert got.fields["setting"] == setting and setting in got.advice


def test_msvcs_runtime_library_warning_is_no_mismatch_reading() -> None:
    assert run("LINK : warning LNK4098: defaultlib 'MSVCRT' conflicts with use of other libs; use "
               "/NODEFAULTLIB:library").signature is None


# --------------------------------------------------------- round 23 (b147, b148): scored on arrival, then learned
GAVE_UP = ("__main__.UserInputError: Invalid TF_CUDA_SETTING setting was provided 3 times in a row. Assuming to be a "
           "scripting mistake.")


@pytest.mark.parametrize(("line", "component", "version"), [
    # tensorflow/tensorflow#3184: a distribution's path to libcudart, not the toolkit's root (no version given)
    ("Invalid path to CUDA  toolkit. /usr/lib/x86_64-linux-gnu/lib64/libcudart.so cannot be found", "CUDA", None),
    # tensorflow/tensorflow#21094: NCCL 2 not installed in the image
    ("Invalid path to NCCL 2 toolkit, /usr/local/cuda-9.0/lib/libnccl.so.2 or /usr/local/cuda-9.0/include/nccl.h "
     "not found. Please use the O/S agnostic package of NCCL 2", "NCCL", "2"),
    ("Invalid path to cuDNN 7.6 toolkit. None of the following files can be found:", "cuDNN", "7.6"),
    ("Invalid path to TensorRT. None of the following files can be found:", "TensorRT", None),
])
def test_tensorflow_configures_retry_line_is_a_missing_toolchain_once_configure_gave_up(
        line: str, component: str, version: str | None) -> None:
    got = read_as(f"{line}\n/usr/local/cuda/lib64/libcudnn.so.7\n{GAVE_UP}", "toolchain_missing",
                  "tf-configure-toolkit-path-invalid", 1)
    assert got.confidence == "high"
    assert got.fields["component"] == component and component in got.advice and "TF_NEED_ROCM=1" in got.advice
    assert got.fields.get("version") == version
    # Alone (configure may go on with the next answer) the line is only a fallback.
    assert read_as(line, "toolchain_missing", "tf-configure-toolkit-path-invalid", 1).confidence == "medium"


@pytest.mark.parametrize(("later", "category"), [
    ("/usr/bin/ld: cannot find -lcuda", "missing_library"),
    ("ImportError: libcudnn.so.7: cannot open shared object file: No such file or directory",
     "missing_runtime_library"),
])
def test_a_retry_that_configure_got_past_gives_way_to_the_builds_own_failure(later: str, category: str) -> None:
    # A scripted configure answered again after the retry and went on; the build failed later for its own reason.
    got = run("Invalid path to CUDA 10.0 toolkit. /opt/cuda/lib64/libcudart.so.10.0 cannot be found\n"
              "Configuration finished\nERROR: /root/tf/BUILD:1:1: Linking of rule '//x:y' failed (Exit 1)\n" + later)
    assert got.category == category and got.line == 4, got


def test_a_retry_that_configure_finished_after_is_not_read() -> None:
    got = run("Invalid path to CUDA 10.0 toolkit. /opt/cuda/lib64/libcudart.so.10.0 cannot be found\n"
              "Please specify the location where CUDA 10.0 toolkit is installed. [Default is /usr/local/cuda]:\n"
              "Configuration finished")
    assert got.signature is None, got


def test_a_later_oom_kill_outranks_a_configure_that_gave_up() -> None:
    got = run("Invalid path to NCCL 2 toolkit, /usr/lib/libnccl.so.2 or /usr/include/nccl.h not found. Please use "
              f"the O/S agnostic package of NCCL 2\n{GAVE_UP}\n"
              "gcc: internal compiler error: Killed (program cc1plus)")
    assert got.category == "out_of_memory", got


@pytest.mark.parametrize(("line", "setting"), [
    (GAVE_UP, "CUDA"),
    ("__main__.UserInputError: Invalid TF_CUDNN setting was provided 10 times in a row. Assuming to be a scripting "
     "mistake.", "CUDNN"),
    # newer configure.py, after validate_cuda_config failed
    ("__main__.UserInputError: Invalid CUDA setting were provided 10 times in a row. Assuming to be a scripting "
     "mistake.", "CUDA"),
])
def test_tensorflow_configure_giving_up_alone_is_a_missing_toolchain(line: str, setting: str) -> None:
    got = read_as(line, "toolchain_missing", "tf-configure-gave-up", 1)
    assert got.confidence == "high" and got.fields["setting"] == setting and "TF_NEED_ROCM=1" in got.advice


def test_tensorflow_configures_prompt_and_other_invalid_paths_are_not_read() -> None:
    for line in ("Please specify the location where CUDA 10.0 toolkit is installed. Refer to README.md for more "
                 "details. [Default is /usr/local/cuda]:",
                 "Invalid path to the build directory", "Invalid path to CUDA toolkit, please set CUDA_HOME",
                 "Invalid path to the MPI Toolkit. /opt/mpi/lib/libmpi.so cannot be found",
                 "__main__.UserInputError: Invalid TF_CUDA_COMPUTE_CAPABILITIES setting was provided 10 times in a "
                 "row. Assuming to be a scripting mistake.",
                 "    raise UserInputError('Invalid TF_CUDNN setting was provided %d '"):
        assert run(line).signature not in ("tf-configure-toolkit-path-invalid", "tf-configure-gave-up"), line


@pytest.mark.parametrize("line", [
    # tensorflow/tensorflow#7725 (bazel's path conversion) and bazelbuild/bazel#6462 (the client's start-up check)
    "Error: BAZEL_SH environment variable is not defined, cannot convert MSYS paths to Windows paths: Invalid or "
    "incomplete multibyte or wide character",
    "ERROR: BAZEL_SH environment variable is not defined, cannot convert MSYS paths to Windows paths",
    "  Bazel on Windows requires MSYS2 Bash, but we could not find it.",
])
def test_bazel_on_windows_without_msys_bash_is_a_missing_toolchain(line: str) -> None:
    got = read_as(line, "toolchain_missing", "bazel-windows-msys-bash-missing", 1)
    assert got.confidence == "high" and "BAZEL_SH" in got.advice


def test_bazel_lines_that_name_bash_or_say_could_not_find_it_otherwise_are_not_read() -> None:
    for line in ("INFO: BAZEL_SH detected: C:\\tools\\msys64\\usr\\bin\\bash.exe",
                 "Error: BAZEL_SH is set to C:\\msys64\\usr\\bin\\bash.exe but the file is missing",
                 "ERROR: we could not find it in the cache"):
        assert run(line).signature != "bazel-windows-msys-bash-missing", line


# ------------------------------------------------------- round 24 (b149-b152): after the last two's first look
@pytest.mark.parametrize(("log", "arch"), [
    # pytorch/pytorch#925 and torch/cutorch#450: a Fermi card autodetected as 2.1(2.0), which the list lacked
    ("CMake Error at /home/u/pytorch/cmake/FindCUDA/FindCUDA/select_compute_arch.cmake:142 (message):\n"
     "  Unknown CUDA Architecture Name 2.1(2.0) in CUDA_SELECT_NVCC_ARCH_FLAGS\n"
     "Call Stack (most recent call first):\n  CMakeLists.txt:115 (CUDA_SELECT_NVCC_ARCH_FLAGS)", "2.1(2.0)"),
    # NixOS/nixpkgs#536525: CMake 4.1's copy of the module still rejects Blackwell's 10.0
    ("CMake Error at /nix/store/x-cmake-4.1.2/share/cmake-4.1/Modules/FindCUDA/select_compute_arch.cmake:245 "
     "(message):\n  Unknown CUDA Architecture Name 10.0 in CUDA_SELECT_NVCC_ARCH_FLAGS", "10.0"),
    # TORCH_CUDA_ARCH_LIST's arch-specific and family names, and a generation's name, through a vendored copy
    ("CMake Error at cmake/Modules_CUDA_fix/upstream/FindCUDA/select_compute_arch.cmake:227 (message):\n"
     "  Unknown CUDA Architecture Name 9.0a in CUDA_SELECT_NVCC_ARCH_FLAGS", "9.0a"),
    ("CMake Error at cmake/select_compute_arch.cmake:227 (message):\n"
     "  Unknown CUDA Architecture Name 10.0f in CUDA_SELECT_NVCC_ARCH_FLAGS", "10.0f"),
    ("1>  CMake Error at cmake/SelectCudaComputeArch.cmake:172 (message):\n"
     "1>    Unknown CUDA Architecture Name Ampere in CUDA_SELECT_NVCC_ARCH_FLAGS", "Ampere"),
])
def test_findcudas_unknown_arch_name_is_an_unsupported_arch(log: str, arch: str) -> None:
    got = read_as(log, "unsupported_arch", "cmake-findcuda-unknown-arch-name", 2)
    assert got.fields["cuda_arch"] == arch and arch in got.advice


def test_findcudas_unknown_name_from_a_broken_detection_is_not_an_arch() -> None:
    # colmap/colmap#195: the detection's own output ("nvcc", "warning", ":") parsed as arch names
    # and a bare number, a misspelt list rather than an arch the module lacks
    for name in ("nvcc", "warning", ":", "86"):
        got = run(f"1>    Unknown CUDA Architecture Name {name} in CUDA_SELECT_NVCC_ARCH_FLAGS\n"
                  "1>    arch_bin wasn't set for some reason")
        assert got.signature != "cmake-findcuda-unknown-arch-name", name


@pytest.mark.parametrize("status", ['22;"HTTP response code said error"', "22;\\\"HTTP response code said error\\\"",
                                    "22;'HTTP response code said error'"])
def test_vcpkgs_download_status_22_is_an_http_error_tried_once_more(status: str) -> None:
    # microsoft/vcpkg#12397: file(DOWNLOAD)'s STATUS list after the URL (GitHub's archive answering 500)
    got = read_as("-- Downloading https://github.com/curl/curl/archive/5a1fc8d.tar.gz...\n"
                  f"-- Downloading https://github.com/curl/curl/archive/5a1fc8d.tar.gz... Failed. Status: {status}",
                  "network", "vcpkg-download-http-error", 2)
    assert got.fields["url"] == "https://github.com/curl/curl/archive/5a1fc8d.tar.gz"
    assert got.remedies == ("wait_and_retry",) and "404" in got.advice


def test_vcpkgs_failed_try_that_a_mirror_answered_gives_way_to_the_later_failure() -> None:
    got = run('-- Downloading https://ftp.gnu.org/gettext-0.21.tar.gz... Failed. Status: 22;"HTTP response code said '
              'error"\n-- Downloading https://www.mirrorservice.org/sites/ftp.gnu.org/gettext-0.21.tar.gz... OK\n'
              "-- Extracting source\n/usr/bin/ld: cannot find -lssl")
    assert (got.category, got.line) == ("missing_library", 4), got


def test_vcpkgs_other_statuses_and_its_url_line_are_not_the_http_error() -> None:
    assert run("-- Downloading https://github.com/curl/curl/archive/5a1fc8d.tar.gz...").category == "unknown"
    got = run('-- Downloading https://github.com/x/y/archive/v1.tar.gz... Failed. Status: 7;"Couldn\'t connect to '
              'server"')
    assert got.signature != "vcpkg-download-http-error" and got.category == "network", got
    got = run('-- Downloading https://github.com/x/y/archive/v1.tar.gz... Failed. Status: 23;"Failed writing received '
              'data to disk/application"')
    assert got.signature != "vcpkg-download-http-error", got
