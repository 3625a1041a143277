"""The compiler cache: detection, the environment that routes compiles through it, stats.

Owns everything rocmbuild knows about ccache (preferred) and sccache:

* ``detect_cache``: which tool is installed (path, version, storage features);
* ``CacheConfig`` / ``make_config``: where the cache lives (outside the source
  tree, so ``clean_build`` keeps it) and the shared remote storage of a fleet
  (``--cache-remote`` / ``ROCMBUILD_CACHE_REMOTE``);
* ``cache_env``: the environment variables a build runs with, as data (pure);
* ``write_wrappers``: the ``clang``/``clang++`` wrapper scripts that make hipcc's
  device compiles go through the cache (hipcc finds clang via ``HIP_CLANG_PATH``);
* ``read_stats`` / ``zero_stats`` / ``parse_ccache_stats``: hit and miss counts
  per attempt for summary.json;
* ``invalidates_cache``: which remedies make the next attempt a cold build;
* ``doctor_info``: what ``rocmbuild doctor`` reports about the cache.

Only ``write_wrappers`` touches the file system and only the functions taking a
``run`` callable start processes (through proc.capture).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from rocmbuild import paths
from rocmbuild.errors import UsageError
from rocmbuild.planning.environment import EnvChange
from rocmbuild.process import command as proc
from rocmbuild.toolchain.launchshim import LAUNCHER_LANGS, install_launcher, launcher_env, launcher_unavailable

REMOTE_ENV = "ROCMBUILD_CACHE_REMOTE"
"""Environment twin of ``--cache-remote URL``."""

CACHE_DIR_ENV = "ROCMBUILD_CACHE_DIR"
"""Overrides the local cache directory (default: platformdirs user cache dir / ccache)."""

DEFAULT_MAX_SIZE = "20G"
# ccache's own default is 5 GB: one PyTorch ROCm build writes more object code than
# that (fat objects carry a code object per gfx target), so a 5 GB cache evicts the
# start of the build while it writes the end, and the retry misses.

WRAPPER_MARKER = ".rocmbuild-hip-clang-wrapper"
"""File in a wrapper dir naming the real clang dir (so we never wrap a wrapper)."""

SUPPORTED_TOOLS = ("ccache", "sccache")  # order = preference

# ccache 4.7 --print-stats keys.  "Uncacheable" and "errors" follow ccache's own
# grouping in `ccache -s` (src/core/Statistics.cpp, FLAG_UNCACHEABLE / FLAG_ERROR).
CCACHE_HIT_KEYS = ("direct_cache_hit", "preprocessed_cache_hit")
CCACHE_UNCACHEABLE_KEYS = (
    "autoconf_test", "bad_compiler_arguments", "called_for_link", "called_for_preprocessing",
    "compile_failed", "compiler_produced_empty_output", "compiler_produced_no_output",
    "compiler_produced_stdout", "could_not_use_modules", "could_not_use_precompiled_header",
    "multiple_source_files", "no_input_file", "output_to_stdout", "preprocessor_error",
    "unsupported_code_directive", "unsupported_compiler_option",
    "unsupported_environment_variable", "unsupported_source_language",
)
CCACHE_ERROR_KEYS = (
    "bad_output_file", "compiler_check_failed", "could_not_find_compiler", "error_hashing_extra_file",
    "internal_error", "missing_cache_file", "remote_storage_error", "remote_storage_timeout",
)

# Remote storage URL schemes each tool understands (ccache 4.7: file, http, redis,
# redis+unix -- and only when built with them, see CacheTool.features).
CCACHE_REMOTE_SCHEMES = {"redis": "redis-storage", "redis+unix": "redis+unix-storage",
                         "http": "http-storage", "file": "file-storage"}
SCCACHE_REMOTE_VARS = {"redis": "SCCACHE_REDIS_ENDPOINT", "rediss": "SCCACHE_REDIS_ENDPOINT",
                       "http": "SCCACHE_WEBDAV_ENDPOINT", "https": "SCCACHE_WEBDAV_ENDPOINT"}


Run = proc.Run  # the one command-runner protocol (proc.py)


# --------------------------------------------------------------------------- detection

@dataclass(frozen=True)
class CacheTool:
    """An installed compiler cache."""

    name: str                       # "ccache" | "sccache"
    path: Path
    version: str                    # "4.7.5"; "" when the version line was not understood
    features: tuple[str, ...] = ()  # ccache's "Features:" line, e.g. ("http-storage", "redis-storage")

    def supports_remote(self, url: str) -> bool:
        scheme = urlsplit(url).scheme
        if self.name == "sccache":
            return scheme in SCCACHE_REMOTE_VARS
        needed = CCACHE_REMOTE_SCHEMES.get(scheme)
        # An old ccache without a Features line: let ccache itself decide.
        return needed is not None and (not self.features or needed in self.features)


_VERSION_RE = re.compile(r"^(?:ccache|sccache)(?: version)? v?(\d+(?:\.\d+)+)", re.MULTILINE)


def parse_version(output: str) -> tuple[str, tuple[str, ...]]:
    """(version, storage features) from ``ccache --version`` / ``sccache --version`` (pure)."""
    m = _VERSION_RE.search(output)
    fm = re.search(r"^Features: (.*)$", output, re.MULTILINE)
    return (m.group(1) if m else ""), (tuple(sorted(fm.group(1).split())) if fm else ())


def detect_cache(environ: Mapping[str, str], run: Run = proc.capture) -> CacheTool | None:
    """The compiler cache on ``environ``'s PATH: ccache preferred, sccache next; None if neither."""
    search = environ.get("PATH", os.defpath)
    for name in SUPPORTED_TOOLS:
        found = shutil.which(name, path=search)
        if found is None:
            continue
        result = run([found, "--version"], env=environ, timeout=20)
        if not result.ok:
            continue  # a broken install is as good as none
        version, features = parse_version(result.output)
        return CacheTool(name, Path(found), version, features)
    return None


