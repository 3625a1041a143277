"""Plan tells the truth, durations need a unit, JSON for scripts.

Through the installed command with the real hipcc (HIP 5.2: accepts gfx90a, rejects gfx942), real
pip and scripted builds (tests/fakebuild.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from test_e2e_ladder import FAKEBUILD, ROCMBUILD, base_env, write_recipe
from wheels import build_wheel

from rocmbuild import __version__
from rocmbuild.checks.preflight import Check
from rocmbuild.diagnosis.nextstep import exact_command, preflight_todo
from rocmbuild.host.libraries import install_line

RUN_KEYS = {"todo", "stop_reason", "started", "finished", "duration_s", "rocmbuild_version", "preflight"}


def cli(tmp: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ROCMBUILD, *args], env=env or base_env(tmp), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def recipe_file(tmp: Path, text: str) -> Path:
    path = tmp / "r.toml"
    path.write_text(text)
    return path


# --- item 4: plan runs the no-build checks and exits like the run -------------------------------

@pytest.mark.hip
@pytest.mark.integration
def test_plan_exits_4_like_the_run_when_the_compiler_rejects_the_arch(tmp_path: Path) -> None:
    recipe = str(write_recipe(tmp_path, "ok"))
    plan = cli(tmp_path, "plan", recipe, "--source", str(tmp_path), "--arch", "gfx942")
    assert plan.returncode == 4, plan.stderr
    assert "Plan for recipe 'fake'" in plan.stdout, "the plan is still printed"
    assert "[fail] arch gfx942" in plan.stdout and "invalid target ID 'gfx942'" in plan.stderr
    run = cli(tmp_path, recipe, "--source", str(tmp_path), "--arch", "gfx942", "--run-dir", str(tmp_path / "run"),
              "--no-cache")
    assert run.returncode == plan.returncode == 4
    ok = cli(tmp_path, "plan", recipe, "--source", str(tmp_path), "--arch", "gfx90a")
    assert ok.returncode == 0, ok.stderr
    assert "[ok] arch gfx90a" in ok.stdout


@pytest.mark.hip
@pytest.mark.integration
def test_every_missing_library_in_one_install_line_plan_and_run(tmp_path: Path) -> None:
    text = write_recipe(tmp_path, "ok").read_text() + '[preflight]\nlibraries = ["rocblas", "hipblas", "MIOpen"]\n'
    recipe = str(recipe_file(tmp_path, text))
    plan = cli(tmp_path, "plan", recipe, "--source", str(tmp_path), "--arch", "gfx90a")
    assert plan.returncode == 4
    todo_line = next(line for line in plan.stderr.splitlines() if "what to do" in line)
    # One line for all three; Debian 12 has none of them, so it names the ROCm repository's packages.
    assert "apt-get install rocblas-dev hipblas-dev miopen-hip-dev" in todo_line
    run = cli(tmp_path, recipe, "--source", str(tmp_path), "--arch", "gfx90a", "--run-dir", str(tmp_path / "run"),
              "--no-cache", "--json")
    assert run.returncode == 4
    summary = json.loads(run.stdout.splitlines()[-1])
    assert "rocblas-dev hipblas-dev miopen-hip-dev" in summary["todo"]
    failed = [c["check"] for c in summary["preflight"] if not c["ok"]]
    assert failed == ["library rocblas", "library hipblas", "library MIOpen"]
    assert any(c["check"] == "arch gfx90a" and c["ok"] for c in summary["preflight"]), "every check, not only fails"
    assert "3 checks failed" in summary["stop_reason"]


def test_a_cpu_torch_refusal_names_the_command_that_builds_rocm_torch() -> None:
    failed = [Check("torch (ROCm)", "fail", "torch 2.9.0 is a CPU build", "pip uninstall torch, then build it",
                    "toolchain_missing")]
    todo = preflight_todo(failed, exact_command(["torch", "vllm"], ["gfx942"]))
    assert todo == "pip uninstall torch, then build it (or build torch in the same run: " \
                   "`rocmbuild torch vllm --arch gfx942`)"


@pytest.mark.integration
def test_build_and_plan_refuse_a_missing_requires_alike_naming_the_exact_command(tmp_path: Path) -> None:
    """On this host torch is not installed: `rocmbuild vllm` and `plan vllm` both exit 2 with the command."""
    for args in (["vllm"], ["plan", "vllm"]):
        proc = cli(tmp_path, *args, "--arch", "gfx942", "--source", str(tmp_path))
        assert proc.returncode == 2, proc.stderr
        assert "requires 'torch'" in proc.stderr and "`rocmbuild torch vllm --arch gfx942`" in proc.stderr
    assert not (tmp_path / "state" / "rocmbuild" / "runs").exists() or not any(
        (tmp_path / "state" / "rocmbuild" / "runs").iterdir()), "nothing was run"


def test_preflight_todo_joins_libraries_and_keeps_the_other_todos() -> None:
    failed = [Check("library rocblas", "fail", "x", "install a", "missing_library"),
              Check("arch gfx942", "fail", "rejected", "install ROCm 6", "unsupported_arch"),
              Check("library rccl", "fail", "x", "install b", "missing_library")]
    todo = preflight_todo(failed)
    # A ROCm too old for the arch comes first: it decides which libraries fit.
    assert todo == "install ROCm 6; then install the missing libraries (rocblas, rccl): " + install_line(
        ["rocblas", "rccl"])
    assert "install a" not in todo
    assert exact_command(["torch", "vllm", "torch"], ["gfx942"]) == "rocmbuild torch vllm --arch gfx942"


def _wheel(directory: Path, module: str) -> Path:
    """A real, minimal pure-Python wheel (what pip installs from an index)."""
    return build_wheel(directory, module, "1.0", {f"{module}/__init__.py": "VERSION = '1.0'\n"})


PREPARE_RECIPE = """
name = "prep"
[env]
PYTHONPATH = "{site}"
[steps]
prepare = ["{python} -m pip install --quiet --no-index --no-deps --target {site} {wheel}"]
build = ["{python} {fakebuild} ok"]
[preflight]
python_modules = ["rbfakemod"]
"""


@pytest.mark.hip
@pytest.mark.parametrize(("installed", "exit_code"), [("rbfakemod", 0), ("rbothermod", 4)])
@pytest.mark.integration
def test_modules_a_prepare_step_installs_are_checked_after_it(tmp_path: Path, installed: str,
                                                              exit_code: int) -> None:
    site = tmp_path / "site"
    recipe = recipe_file(tmp_path, PREPARE_RECIPE.format(site=site, python=sys.executable, fakebuild=FAKEBUILD,
                                                         wheel=_wheel(tmp_path, installed)))
    proc = cli(tmp_path, str(recipe), "--source", str(tmp_path), "--arch", "gfx90a", "--run-dir",
               str(tmp_path / "run"), "--no-cache", "--json")
    assert proc.returncode == exit_code, proc.stderr
    summary = json.loads(proc.stdout.splitlines()[-1])
    modules = next(c for c in summary["preflight"] if c["check"] == "python modules")
    assert modules["ok"] and "checked again after it" in modules["detail"], "not refused before prepare"
    assert len(summary["attempts"]) == 1
    if exit_code:
        diagnosis = summary["attempts"][0]["diagnosis"]
        assert diagnosis["category"] == "missing_python_dependency"
        assert diagnosis["fields"]["module"] == "rbfakemod"


# --- item 6: durations need a unit; the plan shows the limits -----------------------------------

def test_a_bare_budget_exits_2_suggesting_hours(tmp_path: Path) -> None:
    proc = cli(tmp_path, "plan", str(write_recipe(tmp_path, "ok")), "--source", str(tmp_path), "--budget", "8")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "has no unit" in proc.stderr and "--budget 8h" in proc.stderr


@pytest.mark.integration
def test_plan_shows_budget_attempts_and_stall_timeout(tmp_path: Path) -> None:
    args = ["plan", str(write_recipe(tmp_path, "ok")), "--source", str(tmp_path), "--arch", "gfx90a",
            "--skip-preflight", "--budget", "8h", "--max-attempts", "4", "--stall-timeout", "45m"]
    proc = cli(tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    assert "limits      budget 8h, max attempts 4, stall timeout 45m" in proc.stdout
    as_json = json.loads(cli(tmp_path, *args, "--json").stdout)
    assert as_json["limits"] == {"budget": "8h", "max_attempts": "4", "stall_timeout": "45m"}


# --- item 7: JSON for scripts --------------------------------------------------------------------

def _check_run_keys(summary: dict[str, Any]) -> None:
    assert set(summary) >= RUN_KEYS
    assert summary["rocmbuild_version"] == __version__
    started, finished = datetime.fromisoformat(summary["started"]), datetime.fromisoformat(summary["finished"])
    assert started <= finished
    assert abs((finished - started).total_seconds() - summary["duration_s"]) < 0.01
    assert summary["todo"] and summary["stop_reason"]


@pytest.mark.integration
def test_summary_and_json_line_carry_the_run_keys(tmp_path: Path) -> None:
    proc = cli(tmp_path, str(write_recipe(tmp_path, "import_missing")), "--source", str(tmp_path), "--arch", "gfx90a",
               "--run-dir", str(tmp_path / "run"), "--skip-preflight", "--no-cache", "--json")
    assert proc.returncode == 1, proc.stderr
    line = json.loads(proc.stdout.splitlines()[-1])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert line == summary
    _check_run_keys(summary)
    assert "missing_runtime_library ladder is spent" in summary["stop_reason"]
    assert "LD_LIBRARY_PATH" in summary["todo"]
    assert summary["preflight"] == [], "--skip-preflight: no checks ran"


@pytest.mark.integration
def test_a_successful_run_says_there_is_nothing_to_do(tmp_path: Path) -> None:
    proc = cli(tmp_path, str(write_recipe(tmp_path, "ok")), "--source", str(tmp_path), "--arch", "gfx90a",
               "--run-dir", str(tmp_path / "run"), "--skip-preflight", "--no-cache", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.splitlines()[-1])
    _check_run_keys(summary)
    assert summary["todo"].startswith("nothing") and summary["stop_reason"] == "built and verified"


@pytest.mark.parametrize("args", [
    ["build", "nosuchrecipe", "--arch", "gfx90a", "--json"],
    ["build", "example", "--arch", "gfx90a", "--budget", "8", "--json"],
    ["build", "example", "--json", "--no-such-option"],
])
def test_a_usage_error_with_json_prints_one_json_object_on_stdout(tmp_path: Path, args: list[str]) -> None:
    proc = cli(tmp_path, *args)
    assert proc.returncode == 2
    error = json.loads(proc.stdout)
    assert set(error) == {"exit_code", "error", "why", "todo"} and error["exit_code"] == 2
    assert error["error"] and error["todo"]


def test_without_json_a_usage_error_prints_nothing_on_stdout(tmp_path: Path) -> None:
    proc = cli(tmp_path, "build", "nosuchrecipe", "--arch", "gfx90a")
    assert proc.returncode == 2 and proc.stdout == ""
