"""End to end through the installed `rocmbuild` command, the real runner and scripted builds.

Each scenario's build (tests/fakebuild.py) fails the way a real ROCm build does
until the environment is right; the test asserts exit code, attempts, remedies
and the summary.json / events.jsonl of the contract.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")
FAKEBUILD = Path(__file__).parent / "fakebuild.py"

RECIPE = """
name = "{name}"
packages = ["rocmbuild-test-nonexistent"]
requires = {requires}
{source}
[steps]
build = ["{python} {fakebuild} {build}"]
verify = [{verify}]
[clean]
paths = ["build", "*.egg-info", "cache/*"]
[resources]
memory_per_job_gb = 1
"""


def write_recipe(tmp: Path, build: str, *, verify: str | None = None, name: str = "fake",
                 requires: tuple[str, ...] = (), own_source: bool = False) -> Path:
    """A recipe running a fakebuild scenario; ``own_source``: a [source] path of its own (no --source)."""
    path = tmp / f"{name}.toml"
    source = ""
    if own_source:
        (tmp / f"{name}-tree").mkdir(exist_ok=True)
        source = f'[source]\npath = "{name}-tree"'
    path.write_text(RECIPE.format(
        name=name, python=sys.executable, fakebuild=FAKEBUILD, build=build, source=source,
        verify=f'"{sys.executable} {FAKEBUILD} {verify}"' if verify else "",
        requires=json.dumps(list(requires))))
    return path


def base_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_")}
    env.update(XDG_STATE_HOME=str(tmp / "state"), XDG_CACHE_HOME=str(tmp / "cache"),
               XDG_CONFIG_HOME=str(tmp / "config"), HIP_PLATFORM="amd")
    env.pop("CXXFLAGS", None)
    env.update(extra)
    return env


def rocmbuild(tmp: Path, *args: str, env: dict[str, str] | None = None, source: Path | None = None,
              timeout: float = 60, with_source: bool = True) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    source = source or tmp / "src"
    source.mkdir(exist_ok=True)
    argv = [ROCMBUILD, *args, *(["--source", str(source)] if with_source else []), "--run-dir", str(tmp / "run"),
            "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--backoff", "0.01", "--stall-timeout", "1s",
            "--json"]
    proc = subprocess.run(argv, env=env or base_env(tmp), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    summary_path = tmp / "run" / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return proc, summary


def events(tmp: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp / "run" / "events.jsonl").read_text().splitlines()]


def diag(summary: dict[str, Any], n: int) -> dict[str, Any]:
    return summary["attempts"][n - 1]["diagnosis"]


def remedies(summary: dict[str, Any]) -> list[list[str]]:
    return [a["remedies"] for a in summary["attempts"]]


def check_contract(summary: dict[str, Any], tmp: Path) -> None:
    assert set(summary) >= {"recipe", "source", "arch", "run_dir", "outcome", "exit_code", "attempts"}
    for attempt in summary["attempts"]:
        assert set(attempt) >= {"number", "started", "duration_s", "ended", "exit_code", "log", "env",
                                "diagnosis", "remedies"}
        assert (tmp / "run" / attempt["log"]).is_file()
        if attempt["diagnosis"] is not None:
            assert set(attempt["diagnosis"]) >= {"category", "signature", "line", "text", "fields", "retryable"}
    names = [e["event"] for e in events(tmp)]
    assert names[0] == "run.started" and names[-1] == "run.finished"
    assert all("timestamp" in e for e in events(tmp))
    assert (tmp / "run" / "repro.sh").is_file()


def test_link_failure_until_library_path_reaches_the_library(tmp_path: Path) -> None:
    lib = tmp_path / "src" / "third_party" / "fakeblas" / "lib"
    lib.mkdir(parents=True)
    (lib / "libfakeblas.so").write_text("")
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "link")))
    assert proc.returncode == 0, proc.stderr
    assert len(summary["attempts"]) == 2 and summary["outcome"] == "succeeded"
    assert diag(summary, 1)["category"] == "missing_library"
    assert diag(summary, 1)["fields"]["library"] == "fakeblas"
    assert "cannot find -lfakeblas" in diag(summary, 1)["text"]
    assert remedies(summary) == [["add_library_paths"], []]
    assert summary["attempts"][1]["env"]["LIBRARY_PATH"].startswith(str(lib))
    assert json.loads(proc.stdout.splitlines()[-1]) == summary, "--json prints the summary object on stdout"
    check_contract(summary, tmp_path)
    log = (tmp_path / "run" / "attempt-1.log").read_bytes()
    assert b"cannot find -lfakeblas" in log and b"[39/40]" in log


def test_load_failure_until_ld_library_path_reaches_the_soname(tmp_path: Path) -> None:
    lib = tmp_path / "src" / "vendor" / "rt"
    lib.mkdir(parents=True)
    (lib / "libfakert.so.1").write_text("")
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "ok", verify="load")))
    assert proc.returncode == 0, proc.stderr
    assert diag(summary, 1)["category"] == "missing_runtime_library"
    assert summary["attempts"][0]["step"] == "verify"
    assert remedies(summary)[0] == ["add_library_paths"]
    assert summary["attempts"][1]["env"]["LD_LIBRARY_PATH"].startswith(str(lib))


def test_compiler_crash_at_O3_is_cured_by_lowering_optimisation(tmp_path: Path) -> None:
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "crash")), env=base_env(tmp_path, CXXFLAGS="-O3"))
    assert proc.returncode == 0, proc.stderr
    assert diag(summary, 1)["category"] == "compiler_crash"
    assert remedies(summary) == [["lower_optimization"], []]
    assert summary["attempts"][1]["env"]["CXXFLAGS"] == "-O2"
    assert summary["attempts"][1]["env"]["CMAKE_HIP_FLAGS_RELEASE"].startswith("-O2")


def test_oom_kill_needs_two_halvings(tmp_path: Path) -> None:
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "oom")), "--jobs", "8")
    assert proc.returncode == 0, proc.stderr
    assert [a["env"]["MAX_JOBS"] for a in summary["attempts"]] == ["8", "4", "2"]
    assert all(diag(summary, n)["category"] == "out_of_memory" for n in (1, 2))
    assert remedies(summary) == [["reduce_jobs"], ["reduce_jobs"], []]


def test_objects_for_another_arch_are_cleaned(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep")
    src = tmp_path / "src"
    (src / "build").mkdir(parents=True)
    (src / "build" / "arch.stamp").write_text("gfx908")
    (src / "build" / "link-out").symlink_to(outside)   # inside a clean path
    (src / "cache").symlink_to(outside)                  # a clean glob "cache/*" through a symlink
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "stale_arch")))
    assert proc.returncode == 0, proc.stderr
    assert diag(summary, 1)["category"] == "arch_mismatch"
    assert remedies(summary)[0] == ["clean_build"]
    removed = [e["path"] for e in events(tmp_path) if e["event"] == "path.removed"]
    assert str(src / "build") in removed
    assert (outside / "precious.txt").read_text() == "keep", "clean_build must not follow symlinks out"
    assert (src / "cache").is_symlink()


def test_transient_network_error_twice_then_success(tmp_path: Path) -> None:
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "network")))
    assert proc.returncode == 0, proc.stderr
    assert [diag(summary, n)["category"] for n in (1, 2)] == ["network", "network"]
    assert remedies(summary) == [["wait_and_retry"], ["wait_and_retry"], []]
    assert sum(e["event"] == "retry.waiting" for e in events(tmp_path)) == 2


def test_unknown_failure_stops_after_one_attempt(tmp_path: Path) -> None:
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "unknown")))
    assert proc.returncode == 3, proc.stderr
    assert summary["outcome"] == "unrecognised" and len(summary["attempts"]) == 1
    assert diag(summary, 1)["category"] == "unknown"
    assert "rms_norm_fused" in proc.stderr, "the final summary shows the decisive line"


def test_unknown_failure_with_escalate_unknown_uses_generic_ladder(tmp_path: Path) -> None:
    (tmp_path / "src" / "build").mkdir(parents=True)   # something for clean_build to remove
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "unknown")), "--escalate-unknown",
                              "--max-attempts", "3")
    assert proc.returncode == 1
    assert remedies(summary)[:2] == [["clean_build"], ["lower_optimization"]], "uninstall finds nothing installed"


def test_a_clean_with_nothing_to_remove_does_not_spend_an_attempt(tmp_path: Path) -> None:
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "unknown")), "--escalate-unknown",
                              "--max-attempts", "3")
    assert proc.returncode == 1
    assert remedies(summary)[:2] == [["lower_optimization"], ["reduce_jobs"]]
    skipped = [e["remedy"] for e in events(tmp_path) if e["event"] == "remedy.skipped"]
    assert "clean_build" in skipped


def test_unsupported_arch_is_not_retried(tmp_path: Path) -> None:
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "unsupported")))
    assert proc.returncode == 4, proc.stderr
    assert summary["outcome"] == "not_retryable" and len(summary["attempts"]) == 1
    assert diag(summary, 1)["category"] == "unsupported_arch"
    assert diag(summary, 1)["retryable"] is False


def test_stall_then_success_after_reducing_jobs(tmp_path: Path) -> None:
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "stall")), "--jobs", "4")
    assert proc.returncode == 0, proc.stderr
    assert summary["attempts"][0]["ended"] == "stalled"
    assert diag(summary, 1)["category"] == "stalled"
    assert remedies(summary) == [["reduce_jobs"], []]
    log = (tmp_path / "run" / "attempt-1.log").read_text(errors="replace")
    assert "fakebuild.py" in log.split("[3/40]")[-1], "a process-tree snapshot is written before the kill"


def test_two_categories_in_sequence(tmp_path: Path) -> None:
    lib = tmp_path / "src" / "deps" / "lib"
    lib.mkdir(parents=True)
    (lib / "libfakeblas.so").write_text("")
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "link_then_crash")),
                              env=base_env(tmp_path, CXXFLAGS="-O3"))
    assert proc.returncode == 0, proc.stderr
    assert [diag(summary, n)["category"] for n in (1, 2)] == ["missing_library", "compiler_crash"]
    assert remedies(summary) == [["add_library_paths"], ["lower_optimization"], []]


def test_budget_spent_stops_with_exit_5(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, "stall")
    source = tmp_path / "src"
    source.mkdir()
    argv = [ROCMBUILD, str(recipe), "--source", str(source), "--run-dir", str(tmp_path / "run"), "--arch", "gfx90a",
            "--skip-preflight", "--no-cache", "--budget", "2s", "--stall-timeout", "30s", "--jobs", "8"]
    start = time.monotonic()
    proc = subprocess.run(argv, env=base_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 5, proc.stderr
    assert time.monotonic() - start < 15
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["outcome"] == "budget_exhausted" and summary["attempts"][0]["ended"] == "budget"


def _wait_for_event(tmp: Path, name: str, timeout: float = 20) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        path = tmp / "run" / "events.jsonl"
        if path.exists() and f'"{name}"' in path.read_text():
            return
        time.sleep(0.1)
    raise AssertionError(f"no {name} event")


def test_sigterm_stops_the_build_writes_records_and_exits_130(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, "stall")
    source = tmp_path / "src"
    source.mkdir()
    argv = [ROCMBUILD, str(recipe), "--source", str(source), "--run-dir", str(tmp_path / "run"), "--arch", "gfx90a",
            "--skip-preflight", "--no-cache", "--stall-timeout", "60s", "--jobs", "8"]
    proc = subprocess.Popen(argv, env=base_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait_for_event(tmp_path, "attempt.started")
    time.sleep(1.0)
    children = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
    assert children, "the build is running"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 130
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["outcome"] == "interrupted" and summary["exit_code"] == 130
    assert summary["attempts"][0]["ended"] == "interrupted"
    time.sleep(0.2)
    survivors = [pid for pid in children if psutil.pid_exists(pid)
                 and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert survivors == []


def test_second_build_on_the_same_tree_exits_2_naming_the_pid(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, "stall")
    source = tmp_path / "src"
    source.mkdir()
    argv = [ROCMBUILD, str(recipe), "--source", str(source), "--run-dir", str(tmp_path / "run"), "--arch", "gfx90a",
            "--skip-preflight", "--no-cache", "--stall-timeout", "60s", "--jobs", "8"]
    first = subprocess.Popen(argv, env=base_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_event(tmp_path, "attempt.started")
        second = subprocess.run([*argv[:5], str(tmp_path / "run2"), *argv[6:]], env=base_env(tmp_path),
                                capture_output=True, text=True, timeout=30)
        assert second.returncode == 2
        assert f"PID {first.pid}" in second.stderr and "Traceback" not in second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=20)


def test_several_recipes_build_in_order_and_stop_at_the_first_failure(tmp_path: Path) -> None:
    a = write_recipe(tmp_path, "ok", name="first", own_source=True)
    b = write_recipe(tmp_path, "unsupported", name="second", own_source=True)
    c = write_recipe(tmp_path, "ok", name="third", own_source=True)
    proc, _ = rocmbuild(tmp_path, str(a), str(b), str(c), with_source=False)
    assert proc.returncode == 4
    summaries = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [s["recipe"] for s in summaries] == ["first", "second"]
    assert [s["outcome"] for s in summaries] == ["succeeded", "not_retryable"]
    assert (tmp_path / "run" / "first" / "summary.json").is_file()
    assert not (tmp_path / "run" / "third").exists()


def test_requires_neither_installed_nor_earlier_is_an_error_before_anything_runs(tmp_path: Path) -> None:
    needy = write_recipe(tmp_path, "ok", name="needy", requires=("base",), own_source=True)
    base = write_recipe(tmp_path, "ok", name="base")
    user_recipes = tmp_path / "config" / "rocmbuild" / "recipes"
    user_recipes.mkdir(parents=True)
    (tmp_path / "base-tree").mkdir()
    (user_recipes / "base.toml").write_text(base.read_text() + f'\n[source]\npath = "{tmp_path / "base-tree"}"\n')
    proc, summary = rocmbuild(tmp_path, str(needy))
    assert proc.returncode == 2 and "requires 'base'" in proc.stderr and summary == {}
    proc, _ = rocmbuild(tmp_path, "base", str(needy), with_source=False)
    assert proc.returncode == 0, proc.stderr


def test_report_latest_renders_the_last_run(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    source = tmp_path / "src"
    source.mkdir()
    argv = [ROCMBUILD, str(write_recipe(tmp_path, "unsupported")), "--source", str(source), "--arch", "gfx90a",
            "--skip-preflight", "--no-cache"]
    assert subprocess.run(argv, env=env, capture_output=True, timeout=60).returncode == 4
    proc = subprocess.run([ROCMBUILD, "report", "latest"], env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert "unsupported_arch" in proc.stdout and "not_retryable" in proc.stdout
    assert "invalid target ID 'gfx942'" in proc.stdout
    as_json = subprocess.run([ROCMBUILD, "report", "--json"], env=env, capture_output=True, text=True, timeout=30)
    assert json.loads(as_json.stdout)["outcome"] == "not_retryable"


@pytest.mark.parametrize("bad", [["--jobs", "eight"], ["--budget", "soon"], ["--arch", "gfx9422"],
                                 ["--max-attempts", "0"]])
def test_bad_options_exit_2_without_traceback(tmp_path: Path, bad: list[str]) -> None:
    argv = [ROCMBUILD, str(write_recipe(tmp_path, "ok")), "--source", str(tmp_path), *bad]
    proc = subprocess.run(argv, env=base_env(tmp_path), capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "error:" in proc.stderr


def local_remote(tmp: Path, commits: dict[str, dict[str, str]]) -> Path:
    """A git repository standing in for the recipe's remote: one commit (and tag) per entry, in order."""
    remote = tmp / "remote"
    remote.mkdir()
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(remote)]
    subprocess.run(["git", "init", "-q", str(remote)], check=True)
    for tag, files in commits.items():
        for name, text in files.items():
            (remote / name).write_text(text)
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-qm", tag], check=True)
        subprocess.run([*git, "tag", tag], check=True)
    return remote


