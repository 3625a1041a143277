"""Tests of rocmbuild.toolchain.cache: the environment as data, wrappers, stats, and real caching.

Tests marked ``hip`` compile real HIP device code with Debian's hipcc (no GPU
needed); tests marked ``redis`` start a real redis-server on a free port.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from rocmbuild.process.command import CommandResult
from rocmbuild.toolchain import cache
from rocmbuild.toolchain.cache import CacheConfig, CacheStats, CacheTool

IN_CI = bool(os.environ.get("CI"))
HAVE_HIPCC = shutil.which("hipcc") is not None
HAVE_CCACHE = shutil.which("ccache") is not None
HAVE_REDIS = shutil.which("redis-server") is not None

# Outside CI a missing tool skips; in CI the test runs and fails loudly instead.
needs_ccache = pytest.mark.skipif(not HAVE_CCACHE and not IN_CI, reason="ccache not installed")
needs_hip = pytest.mark.skipif(not (HAVE_HIPCC and HAVE_CCACHE) and not IN_CI,
                               reason="hipcc/ccache not installed (apt-get install hipcc ccache)")
needs_redis = pytest.mark.skipif(not (HAVE_REDIS and HAVE_CCACHE) and not IN_CI,
                                 reason="redis-server/ccache not installed")
needs_cmake = pytest.mark.skipif(
    (shutil.which("cmake") is None or shutil.which("ninja") is None) and not IN_CI,
    reason="cmake/ninja not installed")

CCACHE = CacheTool("ccache", Path("/usr/bin/ccache"), "4.7.5",
                   ("file-storage", "http-storage", "redis+unix-storage", "redis-storage"))
SCCACHE = CacheTool("sccache", Path("/opt/sccache/bin/sccache"), "0.16.0")

# Captured from ccache 4.7.5 (`ccache --print-stats`) on a second cache dir after:
# one compile served by redis, one local hit of it, one new file (miss), one link.
PRINT_STATS_475 = """\
autoconf_test\t0
bad_compiler_arguments\t0
bad_output_file\t0
cache_miss\t1
cache_size_kibibyte\t16
called_for_link\t1
called_for_preprocessing\t0
cleanups_performed\t0
compile_failed\t0
compiler_check_failed\t0
compiler_produced_empty_output\t0
compiler_produced_no_output\t0
compiler_produced_stdout\t0
could_not_find_compiler\t0
could_not_use_modules\t0
could_not_use_precompiled_header\t0
direct_cache_hit\t2
direct_cache_miss\t1
error_hashing_extra_file\t0
files_in_cache\t4
internal_error\t0
local_storage_hit\t1
local_storage_miss\t2
local_storage_read_hit\t2
local_storage_read_miss\t4
local_storage_write\t4
missing_cache_file\t0
multiple_source_files\t0
no_input_file\t0
output_to_stdout\t0
preprocessed_cache_hit\t0
preprocessed_cache_miss\t1
preprocessor_error\t0
recache\t0
remote_storage_error\t0
remote_storage_hit\t1
remote_storage_miss\t1
remote_storage_read_hit\t2
remote_storage_read_miss\t2
remote_storage_timeout\t0
remote_storage_write\t2
stats_updated_timestamp\t1795963539
stats_zeroed_timestamp\t0
unsupported_code_directive\t0
unsupported_compiler_option\t0
unsupported_environment_variable\t0
unsupported_source_language\t0
"""

# Captured from sccache 0.16.0 (`sccache --show-stats --stats-format=json`), one miss, one hit.
SCCACHE_JSON_016 = (
    '{"stats":{"compile_requests":2,"requests_unsupported_compiler":0,"requests_not_compile":0,'
    '"requests_not_cacheable":0,"requests_executed":2,"cache_errors":{"counts":{},"adv_counts":{}},'
    '"cache_hits":{"counts":{"C/C++":1},"adv_counts":{"c++ [clang]":1}},'
    '"cache_misses":{"counts":{"C/C++":1},"adv_counts":{"c++ [clang]":1}},"cache_timeouts":0,'
    '"cache_read_errors":0,"non_cacheable_compilations":0,"forced_recaches":0,"cache_write_errors":0,'
    '"cache_writes":1,"compilations":1,"compile_fails":0,"not_cached":{},"dist_compiles":{},'
    '"dist_errors":0,"multi_level":null},"cache_location":"Local disk: \\"/tmp/scc\\"",'
    '"cache_size":485,"max_cache_size":10737418240,"version":"0.16.0","basedirs":[]}'
)


class FakeRun:
    """Stands in for proc.capture: records argv/env, answers from a table."""

    def __init__(self, answers: Mapping[str, CommandResult] | None = None) -> None:
        self.answers = dict(answers or {})
        self.calls: list[tuple[list[str], dict[str, str] | None]] = []

    def __call__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                 cwd: Path | None = None, timeout: float = 60) -> CommandResult:
        self.calls.append((list(argv), dict(env) if env is not None else None))
        for key, result in self.answers.items():
            if key in " ".join(argv):
                return result
        return CommandResult(1, "unexpected command")


# --------------------------------------------------------------------------- detection

def _fake_exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_detect_prefers_ccache_and_parses_version_and_features(tmp_path: Path) -> None:
    _fake_exe(tmp_path / "a" / "sccache")
    ccache_exe = _fake_exe(tmp_path / "b" / "ccache")
    run = FakeRun({"ccache --version": CommandResult(
        0, "ccache version 4.7.5\nFeatures: file-storage http-storage redis+unix-storage redis-storage\n")})
    tool = cache.detect_cache({"PATH": f"{tmp_path / 'a'}:{tmp_path / 'b'}"}, run)
    assert tool == CacheTool("ccache", ccache_exe, "4.7.5",
                             ("file-storage", "http-storage", "redis+unix-storage", "redis-storage"))


def test_detect_falls_back_to_sccache_then_none(tmp_path: Path) -> None:
    sccache_exe = _fake_exe(tmp_path / "sccache")
    run = FakeRun({"sccache --version": CommandResult(0, "sccache 0.16.0\n")})
    assert cache.detect_cache({"PATH": str(tmp_path)}, run) == CacheTool("sccache", sccache_exe, "0.16.0")
    assert cache.detect_cache({"PATH": str(tmp_path / "nothing")}, run) is None


def test_detect_skips_a_broken_ccache(tmp_path: Path) -> None:
    _fake_exe(tmp_path / "ccache")
    run = FakeRun({"ccache --version": CommandResult(127, "error while loading shared libraries")})
    assert cache.detect_cache({"PATH": str(tmp_path)}, run) is None


@needs_ccache
def test_detect_real_ccache() -> None:
    tool = cache.detect_cache(os.environ)
    assert tool is not None and tool.name == "ccache"
    assert tool.version.count(".") >= 1 and int(tool.version.split(".")[0]) >= 4


# --------------------------------------------------------------------------- cache_env (pure)

def test_cache_env_ccache_full_set(tmp_path: Path) -> None:
    cfg = CacheConfig(CCACHE, tmp_path / "cc", remote="redis://10.0.0.5:6379")
    env = cache.cache_env(cfg, recipe_uses_cmake=False, caller_env={}, wrapper_dir=tmp_path / "w",
                          source=Path("/src/vllm"))
    assert env == {
        "CCACHE_DIR": str(tmp_path / "cc"),
        "CCACHE_MAXSIZE": "20G",
        "CCACHE_REMOTE_STORAGE": "redis://10.0.0.5:6379",
        "CCACHE_BASEDIR": "/src/vllm",
        "CCACHE_NOHASHDIR": "1",
        "CCACHE_COMPILERCHECK": "content",
        "CCACHE_DEPEND": "1",
        "CMAKE_C_COMPILER_LAUNCHER": "/usr/bin/ccache",
        "CMAKE_CXX_COMPILER_LAUNCHER": "/usr/bin/ccache",
        "CMAKE_HIP_COMPILER_LAUNCHER": "/usr/bin/ccache",
        "HIP_CLANG_PATH": str(tmp_path / "w" / "bin"),
    }


def test_cache_env_appends_launchers_to_callers_cmake_args() -> None:
    cfg = CacheConfig(CCACHE, Path("/c"))
    env = cache.cache_env(cfg, recipe_uses_cmake=True, caller_env={"CMAKE_ARGS": "-DFOO=1"},
                          wrapper_dir=None)
    assert env["CMAKE_ARGS"] == (
        "-DFOO=1 -DCMAKE_C_COMPILER_LAUNCHER=/usr/bin/ccache "
        "-DCMAKE_CXX_COMPILER_LAUNCHER=/usr/bin/ccache -DCMAKE_HIP_COMPILER_LAUNCHER=/usr/bin/ccache")
    assert "HIP_CLANG_PATH" not in env and "CCACHE_REMOTE_STORAGE" not in env
    assert "CCACHE_BASEDIR" not in env  # no source given: nothing to relativise against


def test_cache_env_respects_what_the_caller_set_explicitly() -> None:
    caller = {"CMAKE_ARGS": "-DCMAKE_HIP_COMPILER_LAUNCHER=sccache", "CCACHE_BASEDIR": "/home",
              "CCACHE_COMPILERCHECK": "mtime", "CMAKE_CXX_COMPILER_LAUNCHER": "distcc"}
    env = cache.cache_env(CacheConfig(CCACHE, Path("/c")), recipe_uses_cmake=True, caller_env=caller,
                          wrapper_dir=None, source=Path("/src"))
    assert env["CMAKE_ARGS"] == ("-DCMAKE_HIP_COMPILER_LAUNCHER=sccache "
                                 "-DCMAKE_C_COMPILER_LAUNCHER=/usr/bin/ccache "
                                 "-DCMAKE_CXX_COMPILER_LAUNCHER=/usr/bin/ccache")
    for kept in ("CCACHE_BASEDIR", "CCACHE_COMPILERCHECK", "CMAKE_CXX_COMPILER_LAUNCHER"):
        assert kept not in env


def test_cache_env_leaves_ccache_booleans_whose_negation_the_caller_set() -> None:
    env = cache.cache_env(CacheConfig(CCACHE, Path("/c")), recipe_uses_cmake=False,
                          caller_env={"CCACHE_NODEPEND": "1", "CCACHE_HASHDIR": "1"}, wrapper_dir=None)
    assert "CCACHE_DEPEND" not in env and "CCACHE_NOHASHDIR" not in env
    assert env["CCACHE_COMPILERCHECK"] == "content"


def test_check_environment_flags_falsy_ccache_booleans() -> None:
    problems = cache.check_environment({"CCACHE_DEPEND": "0", "CCACHE_NOSTATS": "false",
                                        "CCACHE_MAXSIZE": "0", "CCACHE_DIRECT": "1"})
    assert len(problems) == 2
    assert problems[0].startswith("CCACHE_DEPEND=0") and problems[1].startswith("CCACHE_NOSTATS=false")


@needs_ccache
def test_falsy_ccache_boolean_really_breaks_compiles(tmp_path: Path) -> None:
    # The fact check_environment is built on (ccache 4.7): "0" is an error, not "off".
    (tmp_path / "a.c").write_text("int a;\n")
    env = {**os.environ, "CCACHE_DIR": str(tmp_path / "cc"), "CCACHE_DEPEND": "0"}
    proc = subprocess.run(["ccache", "cc", "-c", "a.c", "-o", "a.o"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "invalid boolean" in proc.stderr


def test_cache_env_no_cmake_args_when_recipe_does_not_read_them() -> None:
    env = cache.cache_env(CacheConfig(CCACHE, Path("/c")), recipe_uses_cmake=False,
                          caller_env={"CMAKE_ARGS": "-DX=1"}, wrapper_dir=None)
    assert "CMAKE_ARGS" not in env


def test_cache_env_launcher_path_with_space_uses_bare_name_in_cmake_args() -> None:
    tool = CacheTool("ccache", Path("/opt/my tools/ccache"), "4.9")
    env = cache.cache_env(CacheConfig(tool, Path("/c")), recipe_uses_cmake=True, caller_env={},
                          wrapper_dir=None)
    assert env["CMAKE_ARGS"].split() == [f"-DCMAKE_{lang}_COMPILER_LAUNCHER=ccache"
                                         for lang in ("C", "CXX", "HIP")]
    assert env["CMAKE_HIP_COMPILER_LAUNCHER"] == "/opt/my tools/ccache"  # env var: no splitting


def test_a_job_limit_shim_with_a_space_stays_out_of_cmake_args_instead_of_a_bare_cache_tool() -> None:
    """A bare `ccache` in CMAKE_ARGS would run vLLM's compiles past the job-limit shim."""
    tool = CacheTool("ccache", Path("/usr/bin/ccache"), "4.9")
    shim = Path("/home/me/my cache/rocmbuild-launch-ccache")
    env = cache.cache_env(CacheConfig(tool, Path("/c")), recipe_uses_cmake=True, caller_env={"CMAKE_ARGS": "-DX=1"},
                          wrapper_dir=None, launcher=shim)
    assert "CMAKE_ARGS" not in env  # the caller's stays as it was
    assert env["CMAKE_CXX_COMPILER_LAUNCHER"] == str(shim)  # CMake reads the variable on a fresh configure


