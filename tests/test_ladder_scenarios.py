"""The ladder scenarios of tests/fakebuild.py through the `rocmbuild` command in this process.

Each scenario's build fails the way a real ROCm build does until the environment is right; the command
runs in process (tests/inprocess.py): its option parsing, planning, locks, records, the real
BuildSession, watcher, classifier, ladder and remedies, with the attempt's steps run as plain
subprocesses instead of under the PTY engine.  The tests assert exit code, attempts, remedies and the
summary.json / events.jsonl of the contract, as the CLI tests in tests/test_e2e_ladder.py do for what
only the PTY engine and a separate process can show (stalls, the budget's kill, signals, the lock).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from inprocess import CliRun, build, isolate, run_cli
from test_e2e_ladder import FAKE_GIT, check_link_cured, diag, local_remote, remedies, write_recipe

pytestmark = pytest.mark.usefixtures("probes_once")

def rocmbuild(tmp: Path, monkeypatch: pytest.MonkeyPatch, *args: str, env: dict[str, str] | None = None,
              with_source: bool = True) -> tuple[CliRun, dict[str, Any]]:
    """test_e2e_ladder.rocmbuild's command line, run in process."""
    return build(tmp, monkeypatch, *args, env=env, with_source=with_source)


def events(tmp: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp / "run" / "events.jsonl").read_text().splitlines()]


def test_link_failure_until_library_path_reaches_the_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = tmp_path / "src" / "third_party" / "fakeblas" / "lib"
    lib.mkdir(parents=True)
    (lib / "libfakeblas.so").write_text("")
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "link")))
    check_link_cured(proc, summary, tmp_path, lib)
    assert len(proc.attempts.requests) == 2, "each attempt went through Services.attempt"


def test_load_failure_until_ld_library_path_reaches_the_soname(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    lib = tmp_path / "src" / "vendor" / "rt"
    lib.mkdir(parents=True)
    (lib / "libfakert.so.1").write_text("")
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "ok", verify="load")))
    assert proc.returncode == 0, proc.stderr
    assert diag(summary, 1)["category"] == "missing_runtime_library"
    assert summary["attempts"][0]["step"] == "verify"
    assert remedies(summary)[0] == ["add_library_paths"]
    assert summary["attempts"][1]["env"]["LD_LIBRARY_PATH"].startswith(str(lib))


def test_compiler_crash_at_O3_is_cured_by_lowering_optimisation(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "crash")), env={"CXXFLAGS": "-O3"})
    assert proc.returncode == 0, proc.stderr
    assert diag(summary, 1)["category"] == "compiler_crash"
    assert remedies(summary) == [["lower_optimization"], []]
    assert summary["attempts"][1]["env"]["CXXFLAGS"] == "-O2"
    assert summary["attempts"][1]["env"]["CMAKE_HIP_FLAGS_RELEASE"].startswith("-O2")


def test_oom_kill_needs_two_halvings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "oom")), "--jobs", "8")
    assert proc.returncode == 0, proc.stderr
    assert [a["env"]["MAX_JOBS"] for a in summary["attempts"]] == ["8", "4", "2"]
    assert all(diag(summary, n)["category"] == "out_of_memory" for n in (1, 2))
    assert remedies(summary) == [["reduce_jobs"], ["reduce_jobs"], []]


def test_objects_for_another_arch_are_cleaned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep")
    src = tmp_path / "src"
    (src / "build").mkdir(parents=True)
    (src / "build" / "arch.stamp").write_text("gfx908")
    (src / "build" / "link-out").symlink_to(outside)   # inside a clean path
    (src / "cache").symlink_to(outside)                  # a clean glob "cache/*" through a symlink
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "stale_arch")))
    assert proc.returncode == 0, proc.stderr
    assert diag(summary, 1)["category"] == "arch_mismatch"
    assert remedies(summary)[0] == ["clean_build"]
    removed = [e["path"] for e in events(tmp_path) if e["event"] == "path.removed"]
    assert str(src / "build") in removed
    assert (outside / "precious.txt").read_text() == "keep", "clean_build must not follow symlinks out"
    assert (src / "cache").is_symlink()


