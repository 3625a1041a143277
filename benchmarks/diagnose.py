"""Benchmark: diagnosing huge build logs (throughput and peak memory).

Generates a clean build-like log (ninja status lines, compiler warnings with
their include chains and carets, CMake chatter) and the same log with failure
lines sprinkled through it and a real failure at the end, then classifies each
with ``rocmbuild.diagnosis.classifier.classify_stream`` in a fresh subprocess and reports
MB/s and the subprocess's peak RSS (``ru_maxrss``).  Goal: >= 100 MB/s and
< 100 MB RSS on a 1 GB log.

    python benchmarks/diagnose.py                 # 1 GB logs in a temp dir
    python benchmarks/diagnose.py --size-mb 200   # smaller
    python benchmarks/diagnose.py --keep DIR      # write the logs to DIR and keep them
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_FILES = ["aten/src/ATen/native/hip/Reduce", "aten/src/ATen/native/hip/Sort", "aten/src/ATen/native/hip/Index",
          "csrc/attention/paged_attention_v", "csrc/quantization/fp8/common", "aten/src/ATen/native/cpu/Unary",
          "torch/csrc/autograd/generated/VariableType_", "third_party/composable_kernel/example/ck_tile/fmha_fwd_"]

_WARNINGS = [
    ("In file included from /src/pytorch/aten/src/ATen/native/hip/{f}{n}.hip:12:\n"
     "/opt/rocm/include/hip/amd_detail/amd_hip_runtime.h:{n}:9: warning: 'HIP_DYNAMIC_SHARED' macro redefined "
     "[-Wmacro-redefined]\n  #define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];\n          ^\n"
     "1 warning generated when compiling for gfx942.\n"),
    ("/src/vllm/{f}{n}.cu:{n}:17: warning: unused variable 'lane' [-Wunused-variable]\n"
     "  const int lane = threadIdx.x % WARP_SIZE;\n                ^\n1 warning generated when compiling for host.\n"),
    ("/src/pytorch/{f}{n}.cpp: In function 'void at::native::foo_{n}()':\n"
     "/src/pytorch/{f}{n}.cpp:{n}:5: warning: comparison of integer expressions of different signedness: "
     "'int' and 'size_t' [-Wsign-compare]\n"),
]


def _clean_block(rng: random.Random, start: int, total: int, lines: int) -> str:
    out = []
    n = start
    for _ in range(lines):
        n += 1
        f = rng.choice(_FILES)
        roll = rng.random()
        if roll < 0.80:
            kind = rng.choice(["Building CXX object", "Building HIP object", "Building C object",
                               "Linking CXX shared library"])
            out.append(f"[{n}/{total}] {kind} caffe2/CMakeFiles/torch_hip.dir/__/{f}{n % 97}.hip.o\n")
        elif roll < 0.93:
            out.append(rng.choice(_WARNINGS).format(f=f, n=n % 997))
        elif roll < 0.97:
            out.append(f"-- Looking for {f.split('/')[-1]}{n % 31} - found\n")
        else:
            out.append(f"[ {n * 100 // total:3d}%] Built target torch_hip_{n % 13}\n")
    return "".join(out)


_SPRINKLES = [
    "/usr/bin/ld: warning: librocsolver.so.0, needed by /opt/rocm/lib/libhipblas.so, not found "
    "(try using -rpath or -rpath-link)\n",
    "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 MiB.\n",
    "UserWarning: Failed to load image Python extension: "
    "'libc10_hip.so: cannot open shared object file: No such file or directory'\n",
    "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection "
    "broken by 'ReadTimeoutError(\"HTTPSConnectionPool(host='pypi.org', port=443): Read timed out.\")': /simple/\n",
    "clang: error: linker command failed with exit code 1 (use -v to see invocation)\n",
    "Stack dump:\n",
]

_FAILURE = (
    "[5120/5200] Linking HIP shared library lib/libtorch_hip.so\n"
    "FAILED: lib/libtorch_hip.so\n"
    ": && /opt/rocm/lib/llvm/bin/clang++ -fPIC -O3 -shared -o lib/libtorch_hip.so @CMakeFiles/torch_hip.rsp -lhipblas\n"
    "/usr/bin/ld: cannot find -lhipblas: No such file or directory\n"
    "clang++: error: linker command failed with exit code 1 (use -v to see invocation)\n"
    "[5121/5200] Building HIP object caffe2/CMakeFiles/torch_hip.dir/foo.hip.o\n"
    "ninja: build stopped: subcommand failed.\n"
)


def generate(path: Path, size_mb: int, errors: bool, seed: int = 7) -> int:
    """Write a build-like log of about ``size_mb`` MB; returns its size in bytes."""
    rng = random.Random(seed)
    target = size_mb * 1024 * 1024
    blocks = [_clean_block(rng, i * 20000, 5200, 20000).encode() for i in range(4)]
    written = 0
    with path.open("wb") as handle:
        i = 0
        while written < target:
            block = blocks[i % len(blocks)]
            if errors:
                cut = rng.randrange(len(block))
                cut = block.rfind(b"\n", 0, cut) + 1
                block = block[:cut] + rng.choice(_SPRINKLES).encode() + block[cut:]
            handle.write(block)
            written += len(block)
            i += 1
        if errors:
            handle.write(_FAILURE.encode())
            written += len(_FAILURE)
    return written


# Real ROCm builds print thousands of these (one line in 50 here), in several wordings: with and without
# the "1 warning generated" trailer, colour codes, a trailing space, a remark instead of a warning.
_TRANSFORM_WARNINGS = [
    "/src/vllm/csrc/rocm/attention.hip:{n}:5: warning: loop not unrolled: the optimizer was unable to perform the "
    "requested transformation; the transformation might be disabled or specified as part of an unsupported "
    "transformation ordering [-Wpass-failed=transform-warning]\n",
    "\x1b[1m/src/aten/src/ATen/native/hip/Sort.hip:{n}:3: \x1b[0m\x1b[0;1;35mwarning: \x1b[0m\x1b[1mloop not "
    "vectorized: the optimizer was unable to perform the requested transformation; the transformation might be "
    "disabled or specified as part of an unsupported transformation ordering [-Wpass-failed=transform-warning]"
    "\x1b[0m\n",
    "/src/ck/include/ck_tile/ops/fmha.hpp:{n}:9: warning: loop not unrolled: the optimizer was unable to perform "
    "the requested transformation; the transformation might be disabled or specified as part of an unsupported "
    "transformation ordering [-Wpass-failed=transform-warning] \n",
]


def generate_warnings(path: Path, size_mb: int, seed: int = 11) -> int:
    """A clean build log where one line in 50 is a `loop not unrolled ... [-Wpass-failed=...]` warning."""
    rng = random.Random(seed)
    target = size_mb * 1024 * 1024
    lines = []
    for n in range(20000):
        if n % 50 == 49:
            lines.append(rng.choice(_TRANSFORM_WARNINGS).format(n=n % 997))
        else:
            f = rng.choice(_FILES)
            lines.append(f"[{n}/20000] Building HIP object caffe2/CMakeFiles/torch_hip.dir/__/{f}{n % 97}.hip.o\n")
    block = "".join(lines).encode()
    written = 0
    with path.open("wb") as handle:
        while written < target:
            handle.write(block)
            written += len(block)
    return written


def grep_seconds(path: Path, keywords: list[bytes], runs: int = 3) -> float:
    """Median wall time of `grep -c -F` with every catalogue keyword on ``path`` (the floor to compare with)."""
    argv = ["grep", "-c", "-F"]
    for keyword in keywords:
        argv += ["-e", keyword.decode()]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        # Not DEVNULL: GNU grep stops at the first match when its output is /dev/null.
        subprocess.run([*argv, str(path)], stdout=subprocess.PIPE, check=False)
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def catalogue_keywords() -> list[bytes]:
    """Every keyword the classifier asks the scanner for: the catalogue's and its own markers."""
    sys.path.insert(0, str(ROOT))
    from rocmbuild.diagnosis.catalogue import load_catalogue
    from rocmbuild.diagnosis.classifier import Classifier

    return list(Classifier(load_catalogue(user=False)).keywords)


_CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
from rocmbuild.diagnosis.classifier import classify_stream
from rocmbuild.diagnosis.catalogue import load_catalogue
cat = load_catalogue(user=False)
t1 = time.perf_counter()
c1 = time.process_time()
with open(sys.argv[1], "rb") as fh:
    d = classify_stream(fh, catalogue=cat)
t2 = time.perf_counter()
c2 = time.process_time()
# VmHWM is this process image's own peak; ru_maxrss on Linux carries the parent's peak across exec.
hwm = next((int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")),
           resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
print(json.dumps({"scan_s": t2 - t1, "cpu_s": c2 - c1, "import_s": t1 - t0, "category": d.category,
                  "signature": d.signature, "line": d.line, "rss_kb": hwm}))
"""


def measure(path: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, env=env,
                          check=True)
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["children_rss_kb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--keep", type=Path, default=None, help="write the logs here and keep them")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rocmbuild-bench-") as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        rows = []
        for name, errors in (("clean", False), ("errors", True)):
            path = where / f"{name}-{args.size_mb}mb.log"
            t0 = time.perf_counter()
            size = generate(path, args.size_mb, errors)
            gen_s = time.perf_counter() - t0
            result = measure(path)
            scan_s = float(result["scan_s"])  # type: ignore[arg-type]
            cpu_s = float(result["cpu_s"])  # type: ignore[arg-type]
            rss = int(result["rss_kb"]) / 1024  # type: ignore[call-overload]
            diag = f"{result['category']} ({result['signature']}, line {result['line']})"
            rows.append((name, size / 1e6, gen_s, scan_s, size / 1e6 / scan_s, size / 1e6 / cpu_s, rss, diag))
        load = os.getloadavg()[0]
        header = f"{'log':8} {'MB':>8} {'gen s':>6} {'wall s':>7} {'MB/s':>7} {'MB/s CPU':>9} {'peak RSS MB':>12}"
        print(f"{header}  diagnosis")
        for name, mb, gen_s, scan_s, rate, cpu_rate, rss, diag in rows:
            print(f"{name:8} {mb:8.1f} {gen_s:6.1f} {scan_s:7.2f} {rate:7.1f} {cpu_rate:9.1f} {rss:12.1f}  {diag}")
        path = where / f"warnings-{args.size_mb}mb.log"
        size = generate_warnings(path, args.size_mb)
        grep_s = grep_seconds(path, catalogue_keywords())
        result = measure(path)
        scan_s = float(result["scan_s"])  # type: ignore[arg-type]
        print(f"warnings log ({size / 1e6:.0f} MB, 1 line in 50 a transform warning): diagnose {scan_s:.2f} s, "
              f"grep -c -F with the catalogue's keywords {grep_s:.2f} s: {grep_s / scan_s:.2f}x grep (goal >= 0.5)")
        ok = all(r[4] >= 100 and r[6] < 100 for r in rows)
        print(f"goal (>= 100 MB/s wall, < 100 MB RSS): {'met' if ok else 'NOT met'} "
              f"(load average {load:.2f} on {os.cpu_count()} CPUs; 'MB/s CPU' divides by the process's CPU time)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