def test_cache_env_sccache() -> None:
    cfg = CacheConfig(SCCACHE, Path("/sc"), remote="redis://cachebox:6379")
    env = cache.cache_env(cfg, recipe_uses_cmake=False, caller_env={}, wrapper_dir=None,
                          source=Path("/src"))
    assert env["SCCACHE_DIR"] == "/sc"
    assert env["SCCACHE_REDIS_ENDPOINT"] == "redis://cachebox:6379"
    assert env["SCCACHE_BASEDIRS"] == "/src"
    assert env["CMAKE_HIP_COMPILER_LAUNCHER"] == "/opt/sccache/bin/sccache"
    assert not any(k.startswith("CCACHE_") for k in env)


def test_default_cache_dir_is_outside_any_source_tree() -> None:
    cfg = CacheConfig(CCACHE)
    assert cfg.cache_dir.name == "ccache" and cfg.cache_dir.parent.name == "rocmbuild"


def test_make_config_precedence(tmp_path: Path) -> None:
    environ = {"ROCMBUILD_CACHE_REMOTE": "redis://env:6379", "ROCMBUILD_CACHE_DIR": str(tmp_path)}
    assert cache.make_config(CCACHE, environ).remote == "redis://env:6379"
    assert cache.make_config(CCACHE, environ).cache_dir == tmp_path
    assert cache.make_config(CCACHE, environ, remote="http://cli/cache").remote == "http://cli/cache"
    assert cache.make_config(CCACHE, {}).remote is None