def test_transient_network_error_twice_then_success(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "network")))
    assert proc.returncode == 0, proc.stderr
    assert [diag(summary, n)["category"] for n in (1, 2)] == ["network", "network"]
    assert remedies(summary) == [["wait_and_retry"], ["wait_and_retry"], []]
    assert sum(e["event"] == "retry.waiting" for e in events(tmp_path)) == 2


def test_unknown_failure_stops_after_one_attempt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "unknown")))
    assert proc.returncode == 3, proc.stderr
    assert summary["outcome"] == "unrecognised" and len(summary["attempts"]) == 1
    assert diag(summary, 1)["category"] == "unknown"
    assert "rms_norm_fused" in proc.stderr, "the final summary shows the decisive line"


def test_unknown_failure_with_escalate_unknown_uses_generic_ladder(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "src" / "build").mkdir(parents=True)   # something for clean_build to remove
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "unknown")), "--escalate-unknown",
                              "--max-attempts", "3")
    assert proc.returncode == 1
    assert remedies(summary)[:2] == [["clean_build"], ["lower_optimization"]], "uninstall finds nothing installed"


def test_a_failure_known_as_the_projects_own_bug_is_not_escalated(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "src" / "build").mkdir(parents=True)   # clean_build would have something to remove
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "platform_undefined")),
                              "--escalate-unknown", "--max-attempts", "3")
    assert proc.returncode == 3, proc.stderr
    assert summary["outcome"] == "unrecognised" and len(summary["attempts"]) == 1
    assert (diag(summary, 1)["category"], diag(summary, 1)["signature"]) == ("unknown", "hip-platform-undefined")
    assert remedies(summary) == [[]] and (tmp_path / "src" / "build").is_dir()
    assert "hip-platform-undefined" in summary["stop_reason"]


def test_fail_fast_stops_at_a_failure_known_as_the_projects_own_bug(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # "stop at the first recognised failure": a named unknown is recognised, though it has no category
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "platform_undefined_then_drain")),
                              "--fail-fast")
    assert proc.returncode == 3, proc.stderr
    attempt = summary["attempts"][0]
    assert attempt["duration_s"] < 20, "did not wait for the 30 s drain"
    assert attempt["stopped_early"] and "hip-platform-undefined" in attempt["stopped_early"]
    assert (attempt["diagnosis"]["category"], attempt["diagnosis"]["signature"]) == ("unknown",
                                                                                     "hip-platform-undefined")
    assert len(summary["attempts"]) == 1 and summary["outcome"] == "unrecognised"


def test_a_clean_with_nothing_to_remove_does_not_spend_an_attempt(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "unknown")), "--escalate-unknown",
                              "--max-attempts", "3")
    assert proc.returncode == 1
    assert remedies(summary)[:2] == [["lower_optimization"], ["reduce_jobs"]]
    skipped = [e["remedy"] for e in events(tmp_path) if e["event"] == "remedy.skipped"]
    assert "clean_build" in skipped


def test_unsupported_arch_is_not_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "unsupported")))
    assert proc.returncode == 4, proc.stderr
    assert summary["outcome"] == "not_retryable" and len(summary["attempts"]) == 1
    assert diag(summary, 1)["category"] == "unsupported_arch"
    assert diag(summary, 1)["retryable"] is False


def test_two_categories_in_sequence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = tmp_path / "src" / "deps" / "lib"
    lib.mkdir(parents=True)
    (lib / "libfakeblas.so").write_text("")
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "link_then_crash")),
                              env={"CXXFLAGS": "-O3"})
    assert proc.returncode == 0, proc.stderr
    assert [diag(summary, n)["category"] for n in (1, 2)] == ["missing_library", "compiler_crash"]
    assert remedies(summary) == [["add_library_paths"], ["lower_optimization"], []]