# --------------------------------------------------------------------------- configuration

def default_cache_dir() -> Path:
    """platformdirs' user cache dir / ccache: outside every source tree, so clean_build keeps it."""
    return paths.cache_dir("ccache")


@dataclass(frozen=True)
class CacheConfig:
    """Where compiles are cached."""

    tool: CacheTool
    cache_dir: Path = field(default_factory=default_cache_dir)
    remote: str | None = None       # "redis://127.0.0.1:6379", "http://host/cache"
    max_size: str = DEFAULT_MAX_SIZE


def make_config(tool: CacheTool, environ: Mapping[str, str], *, remote: str | None = None,
                cache_dir: Path | None = None) -> CacheConfig:
    """Precedence: explicit argument (the CLI option) > ROCMBUILD_* env > default."""
    remote = remote or environ.get(REMOTE_ENV) or None
    if cache_dir is None:
        env_dir = environ.get(CACHE_DIR_ENV)
        cache_dir = Path(env_dir).expanduser() if env_dir else default_cache_dir()
    return CacheConfig(tool, cache_dir, remote)


def check_remote(tool: CacheTool, url: str) -> str | None:
    """A usage-error message for a remote the tool cannot use, else None (pure)."""
    parts = urlsplit(url)
    if not parts.scheme or (not parts.netloc and parts.scheme not in ("file", "redis+unix")):
        return f"--cache-remote {url!r} is not a URL (expected e.g. redis://host:6379 or http://host/cache)"
    if not tool.supports_remote(url):
        have = ", ".join(tool.features) or "none reported"
        return (f"{tool.name} {tool.version} cannot use {parts.scheme}:// remote storage "
                f"(its storage features: {have})")
    return None


