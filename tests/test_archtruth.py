"""Arch truthfulness: archs beyond the request, configure-time downgrades, `rocmbuild inspect`.

The binaries are the example's real .so, built by hipcc for gfx90a+gfx908 (the session fixture).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ExampleTree

from rocmbuild.host.arch import Targets
from rocmbuild.verification.archtruth import beyond_request, downgrades
from rocmbuild.verification.artifacts import verify_artifacts

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")


def the_so(tree: ExampleTree) -> Path:
    found = sorted((tree.root / "hipvec").glob("_hipvec*.so"))
    assert found, "the example was not built"
    return found[0]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ROCMBUILD, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


# --- configure-time downgrades ---------------------------------------------------------------

def test_downgrade_lines_in_the_threads_wording() -> None:
    log = ["-- Found HIP: /opt/rocm (found version \"6.4.1\")",
           "-- Disabling CK for gfx1030: not supported",
           "\x1b[33m-- gfx1100 is not supported by composable_kernel, disabling flash attention\x1b[0m",
           "WARNING: gfx906 unsupported by hipBLASLt; skipping it",
           "-- Disabling CK for gfx1030: not supported",            # the same line again: once
           "-- Performing Test HAS_AVX512 - Failed",                   # near-miss: no 'not supported'
           "-- Flash attention: not supported on this host",           # near-miss: nothing disabled
           "-- Disabling tests (BUILD_TEST=0)"]                        # near-miss: not an arch downgrade
    found = downgrades(log)
    assert found == [
        "configure disabled something for gfx1030: Disabling CK for gfx1030: not supported",
        "configure disabled something for gfx1100: gfx1100 is not supported by composable_kernel, "
        "disabling flash attention",
        "configure disabled something for gfx906: gfx906 unsupported by hipBLASLt; skipping it",
    ]


@pytest.mark.integration
def test_downgrade_reaches_the_summary_as_a_warning(tmp_path: Path) -> None:
    script = tmp_path / "configure.sh"
    script.write_text("#!/bin/sh\necho '-- The HIP compiler identification is Clang 19.1.7'\n"
                      "echo '-- Disabling CK for gfx1030: not supported'\necho built\n")
    script.chmod(0o755)
    recipe = tmp_path / "ck.toml"
    recipe.write_text(f'name = "ck"\n[steps]\nbuild = ["{script}"]\n')
    (tmp_path / "src").mkdir()
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "s"), "XDG_CACHE_HOME": str(tmp_path / "c"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    proc = subprocess.run([ROCMBUILD, "build", str(recipe), "--source", str(tmp_path / "src"), "--run-dir",
                           str(tmp_path / "run"), "--arch", "gfx90a,gfx1030", "--skip-preflight", "--no-cache",
                           "--json"], env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["outcome"] == "succeeded"
    assert summary["warnings"] == ["configure disabled something for gfx1030: Disabling CK for gfx1030: not supported"]
    assert "warning: configure disabled something for gfx1030" in proc.stderr
    shown = subprocess.run([ROCMBUILD, "report", str(tmp_path / "run")], env=env, capture_output=True, text=True,
                           timeout=60)
    assert "warning: configure disabled something for gfx1030: Disabling CK" in shown.stdout, shown.stdout


# --- archs beyond the request, on the real .so ------------------------------------------------

@pytest.mark.hip
@pytest.mark.integration
def test_verification_reports_archs_beyond_the_request(hipvec_multi: ExampleTree) -> None:
    tree = hipvec_multi
    report = verify_artifacts(tree.root, tree.recipe.verify_artifacts, Targets.parse("gfx90a"))
    assert report.ok                                       # a warning, not a failure
    [warning] = beyond_request(report)
    assert warning.startswith("hipvec/_hipvec") and "also has code objects for gfx908, beyond the requested gfx90a" \
        in warning
    both = verify_artifacts(tree.root, tree.recipe.verify_artifacts, Targets.parse("gfx90a,gfx908"))
    assert beyond_request(both) == []


@pytest.mark.hip
@pytest.mark.integration
def test_extra_arch_warning_in_a_real_run(hipvec_multi: ExampleTree, tmp_path: Path) -> None:
    """A build step that leaves the gfx90a+gfx908 .so for a gfx90a request: succeeded, with the warning."""
    src = tmp_path / "src"
    (src / "out").mkdir(parents=True)
    recipe = tmp_path / "extra.toml"
    recipe.write_text(f'name = "extra"\n[steps]\nbuild = ["cp {the_so(hipvec_multi)} out/lib.so"]\n'
                      '[verify]\nartifacts = ["out/*.so"]\n')
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "s"), "XDG_CACHE_HOME": str(tmp_path / "c"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    proc = subprocess.run([ROCMBUILD, "build", str(recipe), "--source", str(src), "--run-dir", str(tmp_path / "run"),
                           "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--json"],
                          env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert any("out/lib.so also has code objects for gfx908" in w for w in summary["warnings"]), summary


# --- rocmbuild inspect --------------------------------------------------------------------------

@pytest.mark.hip
def test_inspect_a_so_a_directory_and_a_wheel(hipvec_multi: ExampleTree, tmp_path: Path) -> None:
    so = the_so(hipvec_multi)
    text = run("inspect", str(so))
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"{so}: gfx908, gfx90a (")
    wheel = tmp_path / "hipvec-0.1-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.write(so, f"hipvec/{so.name}")
        archive.writestr("hipvec/__init__.py", "")
        archive.writestr("hipvec-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: hipvec\nVersion: 0.1\n")
    proc = run("inspect", "--json", str(wheel), str(hipvec_multi.root / "hipvec"))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["archs"] == ["gfx908", "gfx90a"]
    by_path = {b["path"]: b for b in data["binaries"]}
    assert by_path[f"{wheel}!hipvec/{so.name}"]["archs"] == ["gfx908", "gfx90a"]
    assert by_path[str(so)]["archs"] == ["gfx908", "gfx90a"] and by_path[str(so)]["readable"]
    host_only = run("inspect", str(hipvec_multi.root / "vendor" / "lib"))
    assert host_only.returncode == 0 and "no GPU code objects" in host_only.stdout


def test_inspect_bad_input_is_exit_2(tmp_path: Path) -> None:
    missing = run("inspect", str(tmp_path / "nope.whl"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    proc = run("inspect", str(text))
    assert proc.returncode == 2 and "neither a wheel nor an ELF binary" in proc.stderr
    as_json = run("inspect", "--json", str(text))
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["exit_code"] == 2
    assert run("inspect").returncode == 2