def test_checkout_from_a_local_remote_and_refetch_when_the_ref_changes(tmp_path: Path) -> None:
    remote = local_remote(tmp_path, {"v1": {"VERSION": "one\n"}, "v2": {"VERSION": "two\n"}})
    recipe = tmp_path / "co.toml"
    template = ('name = "co"\n[source]\ngit = "{url}"\nref = "{ref}"\n[steps]\nbuild = ["cat VERSION"]\n')
    env = base_env(tmp_path)
    argv = [ROCMBUILD, str(recipe), "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--json"]
    recipe.write_text(template.format(url=remote.as_uri(), ref="v1"))
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    checkout = tmp_path / "cache" / "rocmbuild" / "src" / "co"
    assert (checkout / "VERSION").read_text() == "one\n"
    recipe.write_text(template.format(url=remote.as_uri(), ref="v2"))
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (checkout / "VERSION").read_text() == "two\n"
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["source"] == str(checkout)


def test_a_decisive_non_retryable_failure_stops_the_build_at_once(tmp_path: Path) -> None:
    start = time.monotonic()
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "unsupported_then_drain")))
    assert proc.returncode == 4, proc.stderr
    assert time.monotonic() - start < 20, "did not wait for the build to drain its other jobs"
    attempt = summary["attempts"][0]
    assert attempt["stopped_early"] and "unsupported_arch" in attempt["stopped_early"]
    assert attempt["diagnosis"]["category"] == "unsupported_arch"