def cache_env(config: CacheConfig, *, recipe_uses_cmake: bool, caller_env: Mapping[str, str],
              wrapper_dir: Path | None, source: Path | None = None,
              launcher: Path | None = None) -> dict[str, str]:
    """The variables to set so every compile of the build goes through the cache (pure).

    ``recipe_uses_cmake``: the recipe runs CMake from setup.py and reads ``CMAKE_ARGS``
    (vLLM): the launchers are appended there too, because CMake ignores the
    environment launchers when the command line names one (vLLM names sccache
    when it finds it, and ccache otherwise: ours must win to use our config).
    ``wrapper_dir``: from write_wrappers (None: hipcc is absent or not wrapped).
    ``source``: the source tree; becomes the ccache base dir, which is what lets a
    fresh build directory or a clone in another place hit the cache.
    A value the caller already set explicitly (e.g. CCACHE_BASEDIR) is left alone.
    ``launcher``: the job-limit shim that runs the cache tool (joblimit.py); CMake's launchers name
    it instead of the tool itself, so every compile takes a slot of the run's global job limit.
    """
    tool = config.tool
    launcher_word = str(launcher or tool.path)
    env: dict[str, str] = {}

    def put(name: str, value: str) -> None:
        # Also leave a ccache boolean alone when the caller set its negation
        # (CCACHE_NODEPEND vs CCACHE_DEPEND, CCACHE_HASHDIR vs CCACHE_NOHASHDIR).
        if name.startswith("CCACHE_NO"):
            opposite = "CCACHE_" + name.removeprefix("CCACHE_NO")
        elif name.startswith("CCACHE_"):
            opposite = "CCACHE_NO" + name.removeprefix("CCACHE_")
        else:
            opposite = name
        if name not in caller_env and opposite not in caller_env:
            env[name] = value

    if tool.name == "ccache":
        env["CCACHE_DIR"] = str(config.cache_dir)
        put("CCACHE_MAXSIZE", config.max_size)
        if config.remote:
            env["CCACHE_REMOTE_STORAGE"] = config.remote  # ccache 4.7 name (`ccache -p`: remote_storage)
        if source is not None:
            # Absolute paths under the source tree are rewritten relative to the
            # compile's cwd before hashing: a second checkout or a fresh build dir
            # produces the same hash.  System paths (/usr, /opt/rocm) stay absolute,
            # which is right: they are the same on every node of a fleet.
            put("CCACHE_BASEDIR", str(source))
        # The cwd is hashed when -g is on (vLLM's default RelWithDebInfo): without
        # this a new build dir never hits.  Cost: DW_AT_comp_dir of a hit names the
        # first builder's dir (debuggers then need a source path mapping).
        put("CCACHE_NOHASHDIR", "1")
        # content, not the default mtime: a toolchain unpacked at different times
        # (pip-installed ROCm, a container layer, another fleet node) has other
        # mtimes but the same bytes.  Hashing a ~100 MB clang costs ~40 ms a compile.
        put("CCACHE_COMPILERCHECK", "content")
        # Depend mode: on a miss, take the include list from the compiler's own -MD
        # output instead of running the preprocessor first.  A HIP preprocess
        # (host + device, ~3.5 MB of hip_runtime.h) costs ~0.35 s a file, +28% on a
        # cold build of 1-second kernels.  Compiles without -MD/-MMD fall back to
        # the normal mode by themselves; CMake/ninja and torch's cpp_extension pass -MD.
        put("CCACHE_DEPEND", "1")
    else:  # sccache
        env["SCCACHE_DIR"] = str(config.cache_dir)
        put("SCCACHE_CACHE_SIZE", config.max_size)
        if config.remote:
            var = SCCACHE_REMOTE_VARS.get(urlsplit(config.remote).scheme)
            if var:
                env[var] = config.remote
        if source is not None:
            put("SCCACHE_BASEDIRS", str(source))

    # CMake >= 3.17 initialises CMAKE_<LANG>_COMPILER_LAUNCHER from the environment
    # on a fresh configure; PyTorch's setup.py also forwards every CMAKE_* variable
    # as -D (its USE_CCACHE only covers C/C++, not HIP).
    # vLLM splits CMAKE_ARGS on whitespace: a bare cache tool with a space in its path goes there by
    # name (found on PATH); the job-limit shim does not (a bare `ccache` there would bypass the limit).
    env.update(launcher_env(Path(launcher_word), caller_env, cmake_args=recipe_uses_cmake,
                            bare_word=None if launcher is not None else tool.name))
    if wrapper_dir is not None:
        env["HIP_CLANG_PATH"] = str(wrapper_bin(wrapper_dir))
    return env


# --------------------------------------------------------------------------- hipcc wrappers

def wrapper_bin(wrapper_dir: Path) -> Path:
    """The directory to use as HIP_CLANG_PATH (wrapper_dir is a fake LLVM root: bin/ + lib/)."""
    return wrapper_dir / "bin"


