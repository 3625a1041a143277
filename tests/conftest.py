"""Test-session setup: HIP_PLATFORM=amd, and the ``hip`` / ``redis`` markers.

Tests that need a real program are marked (``@pytest.mark.hip`` needs hipcc,
``@pytest.mark.redis`` needs redis-server).  When the program is missing:
locally they are deselected with a message saying what to install; in CI
(``CI`` set) they fail instead, so a broken CI image cannot pass by skipping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rocmbuild.planning.recipe import Recipe, find_recipe

if TYPE_CHECKING:
    from inprocess import ProbeAnswers

pytest_plugins = ["pytester"]

# hipcc picks the NVIDIA platform on a host that also has CUDA (nvcc is installed here).
os.environ.setdefault("HIP_PLATFORM", "amd")

# The scheduler tier (tests/slurm) needs a running Slurm cluster: `make test-slurm` starts one, sets
# TEST_SLURM and runs it; `make test` leaves it out.
collect_ignore = [] if os.environ.get("TEST_SLURM") else ["slurm"]

# marker -> (program it needs, how to get it)
NEEDS: dict[str, tuple[str, str]] = {
    "hip": ("hipcc", "apt-get install hipcc rocminfo libamdhip64-dev rocm-device-libs"),
    "redis": ("redis-server", "apt-get install redis-server"),
    # gfx942 for real: clang-19 as the HIP compiler, CMake >= 3.28 from PyPI (`make toolchain`).
    "clang19": ("clang++-19", "apt-get install clang-19 lld-19, then `make toolchain`"),
    # The HTML pages rendered as a person sees them (tests/browser.py).
    "browser": ("chromium", "apt-get install chromium"),
}

_DESELECTED = pytest.StashKey[dict[str, int]]()


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _missing(marker: str) -> bool:
    return shutil.which(NEEDS[marker][0]) is None


def _message(marker: str, count: int | None = None) -> str:
    program, install = NEEDS[marker]
    what = f"{count} tests" if count is not None else "tests"
    return f"{what} marked {marker} need {program}, which is not on PATH: {install}"


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = []
    for marker, (program, _install) in NEEDS.items():
        if _missing(marker):
            action = "will FAIL (CI is set)" if _in_ci() else "are deselected"
            lines.append(f"{program} not found: tests marked {marker} {action}")
    return lines


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _in_ci():
        return  # they run and fail in pytest_runtest_setup
    counts: dict[str, int] = {}
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        lacking = [m for m in NEEDS if item.get_closest_marker(m) is not None and _missing(m)]
        if lacking:
            dropped.append(item)
            for marker in lacking:
                counts[marker] = counts.get(marker, 0) + 1
        else:
            keep.append(item)
    if dropped:
        items[:] = keep
        config.hook.pytest_deselected(items=dropped)
    config.stash[_DESELECTED] = counts


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in NEEDS:
        if item.get_closest_marker(marker) is not None and _missing(marker):
            pytest.fail(f"CI is set but {_message(marker)}", pytrace=False)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    for marker, count in config.stash.get(_DESELECTED, {}).items():
        program, install = NEEDS[marker]
        terminalreporter.write_line(
            f"deselected {count} tests that need {program}: {install}", yellow=True, bold=True)


# --- the bundled example, built for real (tests marked hip) ----------------------------


class ExampleTree:
    """A private copy of examples/hipvec, driven through the example recipe's own steps."""

    def __init__(self, root: Path, recipe: Recipe) -> None:
        self.root = root
        self.recipe = recipe
        self.lib_dir = root / "vendor" / "lib"

    def env(self, archs: str, *, link_path: bool = True, load_path: bool = True,
            extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """What rocmbuild would set: the recipe's [env], the arch variable, the library paths."""
        env = {k: v for k, v in os.environ.items() if k not in ("LIBRARY_PATH", "LD_LIBRARY_PATH")}
        env.update(self.recipe.env)
        # The steps say python3: make it this interpreter (it has setuptools).
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        for variable in self.recipe.arch.variables:
            env[variable] = archs
        if link_path:
            env["LIBRARY_PATH"] = str(self.lib_dir)
        if load_path:
            env["LD_LIBRARY_PATH"] = str(self.lib_dir)
        env.update(extra or {})
        return env

    def run(self, commands: tuple[str, ...], env: Mapping[str, str]) -> tuple[int, str]:
        """Run step commands like rocmbuild does (bash, cwd = source tree); stop at the first failure."""
        output = []
        for command in commands:
            proc = subprocess.run(["bash", "-c", command], cwd=self.root, env=dict(env),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
            output.append(proc.stdout)
            if proc.returncode != 0:
                return proc.returncode, "".join(output)
        return 0, "".join(output)

    def prepare(self, env: Mapping[str, str]) -> tuple[int, str]:
        return self.run(self.recipe.steps.prepare, env)

    def build(self, env: Mapping[str, str]) -> tuple[int, str]:
        return self.run(self.recipe.steps.build, env)

    def verify(self, env: Mapping[str, str]) -> tuple[int, str]:
        return self.run(self.recipe.steps.verify, env)

    def clean(self) -> list[Path]:
        """Remove the recipe's clean paths (globs, inside the tree only)."""
        removed = []
        for pattern in self.recipe.clean_paths:
            for path in sorted(self.root.glob(pattern)):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
                removed.append(path)
        return removed

    def full_build(self, archs: str) -> str:
        env = self.env(archs)
        for step in (self.prepare, self.build, self.verify):
            code, output = step(env)
            assert code == 0, f"{step.__name__} failed ({code}):\n{output}"
        return output


@pytest.fixture(scope="session")
def example_recipe() -> Recipe:
    return find_recipe("example")


@pytest.fixture(scope="session")
def example_tree(tmp_path_factory: pytest.TempPathFactory,
                 example_recipe: Recipe) -> Callable[[str], ExampleTree]:
    """Factory: a fresh copy of the example source named ``name``."""
    source = example_recipe.source_path
    assert source is not None and source.is_dir()

    def make(name: str) -> ExampleTree:
        root = tmp_path_factory.mktemp(name) / "hipvec"
        shutil.copytree(source, root, ignore=shutil.ignore_patterns(
            "build", "*.so", "*.so.*", "lib", "*.egg-info", "__pycache__"))
        return ExampleTree(root, example_recipe)

    return make


@pytest.fixture(scope="session")
def hipvec_gfx90a(example_tree: Callable[[str], ExampleTree]) -> ExampleTree:
    """The example built (prepare, build, verify) for gfx90a; shared, do not modify."""
    tree = example_tree("gfx90a")
    tree.full_build("gfx90a")
    return tree


@pytest.fixture(scope="session")
def hipvec_multi(example_tree: Callable[[str], ExampleTree]) -> ExampleTree:
    """The example built for gfx90a;gfx908; shared, do not modify."""
    tree = example_tree("multi")
    tree.full_build("gfx90a;gfx908")
    return tree


# --- the rocmbuild command in process (tests/inprocess.py) -----------------------------


@pytest.fixture(scope="session")
def probe_answers(tmp_path_factory: pytest.TempPathFactory) -> ProbeAnswers:
    """The host's answers to rocmbuild's read-only probes, shared by the session's in-process runs."""
    from inprocess import ProbeAnswers

    from rocmbuild.process import command

    return ProbeAnswers(command._run, tmp_path_factory.getbasetemp())


@pytest.fixture
def probes_once(probe_answers: ProbeAnswers, monkeypatch: pytest.MonkeyPatch) -> ProbeAnswers:
    """This test's probes go through the session's memo (inprocess.ProbeAnswers)."""
    from rocmbuild.process import command

    monkeypatch.setattr(command, "_run", probe_answers)
    return probe_answers