def test_check_remote() -> None:
    assert cache.check_remote(CCACHE, "redis://127.0.0.1:6379") is None
    assert cache.check_remote(CCACHE, "http://cache.local/ccache") is None
    bad_scheme = cache.check_remote(CCACHE, "s3://bucket/x")
    assert bad_scheme is not None and "s3://" in bad_scheme
    no_redis = CacheTool("ccache", Path("/usr/bin/ccache"), "4.7", ("file-storage", "http-storage"))
    msg = cache.check_remote(no_redis, "redis://h:1")
    assert msg is not None and "file-storage, http-storage" in msg
    assert cache.check_remote(CCACHE, "cachebox:6379") is not None


def test_invalidates_cache() -> None:
    warning = cache.invalidates_cache("lower_optimization")
    assert warning is not None and "-O3" in warning and "0% hits" in warning
    for remedy in ("clean_build", "reduce_jobs", "add_library_paths", "uninstall_packages",
                   "wait_and_retry"):
        assert cache.invalidates_cache(remedy) is None


# --------------------------------------------------------------------------- stats parsing

def test_parse_ccache_print_stats_475() -> None:
    stats = cache.parse_ccache_stats(PRINT_STATS_475)
    assert stats == CacheStats(hits=2, misses=1, remote_hits=1, uncacheable=1, errors=0)
    assert stats.hit_rate == pytest.approx(2 / 3)
    assert stats.to_json() == {"hits": 2, "misses": 1, "remote_hits": 1, "uncacheable": 1,
                               "errors": 0, "hit_rate": 0.6667}