def test_fail_fast_stops_at_a_retryable_failure_and_still_applies_the_remedy(tmp_path: Path) -> None:
    start = time.monotonic()
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "crash_then_drain")), "--fail-fast",
                              env=base_env(tmp_path, CXXFLAGS="-O3"))
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - start < 20
    first = summary["attempts"][0]
    assert first["stopped_early"] and first["diagnosis"]["category"] == "compiler_crash"
    assert remedies(summary) == [["lower_optimization"], []]


def test_verbose_echoes_events_and_report_latest_follows_a_custom_run_dir(tmp_path: Path) -> None:
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "ok")), "--verbose")
    assert proc.returncode == 0, proc.stderr
    assert "rocmbuild[attempt.started]" in proc.stderr and "rocmbuild[run.finished]" in proc.stderr
    report = subprocess.run([ROCMBUILD, "report", "--json"], env=base_env(tmp_path), capture_output=True, text=True,
                            timeout=30)
    assert json.loads(report.stdout)["run_dir"] == summary["run_dir"] == str(tmp_path / "run")


def test_quiet_shows_no_build_output(tmp_path: Path) -> None:
    proc, _ = rocmbuild(tmp_path, str(write_recipe(tmp_path, "ok")), "--quiet")
    assert proc.returncode == 0
    assert "[4/4] Building HIP object" not in proc.stderr + proc.stdout


