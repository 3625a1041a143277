"""Build hipvec: a CPython extension whose device code hipcc compiles per GPU target.

    HIP_PLATFORM=amd HIPVEC_ARCHS="gfx90a;gfx908" \
    LIBRARY_PATH=$PWD/vendor/lib python3 setup.py build_ext --inplace

Environment:
  HIPVEC_ARCHS   GPU targets (";", "," or space separated); each becomes --offload-arch=X. Required.
  HIPCC          the hipcc to use (default: $ROCM_PATH/bin/hipcc, else hipcc on PATH)
  CXX            compiler for the host-only Python binding (default: c++)
  HIPFLAGS / CXXFLAGS   extra flags for the device / host compiles (HIPCC_COMPILE_FLAGS_APPEND
                 is honoured by hipcc itself)
  MAX_JOBS       parallel compiles (default: CPU count)
  LIBRARY_PATH   must name the directory of libhipvecmath.so (built by `make -C vendor/hipvecmath`
                 into vendor/lib): the link uses plain -lhipvecmath, no -L, like a ROCm library.

The build is incremental the way many real builds are: an object is rebuilt only
when it is older than its sources.  Changing HIPVEC_ARCHS alone does NOT rebuild
anything: remove build/ (and the built .so) to rebuild for other targets.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
MATH_INCLUDE = HERE / "vendor" / "hipvecmath" / "include"
HEADERS = [SRC / "hipvec.h", MATH_INCLUDE / "hipvecmath.h"]


def requested_archs() -> list[str]:
    raw = os.environ.get("HIPVEC_ARCHS", "").strip()
    archs = [a for a in re.split(r"[;,\s]+", raw) if a]
    if not archs:
        sys.exit("error: HIPVEC_ARCHS is not set: name the GPU targets to build for, e.g. HIPVEC_ARCHS=gfx90a")
    return archs


def find_hipcc() -> str:
    if os.environ.get("HIPCC"):
        return os.environ["HIPCC"]
    rocm = os.environ.get("ROCM_PATH")
    if rocm and (Path(rocm) / "bin" / "hipcc").exists():
        return str(Path(rocm) / "bin" / "hipcc")
    found = shutil.which("hipcc")
    if not found:
        sys.exit("error: hipcc not found: install ROCm (or Debian's hipcc) or set HIPCC")
    return found


def stale(target: Path, deps: list[Path]) -> bool:
    """True when target is missing or older than any dependency (mtime only, like make)."""
    if not target.exists():
        return True
    built = target.stat().st_mtime
    return any(dep.stat().st_mtime > built for dep in deps)


def run(argv: list[str], env: dict[str, str]) -> None:
    print(shlex.join(argv), flush=True)
    code = subprocess.call(argv, env=env)
    if code != 0:
        sys.exit(f"error: command failed with exit status {code}: {argv[0]}")


def bundle_math_library(package_dir: Path, env: dict[str, str]) -> None:
    """A wheel carries its own libhipvecmath.so.1 (the soname the extension needs) next to the
    extension, found through RUNPATH $ORIGIN: it installs and imports on a node without the vendored lib dir
    and no LD_LIBRARY_PATH."""
    for directory in env.get("LIBRARY_PATH", "").split(os.pathsep):
        library = Path(directory) / "libhipvecmath.so.1" if directory else None
        if library is not None and library.is_file():
            shutil.copy2(library, package_dir / "libhipvecmath.so.1")  # follows the soname symlink
            print(f"bundled {library} into {package_dir}", flush=True)
            return
    sys.exit("error: libhipvecmath.so.1 is not on LIBRARY_PATH: cannot bundle it into the wheel")


class HipBuildExt(build_ext):
    """Compile the .hip source with hipcc for every target, the binding with c++, link with hipcc."""

    def build_extension(self, ext: Extension) -> None:
        archs = requested_archs()
        hipcc = find_hipcc()
        env = dict(os.environ)
        # Without it hipcc picks the NVIDIA platform on a host that also has CUDA.
        env.setdefault("HIP_PLATFORM", "amd")
        arch_flags = [f"--offload-arch={a}" for a in archs]
        obj_dir = Path(self.build_temp)
        obj_dir.mkdir(parents=True, exist_ok=True)
        includes = [f"-I{SRC}", f"-I{MATH_INCLUDE}"]

        kernels_src = SRC / "hipvec_kernels.hip"
        module_src = SRC / "hipvec_module.cpp"
        kernels_obj = obj_dir / "hipvec_kernels.o"
        module_obj = obj_dir / "hipvec_module.o"
        compiles = [
            (kernels_obj, [kernels_src, *HEADERS],
             [hipcc, *arch_flags, "-fPIC", "-O3", *includes,
              f'-DHIPVEC_BUILT_ARCHS="{";".join(archs)}"',
              *shlex.split(env.get("HIPFLAGS", "")),
              "-c", str(kernels_src), "-o", str(kernels_obj)]),
            (module_obj, [module_src, SRC / "hipvec.h"],
             [env.get("CXX", "c++"), "-fPIC", "-O2", *includes,
              f"-I{sysconfig.get_paths()['include']}",
              *shlex.split(env.get("CXXFLAGS", "")),
              "-c", str(module_src), "-o", str(module_obj)]),
        ]
        todo = []
        for obj, deps, argv in compiles:
            if stale(obj, deps):
                todo.append(argv)
            else:
                print(f"skipping {obj} (up to date)", flush=True)
        jobs = max(1, int(env.get("MAX_JOBS") or os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=min(jobs, max(1, len(todo)))) as pool:
            for future in [pool.submit(run, argv, env) for argv in todo]:
                future.result()

        target = Path(self.get_ext_fullpath(ext.name))
        objects = [kernels_obj, module_obj]
        if not stale(target, objects):
            print(f"skipping {target} (up to date)", flush=True)
            if self.building_wheel():
                bundle_math_library(target.parent, env)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        # hipcc also needs the targets when linking (else it asks rocm_agent_enumerator);
        # -lhipvecmath without -L: the directory must come from LIBRARY_PATH.
        # RUNPATH $ORIGIN finds a libhipvecmath.so next to the extension: only a wheel has one
        # (below); in the source tree the loader still needs LD_LIBRARY_PATH, as before.
        run([hipcc, *arch_flags, "-shared", "-fPIC", *map(str, objects), "-o", str(target),
             "-lhipvecmath", "-Wl,-rpath,$ORIGIN"], env)
        if self.building_wheel():
            bundle_math_library(target.parent, env)

    def building_wheel(self) -> bool:
        # setuptools clears self.inplace while building (it copies to the tree afterwards), so
        # ask which command runs: `pip wheel` runs bdist_wheel through the PEP 517 backend.
        return "bdist_wheel" in (self.distribution.commands or [])


setup(
    name="hipvec",
    version="1.0.0",
    description="A tiny Python package with a HIP kernel (rocmbuild's bundled example)",
    packages=["hipvec"],
    ext_modules=[Extension("hipvec._hipvec", sources=[])],
    cmdclass={"build_ext": HipBuildExt},
    python_requires=">=3.9",
)