def test_parse_ccache_stats_counts_preprocessed_hits_and_uncacheable_groups() -> None:
    text = ("direct_cache_hit\t3\npreprocessed_cache_hit\t4\ncache_miss\t2\nno_input_file\t5\n"
            "unsupported_compiler_option\t1\ncompile_failed\t1\nmissing_cache_file\t2\n")
    assert cache.parse_ccache_stats(text) == CacheStats(7, 2, 0, 7, 2)


def test_parse_ccache_stats_rejects_other_output() -> None:
    with pytest.raises(ValueError):
        cache.parse_ccache_stats("Cacheable calls: 0 / 0\n")


def test_hit_rate_none_without_cacheable_calls() -> None:
    assert CacheStats(0, 0, 0, 12).hit_rate is None
    assert CacheStats(0, 0, 0, 12).to_json()["hit_rate"] is None


def test_parse_sccache_stats_016() -> None:
    assert cache.parse_sccache_stats(SCCACHE_JSON_016) == CacheStats(1, 1, 0, 0, 0)


def test_read_and_zero_stats_use_the_attempt_env() -> None:
    run = FakeRun({"--print-stats": CommandResult(0, PRINT_STATS_475), " -z": CommandResult(0, "")})
    env = {"CCACHE_DIR": "/some/cache", "PATH": "/usr/bin"}
    assert cache.zero_stats(env, run, CCACHE) is True
    assert cache.read_stats(env, run, CCACHE) == CacheStats(2, 1, 1, 1, 0)
    assert [c[0] for c in run.calls] == [["/usr/bin/ccache", "-z"], ["/usr/bin/ccache", "--print-stats"]]
    assert all(c[1] is not None and c[1]["CCACHE_DIR"] == "/some/cache" for c in run.calls)


