"""True facts in the result: warnings of a verification a later attempt superseded are dropped, the code-object
verification is on the console and in summary.json, a verification failure has no "line None", and a
failure cured by its own remedy is not listed as "stop" in the ladder table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ExampleTree

from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.planning.plan import render_plan
from tests.planfactory import make_plan

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")


def the_so(tree: ExampleTree) -> Path:
    return sorted((tree.root / "hipvec").glob("_hipvec*.so"))[0]


def host_only_so() -> Path:
    return next(Path(sys.base_prefix).glob("lib/python3*/lib-dynload/_json*.so"))


@pytest.mark.hip
@pytest.mark.integration
def test_after_a_clean_fixes_an_arch_mismatch_no_stale_warning_stays(
        hipvec_multi: ExampleTree, hipvec_gfx90a: ExampleTree, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    multi, single, plain = the_so(hipvec_multi), the_so(hipvec_gfx90a), host_only_so()
    # Attempt 1 leaves a stale gfx908+gfx90a object and one with no gfx90a code at all (arch_mismatch);
    # after clean_build, attempt 2 builds both for gfx90a only.
    build = (f"mkdir -p out; if [ -e .first ]; then cp {single} out/a.so; cp {single} out/b.so; "
             f"else touch .first; cp {multi} out/a.so; cp {plain} out/b.so; fi")
    recipe = tmp_path / "facts.toml"
    recipe.write_text(f'name = "facts"\n[steps]\nbuild = ["{build}"]\n[clean]\npaths = ["out"]\n'
                      '[verify]\nartifacts = ["out/*.so"]\n')
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "s"), "XDG_CACHE_HOME": str(tmp_path / "c"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    proc = subprocess.run([ROCMBUILD, "build", str(recipe), "--source", str(src), "--run-dir", str(tmp_path / "run"),
                           "--arch", "gfx90a", "--skip-preflight", "--no-cache"],
                          env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["attempts"][0]["diagnosis"]["category"] == "arch_mismatch"
    assert summary["attempts"][0]["remedies"] == ["clean_build"]
    assert not any("beyond the requested" in w for w in summary.get("warnings", [])), summary["warnings"]
    objects = summary["code_objects"]
    assert objects["ok"] is True and {a["file"]: a["archs"] for a in objects["artifacts"]} == {
        "out/a.so": ["gfx90a"], "out/b.so": ["gfx90a"]}
    assert "code objects:" in proc.stderr
    assert "line None" not in proc.stderr


def test_a_signature_cured_by_its_own_remedy_is_not_listed_as_stop(tmp_path: Path) -> None:
    catalogue = load_catalogue(user=False)
    text = render_plan(make_plan(tmp_path), catalogue.category_ladders(), None, catalogue.generic_ladder(),
                       catalogue.signature_ladders())
    toolchain = [line for line in text.splitlines() if "toolchain_missing" in line or "except cmake4" in line]
    assert any("except cmake4-policy-minimum-removed: set_cmake_policy_minimum" in line for line in toolchain)