FAKE_GIT = """#!/usr/bin/env bash
# Fails the first clone after it fetched the main repository, the way a submodule fetch dies
# on a flaky network (fixtures/logs/network: TheRock#4916-style RPC failures).
real="$REAL_GIT"
if [ "$1" = clone ] && [ ! -e "$MARKER" ]; then
  touch "$MARKER"
  "$real" "$@" || exit $?
  echo "fatal: unable to access 'https://github.com/example/sub.git/': Could not resolve host: github.com" >&2
  echo "fatal: clone of 'https://github.com/example/sub.git' into submodule path 'third_party/sub' failed" >&2
  exit 128
fi
exec "$real" "$@"
"""


def test_a_checkout_cut_by_the_network_is_retried_and_prepare_still_runs(tmp_path: Path) -> None:
    remote = local_remote(tmp_path, {"v1": {"README": "hello\n"}})
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    (bindir / "git").write_text(FAKE_GIT)
    (bindir / "git").chmod(0o755)
    recipe = tmp_path / "net.toml"
    recipe.write_text(f'name = "net"\n[source]\ngit = "{remote.as_uri()}"\n'
                      '[steps]\nprepare = ["cp README prepared"]\nbuild = ["cat prepared"]\n')
    env = base_env(tmp_path, MARKER=str(tmp_path / "failed-once"), REAL_GIT=str(shutil.which("git")))
    env["PATH"] = f"{bindir}:{env['PATH']}"
    argv = [ROCMBUILD, str(recipe), "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--backoff", "0.01",
            "--json"]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["attempts"][0]["diagnosis"]["category"] == "network"
    assert remedies(summary) == [["wait_and_retry"], []]
    assert "hello" in (Path(summary["run_dir"]) / "attempt-2.log").read_text()