def default_wrapper_dir(real_clang_dir: Path, tool: CacheTool, launcher: Path | None = None) -> Path:
    """One wrapper dir per (toolchain, cache tool, launcher shim), in rocmbuild's user cache dir."""
    via = f"\0{launcher}" if launcher is not None else ""
    key = hashlib.sha256(f"{real_clang_dir.resolve()}\0{tool.path}{via}".encode()).hexdigest()[:12]
    return paths.cache_dir("hip-clang-wrappers", key)


def wrapped_real_dir(path: Path) -> Path | None:
    """If ``path`` (a HIP_CLANG_PATH) is one of our wrapper bins, the real clang dir it wraps."""
    marker = path.parent / WRAPPER_MARKER
    try:
        return Path(marker.read_text().strip())
    except OSError:
        return None


_HIPCC_PATHS_RE = re.compile(r"^HIP_CLANG_PATH=(.+)$", re.MULTILINE)


def find_real_clang_dir(environ: Mapping[str, str], run: Run = proc.capture) -> Path | None:
    """The directory hipcc takes clang from (what HIP_CLANG_PATH would otherwise be).

    Asks hipcc itself (``HIPCC_VERBOSE=2`` prints its paths): its own defaults
    differ between ROCm (<root>/llvm/bin) and Debian (/usr/bin, clang++-15).
    """
    given = environ.get("HIP_CLANG_PATH")
    if given:
        return wrapped_real_dir(Path(given)) or Path(given)
    hipcc = shutil.which("hipcc", path=environ.get("PATH", os.defpath))
    if hipcc is not None:
        probe_env = {**environ, "HIPCC_VERBOSE": "2", "HIP_PLATFORM": environ.get("HIP_PLATFORM", "amd")}
        result = run([hipcc, "--version"], env=probe_env, timeout=60)
        m = _HIPCC_PATHS_RE.search(result.output)
        if m and Path(m.group(1).strip()).is_dir():
            return Path(m.group(1).strip())
    for root in (environ.get("ROCM_PATH"), "/opt/rocm"):
        if root:
            for sub in ("lib/llvm/bin", "llvm/bin"):
                if (Path(root) / sub / "clang++").exists():
                    return Path(root) / sub
    return None


_VERSIONED = re.compile(r"^clang(?:\+\+)?-(\d+)$")


def _clang_names(real_clang_dir: Path, llvm_bin: Path) -> dict[str, Path]:
    """Wrapper name -> real compiler it runs.

    hipcc.pl on ROCm calls $HIP_CLANG_PATH/clang++ (falling back to clang);
    Debian's calls clang++-15 / clang-15; hipcc.bin calls clang++.  C++ names
    run the real clang++ (driver mode comes from argv[0]), C names the real clang.
    """
    versions = {m.group(1) for d in (real_clang_dir, llvm_bin) if d.is_dir()
                for p in d.iterdir() if (m := _VERSIONED.match(p.name))}
    names: dict[str, Path] = {}
    for cxx in (False, True):
        base = "clang++" if cxx else "clang"
        real = llvm_bin / base
        if not real.exists():
            continue
        names[base] = real
        for v in sorted(versions):
            names[f"{base}-{v}"] = real
    return names


