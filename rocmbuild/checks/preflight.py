"""Preflight: cheap checks before the first attempt (also what `rocmbuild doctor` shows).

Each check takes its inputs explicitly (paths, names, an environment, an
injectable ``run``) and returns ``Check`` values; none raises for a failed
check.  A failed check carries the failure category it stands for, so a
problem found here is reported exactly like the same problem found in a build
log, minutes or hours earlier.

The arch check asks the compiler (docs/rocm-facts.md: "ask the compiler rather than
trusting a table"); the table below is only used to say which ROCm would do.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rocmbuild.diagnosis.catalogue import Category
from rocmbuild.host import aptcheck, ldcache
from rocmbuild.host.arch import Targets
from rocmbuild.host.facts import multiarch
from rocmbuild.host.hipcompiler import (
    MIN_LLVM_FOR_GFX942,
    HipCompiler,
    built_device_libs,
    device_lib_path,
    newer_clangs,
)
from rocmbuild.host.libraries import debian_packages, install_line
from rocmbuild.host.probecache import ProbeCache  # its own module: Services holds one without this one
from rocmbuild.host.rocm import Rocm
from rocmbuild.process import command as proc
from rocmbuild.records.journal import CheckStatus

OK: Final = "ok"
WARN: Final = "warn"
FAIL: Final = "fail"


@dataclass(frozen=True)
class Check:
    name: str              # e.g. "arch gfx942", "hipcc platform", "library hipblas"
    status: CheckStatus
    detail: str            # what was found, one line
    todo: str = ""         # what to do about it (fail/warn)
    category: Category | None = None   # when status == "fail"
    fatal: bool = True     # a fatal failure stops the run before the first attempt

    @property
    def failed(self) -> bool:
        return self.status == FAIL


def first_fatal(checks: Iterable[Check]) -> Check | None:
    """The first failure that should stop the run."""
    return next((c for c in checks if c.failed and c.fatal), None)


# --- the toolchain ----------------------------------------------------------------

# First ROCm release whose compiler accepts each target, for the "what to do" text only.
# Sources: docs/rocm-facts.md and the ROCm release notes as far as we know them; "~" marks what is
# less certain (compiler support often came a release or two before official support).
ARCH_ROCM: dict[str, str] = {
    "gfx906": "ROCm 3.x or later",
    "gfx908": "ROCm 3.x or later",
    "gfx90a": "ROCm 4.x or later (4.3+)",
    "gfx940": "ROCm 5.x-6.x (from ~5.3; dropped in ROCm 7.0: use gfx942 there)",
    "gfx941": "ROCm 5.x-6.x (from ~5.3; dropped in ROCm 7.0: use gfx942 there)",
    "gfx942": "ROCm 6.0 or later (5.7 had partial support)",
    "gfx950": "ROCm 7.0 or later",
    "gfx1030": "ROCm 4.x or later",
    "gfx1100": "ROCm 5.4 or later (~5.3 compiler; needs device libraries built for it)",
    "gfx1101": "ROCm 5.5 or later (~)",
    "gfx1102": "ROCm 5.5 or later (~)",
    "gfx1150": "ROCm 6.2 or later for the compiler (~), official support later (~6.4/7.0)",
    "gfx1151": "ROCm 6.2 or later for the compiler (~), official support later (~6.4/7.0)",
    "gfx1200": "ROCm 6.3 or later for the compiler (~6.2), official support 6.4.1 (~)",
    "gfx1201": "ROCm 6.3 or later for the compiler (~6.2), official support 6.4.1 (~)",
}

# How compilers say "I do not know this target" (docs/rocm-facts.md, Architectures).
_REJECTIONS = [
    re.compile(r"invalid target ID '[^']*'"),
    re.compile(r"cannot find ROCm device library for [\w:+-]+"),
    re.compile(r"cannot find ROCm device library(?=;)"),
    re.compile(r"[Uu]nsupported \S* ?gpu architecture[^\n]*"),
    re.compile(r"'[^']+' is not a recognized processor for this target"),
    re.compile(r"unknown target CPU '[^']*'"),
]

_PROBE_SOURCE = "#include <hip/hip_runtime.h>\n__global__ void rocmbuild_probe() {}\n"


def _amd_env(env: Mapping[str, str] | None) -> dict[str, str]:
    merged = dict(os.environ if env is None else env)
    merged["HIP_PLATFORM"] = "amd"
    return merged


@dataclass(frozen=True)
class CompilerVersion:
    hip: str | None        # "5.2" (major.minor of "HIP version: 5.2.21153-0")
    clang: str | None      # "clang 15.0.6", "AMD clang 17.0.0 (roc-6.0.0)"
    raw: str

    def describe(self, hipcc: str, label: str = "hipcc") -> str:
        parts = [self.clang or "an unknown compiler"]
        if self.hip:
            parts.append(f"from HIP {self.hip}")
        return f"{' '.join(parts)} ({label} {hipcc})"


def parse_hipcc_version(output: str) -> CompilerVersion:
    hip = re.search(r"HIP version:\s*(\d+)\.(\d+)", output)
    clang = re.search(r"^(.*?)clang version (\S+)(?:.*?(roc-[\d.]+))?", output, re.M)
    clang_text = None
    if clang:
        vendor = "AMD " if "AMD" in clang.group(1) else ""
        clang_text = f"{vendor}clang {clang.group(2)}" + (f" ({clang.group(3)})" if clang.group(3) else "")
    return CompilerVersion(f"{hip.group(1)}.{hip.group(2)}" if hip else None, clang_text, output)


def hipcc_version(hipcc: Path | str, env: Mapping[str, str] | None = None,
                  run: proc.Run = proc.capture, cache: ProbeCache | None = None) -> CompilerVersion:
    """``hipcc --version`` with HIP_PLATFORM=amd (kept in ``cache``, per hipcc and ROCm, when given)."""
    environ = _amd_env(env)
    # hipcc finds clang through these: a different ROCM_PATH can mean a different compiler.
    key = (os.path.realpath(str(hipcc)),
           *(environ.get(v, "") for v in ("ROCM_PATH", "HIP_PATH", "HIP_CLANG_PATH")))
    if cache is not None and key in cache.versions:
        return parse_hipcc_version(cache.versions[key])
    result = run([str(hipcc), "--version"], env=environ)
    # Without a target the Perl hipcc also asks rocm_agent_enumerator, which prints a
    # traceback on a GPU-less host: keep only the version lines.
    text = "\n".join(line for line in result.output.splitlines() if "version" in line.lower())
    if cache is not None:
        cache.versions[key] = text
    return parse_hipcc_version(text)


def _probe(hipcc: str, arch: str, env: Mapping[str, str], run: proc.Run, workdir: Path | None,
           clang: bool = False) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory(prefix="rocmbuild-probe-", dir=workdir) as scratch:
        source = Path(scratch) / "probe.hip"
        source.write_text(_PROBE_SOURCE, encoding="utf-8")
        # Device side only: the target is all we are asking about, and it is twice as fast.
        # A clang driven directly (HIPCXX) is told the language, as CMake tells it; hipcc knows.
        language = ["-x", "hip"] if clang else []
        result = run([hipcc, *language, f"--offload-arch={arch}", "--cuda-device-only", "-c", str(source),
                      "-o", str(Path(scratch) / "probe.o")], env=_amd_env(env), cwd=Path(scratch))
    for pattern in _REJECTIONS:
        # Checked on success too: "is not a recognized processor" is only a warning.
        match = pattern.search(result.output)
        if match:
            return False, match.group(0)
    if result.missing:
        return False, f"{hipcc}: not found"
    if not result.ok:
        lines = [ln for ln in result.output.splitlines() if "error" in ln.lower()]
        lines = lines or result.output.splitlines()
        last = lines[-1].strip() if lines else f"exit status {result.returncode}"
        return False, f"compile failed: {last}"
    return True, ""


@dataclass(frozen=True, kw_only=True)
class Probing:
    """How the compiler is asked: in this environment (default rocmbuild's own), through this runner,
    its answers kept in this cache (None: asked every time), its probes compiled in this directory."""

    env: Mapping[str, str] | None = None
    run: proc.Run = proc.capture
    cache: ProbeCache | None = None
    workdir: Path | None = None


def check_arch_supported(hipcc: Path | str, archs: Targets, probing: Probing = Probing(), *,
                         compiler: HipCompiler | None = None) -> list[Check]:
    """Probe-compile an empty kernel for each arch; a rejection is ``unsupported_arch``.

    ``compiler``: the build's HIP compiler when it is a clang driven directly (HIPCXX); the
    probe then runs that clang, and the advice speaks of it instead of hipcc's ROCm.
    """
    env, run, workdir, cache = probing.env, probing.run, probing.workdir, probing.cache
    clang = compiler is not None and compiler.is_clang
    hipcc = compiler.path if compiler is not None and clang else str(hipcc)
    environ = dict(os.environ if env is None else env)
    version = hipcc_version(hipcc, environ, run, cache)
    compiler_text = version.describe(hipcc, "HIP compiler" if clang else "hipcc")
    checks = []
    for target in archs:
        arch, plain = str(target), target.processor
        key = (os.path.realpath(hipcc), version.raw, arch, environ.get("HIP_DEVICE_LIB_PATH", ""))
        if cache is not None and key in cache.probes:
            accepted, message = cache.probes[key]
        else:
            accepted, message = _probe(hipcc, arch, environ, run, workdir, clang=clang)
            if cache is not None:
                cache.probes[key] = (accepted, message)
        name = f"arch {arch}"
        if accepted:
            checks.append(Check(name, OK, f"{compiler_text} compiles for {arch}"))
            continue
        if "device library" in message and clang:
            # "... device library for gfxNNN": the clang knows the target but its device libraries predate
            # it, so the toolchain as installed does not support the arch; no device library at all is a
            # missing part of the toolchain.  The classifier reads the build's line the same way.
            checks.append(Check(name, FAIL, f"{compiler_text} cannot compile for {arch}: {message}",
                                todo=device_library_advice(plain, environ, compiler),
                                category="unsupported_arch" if "device library for" in message
                                else "toolchain_missing"))
            continue
        if message.startswith("compile failed") or message.endswith("not found"):
            checks.append(Check(
                name, FAIL, f"{compiler_text} cannot compile an empty kernel for {arch}: {message}",
                todo="check the HIP installation (headers, device libraries): "
                     "`rocmbuild doctor`, or compile a HIP sample by hand",
                category="toolchain_missing"))
            continue
        needs = ARCH_ROCM.get(plain)
        todo = (f"{plain} needs {needs}; install it and pass --rocm-path" if needs else
                f"{plain} is not in rocmbuild's table: check which ROCm release supports it")
        if clang:
            todo = (f"{hipcc} does not know {plain}: pass a newer clang as the HIP compiler "
                    f"(--hip-compiler; gfx942 needs LLVM {MIN_LLVM_FOR_GFX942} or later), or {todo}")
        elif "device library" in message:
            todo = f"the installed device libraries have no bitcode for {plain}; {todo}"
        else:
            newer = newer_clangs(environ)
            if newer:
                # CMake HIP-language builds (vLLM, bitsandbytes) can compile with that clang.
                todo += (f"; or, for a CMake HIP-language build, compile with a newer clang: "
                         f"--hip-compiler {newer[0]} (HIPCXX)")
        checks.append(Check(name, FAIL, f"{compiler_text} rejects {arch}: {message}", todo=todo,
                            category="unsupported_arch"))
    return checks


def device_library_advice(arch: str, env: Mapping[str, str], compiler: HipCompiler | None) -> str:
    """What to do when clang finds no device-library bitcode (for ``arch``)."""
    where = device_lib_path(env)
    isa = f"oclc_isa_version_{arch.removeprefix('gfx')}.bc"
    built = built_device_libs(compiler.llvm_bin if compiler else None)
    if where:
        text = f"HIP_DEVICE_LIB_PATH={where} has no {isa} for {arch}: add it (docs/rocm-facts.md: one constant " \
               "compiled from OpenCL), or point HIP_DEVICE_LIB_PATH at a directory that has it"
    else:
        text = (f"the HIP compiler finds no device-library bitcode: export HIP_DEVICE_LIB_PATH=DIR, a "
                f"directory with the ROCm device libraries (Debian: /usr/lib/{_multiarch()}/amdgcn/bitcode) "
                f"including {isa}")
    if built is not None:
        text += f"; `make toolchain` built one here: export HIP_DEVICE_LIB_PATH={built}"
    return text


def _multiarch() -> str:

    return multiarch()


def check_hip_compiler(compiler: HipCompiler, env: Mapping[str, str] | None = None,
                       run: proc.Run = proc.capture) -> Check:
    """A clang named as the HIP compiler (HIPCXX / --hip-compiler) runs and says what it is."""
    name = "HIP compiler"
    environ = dict(os.environ if env is None else env)
    result = run([compiler.path, "--version"], env=environ)
    if result.missing or not result.ok:
        last = result.output.strip().splitlines()[-1:] or ["no output"]
        return Check(name, FAIL, f"{compiler.describe()} does not run: {last[0]}",
                     todo="fix HIPCXX / --hip-compiler", category="toolchain_missing")
    version = parse_hipcc_version(result.output)
    libs = device_lib_path(environ)
    detail = (f"{version.clang or 'unknown compiler'} at {compiler.describe()}; "
              f"HIP_DEVICE_LIB_PATH={libs or 'unset'}")
    return Check(name, OK, detail)


# CMake learned to use a plain clang (not ROCm's, no hip-lang package) as the HIP compiler in 3.28;
# older CMake looks for <root>/lib/cmake/hip-lang and fails with "does not contain the HIP runtime CMake
# package" (docs/rocm-facts.md), which reads like a missing ROCm and is not one.
MIN_CMAKE_FOR_CLANG_HIP = (3, 28)


def parse_cmake_version(output: str) -> tuple[int, ...] | None:
    """``cmake version 3.25.1`` -> (3, 25, 1); None when the text names no version. Pure."""
    match = re.search(r"cmake version (\d+)\.(\d+)(?:\.(\d+))?", output)
    return tuple(int(g) for g in match.groups() if g is not None) if match else None


def check_cmake_for_clang_hip(compiler: HipCompiler, env: Mapping[str, str] | None = None,
                              run: proc.Run = proc.capture) -> Check:
    """With a clang as the HIP compiler (HIPCXX), the build's CMake must be 3.28 or later."""
    name = "cmake for HIP"
    environ = dict(os.environ if env is None else env)
    cmake = shutil.which("cmake", path=environ.get("PATH"))
    need = ".".join(map(str, MIN_CMAKE_FOR_CLANG_HIP))
    todo = (f"install CMake >= {need} where the build finds it first: `python3 -m pip install 'cmake>={need}'` "
            f"into the build's environment (PyPI ships CMake 3.28+/4.x)")
    if cmake is None:
        return Check(name, WARN, "no cmake on the build's PATH (a build that brings its own is fine)",
                     todo=todo, fatal=False)
    result = run([cmake, "--version"], env=environ)
    version = parse_cmake_version(result.output)
    if version is None:
        return Check(name, WARN, f"{cmake} --version says no version", todo=todo, fatal=False)
    shown = ".".join(map(str, version))
    if version[:2] < MIN_CMAKE_FOR_CLANG_HIP:
        return Check(name, FAIL,
                     f"cmake {shown} at {cmake} cannot use clang ({compiler.path}) as the HIP compiler: "
                     f"CMake < {need} looks for ROCm's hip-lang package instead",
                     todo=todo, category="toolchain_missing")
    return Check(name, OK, f"cmake {shown} at {cmake} (>= {need}: clang as the HIP compiler works)")


_NVCC = re.compile(r"nvcc|NVIDIA|Cuda compilation tools")


def check_hipcc_is_amd(
    hipcc: Path | str | None, env: Mapping[str, str] | None = None, run: proc.Run = proc.capture
) -> Check:
    """hipcc must target AMD: on a host with CUDA it silently becomes nvcc without HIP_PLATFORM=amd."""
    name = "hipcc platform"
    if not hipcc:
        return Check(name, FAIL, "hipcc not found (not in the ROCm root nor on PATH)",
                     todo="install ROCm (or Debian's: apt-get install hipcc rocminfo libamdhip64-dev "
                          "rocm-device-libs) or pass --rocm-path", category="toolchain_missing")
    environ = dict(os.environ if env is None else env)
    result = run([str(hipcc), "--version"], env=environ)
    if result.missing:
        return Check(name, FAIL, f"{hipcc}: not found", todo="check --rocm-path",
                     category="toolchain_missing")
    platform = environ.get("HIP_PLATFORM", "")
    if _NVCC.search(result.output):
        return Check(name, FAIL,
                     f"hipcc resolves to nvcc (HIP_PLATFORM={platform or 'unset'}): set HIP_PLATFORM=amd",
                     todo="export HIP_PLATFORM=amd (rocmbuild sets it for builds; check the recipe's [env])",
                     category="toolchain_missing")
    version = parse_hipcc_version(result.output)
    if version.clang is None and version.hip is None:
        last = result.output.strip().splitlines()[-1:] or ["no output"]
        return Check(name, FAIL, f"{hipcc} --version does not look like HIP: {last[0]}",
                     todo="check the hipcc installation", category="toolchain_missing")
    detail = f"{version.describe(str(hipcc))}, HIP_PLATFORM={platform or 'unset'}"
    if platform != "amd":
        return Check(name, WARN, detail, todo="set HIP_PLATFORM=amd", fatal=False)
    return Check(name, OK, detail)


# --- ROCm root and libraries ----------------------------------------------------------


def check_rocm_root(rocm: Rocm | None) -> Check:
    name = "ROCm root"
    if rocm is None:
        return Check(name, FAIL, "no ROCm installation found",
                     todo="install ROCm (or Debian's hipcc packages), or pass --rocm-path / set ROCM_PATH",
                     category="toolchain_missing")
    libs = ", ".join(str(d) for d in rocm.lib_dirs) or "none"
    detail = f"ROCm {rocm.version or '(version unknown)'} at {rocm.root} (lib dirs: {libs})"
    if not rocm.lib_dirs:
        return Check(name, FAIL, detail, todo="the root has no lib directory: check --rocm-path",
                     category="toolchain_missing")
    if not rocm.version:
        return Check(name, WARN, detail, todo="no .info/version, rocm_version.h or hip_version.h found",
                     fatal=False)
    return Check(name, OK, detail)


def _ldconfig_paths(run: proc.Run) -> dict[str, str]:
    """soname -> path from ``ldconfig -p`` (64-bit entries); empty when ldconfig is unavailable."""
    found: dict[str, str] = {}
    # 64-bit entries ("libc6,x86-64", "libc6,AArch64") first, then the rest.
    for entry in sorted(ldcache.lookup(run), key=lambda e: not e.is_64bit):
        found.setdefault(entry.soname, entry.path)
    return found


def check_libraries(names: Sequence[str], lib_dirs: Sequence[Path | str],
                    run: proc.Run = proc.capture) -> list[Check]:
    """Each ``libNAME.so`` (the unversioned link-time name) in a lib dir or known to ldconfig."""
    if not names:
        return []
    ldconfig: dict[str, str] | None = None
    checks = []
    for name in names:
        linkname = f"lib{name}.so"
        where = next((Path(d) / linkname for d in lib_dirs if (Path(d) / linkname).exists()), None)
        if where is None:
            ldconfig = _ldconfig_paths(run) if ldconfig is None else ldconfig
            if linkname in ldconfig:
                where = Path(ldconfig[linkname])
        check_name = f"library {name}"
        if where is not None:
            checks.append(Check(check_name, OK, f"{linkname} in {where.parent}"))
            continue
        runtime = sorted({str(Path(d) / f.name) for d in lib_dirs if Path(d).is_dir()
                          for f in Path(d).glob(f"{linkname}.*")})
        if not runtime and ldconfig:
            runtime = sorted(p for so, p in ldconfig.items() if so.startswith(f"{linkname}."))
        searched = ", ".join(str(d) for d in lib_dirs) or "no lib dirs"
        if runtime:
            detail = (f"only the runtime {Path(runtime[0]).name} found ({runtime[0]}): "
                      f"the link needs {linkname}")
        else:
            detail = f"{linkname} not found in {searched} nor by ldconfig"
        aptcheck.lookup(debian_packages([name]), run)  # advice only for what apt here can install
        checks.append(Check(check_name, FAIL, detail, todo=f"install it: {install_line([name])}",
                            category="missing_library"))
    return checks


# --- machine resources ---------------------------------------------------------------

_GB = 1024**3


def check_disk(path: Path | str, min_gb: float) -> Check:
    """Free space where the build writes (the nearest existing ancestor of ``path``)."""
    target = Path(path).absolute()
    while not target.exists() and target != target.parent:
        target = target.parent
    free = shutil.disk_usage(target).free / _GB
    detail = f"{free:.1f} GB free on {target}" + (f" (recipe needs {min_gb:g} GB)" if min_gb else "")
    if min_gb and free < min_gb:
        return Check("disk", FAIL, detail,
                     todo=f"free at least {min_gb - free:.1f} GB more, or build elsewhere "
                          "(--source / --run-dir on a bigger disk)", category="disk_full")
    return Check("disk", OK, detail)


def check_memory(mem_available_bytes: int, per_job_gb: float) -> Check:
    """Memory for at least one compile job: below half a job's need fail, below one job warn."""
    available = mem_available_bytes / _GB
    jobs = int(available // per_job_gb) if per_job_gb > 0 else 0
    detail = f"{available:.1f} GB available, {per_job_gb:g} GB per job: room for {jobs} parallel jobs"
    if per_job_gb > 0 and available < per_job_gb / 2:
        return Check("memory", FAIL, detail, todo="free memory (or add swap) before building: even one job "
                     "is likely to be OOM-killed", category="out_of_memory")
    if per_job_gb > 0 and available < per_job_gb:
        return Check("memory", WARN, detail + " (building with 1 job, may still be OOM-killed)",
                     todo="free memory or add swap", fatal=False)
    return Check("memory", OK, detail)


# --- Python ----------------------------------------------------------------------------

# Import name -> pip distribution, where they differ.
_PIP_NAMES = {
    "yaml": "pyyaml", "typing_extensions": "typing-extensions", "cv2": "opencv-python", "PIL": "pillow",
    "sklearn": "scikit-learn", "google.protobuf": "protobuf", "setuptools_scm": "setuptools-scm",
    "importlib_metadata": "importlib-metadata", "dateutil": "python-dateutil", "jinja2": "jinja2",
}

_FIND_SPECS = """
import importlib.util, json, sys
missing = []
for name in sys.argv[1:]:
    try:
        found = importlib.util.find_spec(name) is not None
    except Exception:
        found = False
    if not found:
        missing.append(name)
print(json.dumps({"missing": missing, "python": sys.executable}))
"""

_TORCH_INFO = """
import json, sys
try:
    import torch
except BaseException as exc:
    print(json.dumps({"error": type(exc).__name__ + ": " + str(exc)}))
    sys.exit(0)
print(json.dumps({"version": torch.__version__, "hip": getattr(torch.version, "hip", None),
                  "cuda": getattr(torch.version, "cuda", None), "file": torch.__file__}))
"""


def _last_json(output: str) -> dict[str, object] | None:
    for line in reversed(output.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


def check_python_modules(python: Path | str, modules: Sequence[str], env: Mapping[str, str] | None = None,
                         run: proc.Run = proc.capture) -> Check:
    """All ``modules`` importable by ``python`` (one subprocess, find_spec only: nothing is imported)."""
    name = "python modules"
    if not modules:
        return Check(name, OK, "none required")
    result = run([str(python), "-c", _FIND_SPECS, *modules], env=dict(os.environ if env is None else env))
    info = _last_json(result.output)
    if result.missing or info is None:
        why = result.output.strip().splitlines()[-1:] or ["no output"]
        return Check(name, FAIL, f"cannot run {python}: {why[0]}", todo="check the Python interpreter",
                     category="toolchain_missing")
    raw_missing = info.get("missing")
    missing = [str(m) for m in raw_missing] if isinstance(raw_missing, list) else []
    if missing:
        pip = " ".join(_PIP_NAMES.get(m, m.split(".")[0]) for m in missing)
        return Check(name, FAIL, f"not importable by {python}: {', '.join(missing)}",
                     todo=f"{python} -m pip install {pip}", category="missing_python_dependency")
    return Check(name, OK, f"{', '.join(modules)} importable by {python}")


_WHEEL_STEP_INFO = """
import importlib.util, json
try:
    import setuptools
    version = setuptools.__version__
except Exception:
    version = None
print(json.dumps({"setuptools": version, "wheel": importlib.util.find_spec("wheel") is not None}))
"""

# setuptools 70.1 ships bdist_wheel itself; before it, `pip wheel --no-build-isolation` needs `wheel`.
SETUPTOOLS_WITH_BDIST_WHEEL = (70, 1)


def check_wheel_step(python: Path | str, env: Mapping[str, str] | None = None,
                     run: proc.Run = proc.capture) -> Check:
    """--wheel-dir's wheel step (``pip wheel --no-build-isolation``) can run in the build's interpreter."""
    name = "wheel step"
    result = run([str(python), "-c", _WHEEL_STEP_INFO], env=dict(os.environ if env is None else env))
    info = _last_json(result.output)
    if result.missing or info is None:
        why = result.output.strip().splitlines()[-1:] or ["no output"]
        return Check(name, FAIL, f"cannot run {python}: {why[0]}", todo="check the Python interpreter",
                     category="toolchain_missing")
    setuptools_version = info.get("setuptools")
    has_wheel = bool(info.get("wheel"))
    numbers = tuple(int(n) for n in re.findall(r"\d+", str(setuptools_version or ""))[:2])
    if has_wheel or (numbers and numbers >= SETUPTOOLS_WITH_BDIST_WHEEL):
        how = "the wheel package" if has_wheel else f"setuptools {setuptools_version} (has bdist_wheel)"
        return Check(name, OK, f"{python} can build wheels without isolation: {how}")
    found = f"setuptools {setuptools_version}" if setuptools_version else "no setuptools"
    return Check(name, FAIL,
                 f"{python} has {found} and no `wheel` package: the wheel step after the build would fail "
                 "(\"invalid command 'bdist_wheel'\"; setuptools before 70.1 needs `wheel`)",
                 todo=f"{shlex.quote(str(python))} -m pip install wheel", category="missing_python_dependency")


def check_torch_rocm(python: Path | str, env: Mapping[str, str] | None = None,
                     run: proc.Run = proc.capture) -> Check:
    """A ROCm build of torch is importable (vLLM and other extensions build against it)."""
    name = "torch (ROCm)"
    result = run([str(python), "-c", _TORCH_INFO], env=dict(os.environ if env is None else env))
    info = _last_json(result.output)
    if result.missing or info is None:
        why = result.output.strip().splitlines()[-1:] or ["no output"]
        return Check(name, FAIL, f"cannot run {python}: {why[0]}", todo="check the Python interpreter",
                     category="toolchain_missing")
    if "error" in info:
        error = str(info["error"])
        if error.startswith("ModuleNotFoundError") and "torch" in error:
            return Check(name, FAIL, f"torch is not installed for {python}",
                         todo="build it first (`rocmbuild torch vllm`) or install a ROCm wheel "
                              "(pip install torch --index-url https://download.pytorch.org/whl/rocmX.Y)",
                         category="missing_python_dependency")
        category: Category = ("missing_runtime_library" if "cannot open shared object file" in error
                              else "missing_python_dependency")
        return Check(name, FAIL, f"import torch fails: {error}",
                     todo="fix the torch installation (a ROCm library missing at load time needs "
                          "LD_LIBRARY_PATH or a rebuild)", category=category)
    version = info.get("version")
    if not info.get("hip"):
        kind = f"CUDA {info['cuda']}" if info.get("cuda") else "CPU"
        return Check(name, FAIL, f"torch {version} is a {kind} build: install a ROCm build of torch",
                     todo="pip uninstall torch, then build the torch recipe or install a ROCm wheel",
                     category="toolchain_missing")
    return Check(name, OK, f"torch {version} with HIP {info['hip']} ({info.get('file')})")
