"""A build failing on `No module named X` where the source declares X: the declared requirement is installed
into the build's interpreter (an effect, recorded), and never a package the source does not declare."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from rocmbuild.diagnosis.classifier import Diagnosis
from rocmbuild.loop.effects import Install
from rocmbuild.loop.remedybase import RemedyContext
from rocmbuild.loop.requirementremedy import install_build_requirements
from tests.planfactory import make_plan
from tests.wheels import build_wheel

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")


def missing(module: str) -> Diagnosis:
    found = Diagnosis.simple("missing_python_dependency", "module-not-found",
                             text=f"ModuleNotFoundError: No module named '{module}'", fields={"module": module},
                             retryable=True)
    return replace(found, line=3)


def tree(tmp_path: Path, requires: str) -> Path:
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "pyproject.toml").write_text(f'[build-system]\nrequires = [{requires}]\n'
                                           'build-backend = "setuptools.build_meta"\n')
    return source


def test_a_declared_module_is_installed_as_declared(tmp_path: Path) -> None:
    source = tree(tmp_path, '"setuptools>=77", "setuptools-scm>=8.0", "torch == 2.8.0"')
    result = install_build_requirements(make_plan(source), missing("setuptools_scm.version"), RemedyContext())
    assert result.applied
    [effect] = result.effects
    assert isinstance(effect, Install) and effect.requirements == ("setuptools-scm>=8.0",)
    assert effect.declared_in == "pyproject.toml"


def test_an_undeclared_module_or_torch_is_never_installed(tmp_path: Path) -> None:
    source = tree(tmp_path, '"setuptools>=77", "torch == 2.8.0"')
    plan = make_plan(source)
    undeclared = install_build_requirements(plan, missing("requests"), RemedyContext())
    assert not undeclared.applied and not undeclared.effects
    assert "not among the build requirements" in undeclared.detail
    torch = install_build_requirements(plan, missing("torch"), RemedyContext())
    assert not torch.applied and not torch.effects


def run_build(tmp_path: Path, requires: str) -> tuple[int, dict, list[dict]]:
    house = tmp_path / "house"
    house.mkdir()
    build_wheel(house, "demodep", "1.0", {"demodep/__init__.py": "VALUE = 42\n"})
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "pip").symlink_to(Path(__import__("pip").__file__).parent, target_is_directory=True)
    source = tree(tmp_path, requires)
    recipe = tmp_path / "dep.toml"
    recipe.write_text('name = "dep"\n[steps]\nbuild = ["python3 -c \'import demodep; print(demodep.VALUE)\'"]\n'
                      '[resources]\nmemory_per_job_gb = 1\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROCMBUILD_", "PIP_"))}
    env.update(XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               PATH=f"{venv / 'bin'}:{env['PATH']}", PIP_CONFIG_FILE="/dev/null", PIP_NO_INDEX="1",
               PIP_FIND_LINKS=str(house))
    result = subprocess.run([ROCMBUILD, str(recipe), "--source", str(source), "--skip-preflight", "--no-cache",
                             "--arch", "gfx90a", "--run-dir", str(tmp_path / "run")], env=env,
                            capture_output=True, text=True, timeout=300)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    return result.returncode, summary, events


@pytest.mark.integration
def test_real_build_gets_its_declared_requirement_and_succeeds(tmp_path: Path) -> None:
    code, summary, events = run_build(tmp_path, '"setuptools", "demodep>=1.0"')
    assert code == 0, summary
    first = summary["attempts"][0]
    assert first["diagnosis"]["category"] == "missing_python_dependency"
    assert first["remedies"] == ["install_build_requirements"]
    installed = [e for e in events if e["event"] == "package.installed"]
    assert installed and installed[0]["requirement"] == "demodep>=1.0 (declared in pyproject.toml)"


@pytest.mark.integration
def test_real_build_with_an_undeclared_module_installs_nothing(tmp_path: Path) -> None:
    code, summary, events = run_build(tmp_path, '"setuptools"')
    assert code == 4 and len(summary["attempts"]) == 1  # recognised, and no remedy can help
    assert not [e for e in events if e["event"] == "package.installed"]
    assert "demodep" in summary["todo"] or "demodep" in summary["stop_reason"]