def _atomic_write(path: Path, text: str, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.chmod(mode)
    os.replace(tmp, path)  # concurrent rocmbuild runs never see a half-written wrapper


def _atomic_symlink(path: Path, target: Path) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.lnk")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(target)
    os.replace(tmp, path)


def wrapper_script(ccache_path: Path, real_compiler: Path) -> str:
    """The wrapper: compile-only calls (-c) go through the cache, everything else straight on.

    ``ccache_path`` is the job-limit shim in a run (launchshim.py: it takes a slot, then runs ccache)
    or ccache itself; both are called as ``TOOL COMPILER ARGS...``.

    hipcc also calls clang for ``--version``, ``-print-target-triple`` and links:
    through ccache those are uncacheable calls that only blur the per-attempt
    stats (two per hipcc call), so they bypass it.
    """
    cache, real = shlex.quote(str(ccache_path)), shlex.quote(str(real_compiler))
    return (
        "#!/bin/sh\n"
        "# Written by rocmbuild (rocmbuild/toolchain/cache.py): hipcc runs this as its clang.\n"
        "# Compiles (-c) go through the compiler cache; other calls run clang directly.\n"
        'for arg in "$@"; do\n'
        f'  if [ "$arg" = -c ]; then exec {cache} {real} "$@"; fi\n'
        "done\n"
        f'exec {real} "$@"\n'
    )


def write_wrappers(wrapper_dir: Path, real_clang_dir: Path, ccache_path: Path) -> Path:
    """Make ``wrapper_dir`` a stand-in LLVM root whose clang goes through the cache.

    Layout: ``bin/clang``, ``bin/clang++`` (+ versioned names such as clang++-15)
    are wrapper scripts; every other program of the real LLVM bin dir
    (clang-offload-bundler, lld, llvm-link, llvm-objcopy, ...) is a symlink to
    the real one; ``lib`` links to the real LLVM lib dir, because hipcc derives
    clang's resource headers from ``$HIP_CLANG_PATH/../lib/clang/<ver>/include``.
    ``ccache_path`` may also be an sccache binary (same calling convention).
    Returns the bin dir, the value for HIP_CLANG_PATH.  Idempotent and safe to
    run concurrently.
    """
    real_clang_dir = wrapped_real_dir(real_clang_dir) or real_clang_dir
    probe = next((real_clang_dir / n for n in ("clang++", "clang")
                  if (real_clang_dir / n).exists()), None)
    if probe is None:
        probe = next((p for p in sorted(real_clang_dir.glob("clang*-[0-9]*"))
                      if _VERSIONED.match(p.name)), None)
    if probe is None:
        raise FileNotFoundError(f"no clang or clang++ in {real_clang_dir}")
    llvm_bin = probe.resolve().parent   # Debian: /usr/bin/clang++-15 -> /usr/lib/llvm-15/bin
    names = _clang_names(real_clang_dir, llvm_bin)
    if not names:
        raise FileNotFoundError(f"no clang or clang++ in {llvm_bin}")

    bin_dir = wrapper_bin(wrapper_dir)
    bin_dir.mkdir(parents=True, exist_ok=True)
    for entry in sorted(llvm_bin.iterdir()):
        if entry.name not in names and not entry.name.startswith("."):
            _atomic_symlink(bin_dir / entry.name, entry)
    for name, real in names.items():
        _atomic_write(bin_dir / name, wrapper_script(ccache_path, real), 0o755)
    _atomic_symlink(wrapper_dir / "lib", (llvm_bin.parent / "lib").resolve())
    _atomic_write(wrapper_dir / WRAPPER_MARKER, f"{real_clang_dir}\n", 0o644)
    return bin_dir


def hipcc_uses_wrapper(env: Mapping[str, str], run: Run = proc.capture) -> bool:
    """Does hipcc, run with ``env``, call the wrapper's clang?

    Not guaranteed: Debian's hipvars.pm replaces HIP_CLANG_PATH with
    ``$HIP_ROCCLR_HOME/bin`` when that dir holds a ``clang`` (e.g. /usr/bin/clang
    from the clang package), and then device compiles bypass the cache.
    """
    wrapper = env.get("HIP_CLANG_PATH")
    hipcc = shutil.which("hipcc", path=env.get("PATH", os.defpath))
    if not wrapper or hipcc is None:
        return False
    result = run([hipcc, "--offload-arch=gfx90a", "--version"],
                 env={**env, "HIPCC_VERBOSE": "1"}, timeout=60)
    m = re.search(r"^hipcc-cmd: (\S+)", result.output, re.MULTILINE)
    return m is not None and Path(m.group(1)).parent == Path(wrapper)


# --------------------------------------------------------------------------- stats

@dataclass(frozen=True)
class CacheStats:
    """Counters of one attempt (the app zeroes them before it)."""

    hits: int                # direct + preprocessed hits, from local or remote storage
    misses: int
    remote_hits: int         # the part of ``hits`` served by remote storage
    uncacheable: int         # links, probes, -save-temps, multi-source calls...: run, not cached
    errors: int = 0

    @property
    def hit_rate(self) -> float | None:
        """hits / (hits + misses); None when nothing cacheable was compiled."""
        total = self.hits + self.misses
        return self.hits / total if total else None

    def to_json(self) -> dict[str, object]:
        """For summary.json's attempt record (key "cache")."""
        rate = self.hit_rate
        return {"hits": self.hits, "misses": self.misses, "remote_hits": self.remote_hits,
                "uncacheable": self.uncacheable, "errors": self.errors,
                "hit_rate": None if rate is None else round(rate, 4)}


def parse_ccache_stats(text: str) -> CacheStats:
    """Parse ``ccache --print-stats`` (ccache >= 4.0: ``key<TAB>value`` lines) (pure)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("\t")
        if sep and value.strip().isdigit():
            values[key.strip()] = int(value.strip())
    if not values:
        raise ValueError("no ccache statistics in the output")
    return CacheStats(
        hits=sum(values.get(k, 0) for k in CCACHE_HIT_KEYS),
        misses=values.get("cache_miss", 0),
        remote_hits=values.get("remote_storage_hit", 0),
        uncacheable=sum(values.get(k, 0) for k in CCACHE_UNCACHEABLE_KEYS),
        errors=sum(values.get(k, 0) for k in CCACHE_ERROR_KEYS),
    )


def _count_sum(node: object) -> int:
    if isinstance(node, dict):
        counts = node.get("counts", {})
        return sum(v for v in counts.values() if isinstance(v, int))
    return node if isinstance(node, int) else 0


def parse_sccache_stats(text: str) -> CacheStats:
    """Parse ``sccache --show-stats --stats-format=json`` (checked with sccache 0.16) (pure)."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no sccache statistics in the output")
    stats = json.loads(text[start:]).get("stats", {})
    return CacheStats(
        hits=_count_sum(stats.get("cache_hits")),
        misses=_count_sum(stats.get("cache_misses")),
        remote_hits=0,  # sccache does not tell local from remote hits
        uncacheable=_count_sum(stats.get("requests_not_cacheable"))
        + _count_sum(stats.get("requests_not_compile")),
        errors=_count_sum(stats.get("cache_errors")) + _count_sum(stats.get("cache_read_errors"))
        + _count_sum(stats.get("cache_write_errors")),
    )