def test_read_stats_none_when_tool_fails() -> None:
    run = FakeRun({"--print-stats": CommandResult(None, "ccache: not found", missing=True)})
    assert cache.read_stats({}, run, CCACHE) is None


def test_doctor_info_reports_size_remote_and_problems(tmp_path: Path) -> None:
    (tmp_path / "cc").mkdir()
    run = FakeRun({"--print-stats": CommandResult(0, PRINT_STATS_475)})
    cfg = CacheConfig(CCACHE, tmp_path / "cc", remote="redis://127.0.0.1:1")
    info = cache.doctor_info(CCACHE, cfg, {"HIP_CLANG_PATH": "/opt/rocm/llvm/bin"}, run,
                             reachable=lambda url: False)
    assert info.size_bytes == 16 * 1024 and info.files == 4
    assert info.remote_reachable is False and len(info.problems) == 1
    assert info.hip_clang_path == "/opt/rocm/llvm/bin"
    data = info.to_json()
    assert data["tool"] == "ccache" and data["version"] == "4.7.5" and data["remote"] == "redis://127.0.0.1:1"
    assert any("NOT reachable" in line for line in info.lines())
    assert cache.doctor_info(None, None, {}).lines()[0].startswith("compiler cache: none")


# --------------------------------------------------------------------------- wrappers

def _fake_llvm(tmp_path: Path) -> tuple[Path, Path]:
    """A Debian-shaped toolchain: /usr/bin/clang++-15 -> llvm-15/bin/clang++ -> clang-15."""
    llvm = tmp_path / "llvm-15"
    (llvm / "lib" / "clang" / "15.0.6" / "include").mkdir(parents=True)
    real = llvm / "bin" / "clang-15"
    real.parent.mkdir()
    real.write_text('#!/bin/sh\necho "real-clang argv0=$0 args=$*"\n')
    real.chmod(0o755)
    for name in ("clang", "clang++"):
        (llvm / "bin" / name).symlink_to("clang-15")
    _fake_exe(llvm / "bin" / "clang-offload-bundler")
    _fake_exe(llvm / "bin" / "lld")
    usr_bin = tmp_path / "usr-bin"
    usr_bin.mkdir()
    (usr_bin / "clang++-15").symlink_to(llvm / "bin" / "clang++")
    (usr_bin / "clang-15").symlink_to(llvm / "bin" / "clang")
    return usr_bin, llvm


def test_write_wrappers_layout(tmp_path: Path) -> None:
    usr_bin, llvm = _fake_llvm(tmp_path)
    wd = tmp_path / "wrap"
    bin_dir = cache.write_wrappers(wd, usr_bin, Path("/usr/bin/ccache"))
    assert bin_dir == wd / "bin"
    for name in ("clang", "clang++", "clang-15", "clang++-15"):
        w = bin_dir / name
        assert w.is_file() and not w.is_symlink() and os.access(w, os.X_OK), name
        text = w.read_text()
        real = "clang++" if "++" in name else "clang"
        assert f"exec /usr/bin/ccache {llvm}/bin/{real} \"$@\"" in text
    for tool in ("clang-offload-bundler", "lld"):
        assert (bin_dir / tool).resolve() == (llvm / "bin" / tool).resolve()
    # hipcc reads $HIP_CLANG_PATH/../lib/clang/<ver>/include
    assert (bin_dir / ".." / "lib" / "clang" / "15.0.6" / "include").is_dir()
    assert cache.wrapped_real_dir(bin_dir) == usr_bin
    # Idempotent, and wrapping the wrapper wraps the real dir instead.
    assert cache.write_wrappers(wd, bin_dir, Path("/usr/bin/ccache")) == bin_dir
    assert cache.wrapped_real_dir(bin_dir) == usr_bin
    assert cache.find_real_clang_dir({"HIP_CLANG_PATH": str(bin_dir)}) == usr_bin


