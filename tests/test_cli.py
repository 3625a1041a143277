"""The command line: contract options, plan, recipes, diagnose, signatures, error handling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rocmbuild import cli

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")
FIXTURES = Path(__file__).parent / "fixtures" / "logs"


@pytest.fixture
def rocm_tree(tmp_path: Path) -> Path:
    root = tmp_path / "R"
    for sub in ("lib", "bin", ".info"):
        (root / sub).mkdir(parents=True)
    (root / ".info" / "version").write_text("6.4.1-120\n")
    return root


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in list(os.environ):
        if key.startswith("ROCMBUILD_") or key in ("PYTORCH_ROCM_ARCH", "MAX_JOBS", "LIBRARY_PATH",
                                                   "LD_LIBRARY_PATH", "ROCM_PATH"):
            monkeypatch.delenv(key)
    return {**os.environ, **env}


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ROCMBUILD, *args], env=env, capture_output=True, text=True, timeout=60)


def vllm_plan(proc: subprocess.CompletedProcess[str]) -> dict[str, object]:
    """A vLLM plan on this host, where torch is not installed: refused like the run, in ONE JSON document
    (json.load of the whole stdout) holding the plan and the refusal."""
    assert proc.returncode == 2, proc.stderr
    plan: dict[str, object] = json.loads(proc.stdout)
    error = plan["refusal"]
    assert isinstance(error, dict) and plan["exit_code"] == 2
    assert error["exit_code"] == 2 and "requires 'torch'" in error["error"]
    assert "`rocmbuild torch vllm --arch " in error["todo"] and error["why"]
    assert "requires 'torch'" in proc.stderr, "the refusal is also said to a person"
    return plan


def test_plan_json_through_the_installed_entry_point(rocm_tree: Path, tmp_path: Path,
                                                     isolated: dict[str, str]) -> None:
    source = tmp_path / "S"
    source.mkdir()
    proc = run_cli(["plan", "vllm", "--arch", "gfx942", "--rocm-path", str(rocm_tree), "--source", str(source),
                    "--json"], isolated)
    plan: dict[str, Any] = vllm_plan(proc)
    env = plan["env"]
    assert str(rocm_tree / "lib") in env["LIBRARY_PATH"].split(":")
    assert str(rocm_tree / "lib") in env["LD_LIBRARY_PATH"].split(":")
    assert env["PYTORCH_ROCM_ARCH"] == "gfx942" and env["HIP_PLATFORM"] == "amd"
    assert int(env["MAX_JOBS"]) >= 1 and "GiB" in plan["jobs_reason"], "MAX_JOBS is memory-aware"
    assert plan["rocm"] == {"root": str(rocm_tree), "version": "6.4.1", "origin": "--rocm-path",
                            "version_source": ".info/version", "layout": plan["rocm"]["layout"]}
    assert plan["recipe"] == "vllm" and plan["source"] == str(source) and plan["arch"] == ["gfx942"]
    assert plan["steps"]["build"] == ["python3 setup.py develop"]
    assert ".deps" in plan["clean"]
    assert plan["ladder"]["missing_library"][0] == "add_library_paths"
    assert not any(source.iterdir()), "plan runs and writes nothing"


def test_dry_run_is_the_plan_and_deletes_nothing(rocm_tree: Path, tmp_path: Path, isolated: dict[str, str]) -> None:
    source = tmp_path / "S"
    (source / "build").mkdir(parents=True)
    proc = run_cli(["vllm", "--dry-run", "--arch", "gfx942;gfx90a", "--rocm-path", str(rocm_tree),
                    "--source", str(source)], isolated)
    assert proc.returncode == 2, proc.stderr      # torch is not installed here: refused like the run
    assert "`rocmbuild torch vllm --arch gfx942,gfx90a`" in proc.stderr
    assert "gfx942;gfx90a" in proc.stdout and "Environment changes" in proc.stdout
    assert "LIBRARY_PATH=" in proc.stdout and "Remedy ladder" in proc.stdout
    assert (source / "build").is_dir()


def test_plan_without_source_shows_the_checkout_and_clones_nothing(rocm_tree: Path, tmp_path: Path,
                                                                  isolated: dict[str, str]) -> None:
    proc = run_cli(["plan", "torch", "--arch", "gfx942", "--rocm-path", str(rocm_tree), "--json",
                    "--skip-preflight"], isolated)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["source"] == str(tmp_path / "cache" / "rocmbuild" / "src" / "torch")
    assert any("git clone --recurse-submodules https://github.com/pytorch/pytorch.git" in c for c in plan["checkout"])
    assert not (tmp_path / "cache" / "rocmbuild" / "src" / "torch").exists()


def test_environment_variables_set_options(rocm_tree: Path, tmp_path: Path, isolated: dict[str, str]) -> None:
    env = {**isolated, "ROCMBUILD_ARCH": "gfx90a", "ROCMBUILD_JOBS": "3", "ROCMBUILD_ROCM_PATH": str(rocm_tree)}
    proc = run_cli(["plan", "vllm", "--source", str(tmp_path), "--json"], env)
    plan: dict[str, Any] = vllm_plan(proc)
    assert plan["arch"] == ["gfx90a"] and plan["env"]["MAX_JOBS"] == "3" and plan["jobs_reason"] == "--jobs"


def test_arch_auto_uses_an_exported_arch_variable(rocm_tree: Path, tmp_path: Path, isolated: dict[str, str]) -> None:
    env = {**isolated, "PYTORCH_ROCM_ARCH": "gfx90a:xnack+;gfx942"}
    proc = run_cli(["plan", "vllm", "--rocm-path", str(rocm_tree), "--source", str(tmp_path), "--json"], env)
    plan: dict[str, Any] = vllm_plan(proc)
    assert plan["arch"] == ["gfx90a", "gfx942"] and plan["arch_origin"] == "$PYTORCH_ROCM_ARCH"
    assert any("xnack" in w for w in plan["warnings"]), "stripping features is warned about"


@pytest.mark.parametrize(("args", "needle"), [
    (["plan", "vllm", "--arch", "gfx9422"], "gfx942"),
    (["plan", "vllm", "--arch", "MI300X"], "gfx942"),
    (["plan", "vllm", "--arch", "sm_90"], "NVIDIA"),
    (["plan", "nosuchrecipe", "--arch", "gfx942"], "unknown recipe"),
    (["plan", "vllm", "--arch", "gfx942", "--source", "/nonexistent/tree"], "does not exist"),
    (["plan", "vllm", "--arch", "gfx942", "--jobs", "many"], "--jobs"),
    (["plan", "vllm", "--arch", "gfx942", "--budget", "tomorrow"], "--budget"),
    (["plan", "vllm", "--arch", "gfx942", "--rocm-path", "/tmp"], "does not look like a ROCm"),
    (["report", "/nonexistent/run"], "not a rocmbuild run directory"),
    (["diagnose", "/nonexistent.log"], "does not exist"),
    (["build"], "no recipe given"),
])
def test_bad_input_exits_2_with_what_why_todo(args: list[str], needle: str, isolated: dict[str, str]) -> None:
    proc = run_cli(args, isolated)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and "Traceback" not in proc.stderr


def test_bad_recipe_files(tmp_path: Path, isolated: dict[str, str]) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text('name = "x\n')
    unknown_key = tmp_path / "typo.toml"
    unknown_key.write_text('name = "x"\n[steps]\nbuild = ["make"]\nbiuld = ["x"]\n')
    for path, needle in ((broken, "not valid TOML"), (unknown_key, "steps.biuld")):
        proc = run_cli(["plan", str(path), "--arch", "gfx90a", "--source", str(tmp_path)], isolated)
        assert proc.returncode == 2 and needle in proc.stderr and str(path) in proc.stderr


def test_recipes_json_lists_bundled_recipes(isolated: dict[str, str]) -> None:
    proc = run_cli(["recipes", "--json"], isolated)
    recipes = {r["name"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert {"torch", "vllm", "example"} <= set(recipes)
    assert recipes["vllm"]["requires"] == ["torch"]


def test_diagnose_json_matches_the_contract(isolated: dict[str, str]) -> None:
    logs = sorted((FIXTURES / "missing_library").glob("*.log"))[:2]
    proc = run_cli(["diagnose", "--json", *map(str, logs)], isolated)
    assert proc.returncode == 0, proc.stderr
    for line, log in zip(proc.stdout.splitlines(), logs, strict=True):
        data = json.loads(line)
        # The contract's keys, plus how sure the diagnosis is (an extension; nothing removed).
        assert set(data) == {"log", "category", "signature", "line", "text", "fields", "retryable", "remedies",
                             "context", "confidence"}
        assert data["confidence"] in ("high", "medium")  # a fallback shape is medium
        assert data["log"] == str(log) and data["category"] == "missing_library"
        meta = log.with_suffix(".meta.toml").read_text()
        assert f"line = {data['line']}\n" in meta


def test_diagnose_unknown_exits_1_and_reads_stdin(isolated: dict[str, str]) -> None:
    log = sorted((FIXTURES / "unknown").glob("*.log"))[0]
    proc = subprocess.run([ROCMBUILD, "diagnose", "--json", "-"], input=log.read_bytes(), env=isolated,
                          capture_output=True, timeout=60)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["category"] == "unknown"


def test_diagnose_explain_shows_runners_up(isolated: dict[str, str]) -> None:
    log = next((FIXTURES / "out_of_memory").glob("*crash_text*.log"))
    proc = run_cli(["diagnose", "--explain", str(log)], isolated)
    assert proc.returncode == 0
    assert "out_of_memory" in proc.stdout and "runners-up:" in proc.stdout
    assert "compiler_crash" in proc.stdout.split("runners-up:")[1], "the crash text lost to the OOM"


def test_signatures_check_passes_for_the_bundled_catalogue(isolated: dict[str, str], tmp_path: Path) -> None:
    proc = run_cli(["signatures", "check"], isolated)
    assert proc.returncode == 0, proc.stdout
    assert "0 failures" in proc.stdout
    bad = tmp_path / "mine.toml"
    bad.write_text('[[signature]]\nid = "my-sig"\ncategory = "network"\ndescription = "x"\n'
                   'patterns = ["Connection refused"]\nkeywords = ["refused"]\n'
                   'examples = ["curl: (7) Failed to connect: Connection refused"]\n'
                   'near_misses = ["Connection refused by policy"]\n')
    proc = run_cli(["signatures", "check", str(bad)], isolated)
    assert proc.returncode == 1 and "my-sig" in proc.stdout


def test_internal_errors_exit_70_with_a_crash_log(monkeypatch: pytest.MonkeyPatch, isolated: dict[str, str],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    def boom(*args: object, **kwargs: object) -> int:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr("rocmbuild.commands.app.show_plans", boom)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["plan", "vllm", "--arch", "gfx942"])
    assert exit_info.value.code == 70
    err = capsys.readouterr().err
    assert "internal error" in err and "Traceback" not in err
    crash = Path(err.split("crash log is ")[1].split()[0])
    assert "simulated bug" in crash.read_text()


def test_shorthand_and_help_through_click() -> None:
    runner = CliRunner()
    result = runner.invoke(cli.cli, ["--help"])
    assert result.exit_code == 0 and "build" in result.output and "diagnose" in result.output
    result = runner.invoke(cli.cli, ["vllm", "--help"])
    assert result.exit_code == 0 and "--escalate-unknown" in result.output and "ROCMBUILD_ARCH" in result.output


def test_bad_recipe_names_and_malformed_summaries_exit_2(tmp_path: Path, isolated: dict[str, str]) -> None:
    evil = tmp_path / "evil.toml"
    evil.write_text('name = "../../escape"\n[steps]\nbuild = ["make"]\n')
    proc = run_cli(["plan", str(evil), "--arch", "gfx90a", "--source", str(tmp_path)], isolated)
    assert proc.returncode == 2 and "'name'" in proc.stderr
    bad_run = tmp_path / "badrun"
    bad_run.mkdir()
    (bad_run / "summary.json").write_text("[1]")
    proc = run_cli(["report", str(bad_run)], isolated)
    assert proc.returncode == 2 and "not a rocmbuild summary" in proc.stderr
    proc = run_cli(["signatures", "check", str(tmp_path / "missing.toml")], isolated)
    assert proc.returncode == 2


def test_an_invalid_exported_max_jobs_is_overridden_with_a_warning(rocm_tree: Path, tmp_path: Path,
                                                                  isolated: dict[str, str]) -> None:
    proc = run_cli(["plan", "vllm", "--arch", "gfx942", "--rocm-path", str(rocm_tree), "--source", str(tmp_path),
                    "--json"], {**isolated, "MAX_JOBS": "abc"})
    plan: dict[str, Any] = vllm_plan(proc)
    assert plan["env"]["MAX_JOBS"] == str(plan["jobs"]) and any("MAX_JOBS" in w for w in plan["warnings"])
