"""Facts about the machine: discovery of the ROCm install (the ``host.rocm.Rocm`` value),
CPUs and memory as the build will see them (cgroup aware), free disk, the loader's
own directories.

Every probe takes its inputs (a filesystem root, the cgroup and /proc files, a
command runner) as arguments so tests build fake trees under tmp_path; paths
returned are the real ones inside that root.  ``gather_host`` bundles the facts,
measured when called: no module keeps a cache, the caller decides when to gather
(planning once for the run, handing each plan its facts; doctor once).

Facts followed (docs/rocm-facts.md): ``/opt/rocm`` is usually a symlink to
``/opt/rocm-X.Y.Z``; SDK previews (7.13+) install under ``/opt/rocm/core-<ver>``;
ROCm can be pip-installed (``rocm-sdk path --root``); Debian's packages use the
system layout (``/usr/bin/hipcc``, multiarch lib dir, ``/usr/lib/llvm-N``);
``lib/llvm/bin`` is preferred to the ``llvm/bin`` compatibility link;
``/opt/rocm/hip/lib`` is gone since 6.0; HIP's patch number is not ROCm's.
"""

from __future__ import annotations

import math
import os
import platform
import re
import shutil
import sys
import sysconfig
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from rocmbuild.errors import RocmRootError
from rocmbuild.host.allocation import capped_cpus, capped_memory
from rocmbuild.host.rocm import Rocm
from rocmbuild.process import command as proc

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")
MEMINFO = Path("/proc/meminfo")

# cgroup v1 writes "no limit" as a huge page-rounded number (9223372036854771712).
_V1_UNLIMITED = 1 << 60

# What makes a directory "look like ROCm": any one of these.
_MARKERS: tuple[str, ...] = (
    "bin/hipcc", "lib/libamdhip64.so*", ".info/version", "include/hip/hip_version.h", "lib/llvm/bin",
)


def multiarch() -> str:
    """Debian multiarch triplet of this platform (x86_64-linux-gnu), for the system layout."""
    value = sysconfig.get_config_var("MULTIARCH") or getattr(sys.implementation, "_multiarch", "")
    return str(value) if value else f"{platform.machine()}-linux-gnu"


# ---------------------------------------------------------------- paths under fs_root

def _under(fs_root: Path, path: str | Path) -> Path:
    """An absolute path as seen from fs_root (itself when fs_root is /, or already inside it)."""
    p = Path(path)
    if fs_root == Path("/") or not p.is_absolute():
        return p
    if p == fs_root or fs_root in p.parents:
        return p
    return fs_root / p.relative_to("/")


def _shown(fs_root: Path, path: Path) -> str:
    """How a path under fs_root is shown to people: as the absolute path it stands for."""
    if fs_root != Path("/") and (path == fs_root or fs_root in path.parents):
        return "/" + str(path.relative_to(fs_root)).removeprefix(".")
    return str(path)


def _follow(fs_root: Path, path: Path) -> Path:
    """Resolve symlinks, re-rooting absolute link targets under fs_root."""
    if fs_root == Path("/"):
        return path.resolve()
    # Fake trees: follow the final component (the /opt/rocm link); enough for tests and
    # for real trees mounted elsewhere.
    for _ in range(40):
        if not path.is_symlink():
            break
        target = os.readlink(path)
        path = _under(fs_root, target) if os.path.isabs(target) else path.parent / target
        path = Path(os.path.normpath(path))
    return path


def _version_key(name: str) -> tuple[int, ...] | None:
    match = re.fullmatch(r"(?:rocm|core)-(\d+(?:\.\d+)*)", name)
    return tuple(int(p) for p in match.group(1).split(".")) if match else None


def _newest(dirs: list[Path]) -> list[Path]:
    """Versioned dirs, newest first, by number (6.10.0 > 6.4.1), not by string."""
    keyed = [(key, d) for d in dirs if (key := _version_key(d.name)) is not None]
    return [d for _, d in sorted(keyed, key=lambda kd: kd[0], reverse=True)]


# ---------------------------------------------------------------- recognising a root

def _system_lib_dirs(root: Path) -> list[Path]:
    """Multiarch dirs under root/lib holding libamdhip64 (this platform's first)."""
    first = root / "lib" / multiarch()
    others = sorted(p for p in root.glob("lib/*-linux-*") if p != first)
    return [d for d in (first, *others) if d.is_dir() and any(d.glob("libamdhip64.so*"))]


