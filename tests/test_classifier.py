"""The classifier: root cause over noise, the traps of docs/failure-shapes.md, fixtures, streams."""

from __future__ import annotations

import io
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.diagnosis.classifier import Classifier, Diagnosis, classify, classify_stream
from rocmbuild.process.logscan import scan_lines
from rocmbuild.process.noise import clean_line
from rocmbuild.process.watcher import LineScanner

CAT = load_catalogue(user=False)
FIXTURES = Path(__file__).parent / "fixtures" / "logs"
ROOT = Path(__file__).parent.parent


def run(text: str, exit_status: int | None = None) -> Diagnosis:
    return classify(text.strip("\n").split("\n"), catalogue=CAT, exit_status=exit_status)


# ------------------------------------------------------------------------------------------- fixtures

FIXTURE_LOGS = sorted(FIXTURES.glob("*/*.log"))


@pytest.mark.parametrize("log", FIXTURE_LOGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_fixture_log(log: Path) -> None:
    meta = tomllib.loads(log.with_suffix(".meta.toml").read_text(encoding="utf-8"))
    with log.open("rb") as handle:
        got = classify_stream(handle, catalogue=CAT, exit_status=meta.get("exit_status"))
    explain = f"{got.signature} line {got.line}: {got.text!r}; runners-up {[str(r) for r in got.runners_up][:3]}"
    assert got.category == meta["category"], explain
    if "line" in meta:  # for unknown too: the decisive line it still points at
        assert got.line == meta["line"], explain
    for key, value in (meta.get("fields") or {}).items():
        assert got.fields.get(key) == value, f"field {key}: {dict(got.fields)}"
    # classify() over lines agrees with the streaming path.
    lines = log.read_bytes().decode("utf-8", "replace").split("\n")
    again = classify(lines, catalogue=CAT, exit_status=meta.get("exit_status"))
    assert (again.category, again.signature, again.line) == (got.category, got.signature, got.line)


def test_fixture_directory_is_consistent() -> None:
    for log in FIXTURE_LOGS:
        meta = log.with_suffix(".meta.toml")
        assert meta.exists(), f"{log} has no .meta.toml"
        assert tomllib.loads(meta.read_text(encoding="utf-8"))["category"] == log.parent.name


# ------------------------------------------------------------------------------------------- ranking


def test_unknown_when_nothing_matches() -> None:
    got = run("""
[1/3] Building CXX object foo.o
FAILED: foo.o
/src/foo.cpp:3:1: error: expected ';' after class
ninja: build stopped: subcommand failed.
  error: subprocess-exited-with-error
  note: This error originates from a subprocess, and is likely not a problem with pip.
ERROR: Failed building wheel for vllm
-- Configuring incomplete, errors occurred!
""")
    # Unknown still points somewhere: the first error-looking line inside the FAILED block, never boilerplate.
    assert got.category == "unknown" and got.signature is None
    assert (got.line, got.text) == (3, "/src/foo.cpp:3:1: error: expected ';' after class")
    assert not got.retryable and got.remedies == ()
    assert got.context[:3] == ("[1/3] Building CXX object foo.o", "FAILED: foo.o", got.text)
    assert got.to_json()["fields"] == {} and got.to_json()["remedies"] == []


def test_unknown_prefers_a_real_error_over_boilerplate_and_clean_build_lines() -> None:
    got = run("""
-- Looking for pthread_create in pthreads - not found
-- Performing Test HAVE_FOO - Failed
src/a.cpp:1:2: warning: unused variable 'x' [-Wunused-variable]
  error: subprocess-exited-with-error
make[2]: *** [CMakeFiles/x.dir/build.make:76: x.o] Error 1
terminate called after throwing an instance of 'miopen::Exception'
""")
    assert got.category == "unknown"
    assert got.text == "terminate called after throwing an instance of 'miopen::Exception'"


def test_unknown_with_only_boilerplate_points_at_the_first_of_it() -> None:
    got = run("""
  error: subprocess-exited-with-error
  ERROR: Failed building wheel for foo
""")
    assert (got.category, got.line) == ("unknown", 1)


def test_nothing_error_like_gives_no_line() -> None:
    got = run("[1/2] Building CXX object a.o\n[2/2] Linking CXX shared library liba.so")
    assert (got.category, got.line, got.text, got.context) == ("unknown", None, None, ())


def test_specific_beats_fallback_anywhere() -> None:
    got = run("""
Killed
[5/9] Linking
/usr/bin/ld: cannot find -lhipblas
""")
    assert (got.category, got.signature, got.line, dict(got.fields)) == (
        "missing_library", "ld-cannot-find-library", 3, {"library": "hipblas"})
    assert any(r.signature == "bare-killed" and r.reason == "fallback" for r in got.runners_up)


def test_fallback_wins_when_alone_and_sigkill_strengthens_it() -> None:
    got = run("[10/99] Building HIP object x.o\nKilled\n")
    assert (got.category, got.signature, got.line) == ("out_of_memory", "bare-killed", 2)
    # With a specific failure elsewhere the bare Killed loses ... unless the exit status says SIGKILL.
    text = "/usr/bin/ld: cannot find -lhipblas\nKilled\n"
    assert run(text).category == "missing_library"
    assert run(text, exit_status=137).category == "out_of_memory"
    assert run(text, exit_status=-9).signature == "bare-killed"


def test_sigkill_exit_status_alone_is_out_of_memory() -> None:
    got = run("[10/99] Building HIP object x.o\n", exit_status=137)
    assert (got.category, got.signature, got.line) == ("out_of_memory", "exit-status-sigkill", None)
    assert got.remedies[0] == "reduce_jobs"
    assert run("[10/99] Building HIP object x.o\n", exit_status=1).category == "unknown"


def test_oom_kill_beats_crash_text_after_it() -> None:
    got = run("""
[100/200] Building HIP object flash_fwd.hip.o
FAILED: flash_fwd.hip.o
clang++: error: unable to execute command: Killed
clang++: error: clang frontend command failed due to signal (use -v to see invocation)
PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/
""")
    assert (got.category, got.line) == ("out_of_memory", 3)
    crash = [r for r in got.runners_up if r.category == "compiler_crash"]
    assert crash and crash[0].reason == "after an OOM kill"


def test_disk_full_beats_backend_error_around_it() -> None:
    got = run("""
FAILED: a.o
clang++: error: clang frontend command failed with exit code 70 (use -v to see invocation)
fatal error: error in backend: IO failure on output stream: No space left on device
""")
    assert (got.category, got.line, got.retryable) == ("disk_full", 3, False)
    assert {r.category for r in got.runners_up} == {"compiler_crash"}


def test_first_failed_block_beats_later_errors() -> None:
    got = run("""
[1/9] Building HIP object a.o
FAILED: a.o
clang: error: invalid target ID 'gfx942'; format is a processor name followed by an optional list
[2/9] Building HIP object b.o
FAILED: lib/x.so
/usr/bin/ld: cannot find -lhipblas
ninja: build stopped: subcommand failed.
""")
    assert (got.category, got.line, got.fields["arch"]) == ("unsupported_arch", 3, "gfx942")
    got = run("""
/usr/bin/ld: cannot find -lrocblas
[1/9] Building HIP object a.o
FAILED: lib/a.so
clang-17: error: clang frontend command failed with exit code 139 (use -v to see invocation)
""")
    # The crash in the FAILED block wins over an earlier (higher-priority) match outside it.
    assert (got.category, got.line) == ("compiler_crash", 4)
    assert any(r.reason == "outside the first FAILED block" for r in got.runners_up)


def test_earliest_line_wins_at_equal_rank() -> None:
    got = run("""
ModuleNotFoundError: No module named 'torch'
ModuleNotFoundError: No module named 'numpy'
""")
    assert (got.line, got.fields["module"]) == (1, "torch")


def test_needed_by_warning_explains_the_undefined_reference_wall() -> None:
    wall = "\n".join(f"/usr/bin/ld: /opt/rocm/lib/libamdhip64.so: undefined reference to `hsa_fn_{i}'"
                     for i in range(30))
    warning = ("/usr/bin/ld: warning: libhsa-runtime64.so.1, needed by /opt/rocm/lib/libamdhip64.so, not found "
               "(try using -rpath or -rpath-link)")
    got = run(f"""
[99/100] Linking CXX executable bin/test
{warning}
{wall}
collect2: error: ld returned 1 exit status
""")
    assert (got.category, got.signature, got.line) == ("missing_library", "ld-needed-by-not-found", 2)
    assert got.fields["library"] == "hsa-runtime64"
    # Alone (no undefined references follow) the warning is harmless: only a fallback.
    lone = run("/usr/bin/ld: warning: libfoo.so.1, needed by libbar.so, not found (try using -rpath)\n"
               "/usr/bin/ld: cannot find -lhipblas\n")
    assert lone.signature == "ld-cannot-find-library"


def test_boilerplate_never_wins_and_python_source_lines_are_skipped() -> None:
    got = run("""
      File "/usr/lib/python3/site-packages/pip/_vendor/urllib3/response.py", line 443, in _error_catcher
        raise ReadTimeoutError(self._pool, None, "Read timed out.")
    pip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='pypi.org', port=443): Read timed out.
  error: subprocess-exited-with-error
ERROR: Failed building wheel for vllm
""")
    assert (got.category, got.line, got.remedies) == ("network", 3, ("wait_and_retry",) * 3)


# ------------------------------------------------------------------------------------------- traps


def test_runtime_gpu_oom_is_not_compile_oom() -> None:
    assert run("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 3.31 GiB.").category == "unknown"
    assert run("RuntimeError: HIP out of memory. Tried to allocate 80.00 MiB").category == "unknown"
    assert run("hipMalloc failed: Cannot allocate memory (hipErrorOutOfMemory)").category == "unknown"


def test_optional_plugin_shared_object_warning_is_not_a_failure() -> None:
    got = run("UserWarning: Failed to load image Python extension: "
              "'libc10_hip.so: cannot open shared object file: No such file or directory'\n"
              "  warn(\n"
              "link_cuda_dso: warning: libamdhip64.so.6: cannot open shared object file: No such file or directory: "
              "failed to load library\n")
    assert got.category == "unknown"
    real = run("ImportError: libamdhip64.so.6: cannot open shared object file: No such file or directory")
    assert (real.category, real.fields["library"]) == ("missing_runtime_library", "libamdhip64.so.6")
    assert real.remedies == ("add_library_paths", "clean_build")


def test_undefined_symbol_of_own_kernel_is_not_abi_mismatch() -> None:
    own = run("ImportError: /src/vllm/vllm/_rocm_C.abi3.so: undefined symbol: _Z24paged_attention_ll4mi_QKVIfLi16EEvv")
    assert own.category != "abi_mismatch"
    torch_sym = run("ImportError: /src/vllm/vllm/_C.abi3.so: undefined symbol: _ZN3c106detail19maybe_wrap_dim_slowEllb")
    assert (torch_sym.category, torch_sym.remedies) == ("abi_mismatch", ("uninstall_packages", "clean_build"))


def test_cuda_library_on_rocm_box_is_a_wrong_wheel() -> None:
    # On a ROCm host (here shown by the log; a live build knows it): elsewhere it is a load-path problem.
    got = run("torch 2.5.1+rocm6.2\n"
              "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory")
    assert (got.category, got.retryable, got.fields["library"]) == ("toolchain_missing", False, "libcudart.so.12")
    assert any(r.category == "missing_runtime_library" for r in got.runners_up)


@pytest.mark.parametrize("line", [
    "/usr/bin/ld: kann -lhipblas nicht finden: Datei oder Verzeichnis nicht gefunden",
    "  = note: /usr/bin/ld : impossible de trouver -lhipblas : Aucun fichier ou dossier de ce nom",
    "/usr/bin/ld: cannot find -lhipblas: No such file or directory",
    "ld.lld: error: unable to find library -lhipblas",
])
def test_linker_cannot_find_library_shapes(line: str) -> None:
    got = run(line)
    assert (got.category, got.fields["library"]) == ("missing_library", "hipblas")


def test_linker_killed_by_signal_9_is_oom() -> None:
    got = run("collect2: fatal error: ld terminated with signal 9 [Killed]\ncompilation terminated.")
    assert (got.category, got.signature, got.fields["program"]) == ("out_of_memory", "linker-killed-signal-9", "ld")


def test_normal_link_failure_exit_code_1_is_not_a_crash() -> None:
    assert run("clang: error: linker command failed with exit code 1 (use -v to see invocation)").category == "unknown"


def test_module_not_found_warning_and_extension_modules() -> None:
    assert run("UserWarning: Failed to initialize NumPy: No module named 'numpy'").category == "unknown"
    assert run("ModuleNotFoundError: No module named 'vllm._C'").category == "unknown"
    got = run("ModuleNotFoundError: No module named 'setuptools_scm'")
    # Retried only through installing what the source declares (install_build_requirements).
    assert (got.category, got.retryable, got.remedies) == ("missing_python_dependency", True,
                                                           ("install_build_requirements",))


RETRY_WARNING = ("WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after "
                 "connection broken by 'ReadTimeoutError(\"HTTPSConnectionPool(host='pypi.org', port=443): "
                 "Read timed out. (read timeout=15)\")': /simple/ninja/")


def test_pip_retry_warnings_alone_are_only_a_weak_network_reading() -> None:
    # pypa/pip#9190, urllib3/urllib3#1766: excerpts that end while pip still retries
    got = run(RETRY_WARNING)
    assert (got.category, got.signature, got.confidence) == ("network", "pip-retrying-connection", "medium")
    live = Classifier(CAT)
    scan_lines([RETRY_WARNING], live)
    assert live.current() is None, "a retry may still succeed: never a verdict while the build runs"


def test_pip_retry_warnings_give_way_to_any_error_in_view() -> None:
    got = run(RETRY_WARNING + "\nCollecting ninja\nsrc/ops.cpp:3:10: error: expected ';' after expression")
    assert got.category == "unknown" and got.line == 3, got


# ------------------------------------------------------------------------------------------- values


def test_context_runners_up_and_json_shapes() -> None:
    lines = [f"[{i}/50] Building CXX object o{i}.o" for i in range(1, 9)]
    lines += ["/usr/bin/ld: cannot find -lhipblas", "collect2: error: ld returned 1 exit status", "a", "b", "c", "d"]
    got = classify(lines, catalogue=CAT)
    assert got.line == 9
    assert got.context == (*lines[2:8], lines[8], *lines[9:13])
    data = got.to_json()
    assert list(data) == ["category", "signature", "line", "text", "fields", "retryable", "confidence", "remedies",
                          "context"]
    assert data["fields"] == {"library": "hipblas"} and data["remedies"] == ["add_library_paths", "clean_build"]
    assert list(got.summary_json()) == ["category", "signature", "line", "text", "fields", "retryable", "confidence"]
    assert got.fingerprint() == "missing_library|ld-cannot-find-library|library=hipblas"
    assert got.fingerprint() != run("/usr/bin/ld: cannot find -lrocblas").fingerprint()
    assert "runners_up" in got.explain_json() and got.explain_json()["advice"]


def test_simple_diagnosis_for_the_runner() -> None:
    got = Diagnosis.simple("stalled", "runner-stall", text="no output for 1800s", retryable=True,
                           remedies=("reduce_jobs",))
    assert got.to_json()["category"] == "stalled" and got.fingerprint() == "stalled|runner-stall"


def test_incremental_hook_current_is_specific_only_and_finish_decides() -> None:
    clf = Classifier(CAT)
    assert clf.current() is None
    assert b"FAILED: " in clf.keywords and all(isinstance(k, bytes) for k in clf.keywords)
    clf.on_line(1, "Killed", ())
    assert clf.current() is None  # a fallback never stops a build early
    want = clf.on_line(2, "clang: error: invalid target ID 'gfx942'; format is ...", ("Killed",))
    assert want >= 1
    current = clf.current()
    assert current is not None and current.category == "unsupported_arch" and not current.retryable
    assert clf.current() is current  # cached until something new matches
    clf.on_context(3, "[3/9] Building")
    final = clf.finish(exit_status=2)
    assert (final.category, final.line) == ("unsupported_arch", 2)
    assert final.context == ("Killed", "clang: error: invalid target ID 'gfx942'; format is ...", "[3/9] Building")


def test_classify_accepts_a_whole_string_and_bytes() -> None:
    text = "x\n/usr/bin/ld: cannot find -lhipblas\n"
    assert classify(text, catalogue=CAT).line == 2
    assert classify(text.encode(), catalogue=CAT).line == 2


def test_noise_around_the_decisive_line_is_stripped() -> None:
    got = run("2025-03-01T12:01:08.1400866Z #12 301.2 \x1b[31m/usr/bin/ld: cannot find -lhipblas\x1b[0m\r")
    assert (got.text, got.fields["library"]) == ("/usr/bin/ld: cannot find -lhipblas", "hipblas")


# ------------------------------------------------------------------------------------------- big streams

# The child's own peak RSS is /proc's VmHWM (this process image's high-water mark): getrusage's ru_maxrss
# is kept across fork+exec, so a large pytest worker that started the child would show as the child's peak.
_BIG_CHILD = """
import re, sys
sys.path.insert(0, sys.argv[1])
from benchmarks.diagnose import generate
from pathlib import Path
from rocmbuild.diagnosis.classifier import classify_stream
from rocmbuild.diagnosis.catalogue import load_catalogue
def peak_kb():
    return int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text())[1])
path = Path(sys.argv[2])
generate(path, int(sys.argv[3]), errors=True)
before = peak_kb()
with path.open("rb") as fh:
    d = classify_stream(fh, catalogue=load_catalogue(user=False))
after = peak_kb()
print(d.category, d.signature, d.line, before, after)
"""


def test_classify_stream_big_log_in_bounded_memory(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", _BIG_CHILD, str(ROOT), str(tmp_path / "big.log"), "50"],
                          capture_output=True, text=True, check=True, timeout=110)
    category, signature, line, before_kb, after_kb = proc.stdout.split()
    assert (category, signature) == ("missing_library", "ld-cannot-find-library")
    assert int(line) > 500_000
    # 50 MB went through; the classifier's own growth stays far below the size of the log.
    assert int(after_kb) - int(before_kb) < 20 * 1024
    assert int(after_kb) < 100 * 1024


def test_classify_stream_handles_partial_lines_and_invalid_utf8() -> None:
    class Trickle(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self.data = data

        def readable(self) -> bool:
            return True

        def read(self, n: int = -1) -> bytes:
            chunk, self.data = self.data[:7], self.data[7:]
            return chunk

    data = b"[1/2] ok \xff\xfe\n/usr/bin/ld: cannot \xe2\x80 find\n/usr/bin/ld: cannot find -lhipblas"
    got = classify_stream(Trickle(data), catalogue=CAT)  # type: ignore[arg-type]
    assert (got.category, got.line) == ("missing_library", 3)


# ------------------------------------------------------------------------------------------- real-log shapes


def test_crash_frames_without_a_header_are_one_compiler_crash_block() -> None:
    got = run("""
#35 0x000056170d47cd2d clang::Parser::ParseDeclaration(clang::DeclaratorContext) (/x/clang-17+0x4d2d)
#36 0x000056170d44ee87 clang::Parser::ParseExternalDeclaration(clang::ParsedAttributes&) (/x/clang-17+0xe87)
""")
    assert (got.category, got.signature, got.line) == ("compiler_crash", "llvm-crash-frames", 1)


def test_a_single_frame_is_only_a_fallback() -> None:
    lone = "#3 0x00000000007cdc96 llvm::SIFrameLowering::emitPrologue(llvm::MachineFunction&) const"
    assert run(lone).category == "compiler_crash"  # nothing better: still the best guess
    got = run(f"{lone}\n/usr/bin/ld: cannot find -lhipblas")
    assert got.category == "missing_library"  # any specific failure beats a lone frame


def test_the_oom_kill_explains_crash_text_after_it() -> None:
    got = run("""
clang++: error: unable to execute command: Killed
Stack dump:
0.	Program arguments: /opt/rocm/llvm/bin/clang-18 -cc1 -triple amdgcn-amd-amdhsa
#0 0x000055d1 llvm::sys::PrintStackTrace(llvm::raw_ostream&) (/opt/rocm/llvm/bin/clang-18+0x1)
""")
    assert got.category == "out_of_memory"


def test_a_download_the_tool_says_it_ignores_is_not_the_failure() -> None:
    got = run("""
curl: (22) The requested URL returned error: 404 Not Found
Server does not provide clone.bundle; ignoring.
fatal: Couldn't find remote ref refs/heads/release-9.9
""")
    assert got.category == "unknown" and got.line == 3
    gone = run("curl: (22) The requested URL returned error: 404 Not Found\nmake: *** [all] Error 22")
    assert (gone.category, gone.retryable) == ("network", False)
    assert "404" in gone.advice and "retrying will not help" in gone.advice


def test_which_runtime_decides_load_path_or_abi() -> None:
    # spack/spack#50534, lamikr/rocm_sdk_builder#222: a libstdc++ too old for the binary is a load path to
    # fix (the bundled copy out of the way, or the newer GCC's runtime first); glibc too old is a binary
    # built on a newer distribution.
    bundled = run("ImportError: /opt/conda/envs/py312/lib/libstdc++.so.6: version `GLIBCXX_3.4.32' not found "
                  "(required by /x/lib/libfoo.so)")
    system = run("ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32' not found "
                 "(required by /x/lib/libfoo.so)")
    glibc = run("ImportError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found "
                "(required by /x/lib/libfoo.so)")
    assert bundled.category == "missing_runtime_library" and "/opt/conda/envs/py312/lib" in bundled.advice
    assert (system.category, system.signature, system.retryable) == (
        "missing_runtime_library", "glibcxx-version-not-found", False)
    assert "GLIBCXX_3.4.32" in system.advice
    assert (glibc.category, glibc.signature) == ("abi_mismatch", "glibc-version-not-found")


def test_cmake_package_config_missing_is_toolchain_with_the_package_in_the_advice() -> None:
    got = run("""
CMake Error at src/CMakeLists.txt:105 (find_package):
  Could not find a package configuration file provided by "msgpack" with any
  of the following names:
""")
    assert (got.category, got.fields.get("package"), got.retryable) == ("toolchain_missing", "msgpack", False)
    assert "msgpack" in got.advice


def test_a_guess_from_a_wide_build_gives_way_to_a_visible_error() -> None:
    tail = ("subprocess.CalledProcessError: Command '['cmake', '--build', '.', '-j=64', '--target=_C']' "
            "returned non-zero exit status 1.")
    assert run(tail).category == "out_of_memory"
    assert run(f"/src/a.hip:3:1: error: use of undeclared identifier 'x'\n{tail}").category == "unknown"


def test_broken_interpreter_is_not_network() -> None:
    got = run("""
WARNING: pip is configured with locations that require TLS/SSL, however the ssl module in Python is not available.
WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by \
'SSLError("Can't connect to HTTPS URL because the SSL module is not available.")': /simple/setuptools-scm/
ERROR: Could not find a version that satisfies the requirement setuptools-scm>=8 (from versions: none)
""")
    assert (got.category, got.signature, got.retryable) == ("toolchain_missing", "broken-interpreter", False)
    assert "LD_LIBRARY_PATH" in got.advice


def test_advice_placeholders_are_filled_from_fields() -> None:
    got = run("ERROR: No matching distribution found for torch==2.6.0.dev20241113+rocm6.2")
    assert got.category == "missing_python_dependency"
    assert "torch==2.6.0.dev20241113+rocm6.2" in got.advice and "{" not in got.advice


FLAGGED_WARNINGS = [
    b"/src/aten/native/hip/Op1.hip:12:7: warning: loop not unrolled [-Wpass-failed=transform-warning]",
    b"aten/src/ATen/x.cpp:3: warning: unused variable 'lane' [-Wunused-variable]",
    b"3:1:2: warning: digits for a path [-Wx]",
    b"foo-1:4:5: warning: looks like a compose prefix [-Wy]",
    b"```a.c:1:2: warning: after a fence [-Wz]",
    b"a.c:1:2: warning: with a [0m bare SGR and a [#7](https://x/y) link [-Wq]",
    b"\xef\xbb\xbfa.c:1:2: warning: BOM and \xff invalid UTF-8 [-Wr]",
]
NOT_FLAGGED = [
    b"3: warning: a ctest prefix, not a path [-Wx]",
    b"12:34:56 a.c:1:2: warning: timestamped [-Wx]",
    b"\x1b[1ma.c:1:2: warning: coloured [-Wx]\x1b[0m",
    b"a.c:1:2: warning: redrawn\r[-Wx]",
    b"a.c:1:2: error: not a warning [-Werror]",
]


def test_raw_dismissed_lines_are_ones_on_line_dismisses() -> None:
    """Classifier.raw_dismiss (used by the watcher before decoding) only takes lines on_line returns 0 for."""
    for raw in FLAGGED_WARNINGS:
        assert Classifier.raw_dismiss.fullmatch(raw), raw
        classifier = Classifier()
        text = clean_line(raw.decode("utf-8", "replace"))
        assert classifier.on_line(1, text, ()) == 0 and classifier.counts == {}, text
    for raw in NOT_FLAGGED:
        assert not Classifier.raw_dismiss.fullmatch(raw), raw


def test_diagnosis_is_the_same_with_and_without_the_raw_dismissal() -> None:
    class Undismissing(Classifier):
        raw_dismiss = None  # every keyword line reaches on_line, decoded and cleaned

    log = b"\n".join([*FLAGGED_WARNINGS, *NOT_FLAGGED] * 3 + [b"/usr/bin/ld: cannot find -lhipblas",
                                                              b"collect2: error: ld returned 1 exit status"]) + b"\n"
    diagnoses = []
    for hook in (Classifier(), Undismissing()):
        scanner = LineScanner(hook)
        scanner.feed(log)
        scanner.close()
        diagnoses.append(hook.finish())
    with_dismissal, without = diagnoses
    assert with_dismissal.signature == without.signature == "ld-cannot-find-library"
    assert with_dismissal.line == without.line == 37
    assert with_dismissal.to_json() == without.to_json()


def test_not_decisive_prefilter_says_what_the_regex_says() -> None:
    """_not_decisive's literal test never changes the regex's answer (ASCII or not, any case)."""
    from rocmbuild.diagnosis.classifier import _NOT_DECISIVE, _not_decisive

    texts = ["a.c:1:2: error: use of undeclared identifier 'x'", "-- Looking for x", "WARNING: x", "x WARNING: y",
             "x [-Wfoo]", "-WERROR", "0 Errors", "-- failed", "Checking for x", "No Error here", "2 errors generated",
             "error: subprocess-exited-with-error", "Failed building wheel for x", "FAILED TO BUILD x",
             "ninja: build stopped: x", "Configuring incomplete, errors occurred!", "make[2]: *** [x] Error 2",
             "Error 1", "make: *** Waiting for unfinished jobs....", "returned non-zero exit status 1",
             "error: command '/usr/bin/gcc' failed", "See also x", "[end of output]", "ERROR: Failed building",
             "x exited with code 1", "ſee above", "Ｅrror: 0 errors", "fatal: x", "", "error 12"]
    for text in texts:
        assert _not_decisive(text) == bool(_NOT_DECISIVE.search(text)), text
    assert _not_decisive("ſee above") and not _not_decisive("a.c:1:2: error: no member named 'x'")


# ------------------------------------------------------------------------------------------- round 11 review

CUDA_TORCH_CONFIGURE = """-- The CXX compiler identification is GNU 12.3.0
-- Found CUDA: /usr/local/cuda (found version "12.4")
-- ROCM_PATH environment variable is not set and /opt/rocm does not exist.
Building without ROCm support.
[1402/6120] Building CXX object caffe2/CMakeFiles/torch_cpu.dir/__/aten/src/ATen/native/quantized/cpu/qconv.cpp.o
FAILED: caffe2/CMakeFiles/torch_cpu.dir/__/aten/src/ATen/native/quantized/cpu/qconv.cpp.o
/src/pytorch/aten/src/ATen/native/quantized/cpu/qconv.cpp:1210:5: error: 'struct PackedWeight' has no member 'unpack'
ninja: build stopped: subcommand failed.
"""


def test_a_line_saying_rocm_is_absent_is_no_evidence_of_a_rocm_host() -> None:
    # Every CUDA or CPU PyTorch configure prints LoadHIP's line: it must not make a ROCm-host reading
    # (PyTorch found no ROCm) of a failure that is the source's own.
    got = run(CUDA_TORCH_CONFIGURE)
    assert got.category == "unknown" and got.line == 7, (got.signature, got.line)
    # On a ROCm host (a live build, or a log that shows ROCm) the same line is the reading.
    rocm = run("-- Target device: rocm\n" + CUDA_TORCH_CONFIGURE.replace(
        "/src/pytorch/aten/src/ATen/native/quantized/cpu/qconv.cpp:1210:5: error: "
        "'struct PackedWeight' has no member 'unpack'\n", ""))
    assert (rocm.category, rocm.signature) == ("toolchain_missing", "torch-cmake-rocm-not-found")


def test_a_probe_for_an_optional_tool_is_not_a_missing_toolchain() -> None:
    # setup.py / Makefile version probes run `git describe` and carry on without git.
    log = ("/bin/sh: 1: git: not found\n"
           "csrc/flash_attn/flash_api.cpp:88:5: error: no matching function for call to 'mha_fwd'\n")
    assert run(log).category == "unknown"


def test_an_idle_llvm_thread_in_a_gdb_dump_is_not_a_compiler_crash() -> None:
    dump = ("Thread 3 (Thread 0x7f3a0cdff640 (LWP 1203)):\n"
            "#0  0x00007f3a1c891117 in __futex_abstimed_wait_common () from /lib/x86_64-linux-gnu/libc.so.6\n"
            "#1  0x00007f3a1c893a41 in pthread_cond_wait () from /lib/x86_64-linux-gnu/libc.so.6\n"
            "#2  0x00007f3a12c2d3e4 in llvm::StdThreadPool::processTasks(llvm::ThreadPoolTaskGroup*) () "
            "from /opt/rocm/lib/libamd_comgr.so.2\n"
            "#3  0x00007f3a12c2e001 in llvm::thread::ThreadProxy<std::tuple<>>(void*) () "
            "from /opt/rocm/lib/libamd_comgr.so.2\n")
    assert run(dump).category == "unknown"
    aborted = ("#0  0x00007ffff7e02081 in raise () from /lib/x86_64-linux-gnu/libc.so.6\n"
               "#1  0x00007ffff7ded535 in abort () from /lib/x86_64-linux-gnu/libc.so.6\n"
               "#2  0x00007ffff7e43db8 in ?? () from /lib/x86_64-linux-gnu/libc.so.6\n"
               "#3  0x00007fffe4b9a1ef in llvm::Module::~Module() () from /usr/lib/llvm-8/lib/libLLVM-8.so.1\n")
    got = run(aborted)
    assert (got.category, got.signature, got.line) == ("compiler_crash", "gdb-abort-inside-llvm", 1)