def test_several_recipes_build_in_order_and_stop_at_the_first_failure(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    a = write_recipe(tmp_path, "ok", name="first", own_source=True)
    b = write_recipe(tmp_path, "unsupported", name="second", own_source=True)
    c = write_recipe(tmp_path, "ok", name="third", own_source=True)
    proc, _ = rocmbuild(tmp_path, monkeypatch, str(a), str(b), str(c), with_source=False)
    assert proc.returncode == 4
    summaries = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [s["recipe"] for s in summaries] == ["first", "second"]
    assert [s["outcome"] for s in summaries] == ["succeeded", "not_retryable"]
    assert (tmp_path / "run" / "first" / "summary.json").is_file()
    assert not (tmp_path / "run" / "third").exists()


def test_requires_neither_installed_nor_earlier_is_an_error_before_anything_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    needy = write_recipe(tmp_path, "ok", name="needy", requires=("base",), own_source=True)
    base = write_recipe(tmp_path, "ok", name="base")
    user_recipes = tmp_path / "config" / "rocmbuild" / "recipes"
    user_recipes.mkdir(parents=True)
    (tmp_path / "base-tree").mkdir()
    (user_recipes / "base.toml").write_text(base.read_text() + f'\n[source]\npath = "{tmp_path / "base-tree"}"\n')
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(needy))
    assert proc.returncode == 2 and "requires 'base'" in proc.stderr and summary == {}
    proc, _ = rocmbuild(tmp_path, monkeypatch, "base", str(needy), with_source=False)
    assert proc.returncode == 0, proc.stderr


def test_a_decisive_non_retryable_failure_stops_the_build_at_once(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "unsupported_then_drain")))
    assert proc.returncode == 4, proc.stderr
    attempt = summary["attempts"][0]
    # The build drains for 30 s after its decisive line: the attempt's own time says whether it was waited for.
    assert attempt["duration_s"] < 20, "did not wait for the build to drain its other jobs"
    assert attempt["stopped_early"] and "unsupported_arch" in attempt["stopped_early"]
    assert attempt["diagnosis"]["category"] == "unsupported_arch"


def test_fail_fast_stops_at_a_retryable_failure_and_still_applies_the_remedy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "crash_then_drain")), "--fail-fast",
                              env={"CXXFLAGS": "-O3"})
    assert proc.returncode == 0, proc.stderr
    first = summary["attempts"][0]
    assert first["duration_s"] < 20, "did not wait for the 30 s drain"
    assert first["stopped_early"] and first["diagnosis"]["category"] == "compiler_crash"
    assert remedies(summary) == [["lower_optimization"], []]


def test_verbose_echoes_events_and_report_latest_follows_a_custom_run_dir(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "ok")), "--verbose")
    assert proc.returncode == 0, proc.stderr
    assert "rocmbuild[attempt.started]" in proc.stderr and "rocmbuild[run.finished]" in proc.stderr
    report = run_cli(monkeypatch, ["report", "--json"], tmp_path / "run")
    assert json.loads(report.stdout)["run_dir"] == summary["run_dir"] == str(tmp_path / "run")


def test_quiet_shows_no_build_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc, _ = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "ok")), "--quiet")
    assert proc.returncode == 0
    assert "[4/4] Building HIP object" not in proc.stderr + proc.stdout
    assert b"[4/4] Building HIP object" in (tmp_path / "run" / "attempt-1.log").read_bytes(), "it ran"