def _markers(root: Path) -> tuple[list[str], list[str]]:
    found: list[str] = []
    missing: list[str] = []
    for marker in _MARKERS:
        hit = any(root.glob(marker)) if "*" in marker else (root / marker).exists()
        (found if hit else missing).append(marker)
    if _system_lib_dirs(root):
        found.append("lib/<multiarch>/libamdhip64.so*")
    return found, missing


def _looks_like_rocm(root: Path) -> bool:
    return root.is_dir() and bool(_markers(root)[0])


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def _defines(text: str, prefix: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2))
            for m in re.finditer(rf"^\s*#\s*define\s+{prefix}_(MAJOR|MINOR|PATCH)\s+(\d+)", text, re.M)}


def _tool_env(environ: Mapping[str, str]) -> dict[str, str]:
    env = dict(environ)
    env.setdefault("PATH", os.environ.get("PATH", os.defpath))
    return env


def _version(root: Path, hipcc: Path | None, environ: Mapping[str, str], run: proc.Run) -> tuple[str | None, str]:
    text = _read(root / ".info" / "version")
    if text and (m := re.match(r"\s*(\d+\.\d+(?:\.\d+)?)", text)):
        return m.group(1), ".info/version"      # "6.2.4-120" -> "6.2.4"
    for header in ("include/rocm-core/rocm_version.h", "include/rocm_version.h"):
        parts = _defines(_read(root / header) or "", "ROCM_VERSION")
        if "MAJOR" in parts and "MINOR" in parts:
            return f"{parts['MAJOR']}.{parts['MINOR']}.{parts.get('PATCH', 0)}", "rocm_version.h"
    parts = _defines(_read(root / "include/hip/hip_version.h") or "", "HIP_VERSION")
    if "MAJOR" in parts and "MINOR" in parts:
        # HIP's patch is a build number (5.2.21153), not ROCm's patch: keep major.minor.
        return f"{parts['MAJOR']}.{parts['MINOR']}", "hip_version.h (HIP version)"
    if hipcc is not None:
        # On a host that also has CUDA, hipcc picks the NVIDIA platform unless told.
        result = run([str(hipcc), "--version"], env={**_tool_env(environ), "HIP_PLATFORM": "amd"},
                     timeout=60)
        if m := re.search(r"HIP version:\s*(\d+)\.(\d+)", result.output):
            return f"{m.group(1)}.{m.group(2)}", "hipcc --version (HIP version)"
    return None, "unknown"


def _llvm_bin(fs_root: Path, root: Path, layout: str) -> Path | None:
    for rel in ("lib/llvm/bin", "llvm/bin"):
        if (root / rel).is_dir():
            return root / rel
    if layout == "system":
        # Debian: /usr/lib/llvm-N/bin.  The one hipcc itself calls (HIP 5.2's hipcc.pl runs
        # clang++-15 = llvm-15), not the newest installed: llvm-19 first on PATH would give the
        # build another clang's tools.  Newest with a clang only when hipcc names none.
        usr_lib = _under(fs_root, "/usr/lib")
        keyed = []
        for d in usr_lib.glob("llvm-*"):
            m = re.fullmatch(r"llvm-(\d+(?:\.\d+)*)", d.name)
            if m and (d / "bin" / "clang").exists():
                keyed.append((tuple(int(p) for p in m.group(1).split(".")), d / "bin"))
        hipcc_major = _hipcc_clang_major(root)
        for key, directory in keyed:
            if hipcc_major is not None and key[0] == hipcc_major:
                return directory
        if keyed:
            return max(keyed)[1]
    return None


def _hipcc_clang_major(root: Path) -> int | None:
    """The clang major version the system hipcc runs (``clang++-15`` in hipcc/hipcc.pl), if it says."""
    for name in ("hipcc.pl", "hipcc"):
        script = root / "bin" / name
        try:
            head = script.read_bytes()[:200_000]
        except OSError:
            continue
        if b"\0" in head:  # a compiled hipcc: nothing to read
            continue
        if m := re.search(rb"clang(?:\+\+)?-(\d+)\b", head):
            return int(m.group(1))
    return None


