"""The bundled example (examples/hipvec + recipes/example.toml), built for real with hipcc.

Steps run the way rocmbuild runs them (bash, cwd = a private copy of the
source, the recipe's env plus the arch variable and library paths).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ExampleTree

from rocmbuild.host.arch import Targets
from rocmbuild.planning.recipe import Recipe
from rocmbuild.verification.artifacts import list_code_objects, verify_artifacts

LINK_ERROR = "/usr/bin/ld: cannot find -lhipvecmath: No such file or directory"
LOAD_ERROR = "ImportError: libhipvecmath.so.1: cannot open shared object file: No such file or directory"


def test_example_recipe_loads(example_recipe: Recipe) -> None:
    assert example_recipe.name == "example"
    assert example_recipe.bundled
    assert example_recipe.arch.variables == ("HIPVEC_ARCHS",)
    assert example_recipe.arch.separator == ";" and example_recipe.arch.plain
    assert example_recipe.env["HIP_PLATFORM"] == "amd"
    assert example_recipe.steps.prepare == ("make -C vendor/hipvecmath",)
    assert example_recipe.verify_artifacts == ("hipvec/_hipvec*.so",)
    assert "vendor/lib" in example_recipe.clean_paths and "build" in example_recipe.clean_paths
    assert example_recipe.preflight.libraries == ("amdhip64",)
    source = example_recipe.source_path
    assert source is not None
    assert (source / "setup.py").is_file() and (source / "src" / "hipvec_kernels.hip").is_file()
    # The link deliberately has no -L for the helper library.
    setup_py = (source / "setup.py").read_text()
    assert '"-lhipvecmath"' in setup_py and "vendor/lib" not in setup_py.split("def find_hipcc")[1]


@pytest.mark.hip
def test_build_for_gfx90a(hipvec_gfx90a: ExampleTree) -> None:
    tree = hipvec_gfx90a
    built = sorted(tree.root.glob("hipvec/_hipvec*.so"))
    assert len(built) == 1
    assert (tree.lib_dir / "libhipvecmath.so.1").exists()
    listing = list_code_objects(built[0])
    assert listing.archs == ("gfx90a",), listing
    report = verify_artifacts(tree.root, tree.recipe.verify_artifacts, Targets.parse("gfx90a"))
    assert report.ok and report.problem_line() is None
    assert [c.name for c in report.artifacts] == [str(built[0].relative_to(tree.root))]


@pytest.mark.hip
def test_verify_step_imports_and_reports_archs(hipvec_gfx90a: ExampleTree) -> None:
    tree = hipvec_gfx90a
    code, output = tree.verify(tree.env("gfx90a"))
    assert code == 0, output
    assert "built for gfx90a with hipvecmath 1.0.0" in output
    # No GPU here: the count is 0, not an error.
    assert "devices: 0" in output or "devices: 1" in output


@pytest.mark.hip
def test_import_needs_the_load_time_path(hipvec_gfx90a: ExampleTree) -> None:
    """RUNPATH is only $ORIGIN (where a wheel bundles the library): in the tree, without LD_LIBRARY_PATH
    the loader cannot find libhipvecmath.so.1."""
    tree = hipvec_gfx90a
    code, output = tree.verify(tree.env("gfx90a", load_path=False))
    assert code != 0
    assert LOAD_ERROR in output


@pytest.mark.hip
@pytest.mark.integration
def test_link_fails_without_library_path(example_tree: Callable[[str], ExampleTree]) -> None:
    tree = example_tree("nolink")
    env = tree.env("gfx90a", link_path=False, load_path=False)
    code, output = tree.prepare(env)
    assert code == 0, output
    code, output = tree.build(env)
    assert code != 0
    assert LINK_ERROR in output.splitlines(), output
    assert not list(tree.root.glob("hipvec/_hipvec*.so"))
    # The same tree links once the library's directory is on LIBRARY_PATH (objects are reused).
    code, output = tree.build(tree.env("gfx90a"))
    assert code == 0, output
    assert "skipping" in output and "hipvec_kernels.o (up to date)" in output


@pytest.mark.hip
@pytest.mark.integration
def test_stale_build_keeps_old_arch_until_cleaned(example_tree: Callable[[str], ExampleTree]) -> None:
    tree = example_tree("stale")
    tree.full_build("gfx908")
    # Ask for gfx90a without cleaning: the build system considers everything up to date.
    code, output = tree.build(tree.env("gfx90a"))
    assert code == 0, output
    assert "--offload-arch=gfx90a" not in output
    report = verify_artifacts(tree.root, tree.recipe.verify_artifacts, Targets.parse("gfx90a"))
    assert not report.ok
    assert report.missing == ("gfx90a",)
    artifact = report.artifacts[0]
    assert artifact.archs == ("gfx908",)
    assert report.problem_line() == f"{artifact.name} has no code object for gfx90a (found: gfx908)"
    assert report.problem_fields() == {"arch": "gfx90a", "target": artifact.name}
    assert report.describe() == (f"FAILED: wanted gfx90a; {artifact.name}: gfx908 "
                                 f"({report.artifacts[0].listing.tool.rsplit('/', 1)[-1]}), missing gfx90a")
    # What clean_build does: remove the clean paths, then prepare runs again.
    removed = {p.relative_to(tree.root).as_posix() for p in tree.clean()}
    assert {"build", "vendor/lib", artifact.name} <= removed
    output = tree.full_build("gfx90a")
    assert "built for gfx90a " in output
    report = verify_artifacts(tree.root, tree.recipe.verify_artifacts, Targets.parse("gfx90a"))
    assert report.ok, report.problem_line()
    assert report.artifacts[0].archs == ("gfx90a",)


@pytest.mark.hip
@pytest.mark.integration
def test_multi_arch_build_lists_both(hipvec_multi: ExampleTree) -> None:
    tree = hipvec_multi
    code, output = tree.verify(tree.env("gfx90a;gfx908"))
    assert code == 0, output
    assert "built for gfx90a;gfx908 " in output
    report = verify_artifacts(tree.root, tree.recipe.verify_artifacts, Targets.parse("gfx90a,gfx908"))
    assert report.ok
    assert report.artifacts[0].archs == ("gfx908", "gfx90a")
    assert report.artifacts[0].listing.bundles == (("gfx908", "gfx90a"),)
    # Asking for a third arch names it.
    report = verify_artifacts(tree.root, tree.recipe.verify_artifacts, Targets.parse("gfx90a,gfx940"))
    assert report.missing == ("gfx940",)
    assert str(report.problem_line()).endswith("has no code object for gfx940 (found: gfx908, gfx90a)")


@pytest.mark.parametrize("ci", ["", "1"])
def test_hip_marker_without_hipcc(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                  ci: str) -> None:
    """Locally a missing hipcc deselects hip tests with a message; in CI they fail instead
    (at setup, before any fixture tries to build: reported as an error, exit status 1)."""
    pytester.makeconftest(Path(__file__).with_name("conftest.py").read_text())
    pytester.makeini("[pytest]\nmarkers =\n    hip: needs hipcc\n    redis: needs redis-server\n")
    pytester.makepyfile(test_marked="import pytest\n\n@pytest.mark.hip\ndef test_needs_hipcc():\n    pass\n\n"
                                    "def test_plain():\n    pass\n")
    empty = pytester.mkdir("emptybin")
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("CI", ci)
    result = pytester.runpytest_subprocess()
    if ci:
        result.assert_outcomes(passed=1, errors=1)
        assert result.ret == 1
        result.stdout.fnmatch_lines(["*CI is set but tests marked hip need hipcc*apt-get install hipcc*"])
    else:
        result.assert_outcomes(passed=1, deselected=1)
        result.stdout.fnmatch_lines([
            "hipcc not found: tests marked hip are deselected",
            "*deselected 1 tests that need hipcc: "
            "apt-get install hipcc rocminfo libamdhip64-dev rocm-device-libs",
        ])
