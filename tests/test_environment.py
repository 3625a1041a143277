"""Environment composition: pure, as data."""

from __future__ import annotations

from pathlib import Path

from rocmbuild.host.rocm import Rocm
from rocmbuild.planning.environment import (
    BuildVariables,
    EnvChange,
    apply_changes,
    base_changes,
    changed_variables,
    choose_jobs,
)

GIB = 2**30
OPT = Path("/opt/rocm-6.2.4")
ROCM = Rocm(OPT, bin_dirs=(OPT / "bin",), lib_dirs=(OPT / "lib", OPT / "lib/llvm/lib"), llvm_bin=OPT / "lib/llvm/bin")


def compose(caller: dict[str, str], **kw: object) -> dict[str, str]:
    variables: dict[str, object] = dict(arch_variables=("PYTORCH_ROCM_ARCH",), arch_value="gfx942",
                                        job_variables=("MAX_JOBS",), jobs=8, jobs_option=False)
    args: dict[str, object] = dict(caller_env=caller, rocm=ROCM, rocm_path_option=False,
                                   recipe_env={"VLLM_TARGET_DEVICE": "rocm"})
    for key, value in kw.items():
        (variables if key in variables else args)[key] = value
    return apply_changes(caller, base_changes(variables=BuildVariables(**variables), **args))  # type: ignore[arg-type]


def test_link_and_load_paths_both_get_every_lib_dir() -> None:
    env = compose({"PATH": "/usr/bin"})
    for var in ("LIBRARY_PATH", "LD_LIBRARY_PATH"):
        assert env[var].split(":") == ["/opt/rocm-6.2.4/lib", "/opt/rocm-6.2.4/lib/llvm/lib"]
    assert env["PATH"].split(":") == ["/opt/rocm-6.2.4/bin", "/opt/rocm-6.2.4/lib/llvm/bin", "/usr/bin"]
    assert env["ROCM_PATH"] == env["ROCM_HOME"] == env["HIP_PATH"] == "/opt/rocm-6.2.4"
    assert env["HIP_PLATFORM"] == "amd" and env["PYTORCH_ROCM_ARCH"] == "gfx942"
    assert env["MAX_JOBS"] == "8" and env["VLLM_TARGET_DEVICE"] == "rocm"
    assert env["CMAKE_PREFIX_PATH"] == "/opt/rocm-6.2.4"


def test_caller_values_are_kept_and_path_lists_appended() -> None:
    caller = {"PATH": "/usr/bin", "LD_LIBRARY_PATH": "/mine::/opt/rocm-6.2.4/lib", "ROCM_PATH": "/custom",
              "HIP_PLATFORM": "amd", "MAX_JOBS": "3", "VLLM_TARGET_DEVICE": "cpu"}
    env = compose(caller)
    assert env["LD_LIBRARY_PATH"] == "/mine:/opt/rocm-6.2.4/lib:/opt/rocm-6.2.4/lib/llvm/lib", "dedup, no empties"
    assert env["ROCM_PATH"] == "/custom"
    assert env["MAX_JOBS"] == "3"
    assert env["VLLM_TARGET_DEVICE"] == "cpu"


def test_options_override_caller_values() -> None:
    env = compose({"ROCM_PATH": "/custom", "MAX_JOBS": "3"}, rocm_path_option=True, jobs_option=True, jobs=5)
    assert env["ROCM_PATH"] == "/opt/rocm-6.2.4" and env["MAX_JOBS"] == "5"


def test_system_bin_dir_already_on_path_keeps_its_place() -> None:
    system = Rocm(Path("/usr"), bin_dirs=(Path("/usr/bin"),), lib_dirs=(Path("/usr/lib/x86_64-linux-gnu"),),
                  llvm_bin=Path("/usr/lib/llvm-15/bin"), layout="system")
    env = compose({"PATH": "/venv/bin:/usr/bin"}, rocm=system)
    assert env["PATH"] == "/usr/lib/llvm-15/bin:/venv/bin:/usr/bin"


def test_no_rocm_still_sets_platform_arch_and_jobs() -> None:
    env = compose({}, rocm=None)
    assert "ROCM_PATH" not in env and "LIBRARY_PATH" not in env
    assert env["HIP_PLATFORM"] == "amd" and env["PYTORCH_ROCM_ARCH"] == "gfx942"


def test_apply_changes_actions() -> None:
    base = {"A": "1", "P": "/x", "GONE": "y"}
    changes = [EnvChange("A", "default", "2"), EnvChange("B", "default", "3"), EnvChange("P", "prepend", "/y:/x"),
               EnvChange("GONE", "unset"), EnvChange("A", "set", "4")]
    env = apply_changes(base, changes)
    assert env == {"A": "4", "B": "3", "P": "/y:/x"}
    assert base == {"A": "1", "P": "/x", "GONE": "y"}, "pure: the input is untouched"
    assert changed_variables(base, env) == {"A": ("1", "4"), "B": (None, "3"), "P": ("/x", "/y:/x"),
                                            "GONE": ("y", None)}


def test_jobs_are_memory_aware() -> None:
    assert choose_jobs(64, 100 * GIB, 4)[0] == 25
    assert choose_jobs(2, 100 * GIB, 4)[0] == 2
    jobs, why = choose_jobs(64, 3 * GIB, 4)
    assert jobs == 1 and "memory" in why


def test_rocm_path_option_moves_its_bin_dirs_first_even_when_already_on_path() -> None:
    caller = {"PATH": "/usr/bin:/bin:/opt/rocm-6.2.4/bin"}
    env = compose(caller, rocm_path_option=True)
    assert env["PATH"].split(":")[:2] == ["/opt/rocm-6.2.4/bin", "/opt/rocm-6.2.4/lib/llvm/bin"]
    assert env["PATH"].split(":").count("/opt/rocm-6.2.4/bin") == 1