def test_without_quiet_the_build_output_is_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What makes the --quiet test above able to fail: the same build without it is shown."""
    proc, _ = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "ok")))
    assert proc.returncode == 0
    assert "[4/4] Building HIP object" in proc.stderr + proc.stdout


def test_checkout_from_a_local_remote_and_refetch_when_the_ref_changes(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    remote = local_remote(tmp_path, {"v1": {"VERSION": "one\n"}, "v2": {"VERSION": "two\n"}})
    recipe = tmp_path / "co.toml"
    template = ('name = "co"\n[source]\ngit = "{url}"\nref = "{ref}"\n[steps]\nbuild = ["cat VERSION"]\n')
    isolate(monkeypatch, tmp_path)
    argv = [str(recipe), "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--json"]
    recipe.write_text(template.format(url=remote.as_uri(), ref="v1"))
    # Run dirs of their own: the default name (time to the second and PID) is the same for two runs of one
    # process within a second.
    proc = run_cli(monkeypatch, [*argv, "--run-dir", str(tmp_path / "run1")], tmp_path / "run1")
    assert proc.returncode == 0, proc.stderr
    checkout = tmp_path / "cache" / "rocmbuild" / "src" / "co"
    assert (checkout / "VERSION").read_text() == "one\n"
    recipe.write_text(template.format(url=remote.as_uri(), ref="v2"))
    proc = run_cli(monkeypatch, [*argv, "--run-dir", str(tmp_path / "run2")], tmp_path / "run2")
    assert proc.returncode == 0, proc.stderr
    assert (checkout / "VERSION").read_text() == "two\n"
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["source"] == str(checkout)


def test_a_checkout_cut_by_the_network_is_retried_and_prepare_still_runs(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    remote = local_remote(tmp_path, {"v1": {"README": "hello\n"}})
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    (bindir / "git").write_text(FAKE_GIT)
    (bindir / "git").chmod(0o755)
    recipe = tmp_path / "net.toml"
    recipe.write_text(f'name = "net"\n[source]\ngit = "{remote.as_uri()}"\n'
                      '[steps]\nprepare = ["cp README prepared"]\nbuild = ["cat prepared"]\n')
    isolate(monkeypatch, tmp_path, MARKER=str(tmp_path / "failed-once"), REAL_GIT=str(shutil.which("git")))
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    argv = [str(recipe), "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--backoff", "0.01", "--json"]
    proc = run_cli(monkeypatch, argv, tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["attempts"][0]["diagnosis"]["category"] == "network"
    assert remedies(summary) == [["wait_and_retry"], []]
    assert "hello" in (Path(summary["run_dir"]) / "attempt-2.log").read_text()


def test_rocmbuilds_own_step_header_is_never_the_decisive_line(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = tmp_path / "hdr.toml"
    recipe.write_text('name = "hdr"\n[steps]\nbuild = ["exit 1 # /usr/bin/ld: cannot find -lhipblas"]\n')
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(recipe))
    assert proc.returncode == 3, proc.stderr
    assert diag(summary, 1)["category"] == "unknown"
    assert b"cannot find -lhipblas" in (tmp_path / "run" / "attempt-1.log").read_bytes(), "the header is logged"


@pytest.mark.parametrize("bad", [["--jobs", "eight"], ["--budget", "soon"], ["--arch", "gfx9422"],
                                 ["--max-attempts", "0"]])
def test_bad_options_exit_2_without_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              bad: list[str]) -> None:
    isolate(monkeypatch, tmp_path)
    proc = run_cli(monkeypatch, [str(write_recipe(tmp_path, "ok")), "--source", str(tmp_path), *bad], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "error:" in proc.stderr
    assert proc.attempts.requests == []


@pytest.mark.parametrize(("extra", "needle"), [
    (["--backoff", "inf"], "--backoff"),
    (["--backoff", "nan"], "--backoff"),
])
def test_unusable_option_values_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str],
                                       needle: str) -> None:
    isolate(monkeypatch, tmp_path)
    argv = [str(write_recipe(tmp_path, "ok")), "--source", str(tmp_path), "--arch", "gfx90a", *extra]
    proc = run_cli(monkeypatch, argv, tmp_path)
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr


def test_a_run_dir_that_already_holds_a_run_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = str(write_recipe(tmp_path, "ok"))
    assert rocmbuild(tmp_path, monkeypatch, recipe)[0].returncode == 0
    proc, _ = rocmbuild(tmp_path, monkeypatch, recipe)
    assert proc.returncode == 2 and "already holds a run" in proc.stderr


def test_one_source_for_several_recipes_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc, _ = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "ok", name="a")),
                        str(write_recipe(tmp_path, "ok", name="b")))
    assert proc.returncode == 2 and "several recipes" in proc.stderr


def test_a_source_that_is_gone_is_a_usage_error_before_any_record(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = tmp_path / "gone.toml"
    recipe.write_text('name = "gone"\n[steps]\nbuild = ["true"]\n[clean]\npaths = ["build"]\n')
    source = tmp_path / "src"
    source.mkdir()
    isolate(monkeypatch, tmp_path)
    argv = [str(recipe), "--source", str(source), "--run-dir", str(tmp_path / "run"), "--arch",
            "gfx90a", "--skip-preflight", "--no-cache"]
    source.rmdir()
    proc = run_cli(monkeypatch, argv, tmp_path / "run")
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    assert not (tmp_path / "run" / "summary.json").exists(), "usage errors stop before any record"


def test_a_library_missing_at_import_before_compiling_stops_after_one_attempt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No clean_build with nothing to clean, no -O2 / fewer jobs before anything compiled."""
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "import_missing")))
    assert proc.returncode == 1, proc.stderr
    assert len(summary["attempts"]) == 1 and remedies(summary) == [[]]
    assert diag(summary, 1)["category"] == "missing_runtime_library"
    assert "lower_optimization" not in proc.stderr and "cold" not in proc.stderr


