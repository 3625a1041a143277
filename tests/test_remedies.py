"""Remedies as plan -> plan functions, and the safety of deletion."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from planfactory import make_plan

from rocmbuild.loop.effects import Applied, carry_out, safe_remove
from rocmbuild.loop.remedies import (
    RemedyContext,
    RemedyResult,
    add_library_paths,
    clean_build,
    lower_optimization,
    reduce_jobs,
    replace_opt_level,
    uninstall_packages,
)
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.process.command import CommandResult


@dataclass(frozen=True)
class Diag:
    category: str
    fields: dict[str, str] = field(default_factory=dict)


def no_commands(argv: object, **_: object) -> CommandResult:
    return CommandResult(1, "")


CTX = RemedyContext(run=no_commands)


def done(decided: RemedyResult, plan: BuildPlan) -> Applied:
    """A remedy's decision carried out by the one executor (effects.py), as the session does."""
    return carry_out(decided, source=plan.source, run=no_commands)


def test_safe_remove_never_follows_symlinks_out_of_the_tree(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "build").mkdir(parents=True)
    (outside / "precious.txt").write_text("keep")
    (outside / "build" / "x.o").write_text("keep too")
    src = tmp_path / "src"
    (src / "build" / "sub").mkdir(parents=True)
    (src / "build" / "sub" / "a.o").write_text("")
    (src / "pkg.egg-info").mkdir()
    (src / "out").mkdir()
    (src / "out" / "k.o").write_text("")
    (src / "link").symlink_to(outside)                 # a directory link pointing outside
    (src / "build" / "escape").symlink_to(outside)     # a link inside a clean path
    (src / "out" / "evil.o").symlink_to(outside / "precious.txt")
    removed, refused = safe_remove(src, ["build", "*.egg-info", "out/*.o", "link/build", "../outside", "/etc"])
    assert sorted(removed) == ["build", "out/evil.o", "out/k.o", "pkg.egg-info"]
    assert {r.split(" (")[0] for r in refused} >= {"link/build", "../outside", "/etc"}
    assert (outside / "precious.txt").read_text() == "keep"
    assert (outside / "build" / "x.o").read_text() == "keep too"
    assert (src / "link").is_symlink(), "links that no pattern names stay"


def test_clean_build_removes_clean_paths_and_cmake_caches(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "third_party" / "x" / "CMakeFiles").mkdir(parents=True)
    (tmp_path / "third_party" / "x" / "CMakeCache.txt").write_text("")
    (tmp_path / "src.c").write_text("int main(){}")
    plan = make_plan(tmp_path)
    decided = clean_build(plan.with_changes(run_prepare=False), Diag("stale_build"), CTX)
    assert (tmp_path / "build").is_dir(), "the remedy itself deletes nothing: removal is an effect"
    assert decided.effects and decided.applies_if == "removed"
    result = done(decided, plan)
    assert result.applied and result.plan.run_prepare, "a clean tree needs prepare again"
    assert set(result.removed) == {"build", "third_party/x/CMakeCache.txt", "third_party/x/CMakeFiles"}
    assert (tmp_path / "src.c").exists()


def test_add_library_paths_link_time_finds_unversioned_lib(tmp_path: Path) -> None:
    libdir = tmp_path / "rocm" / "lib"
    libdir.mkdir(parents=True)
    (libdir / "libhipblas.so").write_text("")
    src = tmp_path / "src"
    src.mkdir()
    plan = make_plan(src)
    result = add_library_paths(plan, Diag("missing_library", {"library": "hipblas"}),
                               RemedyContext(run=no_commands, extra_library_dirs=(libdir,)))
    assert result.applied
    assert result.plan.env["LIBRARY_PATH"].split(":")[0] == str(libdir)
    assert result.plan.env["LD_LIBRARY_PATH"].split(":")[0] == str(libdir)


def test_add_library_paths_searches_the_source_tree_and_ldconfig(tmp_path: Path) -> None:
    vendor = tmp_path / "vendor" / "lib"
    vendor.mkdir(parents=True)
    (vendor / "libhipvecmath.so").write_text("")
    plan = make_plan(tmp_path)
    result = add_library_paths(plan, Diag("missing_library", {"library": "hipvecmath"}), CTX)
    assert result.applied and str(vendor) in result.plan.env["LIBRARY_PATH"]

    fake = tmp_path.parent / f"{tmp_path.name}-ldconfig"
    fake.mkdir()
    (fake / "libamdhip64.so.6").write_text("")

    def ldconfig(argv: list[str], **_: object) -> CommandResult:
        if "ldconfig" in argv[0]:
            return CommandResult(0, f"\tlibamdhip64.so.6 (libc6,x86-64) => {fake}/libamdhip64.so.6\n")
        return CommandResult(1, "")

    result = add_library_paths(plan, Diag("missing_runtime_library", {"library": "libamdhip64.so.6"}),
                               RemedyContext(run=ldconfig))
    assert result.applied and result.plan.env["LD_LIBRARY_PATH"].startswith(str(fake))