def _device_lib_dir(root: Path, layout: str) -> Path | None:
    # The places hipcc itself searches, in its order.
    candidates = [root / "amdgcn" / "bitcode", *sorted(root.glob("lib/*/amdgcn/bitcode")),
                  *sorted(root.glob("lib/llvm/lib/clang/*/lib/amdgcn/bitcode"))]
    return next((c for c in candidates if c.is_dir()), None)


def _layout_of(fs_root: Path, root: Path) -> str:
    opt = _under(fs_root, "/opt")
    if root == _under(fs_root, "/usr"):
        return "system"
    if any(part.startswith("_rocm_sdk") for part in root.parts):
        return "pip"
    if root.name.startswith("core-") and root.parent.name.startswith("rocm"):
        return "core"
    if root.parent == opt and root.name.startswith("rocm"):
        return "opt"
    return "custom"


def inspect_root(root: Path, *, origin: str, layout: str, fs_root: Path = Path("/"),
                 environ: Mapping[str, str] | None = None, run: proc.Run = proc.capture) -> Rocm:
    """Describe the ROCm at ``root`` (assumed to look like ROCm)."""
    environ = os.environ if environ is None else environ
    hipcc = root / "bin" / "hipcc"
    hipcc_path = hipcc if hipcc.exists() else None
    version, source = _version(root, hipcc_path, environ, run)
    if layout == "system":
        lib_dirs = _system_lib_dirs(root) or [d for d in (root / "lib" / multiarch(),) if d.is_dir()]
    else:
        # lib/llvm/lib is ROCm 6+; hip/lib was removed in 6.0 and is never added.
        lib_dirs = [root / rel for rel in ("lib", "lib64", "lib/llvm/lib") if (root / rel).is_dir()]
        lib_dirs += [d for d in _system_lib_dirs(root) if d not in lib_dirs]
    bin_dirs = tuple(d for d in (root / "bin",) if d.is_dir())
    return Rocm(
        root=root, version=version, version_source=source, layout=layout, bin_dirs=bin_dirs,
        lib_dirs=tuple(lib_dirs), llvm_bin=_llvm_bin(fs_root, root, layout), hipcc=hipcc_path,
        origin=origin, device_lib_dir=_device_lib_dir(root, layout),
    )


# ---------------------------------------------------------------- discovery

def _candidates_hint(fs_root: Path) -> str:
    opt = _under(fs_root, "/opt")
    found = [d for d in [opt / "rocm", *_newest(list(opt.glob("rocm-*")))] if _looks_like_rocm(d)]
    usr = _under(fs_root, "/usr")
    if _looks_like_rocm(usr) and (usr / "bin" / "hipcc").exists():
        found.append(usr)
    if found:
        return "ROCm roots found on this machine: " + ", ".join(_shown(fs_root, d) for d in found)
    return "no ROCm root was found under /opt/rocm* or /usr either"


def _explicit(value: str, label: str, fs_root: Path, environ: Mapping[str, str], run: proc.Run) -> Rocm:
    given = Path(os.path.expanduser(value))
    if not given.is_absolute():
        given = Path.cwd() / given
    path = _under(fs_root, given)
    fix = "pass --rocm-path DIR" if label == "--rocm-path" else "fix or unset ROCM_PATH"
    if not path.exists():
        raise RocmRootError(
            f"{label} {value} does not exist",
            "rocmbuild needs the ROCm root to find hipcc, the HIP libraries and ROCm's LLVM",
            f"{fix} with an existing ROCm root such as /opt/rocm ({_candidates_hint(fs_root)}), "
            "or leave it unset to discover ROCm",
        )
    root = _follow(fs_root, path)
    if not _looks_like_rocm(root):
        # A preview SDK root (/opt/rocm holding core-7.13) given as the parent: use the SDK.
        cores = [c for c in _newest(list(root.glob("core-*"))) if _looks_like_rocm(c)]
        if cores:
            return inspect_root(cores[0], origin=f"{label} ({cores[0].name})", layout="core",
                                fs_root=fs_root, environ=environ, run=run)
        _, missing = _markers(root) if root.is_dir() else ([], list(_MARKERS))
        raise RocmRootError(
            f"{label} {value} does not look like a ROCm installation",
            ", ".join(f"no {m}" for m in missing),
            f"{fix} with the directory that holds bin/hipcc and lib/libamdhip64.so, e.g. /opt/rocm "
            f"or /opt/rocm-6.2.4 ({_candidates_hint(fs_root)}), or leave it unset to discover ROCm",
        )
    return inspect_root(root, origin=label, layout=_layout_of(fs_root, root), fs_root=fs_root,
                        environ=environ, run=run)


