"""A scripted build for the end-to-end tests: fails the way real ROCm builds fail until the environment is right.

Only what cannot be real on this machine is scripted here (a compiler crash,
an OOM kill, a vLLM-sized build, a flaky network); the output is written in the
shape of real public logs, cited beside each scenario.  Usage (cwd = the source
tree):  python3 fakebuild.py SCENARIO
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

SRC = Path.cwd()
STATE = SRC / ".fakebuild-state"


def out(*lines: str) -> None:
    for line in lines:
        sys.stdout.write(line + "\n")
    sys.stdout.flush()


def on_path(variable: str, filename: str) -> bool:
    return any((Path(d) / filename).exists() for d in os.environ.get(variable, "").split(":") if d)


def ninja_prelude(total: int, upto: int) -> None:
    out("-- The CXX compiler identification is Clang 17.0.0",
        "-- Found HIP: /opt/rocm (found version \"6.2.41133\")",
        "-- Configuring done (2.1s)", "-- Generating done (0.1s)",
        "-- Build files have been written to: " + str(SRC / "build"))
    for i in range(1, upto + 1):
        out(f"[{i}/{total}] Building HIP object CMakeFiles/_C.dir/csrc/kernel_{i}.hip.o")


def link() -> int:
    # Shape of ROCm/ROCm#2216-style link failures: the library exists, but not on the link path.
    ninja_prelude(40, 39)
    if on_path("LIBRARY_PATH", "libfakeblas.so"):
        out("[40/40] Linking HIP shared module _C.so")
        return 0
    out("FAILED: _C.so",
        ": && /opt/rocm/llvm/bin/clang++ -fPIC -O3 -shared -o _C.so @CMakeFiles/_C.rsp -lfakeblas -lamdhip64",
        "/usr/bin/ld: cannot find -lfakeblas: No such file or directory",
        "clang++: error: linker command failed with exit code 1 (use -v to see invocation)",
        "ninja: build stopped: subcommand failed.")
    return 1


def load() -> int:
    # Shape of pytorch/pytorch#103973 / ROCm/ROCm#1911: import fails at load time.
    if on_path("LD_LIBRARY_PATH", "libfakert.so.1"):
        out("fakeext 0.1 loaded")
        return 0
    out("Traceback (most recent call last):",
        '  File "<string>", line 1, in <module>',
        f'  File "{SRC}/fakeext/__init__.py", line 3, in <module>',
        "    from fakeext._C import *",
        "ImportError: libfakert.so.1: cannot open shared object file: No such file or directory")
    return 1


def crash() -> int:
    # Shape of ROCm/llvm-project#722 / pytorch/pytorch#106728: clang segfaults at -O3.
    flags = " ".join(os.environ.get(v, "") for v in ("CXXFLAGS", "HIPFLAGS", "HIPCC_COMPILE_FLAGS_APPEND"))
    ninja_prelude(40, 30)
    if "-O3" not in flags.split():
        out(*(f"[{i}/40] Building HIP object CMakeFiles/_C.dir/csrc/kernel_{i}.hip.o" for i in range(31, 41)))
        return 0
    out("FAILED: CMakeFiles/_C.dir/csrc/attention/paged_attention_v2.hip.o",
        "/opt/rocm/llvm/bin/clang++ -O3 -x hip --offload-arch=gfx90a -c csrc/attention/paged_attention_v2.hip",
        "PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash "
        "backtrace, preprocessed source, and associated run script.",
        "Stack dump:",
        "0.\tProgram arguments: /opt/rocm/llvm/bin/clang-17 -cc1 -triple amdgcn-amd-amdhsa -O3",
        "1.\t<eof> parser at end of file",
        "2.\tCode generation",
        " #0 0x00007f3a1c2b5e3f llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (libLLVM-17.so+0x2a)",
        "clang++: error: clang frontend command failed with exit code 139 (use -v to see invocation)",
        "ninja: build stopped: subcommand failed.")
    return 1


def oom() -> int:
    # Shape of pytorch/pytorch#39093 / vllm-project/vllm#6063: cc1plus killed when too many jobs run.
    jobs = int(os.environ.get("MAX_JOBS", "64"))
    ninja_prelude(40, 12)
    if jobs <= 2:
        out(*(f"[{i}/40] Building CXX object csrc/ops_{i}.o" for i in range(13, 41)))
        return 0
    out("FAILED: CMakeFiles/_C.dir/csrc/cache_kernels.hip.o",
        "clang++: error: unable to execute command: Killed",
        "clang++: error: clang frontend command failed due to signal (use -v to see invocation)",
        "PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash "
        "backtrace, preprocessed source, and associated run script.",
        "ninja: build stopped: subcommand failed.")
    return 1


def stale_arch() -> int:
    # Shape of ROCm/ROCm#2536 / pytorch/pytorch#111355: objects built for another GPU left in build/.
    wanted = os.environ.get("PYTORCH_ROCM_ARCH", "")
    stamp = SRC / "build" / "arch.stamp"
    if not stamp.exists():
        stamp.parent.mkdir(parents=True, exist_ok=True)
        ninja_prelude(40, 40)
        stamp.write_text(wanted)
    else:
        out("ninja: no work to do.")
    built = stamp.read_text()
    if built != wanted:
        out("Traceback (most recent call last):",
            '  File "<string>", line 1, in <module>',
            "RuntimeError: HIP error: invalid device function",
            "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace "
            "below might be incorrect.",
            "For debugging consider passing AMD_SERIALIZE_KERNEL=3",
            "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.")
        return 1
    out(f"kernels built for {built}")
    return 0


def network() -> int:
    # Shape of pip failures in vllm-project/vllm#4568: a flaky mirror, twice, then fine.
    count = int(STATE.read_text()) if STATE.exists() else 0
    STATE.write_text(str(count + 1))
    out("Collecting setuptools-scm>=8", "  Downloading setuptools_scm-8.1.0-py3-none-any.whl.metadata (6.6 kB)")
    if count < 2:
        out("WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after "
            "connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at "
            "0x7f>: Failed to establish a new connection: [Errno 101] Network is unreachable')': /simple/cmake/",
            "ERROR: Could not install packages due to an OSError: HTTPSConnectionPool(host='files.pythonhosted.org',"
            " port=443): Max retries exceeded with url: /packages/cmake-3.30.0.tar.gz (Caused by "
            "NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f>: Failed to "
            "establish a new connection: [Errno 101] Network is unreachable'))")
        return 1
    out("Successfully installed setuptools-scm-8.1.0")
    return 0


def unknown() -> int:
    # A plain compile error in the project's own code: no remedy applies.
    ninja_prelude(40, 7)
    out("FAILED: CMakeFiles/_C.dir/csrc/layernorm_kernels.hip.o",
        "csrc/layernorm_kernels.hip:112:18: error: no member named 'rms_norm_fused' in namespace 'vllm'",
        "    vllm::rms_norm_fused<scalar_t><<<grid, block, 0, stream>>>(out, input, weight, eps);",
        "    ~~~~~~^",
        "1 error generated when compiling for gfx90a.",
        "ninja: build stopped: subcommand failed.")
    return 1


def platform_undefined() -> int:
    # A project's host-compiled source that includes HIP's headers without the platform define: the shape of
    # OPM/opm-simulators#6874 and icl-utk-edu/blaspp#104 (the project's build bug; nothing to retry).
    ninja_prelude(40, 9)
    out("FAILED: CMakeFiles/gpubridge.dir/src/Misc.cpp.o",
        "In file included from /w/src/Misc.hpp:5,",
        "                 from /w/src/Misc.cpp:3:",
        '/opt/rocm-6.2.0/include/hip/hip_runtime_api.h:6711:2: error: #error ("Must define exactly one of '
        '__HIP_PLATFORM_AMD__ or __HIP_PLATFORM_NVIDIA__");',
        "/opt/rocm-6.2.0/include/hip/hip_runtime_api.h:6736:61: error: 'hipHostMallocDefault' was not declared in "
        "this scope",
        "ninja: build stopped: subcommand failed.")
    return 1


def drain(last_line: str) -> int:
    """ninja keeps compiling other files for a while after the first failure: 30 s, then its last line."""
    sys.stdout.flush()
    time.sleep(30)
    out(last_line)
    return 1


def platform_undefined_then_drain() -> int:
    # the project's own #error, then the other files: --fail-fast stops at it.
    platform_undefined()
    return drain("[40/40] Linking CXX shared library libgpubridge.so")


def unsupported() -> int:
    # Shape of a HIP 5.x clang asked for gfx942 (ROCm/ROCm#2283).
    ninja_prelude(40, 2)
    out("FAILED: CMakeFiles/_C.dir/csrc/activation_kernels.hip.o",
        "clang: error: invalid target ID 'gfx942'; format is a processor name followed by an optional "
        "colon-delimited list of features followed by an enable/disable sign (e.g., 'gfx908:sramecc+:xnack-')",
        "ninja: build stopped: subcommand failed.")
    return 1


def unsupported_then_drain() -> int:
    # a decisive failure, then the other files: the build must not wait for them.
    unsupported()
    return drain("[40/40] Linking HIP shared module _C.so")


def crash_then_drain() -> int:
    if "-O3" not in os.environ.get("CXXFLAGS", "").split():
        return ok()
    ninja_prelude(40, 5)
    out("FAILED: CMakeFiles/_C.dir/csrc/attention/paged_attention_v2.hip.o",
        "clang++: error: clang frontend command failed with exit code 139 (use -v to see invocation)")
    sys.stdout.flush()
    time.sleep(30)
    return 1


def stall() -> int:
    # A build that hangs (swap thrash at high MAX_JOBS): no output until killed.
    jobs = int(os.environ.get("MAX_JOBS", "64"))
    ninja_prelude(40, 3)
    if jobs > 2:
        time.sleep(60)
        return 1
    out(*(f"[{i}/40] Building CXX object csrc/ops_{i}.o" for i in range(4, 41)))
    return 0


def link_then_crash() -> int:
    # Two failures in sequence: the link failure comes first; once fixed, a crash further along.
    ninja_prelude(40, 20)
    if not on_path("LIBRARY_PATH", "libfakeblas.so"):
        out("FAILED: libfakedep.so", "/usr/bin/ld: cannot find -lfakeblas: No such file or directory",
            "collect2: error: ld returned 1 exit status", "ninja: build stopped: subcommand failed.")
        return 1
    return crash()


def import_missing() -> int:
    # Shape of vllm-project/vllm#2797 / pytorch/pytorch#103973: setup.py's `import torch` fails at load
    # time, before anything compiled; the library is nowhere on this machine.
    out("Traceback (most recent call last):",
        f'  File "{SRC}/setup.py", line 15, in <module>',
        "    import torch",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/__init__.py", line 237, in <module>',
        "    from torch._C import *  # noqa: F403",
        "ImportError: libroctx64.so.4: cannot open shared object file: No such file or directory")
    return 1


def network_down() -> int:
    # The mirror stays unreachable: the network ladder's waits are all it deserves.
    STATE.write_text("0")
    return network()


def crash_always() -> int:
    # A clang crash that no -O level or job count cures (ROCm/llvm-project#722 shape).
    ninja_prelude(40, 30)
    out("FAILED: CMakeFiles/_C.dir/csrc/attention/paged_attention_v2.hip.o",
        "clang++: error: clang frontend command failed with exit code 139 (use -v to see invocation)",
        "ninja: build stopped: subcommand failed.")
    return 1


def colours() -> int:
    # What a vLLM prepare step and a ninja build write to a terminal: colours, pip's redrawn
    # progress bar, ninja's smart-terminal status.
    for i in range(0, 101, 10):
        bar = "━" * (i // 5)
        sys.stdout.write(f"\r   \x1b[38;5;197m{bar:<20}\x1b[0m \x1b[32m{i}/100 MB\x1b[0m")
        sys.stdout.flush()
    out("", "\x1b[1;32mSuccessfully installed setuptools-scm-8.1.0\x1b[0m")
    for i in range(1, 5):
        sys.stdout.write(f"\r[{i}/4] Building HIP object CMakeFiles/_C.dir/csrc/k{i}.hip.o\x1b[K")
        sys.stdout.flush()
    out("")
    return 0


def broken_ssl() -> int:
    # pip in a mixed interpreter (LD_LIBRARY_PATH put another libpython first): ssl cannot load, every
    # HTTPS fetch fails; shape of pyenv/pyenv#2760 and pypa/pip#5366.
    out("Collecting setuptools-scm>=8",
        "WARNING: pip is configured with locations that require TLS/SSL, however the ssl module in Python is "
        "not available.",
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection "
        "broken by 'SSLError(\"Can't connect to HTTPS URL because the SSL module is not available.\")': "
        "/simple/setuptools-scm/",
        "Could not fetch URL https://pypi.org/simple/setuptools-scm/: There was a problem confirming the ssl "
        "certificate: HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded with url: "
        "/simple/setuptools-scm/ (Caused by SSLError(\"Can't connect to HTTPS URL because the SSL module is not "
        "available.\")) - skipping",
        "ERROR: Could not find a version that satisfies the requirement setuptools-scm>=8 (from versions: none)",
        "ERROR: No matching distribution found for setuptools-scm>=8")
    return 1


def ok() -> int:
    ninja_prelude(4, 4)
    return 0


SCENARIOS = {f.__name__: f for f in (link, load, crash, oom, stale_arch, network, unknown, unsupported, stall,
                                     link_then_crash, ok, unsupported_then_drain, crash_then_drain, import_missing,
                                     network_down, crash_always, colours, broken_ssl,
                                     platform_undefined, platform_undefined_then_drain)}

if __name__ == "__main__":
    sys.exit(SCENARIOS[sys.argv[1]]())
