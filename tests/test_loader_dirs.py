"""The loader's default dirs never reach LD_LIBRARY_PATH/LIBRARY_PATH; hipcc's own LLVM on PATH."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from rocmbuild.host import facts as host
from rocmbuild.host.rocm import Rocm
from rocmbuild.options import BuildOptions
from rocmbuild.planning.environment import BuildVariables, apply_changes, base_changes
from rocmbuild.planning.planning import plan_all
from rocmbuild.services import Services

SYSTEM = Rocm(Path("/usr"), bin_dirs=(Path("/usr/bin"),), lib_dirs=(Path("/usr/lib/x86_64-linux-gnu"),),
              llvm_bin=Path("/usr/lib/llvm-15/bin"), layout="system")
PROBE = "import sys, ssl; print(sys.version); print(ssl.OPENSSL_VERSION)"


def test_system_layout_lib_dir_is_not_put_on_loader_paths() -> None:
    changes = base_changes(
        caller_env={"PATH": "/usr/bin"}, rocm=SYSTEM, rocm_path_option=False,
        variables=BuildVariables(arch_variables=("PYTORCH_ROCM_ARCH",), arch_value="gfx942",
                                 job_variables=("MAX_JOBS",), jobs=4, jobs_option=False),
        recipe_env={}, loader_dirs=host.STATIC_LOADER_DIRS,
    )
    env = apply_changes({"PATH": "/usr/bin"}, changes)
    assert "LD_LIBRARY_PATH" not in env and "LIBRARY_PATH" not in env
    assert env["ROCM_PATH"] == "/usr"


def test_opt_rocm_lib_dirs_still_get_both_paths() -> None:
    rocm = Rocm(Path("/opt/rocm"), bin_dirs=(Path("/opt/rocm/bin"),),
                lib_dirs=(Path("/opt/rocm/lib"), Path("/usr/lib")))
    changes = base_changes(
        caller_env={}, rocm=rocm, rocm_path_option=False,
        variables=BuildVariables(arch_variables=(), arch_value="gfx942", job_variables=(), jobs=4, jobs_option=False),
        recipe_env={}, loader_dirs=host.STATIC_LOADER_DIRS,
    )
    env = apply_changes({}, changes)
    assert env["LD_LIBRARY_PATH"] == env["LIBRARY_PATH"] == "/opt/rocm/lib"


def test_ldconfig_builtin_dirs_are_parsed() -> None:
    output = ("/usr/local/lib: (from /etc/ld.so.conf.d/libc.conf:2)\n\tlibfoo.so.1 -> libfoo.so.1.0\n"
              "/lib/x86_64-linux-gnu: (from /etc/ld.so.conf.d/x86_64-linux-gnu.conf:3)\n"
              "/lib: (from <builtin>:0)\n/usr/lib: (from <builtin>:0)\n")
    assert host.parse_ldconfig_dirs(output) == ["/lib", "/usr/lib"]


def _real_interpreter() -> str:
    # The interpreter behind this venv (pyenv's 3.11.7 here): the one whose RUNPATH the loader dirs would override.
    return os.path.realpath(sys.executable)


def test_interpreter_loads_the_same_libpython_inside_and_outside_the_build_env(tmp_path: Path) -> None:
    python = _real_interpreter()
    # This machine's pyenv Python links a shared libpython; Debian has another libpython3.11 in its lib dir.
    assert sysconfig.get_config_var("Py_ENABLE_SHARED") == 1, "expected a shared-libpython interpreter"
    plan = plan_all(["example"], BuildOptions(arch="gfx90a", source=tmp_path), dict(os.environ), Services())[0]
    assert plan.rocm.root is not None, "this machine has Debian's HIP in /usr"
    outside = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, check=False)
    inside = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, check=False, env=plan.env)
    assert outside.returncode == 0, outside.stderr
    assert inside.returncode == 0, inside.stderr          # main: undefined symbol _PyModule_Add in _ssl
    assert inside.stdout == outside.stdout
    for variable in ("LD_LIBRARY_PATH", "LIBRARY_PATH"):
        entries = {os.path.realpath(p) for p in plan.env.get(variable, "").split(":") if p}
        assert not entries & {os.path.realpath(d) for d in host.loader_default_dirs()}


def _fake_debian(fs: Path, hipcc_text: str) -> None:
    usr = fs / "usr"
    (usr / "bin").mkdir(parents=True)
    (usr / "bin" / "hipcc").write_text(hipcc_text)
    (usr / "lib" / "x86_64-linux-gnu").mkdir(parents=True)
    (usr / "lib" / "x86_64-linux-gnu" / "libamdhip64.so.5").write_text("")
    for version in ("15", "19"):
        (usr / "lib" / f"llvm-{version}" / "bin").mkdir(parents=True)
        (usr / "lib" / f"llvm-{version}" / "bin" / "clang").write_text("")


@pytest.mark.parametrize(("script", "expected"), [
    ('$HIPCC="$HIP_CLANG_PATH/clang++-15";\n', "llvm-15"),   # HIP 5.2's hipcc.pl
    ("#!/bin/sh\nexec hipcc.bin \"$@\"\n", "llvm-19"),         # names no clang: the newest
])
def test_system_llvm_bin_is_the_one_hipcc_runs(tmp_path: Path, script: str, expected: str) -> None:
    _fake_debian(tmp_path, script)
    found = host.discover_rocm(None, {}, fs_root=tmp_path)
    assert found is not None and found.llvm_bin == tmp_path / "usr" / "lib" / expected / "bin"


def test_real_debian_hipcc_gets_llvm_15_on_path(tmp_path: Path) -> None:
    plan = plan_all(["example"], BuildOptions(arch="gfx90a", source=tmp_path), dict(os.environ), Services())[0]
    first_llvm = next(p for p in plan.env["PATH"].split(":") if "/llvm" in p)
    assert first_llvm == "/usr/lib/llvm-15/bin"     # hipcc 5.2 runs clang++-15; llvm-19 is also installed