def test_add_library_paths_not_applicable_names_the_package(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    result = add_library_paths(plan, Diag("missing_library", {"library": "hipblaslt"}), CTX)
    assert not result.applied and result.plan is plan
    assert result.warning is not None and "hipblaslt-dev" in result.warning


def test_lower_optimization_replaces_never_appends_contradicting(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "CMakeCache.txt").write_text("")
    plan = make_plan(tmp_path, caller={"PATH": "/usr/bin", "CXXFLAGS": "-O3 -g -fPIC", "CMAKE_ARGS": "-DFOO=1"})
    first = done(lower_optimization(plan, Diag("compiler_crash"), CTX), plan)
    env = first.plan.env
    assert env["CXXFLAGS"] == "-O2 -g -fPIC"
    assert env["HIPFLAGS"] == "-O2" and env["HIPCC_COMPILE_FLAGS_APPEND"] == "-O2"
    assert env["CMAKE_HIP_FLAGS_RELEASE"] == "-O2 -DNDEBUG"
    assert "-DFOO=1" in env["CMAKE_ARGS"].split() and "-DCMAKE_HIP_FLAGS_RELEASE=-O2" in env["CMAKE_ARGS"].split()
    assert "build/CMakeCache.txt" in first.removed, "a fresh configure is forced"
    second = lower_optimization(first.plan, Diag("compiler_crash"), CTX)
    env2 = second.plan.env
    assert env2["CXXFLAGS"] == "-O1 -g -fPIC" and "-O2" not in env2["CMAKE_ARGS"]
    assert env2["CMAKE_ARGS"].split().count("-DCMAKE_HIP_FLAGS_RELEASE=-O1") == 1
    assert "-DCMAKE_HIP_FLAGS_RELWITHDEBINFO=-O1" in env2["CMAKE_ARGS"].split(), "vLLM's default build type too"
    assert not lower_optimization(second.plan, Diag("compiler_crash"), CTX).applied


def test_replace_opt_level() -> None:
    assert replace_opt_level("-O3 -Wall -O3", 2) == "-O2 -Wall -O2"
    assert replace_opt_level("", 2) == "-O2"
    assert replace_opt_level("-Ofast", 1) == "-O1"
    assert replace_opt_level("-O2 -O3", 2) == "-O2"


def test_reduce_jobs_halves_every_job_knob(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, jobs=5)
    result = reduce_jobs(plan, Diag("out_of_memory"), CTX)
    assert result.plan.jobs == 2
    assert result.plan.env["MAX_JOBS"] == "2" and result.plan.env["CMAKE_BUILD_PARALLEL_LEVEL"] == "2"
    one = reduce_jobs(reduce_jobs(result.plan, Diag("out_of_memory"), CTX).plan, Diag("out_of_memory"), CTX)
    assert one.plan.jobs == 1 and not one.applied


def test_uninstall_runs_pip_in_the_builds_interpreter(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def pip(argv: list[str], **_: object) -> CommandResult:
        calls.append(list(argv))
        return CommandResult(0, "Found existing installation: demo-pkg 1.0\nSuccessfully uninstalled demo-pkg-1.0\n")

    plan = make_plan(tmp_path, python="/venv/bin/python3")
    decided = uninstall_packages(plan, Diag("abi_mismatch"), CTX)
    assert calls == [], "the remedy runs nothing: the uninstall is an effect"
    result = carry_out(decided, source=plan.source, run=pip)
    assert result.applied and calls == [["/venv/bin/python3", "-m", "pip", "uninstall", "-y", "demo-pkg"]]
    assert result.detail == "uninstalled demo-pkg-1.0 from /venv/bin/python3"
    nothing = carry_out(decided, source=plan.source,
                        run=lambda argv, **_: CommandResult(0, "WARNING: Skipping demo-pkg"))
    assert not nothing.applied and "none of demo-pkg was installed" in nothing.detail
    assert os.path.isdir(tmp_path)


def test_a_lone_versioned_soname_means_the_dev_package_is_missing(tmp_path: Path) -> None:
    libdir = tmp_path / "rocm" / "lib"
    libdir.mkdir(parents=True)
    (libdir / "libhipblas.so.3").write_text("")
    src = tmp_path / "src"
    src.mkdir()
    result = add_library_paths(make_plan(src), Diag("missing_library", {"library": "hipblas"}),
                               RemedyContext(run=no_commands, extra_library_dirs=(libdir,)))
    assert not result.applied
    assert "development package" in result.detail and result.warning and "hipblas-dev" in result.warning


def test_add_library_paths_never_adds_a_loader_default_dir(tmp_path: Path) -> None:
    """Issue 12: found only in /lib/x86_64-linux-gnu (real ldconfig output shape): the loader searches it anyway."""
    plan = make_plan(tmp_path)

    def ldconfig(argv: list[str], **_: object) -> CommandResult:
        if "ldconfig" in argv[0]:
            return CommandResult(0, "\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1\n")
        return CommandResult(1, "")

    result = add_library_paths(plan, Diag("missing_runtime_library", {"library": "libz.so.1"}),
                               RemedyContext(run=ldconfig))
    assert not result.applied and "LD_LIBRARY_PATH" not in result.plan.env
    assert "searched by default" in result.detail


def test_clean_build_with_nothing_to_remove_is_not_applied(tmp_path: Path) -> None:
    """Issue 12: an empty clean changes nothing, so it must not spend an attempt."""
    plan = make_plan(tmp_path).with_changes(run_prepare=False)
    result = done(clean_build(plan, Diag("stale_build"), CTX), plan)
    assert not result.applied and result.removed == () and "nothing to remove" in result.detail