def test_wrapper_sends_only_compiles_through_the_cache(tmp_path: Path) -> None:
    usr_bin, _ = _fake_llvm(tmp_path)
    fake_ccache = tmp_path / "ccache"
    fake_ccache.write_text('#!/bin/sh\necho "via-ccache $*"\n')
    fake_ccache.chmod(0o755)
    bin_dir = cache.write_wrappers(tmp_path / "wrap", usr_bin, fake_ccache)
    compile_out = subprocess.run([bin_dir / "clang++-15", "-x", "hip", "-c", "k.hip", "-o", "k.o"],
                                 capture_output=True, text=True, check=True).stdout
    assert compile_out.startswith("via-ccache ") and "/clang++ -x hip -c k.hip -o k.o" in compile_out
    probe_out = subprocess.run([bin_dir / "clang++-15", "--version"],
                               capture_output=True, text=True, check=True).stdout
    assert probe_out.startswith("real-clang") and "args=--version" in probe_out
    assert probe_out.split()[1].endswith("/clang++")  # driver mode kept: argv[0] is clang++


def test_write_wrappers_without_clang_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        cache.write_wrappers(tmp_path / "w", tmp_path, Path("/usr/bin/ccache"))


# --------------------------------------------------------------------------- real HIP compiles

HIP_SOURCE = """\
#include <hip/hip_runtime.h>
#include "scale.h"
template <typename T> __global__ void axpy(T a, const T* x, T* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] * T(SCALE) + y[i];
}
template __global__ void axpy<float>(float, const float*, float*, int);
template __global__ void axpy<double>(double, const double*, double*, int);
"""


def _hip_project(root: Path) -> Path:
    (root / "include").mkdir(parents=True)
    (root / "include" / "scale.h").write_text("#define SCALE 3\n")
    (root / "k.hip").write_text(HIP_SOURCE)
    (root / "build").mkdir()
    return root


def _real_setup(tmp_path: Path, cache_dir: Path, source: Path, remote: str | None = None,
                ) -> tuple[dict[str, str], CacheTool]:
    base = {**os.environ, "HIP_PLATFORM": "amd"}
    for var in ("HIP_CLANG_PATH", "CCACHE_BASEDIR", "CCACHE_DIR", "CCACHE_REMOTE_STORAGE"):
        base.pop(var, None)
    tool = cache.detect_cache(base)
    assert tool is not None
    wrapper_dir = tmp_path / "wrappers"
    if not (wrapper_dir / "bin").is_dir():
        real = cache.find_real_clang_dir(base)
        assert real is not None
        cache.write_wrappers(wrapper_dir, real, tool.path)
    env = cache.cache_env(CacheConfig(tool, cache_dir, remote), recipe_uses_cmake=False,
                          caller_env=base, wrapper_dir=wrapper_dir, source=source)
    return {**base, **env}, tool


def _hipcc_compile(project: Path, env: Mapping[str, str]) -> None:
    # Absolute paths on purpose: the build system of a real project passes them,
    # and CCACHE_BASEDIR must make them relative for the second tree to hit.
    subprocess.run(["hipcc", "--offload-arch=gfx90a", f"-I{project / 'include'}", "-MD", "-MF", "k.d",
                    "-c", str(project / "k.hip"), "-o", "k.o"],
                   cwd=project / "build", env=dict(env), check=True, capture_output=True)


@pytest.mark.hip
@needs_hip
@pytest.mark.integration
def test_hipcc_device_compile_hits_from_a_second_tree(tmp_path: Path) -> None:
    cache_dir = tmp_path / "ccache"
    a = _hip_project(tmp_path / "A")
    env_a, tool = _real_setup(tmp_path, cache_dir, a)
    assert cache.hipcc_uses_wrapper(env_a)
    assert cache.zero_stats(env_a, tool=tool)
    _hipcc_compile(a, env_a)
    assert cache.read_stats(env_a, tool=tool) == CacheStats(0, 1, 0, 0, 0)

    b = _hip_project(tmp_path / "B")        # a fresh copy elsewhere, same cache
    env_b, _ = _real_setup(tmp_path, cache_dir, b)
    assert cache.zero_stats(env_b, tool=tool)
    _hipcc_compile(b, env_b)
    stats = cache.read_stats(env_b, tool=tool)
    assert stats == CacheStats(hits=1, misses=0, remote_hits=0, uncacheable=0, errors=0)
    assert (b / "build" / "k.o").read_bytes() == (a / "build" / "k.o").read_bytes()
    # The restored dependency file names B's files (relative), not A's.
    deps = (b / "build" / "k.d").read_text()
    assert "../include/scale.h" in deps and str(a) not in deps


