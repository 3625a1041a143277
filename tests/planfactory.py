"""A BuildPlan for tests, without touching the host."""

from __future__ import annotations

from pathlib import Path

from rocmbuild.build.environment import RocmDirs, base_changes
from rocmbuild.build.plan import BuildPlan, RocmSummary
from rocmbuild.build.recipe import parse_recipe

RECIPE = """
name = "demo"
packages = ["demo-pkg"]
[steps]
build = ["make"]
[clean]
paths = ["build", "*.egg-info", "out/*.o"]
[resources]
job_variables = ["MAX_JOBS", "CMAKE_BUILD_PARALLEL_LEVEL"]
"""


def make_plan(source: Path, *, caller: dict[str, str] | None = None, jobs: int = 8, lib_dirs: tuple[str, ...] = (),
              recipe_text: str = RECIPE, python: str = "python3") -> BuildPlan:
    recipe = parse_recipe(recipe_text, source / "demo.toml")
    caller = dict(caller or {"PATH": "/usr/bin:/bin"})
    rocm = RocmDirs("/opt/rocm", ("/opt/rocm/bin",), lib_dirs, None)
    changes = base_changes(caller_env=caller, rocm=rocm, rocm_path_option=False, arch_variables=("PYTORCH_ROCM_ARCH",),
                           arch_value="gfx90a", job_variables=recipe.resources.job_variables, jobs=jobs,
                           jobs_option=True, recipe_env=recipe.env)
    return BuildPlan(recipe=recipe, source=source, source_origin="test", rocm=RocmSummary("/opt/rocm", "6.2.4", "test",
                     lib_dirs=lib_dirs), archs=("gfx90a",), arch_origin="test", jobs=jobs, jobs_reason="test",
                     caller_env=caller, changes=changes, python=python)