def discover_rocm(
    rocm_path: str | None,
    environ: Mapping[str, str],
    *,
    fs_root: Path = Path("/"),
    run: proc.Run = proc.capture,
) -> Rocm | None:
    """Find ROCm: ``--rocm-path``, ``$ROCM_PATH``, ``/opt/rocm`` (or the newest
    ``/opt/rocm/core-<ver>`` SDK it holds), the newest ``/opt/rocm-X.Y.Z``, the system
    layout (/usr), the pip-installed SDK.  Explicit paths that do not look like ROCm
    raise RocmRootError; auto discovery returns None when nothing is found."""
    if rocm_path:
        return _explicit(rocm_path, "--rocm-path", fs_root, environ, run)
    if environ.get("ROCM_PATH", "").strip():
        return _explicit(environ["ROCM_PATH"].strip(), "$ROCM_PATH", fs_root, environ, run)

    def found(root: Path, origin: str, layout: str) -> Rocm:
        return inspect_root(root, origin=origin, layout=layout, fs_root=fs_root, environ=environ, run=run)

    opt = _under(fs_root, "/opt")
    default = opt / "rocm"
    if default.exists() or default.is_symlink():
        real = _follow(fs_root, default)
        if _looks_like_rocm(real):
            origin = "/opt/rocm"
            if default.is_symlink():
                origin += f" -> {_shown(fs_root, real)}"
            return found(real, origin, "opt")
        # ROCm 7.13+ SDK previews: /opt/rocm/core-<ver>.  When /opt/rocm holds them (and is
        # not a link to an older release) they are what the machine calls "ROCm".
        for core in _newest(list(real.glob("core-*"))):
            if _looks_like_rocm(core):
                return found(core, _shown(fs_root, core), "core")

    versioned = [d for d in _newest(list(opt.glob("rocm-*"))) if d.is_dir() and _looks_like_rocm(d)]
    if versioned:
        newest = versioned[0]
        origin = f"newest {_shown(fs_root, newest)}"
        if len(versioned) > 1:
            origin += f" (of {len(versioned)} installed)"
        return found(newest, origin, "opt")

    usr = _under(fs_root, "/usr")
    if (usr / "bin" / "hipcc").exists() or _system_lib_dirs(usr):
        return found(usr, f"system layout ({_shown(fs_root, usr)})", "system")

    # pip-installed ROCm (TheRock wheels): optional, the tool may not be there.
    result = run(["rocm-sdk", "path", "--root"], env=_tool_env(environ), timeout=60)
    if result.ok:
        lines = [line.strip() for line in result.output.splitlines() if line.strip()]
        if lines:
            root = _under(fs_root, lines[-1])
            if _looks_like_rocm(root):
                return found(root, f"pip rocm-sdk ({_shown(fs_root, root)})", "pip")
    return None


# ---------------------------------------------------------------- cgroups, CPUs, memory