def test_rocmbuilds_own_step_header_is_never_the_decisive_line(tmp_path: Path) -> None:
    recipe = tmp_path / "hdr.toml"
    recipe.write_text('name = "hdr"\n[steps]\nbuild = ["exit 1 # /usr/bin/ld: cannot find -lhipblas"]\n')
    proc, summary = rocmbuild(tmp_path, str(recipe))
    assert proc.returncode == 3, proc.stderr
    assert diag(summary, 1)["category"] == "unknown"


@pytest.mark.parametrize(("extra", "needle"), [
    (["--backoff", "inf"], "--backoff"),
    (["--backoff", "nan"], "--backoff"),
])
def test_unusable_option_values_exit_2(tmp_path: Path, extra: list[str], needle: str) -> None:
    argv = [ROCMBUILD, str(write_recipe(tmp_path, "ok")), "--source", str(tmp_path), "--arch", "gfx90a", *extra]
    proc = subprocess.run(argv, env=base_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr


def test_a_run_dir_that_already_holds_a_run_is_refused(tmp_path: Path) -> None:
    recipe = str(write_recipe(tmp_path, "ok"))
    assert rocmbuild(tmp_path, recipe)[0].returncode == 0
    proc, _ = rocmbuild(tmp_path, recipe)
    assert proc.returncode == 2 and "already holds a run" in proc.stderr


def test_one_source_for_several_recipes_is_refused(tmp_path: Path) -> None:
    proc, _ = rocmbuild(tmp_path, str(write_recipe(tmp_path, "ok", name="a")),
                        str(write_recipe(tmp_path, "ok", name="b")))
    assert proc.returncode == 2 and "several recipes" in proc.stderr


def test_a_crash_inside_the_run_still_finishes_the_record(tmp_path: Path) -> None:
    recipe = tmp_path / "gone.toml"
    recipe.write_text('name = "gone"\n[steps]\nbuild = ["true"]\n[clean]\npaths = ["build"]\n')
    source = tmp_path / "src"
    source.mkdir()
    # A source tree that vanishes under the running build is not a usage error: the runner cannot
    # start the step; whatever happens, summary.json must not stay "running".
    argv = [ROCMBUILD, str(recipe), "--source", str(source), "--run-dir", str(tmp_path / "run"), "--arch",
            "gfx90a", "--skip-preflight", "--no-cache"]
    source.rmdir()
    proc = subprocess.run(argv, env=base_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    assert not (tmp_path / "run" / "summary.json").exists(), "usage errors stop before any record"


def test_a_library_missing_at_import_before_compiling_stops_after_one_attempt(tmp_path: Path) -> None:
    """Issue 12: no clean_build with nothing to clean, no -O2 / fewer jobs before anything compiled."""
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "import_missing")))
    assert proc.returncode == 1, proc.stderr
    assert len(summary["attempts"]) == 1 and remedies(summary) == [[]]
    assert diag(summary, 1)["category"] == "missing_runtime_library"
    assert "lower_optimization" not in proc.stderr and "cold" not in proc.stderr


