"""A BuildPlan for tests, without touching the host."""

from __future__ import annotations

from pathlib import Path

from rocmbuild.host.arch import Targets
from rocmbuild.host.facts import STATIC_LOADER_DIRS
from rocmbuild.host.rocm import Rocm
from rocmbuild.planning.environment import BuildVariables, base_changes
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.planning.recipe import parse_recipe

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
    rocm = Rocm(Path("/opt/rocm"), version="6.2.4", origin="test", bin_dirs=(Path("/opt/rocm/bin"),),
                lib_dirs=tuple(Path(d) for d in lib_dirs))
    targets = Targets.parse("gfx90a")
    variables = BuildVariables(arch_variables=("PYTORCH_ROCM_ARCH",), arch_value=targets.as_env(),
                               job_variables=recipe.resources.job_variables, jobs=jobs, jobs_option=True)
    changes = base_changes(caller_env=caller, rocm=rocm, rocm_path_option=False, variables=variables,
                           recipe_env=recipe.env)
    return BuildPlan(recipe=recipe, source=source, source_origin="test", rocm=rocm, targets=targets,
                     arch_origin="test", jobs=jobs, jobs_reason="test", caller_env=caller, changes=changes,
                     python=python, loader_dirs=STATIC_LOADER_DIRS)
