"""planning.make_plan itself, in-process: recipe + host facts + options -> BuildPlan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from planfactory import RECIPE

from rocmbuild.checks.checklist import plan_checks
from rocmbuild.errors import RocmbuildError
from rocmbuild.host import facts as hostmod
from rocmbuild.host.arch import GpuTarget, Targets
from rocmbuild.host.facts import HostFacts
from rocmbuild.options import BuildOptions
from rocmbuild.planning.plan import BuildPlan, render_plan
from rocmbuild.planning.planning import at_its_turn, jobs_from_memory, make_plan, resized_jobs
from rocmbuild.planning.recipe import parse_recipe
from rocmbuild.process.command import CommandResult
from rocmbuild.services import Services

GIB = 2**30
NO_GPU = Services(detect_arch=lambda: None)


def facts(cpus: int = 16, mem_gib: int = 64) -> HostFacts:
    return HostFacts(rocm=None, cpus=cpus, cpus_reason=f"{cpus} CPUs", mem_available=mem_gib * GIB,
                     mem_reason="test", python="/usr/bin/python3", loader_dirs=hostmod.STATIC_LOADER_DIRS)


def plan_for(tmp_path: Path, environ: dict[str, str] | None = None, host: HostFacts | None = None,
             **options: Any) -> BuildPlan:
    recipe = parse_recipe(RECIPE, tmp_path / "demo.toml")
    opts = BuildOptions(source=tmp_path, **{"arch": "gfx90a", **options})
    return make_plan(recipe, opts, environ or {"PATH": "/usr/bin:/bin"}, host or facts(), NO_GPU)


def test_jobs_come_from_the_host_facts_given(tmp_path: Path) -> None:
    few_cpus = plan_for(tmp_path, host=facts(cpus=3, mem_gib=64))
    assert few_cpus.jobs == 3 and few_cpus.env["MAX_JOBS"] == "3"
    little_memory = plan_for(tmp_path, host=facts(cpus=32, mem_gib=9))
    assert little_memory.jobs < 32 and little_memory.jobs >= 1
    assert little_memory.env["CMAKE_BUILD_PARALLEL_LEVEL"] == str(little_memory.jobs)


def test_jobs_option_and_the_callers_variable_win(tmp_path: Path) -> None:
    assert plan_for(tmp_path, jobs=5).jobs_reason == "--jobs"
    caller = plan_for(tmp_path, environ={"PATH": "/usr/bin", "MAX_JOBS": "2"})
    assert caller.jobs == 2 and "from your environment" in caller.jobs_reason
    bad = plan_for(tmp_path, environ={"PATH": "/usr/bin", "MAX_JOBS": "lots"}, host=facts(cpus=4))
    assert bad.jobs == 4 and any("'lots'" in w for w in bad.warnings)


def test_a_later_recipe_is_sized_from_memory_measured_at_its_turn(tmp_path: Path) -> None:
    """`rocmbuild torch vllm`: vllm's MAX_JOBS follows what torch's build left free."""
    planned = plan_for(tmp_path, host=facts(cpus=32, mem_gib=64))
    assert planned.jobs > 4
    later = resized_jobs(planned, cpus=32, mem_available=9 * GIB)
    assert later.jobs < planned.jobs and later.env["MAX_JOBS"] == str(later.jobs)
    assert later.env["CMAKE_BUILD_PARALLEL_LEVEL"] == str(later.jobs)
    assert "measured again when its turn came" in later.jobs_reason and f"planned: {planned.jobs}" in later.jobs_reason
    recipe = planned.recipe
    assert jobs_from_memory(recipe, BuildOptions(), {"PATH": "/usr/bin"})
    assert not jobs_from_memory(recipe, BuildOptions(jobs=5), {"PATH": "/usr/bin"}), "--jobs is kept"
    assert not jobs_from_memory(recipe, BuildOptions(), {"MAX_JOBS": "2"}), "the caller's MAX_JOBS is kept"
    assert jobs_from_memory(recipe, BuildOptions(), {"MAX_JOBS": "lots"}), "an invalid one was rocmbuild's choice"
    fixed = plan_for(tmp_path, jobs=5)
    assert at_its_turn(fixed, BuildOptions(jobs=5), {"PATH": "/usr/bin"}) is fixed


def test_no_rocm_is_a_warning_and_the_arch_is_kept(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, arch="gfx942;gfx90a")
    assert plan.rocm is None and plan.rocm_root is None and plan.rocm_version is None
    assert plan.to_json()["rocm"] == {"root": None, "version": None, "origin": "not found", "version_source": "",
                                      "layout": ""}
    assert "  ROCm        not found  version unknown  (not found)" in render_plan(plan).splitlines()
    assert any("no ROCm installation found" in w for w in plan.warnings)
    assert plan.archs == ("gfx942", "gfx90a") and plan.source == tmp_path
    assert plan.env["PYTORCH_ROCM_ARCH"] == "gfx942;gfx90a"


def test_the_callers_arch_variable_answers_auto(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, environ={"PATH": "/usr/bin", "PYTORCH_ROCM_ARCH": "gfx1100"}, arch="auto")
    assert plan.archs == ("gfx1100",) and plan.arch_origin == "$PYTORCH_ROCM_ARCH"


def test_auto_without_a_gpu_is_refused_with_advice(tmp_path: Path) -> None:
    with pytest.raises(RocmbuildError) as caught:
        plan_for(tmp_path, arch="auto")
    assert caught.value.exit_code == 2


def _fake_opt_rocm(fs: Path) -> Path:
    real = fs / "opt" / "rocm-6.2.4"
    for rel, text in ((".info/version", "6.2.4-120\n"), ("bin/hipcc", "#!/bin/sh\n"), ("lib/libamdhip64.so.6", ""),
                      ("lib/llvm/bin/clang", ""), ("lib/llvm/lib/libLLVM.so", "")):
        (real / rel).parent.mkdir(parents=True, exist_ok=True)
        (real / rel).write_text(text)
    (fs / "opt" / "rocm").symlink_to("rocm-6.2.4")
    return real


def test_the_discovered_rocm_value_is_the_one_the_plan_and_its_checks_use(tmp_path: Path) -> None:
    """One ROCm type: discovery's value is carried by the plan as is; env, JSON, text and preflight read it."""
    real = _fake_opt_rocm(tmp_path / "fs")
    rocm = hostmod.discover_rocm(None, {}, fs_root=tmp_path / "fs")
    assert rocm is not None and rocm.root == real
    host = HostFacts(rocm=rocm, cpus=4, cpus_reason="4 CPUs", mem_available=64 * GIB, mem_reason="test",
                     python="/usr/bin/python3", loader_dirs=(str(real / "lib" / "llvm" / "lib"),))
    source = tmp_path / "src"
    source.mkdir()
    plan = plan_for(source, host=host)
    assert plan.rocm is rocm
    assert (plan.rocm_root, plan.rocm_version, plan.rocm_hipcc) == (str(real), "6.2.4", str(real / "bin" / "hipcc"))
    assert plan.loader_dirs == host.loader_dirs
    assert plan.env["ROCM_PATH"] == str(real)
    assert plan.env["PATH"].split(":")[:2] == [str(real / "bin"), str(real / "lib" / "llvm" / "bin")]
    # A dir the host facts name as the loader's own never reaches the library paths.
    assert plan.env["LIBRARY_PATH"] == plan.env["LD_LIBRARY_PATH"] == str(real / "lib")
    assert plan.to_json()["rocm"] == {"root": str(real), "version": "6.2.4", "origin": "/opt/rocm -> /opt/rocm-6.2.4",
                                      "version_source": ".info/version", "layout": "opt"}
    assert (f"  ROCm        {real}  version 6.2.4  (/opt/rocm -> /opt/rocm-6.2.4; version from .info/version)"
            in render_plan(plan).splitlines())
    def no_tools(argv: object, **_: object) -> CommandResult:
        return CommandResult(None, "", missing=True)

    root_check = plan_checks(plan, 64 * GIB, run=no_tools)[0]
    assert root_check.name == "ROCm root" and root_check.detail.startswith(f"ROCm 6.2.4 at {real}")


def test_the_plan_carries_parsed_targets_and_shows_their_ids(tmp_path: Path) -> None:
    recipe = RECIPE.replace("[steps]", '[arch]\nvariables = ["PYTORCH_ROCM_ARCH"]\nplain = false\n\n[steps]')
    plan = make_plan(parse_recipe(recipe, tmp_path / "demo.toml"),
                     BuildOptions(source=tmp_path, arch="gfx942:xnack-:sramecc+,gfx90a"),
                     {"PATH": "/usr/bin"}, facts(), NO_GPU)
    assert plan.targets == Targets((GpuTarget("gfx942", ("sramecc+", "xnack-")), GpuTarget("gfx90a")))
    assert plan.archs == ("gfx942:sramecc+:xnack-", "gfx90a") == tuple(plan.to_json()["arch"])
    assert plan.targets.processors == ("gfx942", "gfx90a")
    assert plan.env["PYTORCH_ROCM_ARCH"] == "gfx942:sramecc+:xnack-;gfx90a"