def test_a_dead_mirror_gets_its_waits_and_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "network_down")),
                              "--max-attempts", "9")
    assert proc.returncode == 1, proc.stderr
    assert remedies(summary) == [["wait_and_retry"]] * 3 + [[]]
    finished = [e for e in events(tmp_path) if e["event"] == "run.finished"][-1]
    assert "network ladder is spent" in finished["reason"]


def test_pip_without_its_ssl_module_is_a_broken_interpreter_not_the_network(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mixed interpreter was once diagnosed `network` and waited out for 9 minutes."""
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(write_recipe(tmp_path, "broken_ssl")),
                              "--max-attempts", "6")
    assert proc.returncode == 4, proc.stderr
    assert summary["outcome"] == "not_retryable" and len(summary["attempts"]) == 1
    assert diag(summary, 1)["signature"] == "broken-interpreter"
    assert "LD_LIBRARY_PATH" in summary["todo"] and "proxy" not in summary["todo"]


def test_vllm_on_a_cpu_torch_is_told_torch_is_not_a_rocm_build(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The advice names the one cause, not four."""
    script = tmp_path / "setup_cpu_torch.py"
    script.write_text("print('Traceback (most recent call last):')\n"
                      "print('  File \"setup.py\", line 560, in <module>')\n"
                      "print('RuntimeError: Unknown runtime environment')\nraise SystemExit(1)\n")
    recipe = tmp_path / "cpuvllm.toml"
    recipe.write_text(f'name = "cpuvllm"\n[steps]\nbuild = ["{sys.executable} {script}"]\n')
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(recipe))
    assert proc.returncode == 4, proc.stderr
    assert diag(summary, 1)["signature"] == "vllm-unknown-runtime"
    assert "not a ROCm build" in summary["todo"] and "--index-url" in summary["todo"]


def test_the_fake_runner_fails_a_failing_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness itself: a step's exit status and output reach the session as the PTY engine gives them."""
    recipe = tmp_path / "two.toml"
    recipe.write_text('name = "two"\n[steps]\nbuild = ["echo first; true", "echo second; exit 7"]\n'
                      'verify = ["echo never"]\n')
    proc, summary = rocmbuild(tmp_path, monkeypatch, str(recipe))
    assert proc.returncode == 3, proc.stderr
    attempt = summary["attempts"][0]
    assert attempt["exit_code"] == 7 and attempt["step"] == "build"
    log = (tmp_path / "run" / "attempt-1.log").read_text()
    assert "first" in log and "second" in log and "never" not in log