def test_a_dead_mirror_gets_its_waits_and_nothing_else(tmp_path: Path) -> None:
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "network_down")), "--max-attempts", "9")
    assert proc.returncode == 1, proc.stderr
    assert remedies(summary) == [["wait_and_retry"]] * 3 + [[]]
    finished = [e for e in events(tmp_path) if e["event"] == "run.finished"][-1]
    assert "network ladder is spent" in finished["reason"]


def test_pip_without_its_ssl_module_is_a_broken_interpreter_not_the_network(tmp_path: Path) -> None:
    """Issue 12, findings 1-2: the mixed interpreter was diagnosed `network` and waited out for 9 minutes."""
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "broken_ssl")), "--max-attempts", "6")
    assert proc.returncode == 4, proc.stderr
    assert summary["outcome"] == "not_retryable" and len(summary["attempts"]) == 1
    assert diag(summary, 1)["signature"] == "broken-interpreter"
    assert "LD_LIBRARY_PATH" in summary["todo"] and "proxy" not in summary["todo"]


def test_vllm_on_a_cpu_torch_is_told_torch_is_not_a_rocm_build(tmp_path: Path) -> None:
    """Issue 12, finding 10: the advice names the one cause, not four."""
    script = tmp_path / "setup_cpu_torch.py"
    script.write_text("print('Traceback (most recent call last):')\n"
                      "print('  File \"setup.py\", line 560, in <module>')\n"
                      "print('RuntimeError: Unknown runtime environment')\nraise SystemExit(1)\n")
    recipe = tmp_path / "cpuvllm.toml"
    recipe.write_text(f'name = "cpuvllm"\n[steps]\nbuild = ["{sys.executable} {script}"]\n')
    proc, summary = rocmbuild(tmp_path, str(recipe))
    assert proc.returncode == 4, proc.stderr
    assert diag(summary, 1)["signature"] == "vllm-unknown-runtime"
    assert "not a ROCm build" in summary["todo"] and "--index-url" in summary["todo"]
