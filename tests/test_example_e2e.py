"""The bundled HIP example through `rocmbuild` itself, with the real hipcc.

Real link failure and recovery, artifact verification catching objects built
for another arch (and the ladder's clean fixing it), and preflight stopping
gfx942 on this HIP 5.2 toolchain.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "hipvec"

pytestmark = pytest.mark.hip


def env_for(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_")}
    # The build's python3 is the one on PATH: the venv's, as after `source .venv/bin/activate`.
    env.update(PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}", HIP_PLATFORM="amd",
               XDG_STATE_HOME=str(tmp / "state"), XDG_CACHE_HOME=str(tmp / "cache"),
               XDG_CONFIG_HOME=str(tmp / "config"))
    for var in ("LIBRARY_PATH", "LD_LIBRARY_PATH", "HIPVEC_ARCHS"):
        env.pop(var, None)
    return env


def run_example(tmp: Path, source: Path, arch: str, run_dir: str, *extra: str) -> tuple[int, str, dict[str, Any]]:
    argv = [ROCMBUILD, "example", "--arch", arch, "--source", str(source), "--run-dir", str(tmp / run_dir),
            "--json", *extra]
    proc = subprocess.run(argv, env=env_for(tmp), capture_output=True, text=True, timeout=300)
    summary = json.loads(proc.stdout.splitlines()[-1]) if proc.stdout.strip() else {}
    return proc.returncode, proc.stderr, summary


@pytest.fixture
def source(tmp_path: Path) -> Path:
    tree = tmp_path / "hipvec"
    shutil.copytree(EXAMPLE, tree, ignore=shutil.ignore_patterns("build", "*.so", "lib", "__pycache__"))
    return tree


@pytest.mark.integration
def test_real_link_failure_is_diagnosed_fixed_and_verified(tmp_path: Path, source: Path) -> None:
    code, err, summary = run_example(tmp_path, source, "gfx90a", "run")
    assert code == 0, err
    first, second = summary["attempts"]
    assert first["diagnosis"]["category"] == "missing_library"
    assert first["diagnosis"]["fields"]["library"] == "hipvecmath"
    assert "cannot find -lhipvecmath" in first["diagnosis"]["text"]
    assert first["remedies"] == ["add_library_paths"]
    assert second["diagnosis"] is None and second["exit_code"] == 0
    assert second["env"]["LIBRARY_PATH"].split(":")[0] == str(source / "vendor" / "lib")
    events = [json.loads(x) for x in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    verified = [e for e in events if e["event"] == "artifacts.verified"]
    assert verified and verified[-1]["ok"] is True and "gfx90a" in verified[-1]["detail"]
    assert "built for gfx90a" in (tmp_path / "run" / "attempt-2.log").read_text()


@pytest.mark.integration
def test_stale_objects_for_another_arch_are_caught_and_cleaned(tmp_path: Path, source: Path) -> None:
    code, err, _ = run_example(tmp_path, source, "gfx908", "run1")
    assert code == 0, err
    # The same tree for gfx90a: setuptools considers every object up to date.
    code, err, summary = run_example(tmp_path, source, "gfx90a", "run2")
    assert code == 0, err
    # (A new run starts from the caller's environment again, so the link path is fixed first.)
    stale = [a for a in summary["attempts"] if a["diagnosis"] and a["diagnosis"]["category"] == "arch_mismatch"]
    assert len(stale) == 1
    assert stale[0]["exit_code"] == 0, "the build itself 'succeeded' with stale objects"
    assert stale[0]["diagnosis"]["fields"]["arch"] == "gfx90a"
    assert "found: gfx908" in stale[0]["diagnosis"]["text"]
    assert stale[0]["remedies"] == ["clean_build"]
    assert summary["attempts"][-1]["diagnosis"] is None


@pytest.mark.integration
def test_gfx942_stops_in_preflight_naming_compiler_and_rocm_versions(tmp_path: Path, source: Path) -> None:
    code, err, summary = run_example(tmp_path, source, "gfx942", "run")
    assert code == 4, err
    assert summary["outcome"] == "not_retryable" and len(summary["attempts"]) == 1
    diagnosis = summary["attempts"][0]["diagnosis"]
    assert diagnosis["category"] == "unsupported_arch"
    assert "clang 15" in diagnosis["text"] and "HIP 5.2" in diagnosis["text"]
    assert "ROCm 6" in err, "the what-to-do names the ROCm release that supports gfx942"
    assert not (source / "build").exists(), "nothing was built"


@pytest.mark.integration
def test_doctor_json_reports_the_toolchain(tmp_path: Path) -> None:
    proc = subprocess.run([ROCMBUILD, "doctor", "--json", "--arch", "gfx90a"], env=env_for(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["rocm"]["layout"] == "system" and report["rocm"]["version"].startswith("5.2")
    assert "HIP 5.2" in report["versions"]["hipcc"] and "clang 15" in report["versions"]["hipcc"]
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert statuses["arch gfx90a"] == "ok" and statuses["hipcc platform"] == "ok"
    assert report["jobs"]["max_jobs"] >= 1 and "GiB" in report["jobs"]["why"]
    assert report["cache"]["tool"] == "ccache"
    bad = subprocess.run([ROCMBUILD, "doctor", "--json", "--arch", "gfx942"], env=env_for(tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1
    assert {c["name"]: c["category"] for c in json.loads(bad.stdout)["checks"]}["arch gfx942"] == "unsupported_arch"
