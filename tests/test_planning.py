"""planning.make_plan itself, in-process: recipe + host facts + options -> BuildPlan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from planfactory import RECIPE

from rocmbuild.build.plan import BuildPlan
from rocmbuild.build.planning import at_its_turn, jobs_from_memory, make_plan, resized_jobs
from rocmbuild.build.recipe import parse_recipe
from rocmbuild.errors import RocmbuildError
from rocmbuild.host.facts import HostFacts
from rocmbuild.options import BuildOptions
from rocmbuild.services import Services

GIB = 2**30
NO_GPU = Services(detect_arch=lambda: None)


def facts(cpus: int = 16, mem_gib: int = 64) -> HostFacts:
    return HostFacts(rocm=None, cpus=cpus, cpus_reason=f"{cpus} CPUs", mem_available=mem_gib * GIB,
                     mem_reason="test", python="/usr/bin/python3")


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
    """`rocmbuild torch vllm`: vllm's MAX_JOBS follows what torch's build left free (issue 10, item 7)."""
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
    assert plan.rocm.root is None and plan.rocm.origin == "not found"
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