# --------------------------------------------------------------------------- redis fleet

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture
def redis_url() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not _ping(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server did not answer PING on port {port}")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


CPP_FILES = {
    "CMakeLists.txt": ("cmake_minimum_required(VERSION 3.17)\nproject(fleet CXX)\n"
                       "add_library(fleet STATIC a.cpp b.cpp c.cpp)\n"
                       "target_include_directories(fleet PRIVATE include)\n"),
    "include/util.h": "#pragma once\n#include <vector>\ntemplate <class T> T sum(const std::vector<T>& v)"
                      " { T s{}; for (auto x : v) s += x; return s; }\n",
    "a.cpp": '#include "util.h"\nint fa() { return sum(std::vector<int>{1, 2, 3}); }\n',
    "b.cpp": '#include "util.h"\ndouble fb() { return sum(std::vector<double>{1.5}); }\n',
    "c.cpp": '#include <string>\nstd::string fc() { return "fleet"; }\n',
}


def _cpp_project(root: Path) -> Path:
    for name, text in CPP_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _cmake_build(project: Path, env: Mapping[str, str], tool: CacheTool) -> CacheStats | None:
    """Configure (CMake reads CMAKE_CXX_COMPILER_LAUNCHER from env), zero, build, read."""
    build = project / "build"
    subprocess.run(["cmake", "-S", str(project), "-B", str(build), "-G", "Ninja"], env=dict(env),
                   check=True, capture_output=True)
    assert cache.zero_stats(env, tool=tool)
    subprocess.run(["cmake", "--build", str(build)], env=dict(env), check=True, capture_output=True)
    return cache.read_stats(env, tool=tool)


@pytest.mark.redis
@needs_redis
@needs_cmake
def test_fleet_cpp_second_node_gets_remote_hits(tmp_path: Path, redis_url: str) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CCACHE_", "CMAKE_"))}
    tool = cache.detect_cache(base)
    assert tool is not None

    def node(name: str) -> CacheStats | None:
        project = _cpp_project(tmp_path / f"node{name}" / "src")
        cfg = cache.make_config(tool, {cache.REMOTE_ENV: redis_url}, cache_dir=tmp_path / f"cache{name}")
        env = cache.cache_env(cfg, recipe_uses_cmake=False, caller_env=base, wrapper_dir=None,
                              source=project)
        assert env["CCACHE_REMOTE_STORAGE"] == redis_url
        return _cmake_build(project, {**base, **env}, tool)

    first = node("A")
    assert first is not None and first.misses == 3 and first.hits == 0
    second = node("B")   # fresh build dir, other path, EMPTY local cache
    assert second is not None
    assert second.remote_hits == 3 and second.hits == 3 and second.misses == 0
    assert second.hit_rate == 1.0


@pytest.mark.redis
@pytest.mark.hip
@needs_redis
@needs_hip
@pytest.mark.integration
def test_fleet_hip_second_node_gets_remote_hits(tmp_path: Path, redis_url: str) -> None:
    a = _hip_project(tmp_path / "A")
    env_a, tool = _real_setup(tmp_path, tmp_path / "cacheA", a, remote=redis_url)
    assert cache.zero_stats(env_a, tool=tool)
    _hipcc_compile(a, env_a)
    assert cache.read_stats(env_a, tool=tool) == CacheStats(0, 1, 0, 0, 0)

    b = _hip_project(tmp_path / "B")
    env_b, _ = _real_setup(tmp_path, tmp_path / "cacheB", b, remote=redis_url)
    assert cache.zero_stats(env_b, tool=tool)
    _hipcc_compile(b, env_b)
    assert cache.read_stats(env_b, tool=tool) == CacheStats(hits=1, misses=0, remote_hits=1,
                                                            uncacheable=0, errors=0)
