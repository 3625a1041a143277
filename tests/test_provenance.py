"""Provenance: tool versions, submodule SHAs and downloaded URLs per attempt, redacted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocmbuild.records.provenance import downloaded_urls, parse_submodule_status, redact_url

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")

LOG = [
    "Collecting torch==2.5.1+rocm6.2",
    "  Downloading https://download.pytorch.org/whl/rocm6.2/torch-2.5.1%2Brocm6.2-cp311-cp311-linux_x86_64.whl "
    "(3960.9 MB)",
    "\r  Downloading https://download.pytorch.org/whl/rocm6.2/torch-2.5.1%2Brocm6.2-cp311-cp311-linux_x86_64.whl",
    "-- Downloading AOTriton from https://github.com/ROCm/aotriton/releases/download/0.8b/aotriton-0.8b.tar.gz",
    "-- Fetching https://github.com/fmtlib/fmt.git at 10.2.1",
    "+ git clone https://oauth2:ghp_SECRET123@github.com/ROCm/composable_kernel.git third_party/ck",
    "Submodule 'third_party/fmt' (https://github.com/fmtlib/fmt.git) registered for path 'third_party/fmt'",
    "Downloading https://mirror.example.com/x.tar.gz?X-Amz-Signature=abcdef&version=2.",
    # near-misses: URLs that were not fetched
    "CMake Warning: see https://cmake.org/cmake/help/latest/policy/CMP0146.html",
    "Looking in indexes: https://pypi.org/simple",
    "-- Downloading model card (no URL here)",
]


def test_urls_from_pip_cmake_and_git_lines_redacted() -> None:
    assert downloaded_urls(LOG) == [
        "https://download.pytorch.org/whl/rocm6.2/torch-2.5.1%2Brocm6.2-cp311-cp311-linux_x86_64.whl",
        "https://github.com/ROCm/aotriton/releases/download/0.8b/aotriton-0.8b.tar.gz",
        "https://github.com/fmtlib/fmt.git",
        "https://<redacted>@github.com/ROCm/composable_kernel.git",
        "https://mirror.example.com/x.tar.gz?X-Amz-Signature=<redacted>&version=2",
    ]


def test_redact_url() -> None:
    assert redact_url("https://user:pw@host/a") == "https://<redacted>@host/a"
    assert redact_url("https://host/a?token=abc&x=1&api_key=zz") == "https://host/a?token=<redacted>&x=1&api_key=<redacted>"
    assert redact_url("https://host/plain") == "https://host/plain"


def test_submodule_status_parsing() -> None:
    out = (" 3f1a2b4c5d6e7f8091a2b3c4d5e6f708192a3b4c third_party/fmt (10.2.1)\n"
           "+8d4d15112f17ac879da0f5207e70e6e2f881c836 third_party/ck (heads/main)\n"
           "-29fee38023f356c590b7508bfff115cf550935c6 third_party/unused\n")
    assert parse_submodule_status(out) == {"third_party/fmt": "3f1a2b4c5d6e7f8091a2b3c4d5e6f708192a3b4c",
                                           "third_party/ck": "8d4d15112f17ac879da0f5207e70e6e2f881c836"}


@pytest.mark.integration
def test_each_attempt_records_its_provenance(tmp_path: Path) -> None:
    """A real run: versions asked of the build's own tools, URLs from its log, no credential in any record."""
    script = tmp_path / "build.sh"
    script.write_text("#!/bin/sh\n"
                      "echo '  Downloading https://builder:hunter2@files.example.com/wheels/dep-1.0-py3-none-any.whl'\n"
                      "echo '-- Downloading AOTriton from https://github.com/ROCm/aotriton/releases/x.tar.gz'\n")
    script.chmod(0o755)
    recipe = tmp_path / "prov.toml"
    recipe.write_text(f'name = "prov"\n[steps]\nbuild = ["{script}"]\n')
    (tmp_path / "src").mkdir()
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "s"), "XDG_CACHE_HOME": str(tmp_path / "c"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run([ROCMBUILD, "build", str(recipe), "--source", str(tmp_path / "src"), "--run-dir",
                           str(tmp_path / "run"), "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--json"],
                          env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    provenance = summary["attempts"][0]["provenance"]
    assert provenance["downloads"] == ["https://<redacted>@files.example.com/wheels/dep-1.0-py3-none-any.whl",
                                       "https://github.com/ROCm/aotriton/releases/x.tar.gz"]
    tools = provenance["tools"]
    assert set(tools) == {"rocm", "hip_compiler", "cmake", "ninja", "setuptools", "pip", "torch"}
    cmake = subprocess.run(["cmake", "--version"], env=env, capture_output=True, text=True).stdout.splitlines()[0]
    assert tools["cmake"] == cmake                    # the cmake on the build's PATH (the venv's)
    import pip
    assert tools["pip"] == pip.__version__             # the build's interpreter is this venv's python3
    assert tools["rocm"] == summary["rocm"]["version"]
    assert provenance["submodules"] == {} and provenance["commit"] is None   # not a git tree
    assert "hunter2" not in (tmp_path / "run" / "summary.json").read_text()