def _cgroup_dirs(controller: str, cgroup_root: Path, proc_cgroup: Path) -> list[Path]:
    """The cgroup directories that bound this process for a controller, innermost first:
    the v2 unified hierarchy and the v1 controller mount, walking up to each root
    (a parent's limit applies too)."""
    membership: dict[str, str] = {}
    for line in (_read(proc_cgroup) or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for name in parts[1].split(",") if parts[1] else [""]:
                membership[name] = parts[2]

    def walk(mount: Path, rel: str) -> list[Path]:
        dirs = []
        p = mount / rel.strip("/") if rel.strip("/") else mount
        while True:
            if p.is_dir():
                dirs.append(p)
            if p == mount:
                break
            p = p.parent
        return dirs

    dirs = walk(cgroup_root, membership.get("", "/"))
    mounts = sorted(d for d in cgroup_root.glob("*") if controller in d.name.split(","))
    for mount in mounts:
        dirs += walk(mount, membership.get(controller, "/"))
    return dirs


def _cpu_quota(cgroup_root: Path, proc_cgroup: Path) -> tuple[int, int] | None:
    best: tuple[int, int] | None = None
    for d in _cgroup_dirs("cpu", cgroup_root, proc_cgroup):
        quota = period = None
        text = _read(d / "cpu.max")
        if text and (m := re.fullmatch(r"\s*(\d+)\s+(\d+)\s*", text)):
            quota, period = int(m.group(1)), int(m.group(2))
        q1, p1 = _read(d / "cpu.cfs_quota_us"), _read(d / "cpu.cfs_period_us")
        if q1 and p1 and q1.strip().isdigit() and p1.strip().isdigit():   # -1 = no quota
            quota, period = int(q1), int(p1)
        if quota and period and (best is None or quota / period < best[0] / best[1]):
            best = (quota, period)
    return best


def _plural(n: int) -> str:
    return f"{n} CPU" if n == 1 else f"{n} CPUs"


def cpu_count(
    *,
    cgroup_root: Path = CGROUP_ROOT,
    proc_cgroup: Path = PROC_CGROUP,
    affinity: Callable[[], int] | None = None,
) -> tuple[int, str]:
    """CPUs this process may really use: the affinity mask, capped by a cgroup CPU quota
    (rounded up).  Returns the count and why, e.g. "4 CPUs (cgroup quota 400000/100000)"."""
    if affinity is not None:
        count, how = affinity(), "affinity"
    elif hasattr(os, "sched_getaffinity"):
        count, how = len(os.sched_getaffinity(0)), "affinity"
    else:
        count, how = os.cpu_count() or 1, "cpu_count"
    quota = _cpu_quota(cgroup_root, proc_cgroup)
    if quota:
        limit = max(1, math.ceil(quota[0] / quota[1]))
        if limit < count:
            return limit, f"{_plural(limit)} (cgroup quota {quota[0]}/{quota[1]})"
    return count, f"{_plural(count)} ({how})"


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def _int_file(path: Path) -> int | None:
    text = _read(path)
    return int(text) if text is not None and text.strip().isdigit() else None


def _stat_value(path: Path, *keys: str) -> int:
    text = _read(path) or ""
    for key in keys:
        if m := re.search(rf"^{key}\s+(\d+)\s*$", text, re.M):
            return int(m.group(1))
    return 0


def _cgroup_headroom(cgroup_root: Path, proc_cgroup: Path) -> tuple[int, str] | None:
    """Tightest (limit - in use) over the hierarchy.  Page cache that can be dropped
    (inactive_file) is not counted as in use, as the kernel reclaims it before OOM."""
    best: tuple[int, str] | None = None
    for d in _cgroup_dirs("memory", cgroup_root, proc_cgroup):
        limit = _int_file(d / "memory.max")                       # "max" -> None
        if limit is not None:
            used = _int_file(d / "memory.current") or 0
            cache = _stat_value(d / "memory.stat", "inactive_file")
            name = "memory.max"
        else:
            limit = _int_file(d / "memory.limit_in_bytes")
            if limit is None or limit >= _V1_UNLIMITED:
                continue
            used = _int_file(d / "memory.usage_in_bytes") or 0
            cache = _stat_value(d / "memory.stat", "total_inactive_file", "inactive_file")
            name = "memory.limit_in_bytes"
        in_use = max(0, used - min(cache, used))
        room = max(0, limit - in_use)
        if best is None or room < best[0]:
            best = (room, f"cgroup {name} {_gib(limit)}, {_gib(in_use)} in use")
    return best


def memory_available(
    *,
    meminfo: Path = MEMINFO,
    cgroup_root: Path = CGROUP_ROOT,
    proc_cgroup: Path = PROC_CGROUP,
) -> tuple[int, str]:
    """Bytes a build can use now: MemAvailable, capped by a cgroup memory limit."""
    text = _read(meminfo) or ""
    if m := re.search(r"^MemAvailable:\s+(\d+)\s*kB", text, re.M):
        avail, what = int(m.group(1)) * 1024, "MemAvailable"
    else:
        import psutil  # ~15 ms to import: only where /proc/meminfo has no MemAvailable

        avail, what = int(psutil.virtual_memory().available), "psutil available"
    headroom = _cgroup_headroom(cgroup_root, proc_cgroup)
    if headroom and headroom[0] < avail:
        return headroom[0], f"{_gib(headroom[0])} available ({headroom[1]}; {what} {_gib(avail)})"
    return avail, f"{_gib(avail)} available ({what})"


def disk_free(path: Path) -> int:
    """Free bytes on the filesystem that holds path (or would hold it: nearest existing ancestor)."""
    p = Path(os.path.abspath(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    return shutil.disk_usage(p).free


# ---------------------------------------------------------------- the bundle

@dataclass(frozen=True)
class HostFacts:
    """The machine as measured once by ``gather_host``; plans copy what builds need from it."""

    rocm: Rocm | None
    cpus: int
    cpus_reason: str
    mem_available: int
    mem_reason: str
    python: str
    # The loader's default dirs (as written and resolved): never put on LD_LIBRARY_PATH/LIBRARY_PATH.
    loader_dirs: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class HostFiles:
    """Where the host facts are read: the filesystem ROCm is looked for in, the cgroup and memory files."""

    fs_root: Path = Path("/")
    cgroup_root: Path = CGROUP_ROOT
    proc_cgroup: Path = PROC_CGROUP
    meminfo: Path = MEMINFO


def gather_host(
    rocm_path: str | None,
    environ: Mapping[str, str],
    *,
    files: HostFiles = HostFiles(),
    run: proc.Run = proc.capture,
    python: str = sys.executable,
    ldconfig_run: proc.Run = proc.capture,
) -> HostFacts:
    """All host facts, measured now: no cache, so the caller decides when (planning gathers them once
    for all recipes; each recipe's preflight measures memory again).  Raises RocmRootError for a bad
    explicit root.

    ``ldconfig_run`` is separate from ``run`` on purpose: the loader's dirs are a fact of this machine
    that a test faking ROCm's tools (``run``) still wants measured for real.
    """
    fs_root, cgroup_root, proc_cgroup, meminfo = files.fs_root, files.cgroup_root, files.proc_cgroup, files.meminfo
    rocm = discover_rocm(rocm_path, environ, fs_root=fs_root, run=run)
    # A batch job's allocation, where no cgroup enforces it, is only in its environment (allocation.py).
    cpus, cpus_reason = capped_cpus(*cpu_count(cgroup_root=cgroup_root, proc_cgroup=proc_cgroup), environ)
    mem, mem_reason = capped_memory(*memory_available(meminfo=meminfo, cgroup_root=cgroup_root,
                                                      proc_cgroup=proc_cgroup), environ)
    return HostFacts(rocm, cpus, cpus_reason, mem, mem_reason, python, loader_default_dirs(ldconfig_run))


# ---------------------------------------------------------------- the loader's own directories

# Searched by the dynamic loader and the linker whatever the environment says (Debian multiarch
# and the classic ones).  Putting one on LD_LIBRARY_PATH overrides every binary's RUNPATH: pyenv's
# Python then loads the system libpython (docs/rocm-facts.md, "Link time is not load time").
STATIC_LOADER_DIRS: tuple[str, ...] = (
    f"/usr/lib/{multiarch()}", f"/lib/{multiarch()}", "/usr/lib", "/lib", "/usr/lib64", "/lib64",
)


def parse_ldconfig_dirs(output: str) -> list[str]:
    """The loader's built-in (system) dirs in ``ldconfig -v -N -X`` output: ``/dir: (from <builtin>:0)``.

    Dirs from ld.so.conf are left out: the linker does not search them, so LIBRARY_PATH still needs them.
    """
    return [m.group(1) for m in re.finditer(r"^(/[^:\s]*):.*\(from <builtin>", output, re.M)]


def _ldconfig_call() -> tuple[list[str], dict[str, str]] | None:
    ldconfig = shutil.which("ldconfig") or shutil.which("ldconfig", path="/sbin:/usr/sbin")
    if not ldconfig:
        return None
    # -N -X: only print; never rebuild the cache or links (rocmbuild may run as root).
    return [ldconfig, "-v", "-N", "-X"], _tool_env(os.environ)


def loader_default_dirs(run: proc.Run = proc.capture) -> tuple[str, ...]:
    """The loader's default dirs: the static ones plus what ldconfig says it searches, each as written
    and resolved (/lib is /usr/lib on a merged-/usr system).  Measured on every call: ``gather_host``
    calls it once and the plans carry the answer (``BuildPlan.loader_dirs``)."""
    found = list(STATIC_LOADER_DIRS)
    call = _ldconfig_call()
    if call is not None:
        argv, env = call
        result = run(argv, env=env, timeout=30)
        found += parse_ldconfig_dirs(result.output)
    return tuple(dict.fromkeys([*found, *(os.path.realpath(d) for d in found)]))