def _tool_argv(env: Mapping[str, str], tool: CacheTool | None) -> tuple[str, str] | None:
    if tool is not None:
        return tool.name, str(tool.path)
    for name in SUPPORTED_TOOLS:
        found = shutil.which(name, path=env.get("PATH", os.defpath))
        if found:
            return name, found
    return None


def read_stats(env: Mapping[str, str], run: Run = proc.capture,
               tool: CacheTool | None = None) -> CacheStats | None:
    """The counters of the cache that ``env`` (the attempt's environment) points at.

    None when the tool cannot be run or its output is not understood: stats are
    a report, never a reason to fail a build.
    """
    which = _tool_argv(env, tool)
    if which is None:
        return None
    name, path = which
    argv = [path, "--print-stats"] if name == "ccache" else [path, "--show-stats", "--stats-format=json"]
    result = run(argv, env=env, timeout=60)
    if not result.ok:
        return None
    try:
        return parse_ccache_stats(result.output) if name == "ccache" else parse_sccache_stats(result.output)
    except (ValueError, json.JSONDecodeError):
        return None


def zero_stats(env: Mapping[str, str], run: Run = proc.capture, tool: CacheTool | None = None) -> bool:
    """Zero the counters (before each attempt); True on success."""
    which = _tool_argv(env, tool)
    if which is None:
        return False
    name, path = which
    return run([path, "-z" if name == "ccache" else "--zero-stats"], env=env, timeout=60).ok


# ccache 4.7's boolean settings by environment name (without the CCACHE_/CCACHE_NO prefix).
_CCACHE_BOOLEANS = ("ABSSTDERR", "COMPRESS", "DEBUG", "DEPEND", "DIRECT", "DISABLE", "FILECLONE",
                    "HARDLINK", "HASHDIR", "INODECACHE", "COMMENTS", "PCH_EXTSUM", "READONLY",
                    "READONLY_DIRECT", "RECACHE", "REMOTE_ONLY", "RESHARE", "CPP2", "STATS")
_FALSY = {"0", "false", "disable", "no", "off"}


def check_environment(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Settings in the caller's environment that make ccache 4.x fail EVERY compile (pure).

    ccache treats a boolean variable as true when it is set at all, and refuses
    "0"/"false" with "invalid boolean environment variable value" -- each
    compile then exits 1, which looks like a broken toolchain.
    """
    problems = []
    for base in _CCACHE_BOOLEANS:
        for name in (f"CCACHE_{base}", f"CCACHE_NO{base}"):
            value = environ.get(name)
            if value is not None and value.strip().lower() in _FALSY:
                problems.append(f"{name}={value} makes ccache fail every compile: unset it "
                                f"(ccache booleans are true when set; use the CCACHE_NO.../CCACHE_... twin)")
    return tuple(problems)


# --------------------------------------------------------------------------- remedies

_INVALIDATING: dict[str, str] = {
    "lower_optimization": (
        "changing -O3 to -O2 changes every compile command: expect a cold cache (0% hits) "
        "on the next attempt, i.e. a full-length rebuild"
    ),
}


def invalidates_cache(remedy_name: str) -> str | None:
    """A warning when a remedy makes the next attempt miss the cache; None when it does not.

    clean_build keeps the cache (it lives outside the source tree), so a retry
    after a clean is mostly hits; reduce_jobs, add_library_paths (link/load
    paths are not part of a compile's hash), wait_and_retry and
    uninstall_packages do not change compile commands.
    """
    return _INVALIDATING.get(remedy_name)


# --------------------------------------------------------------------------- doctor

@dataclass(frozen=True)
class CacheDoctorInfo:
    """What ``rocmbuild doctor`` says about the compiler cache."""

    tool: str | None
    path: str | None
    version: str | None
    features: tuple[str, ...]
    cache_dir: str | None
    size_bytes: int | None
    files: int | None
    max_size: str | None
    remote: str | None
    remote_reachable: bool | None      # None: not checked / no remote
    hip_clang_path: str | None         # the real clang dir the wrappers would wrap
    problems: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"tool": self.tool, "path": self.path, "version": self.version,
                "features": list(self.features), "cache_dir": self.cache_dir,
                "size_bytes": self.size_bytes, "files": self.files, "max_size": self.max_size,
                "remote": self.remote, "remote_reachable": self.remote_reachable,
                "hip_clang_path": self.hip_clang_path, "problems": list(self.problems)}

    def lines(self) -> list[str]:
        if self.tool is None:
            return ["compiler cache: none (install ccache to make retries after a clean fast)"]
        size = "unknown" if self.size_bytes is None else f"{self.size_bytes / 2**30:.2f} GiB"
        out = [f"compiler cache: {self.tool} {self.version} ({self.path})",
               f"  dir: {self.cache_dir} ({size}, {self.files if self.files is not None else '?'} files,"
               f" max {self.max_size})"]
        if self.remote:
            reach = {True: "reachable", False: "NOT reachable", None: "not checked"}[self.remote_reachable]
            out.append(f"  remote: {self.remote} ({reach})")
        out.append(f"  hipcc device compiles: wrap clang in {self.hip_clang_path or 'n/a (no hipcc)'}")
        out.extend(f"  problem: {p}" for p in self.problems)
        return out


def remote_reachable(url: str, timeout: float = 1.0) -> bool | None:
    """TCP connect to a redis/http remote's host:port; None for schemes without a port."""
    parts = urlsplit(url)
    port = parts.port or {"redis": 6379, "rediss": 6379, "http": 80, "https": 443}.get(parts.scheme)
    if not parts.hostname or port is None:
        return None
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


def doctor_info(tool: CacheTool | None, config: CacheConfig | None, environ: Mapping[str, str],
                run: Run = proc.capture, *, probe_remote: bool = True,
                reachable: Callable[[str], bool | None] = remote_reachable) -> CacheDoctorInfo:
    """Tool, version, dir, size, remote (and whether it answers), the clang that hipcc would use."""
    if tool is None or config is None:
        return CacheDoctorInfo(None, None, None, (), None, None, None, None, None, None, None)
    problems: list[str] = list(check_environment(environ)) if tool and tool.name == "ccache" else []
    size = files = None
    if tool.name == "ccache" and config.cache_dir.is_dir():
        result = run([str(tool.path), "--print-stats"],
                     env={**environ, "CCACHE_DIR": str(config.cache_dir)}, timeout=60)
        kib = re.search(r"^cache_size_kibibyte\t(\d+)", result.output, re.MULTILINE)
        nfiles = re.search(r"^files_in_cache\t(\d+)", result.output, re.MULTILINE)
        size = int(kib.group(1)) * 1024 if kib else None
        files = int(nfiles.group(1)) if nfiles else None
    elif tool.name == "ccache":
        size, files = 0, 0  # created on first use
    is_reachable = None
    if config.remote:
        problem = check_remote(tool, config.remote)
        if problem:
            problems.append(problem)
        elif probe_remote:
            is_reachable = reachable(config.remote)
            if is_reachable is False:
                problems.append(f"remote cache {config.remote} does not answer: builds run, "
                                "but without fleet hits")
    real = find_real_clang_dir(environ, run)
    return CacheDoctorInfo(tool.name, str(tool.path), tool.version, tool.features,
                           str(config.cache_dir), size, files, config.max_size, config.remote,
                           is_reachable, str(real) if real else None, tuple(problems))


# --- one build's cache session (what app.py uses) ------------------------------------------

@dataclass(frozen=True)
class CompilerCache:
    """The cache as one run uses it: the environment changes, and stats per attempt."""

    tool: CacheTool
    config: CacheConfig
    variables: tuple[tuple[str, str], ...]
    device_compiles_cached: bool
    warnings: tuple[str, ...] = ()

    @classmethod
    def for_build(cls, *, env: Mapping[str, str], source: Path, remote: str | None,
                  run: Run = proc.capture, hip_compiler_is_clang: bool = False) -> CompilerCache | None:
        """Set up the cache for a build in ``source`` (None when no cache tool is installed).

        ``hip_compiler_is_clang``: the build compiles device code with a clang named by HIPCXX
        (a CMake HIP-language build): CMAKE_HIP_COMPILER_LAUNCHER routes those compiles, and
        hipcc's clang wrapper would wrap a compiler the build does not use.
        Raises UsageError for a ``--cache-remote`` the tool cannot use (exit 2).
        """

        tool = detect_cache(env, run)
        if tool is None:
            return None
        config = make_config(tool, env, remote=remote)
        if config.remote:
            problem = check_remote(tool, config.remote)
            if problem:
                raise UsageError(problem, todo="pass a redis:// or http:// URL the cache tool supports, "
                                 "or leave --cache-remote out")
        warnings = list(check_environment(env))
        wrapper_dir: Path | None = None
        real = find_real_clang_dir(env, run) if tool.name == "ccache" and not hip_compiler_is_clang else None
        # Every compile goes through the job-limit launcher first, then the cache (the shim runs both).
        shim: Path | None = None
        try:
            shim = install_launcher(tool.path)
        except OSError as exc:  # the cache as before the limit (the tool itself launches), not a failed command
            warnings.append(launcher_unavailable(exc))
        if real is not None:
            wrapper_dir = default_wrapper_dir(real, tool, shim)
            write_wrappers(wrapper_dir, real, shim or tool.path)
        # Setting CMAKE_ARGS is harmless for builds that do not read it, and vLLM does.
        variables = cache_env(config, recipe_uses_cmake=True, caller_env=env, wrapper_dir=wrapper_dir,
                              source=source, launcher=shim)
        device = hip_compiler_is_clang and "HIP" in LAUNCHER_LANGS
        if wrapper_dir is not None:
            device = hipcc_uses_wrapper({**env, **variables}, run)
            if not device:
                warnings.append("hipcc does not use the clang wrapper (a clang in /usr/bin shadows "
                                "HIP_CLANG_PATH?): device compiles are not cached")
        return cls(tool, config, tuple(variables.items()), device, tuple(warnings))

    def changes(self) -> tuple[EnvChange, ...]:

        return tuple(EnvChange(name, "set", value, f"compiler cache ({self.tool.name})")
                     for name, value in self.variables)

    def zero(self, env: Mapping[str, str], run: Run = proc.capture) -> None:
        zero_stats(env, run, self.tool)

    def stats(self, env: Mapping[str, str], run: Run = proc.capture) -> CacheStats | None:
        return read_stats(env, run, self.tool)

    def describe(self) -> dict[str, object]:
        return {"tool": self.tool.name, "version": self.tool.version, "dir": str(self.config.cache_dir),
                "remote": self.config.remote, "device_compiles_cached": self.device_compiles_cached}
