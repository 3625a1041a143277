"""A verdict without waiting: the attempt stops at the decisive line when the ladder's decision is to stop,
and lets running jobs finish a bounded while only when their objects help the next attempt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocmbuild.diagnosis.catalogue import Category
from rocmbuild.loop.ladder import FailedAttempt
from rocmbuild.loop.verdict import RUNNING_JOBS_BOUND_S, Recognised, Standing, continuing_helps, early_verdict

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")


def verdict(category: Category, ladder: tuple[str, ...], history: tuple[FailedAttempt, ...] = (), *,
            retryable: bool = True, cache_on: bool = False, max_attempts: int = 6):
    return early_verdict(Recognised(category=category, text="the line", fingerprint="fp", retryable=retryable,
                                    ladder=ladder, progress_done=10),
                         Standing(history=list(history), number=len(history) + 1, max_attempts=max_attempts,
                                  fail_fast=False, cache_on=cache_on))


def test_a_spent_ladder_stops_at_once() -> None:
    before = FailedAttempt(1, "exited", "missing_library", "fp", True, ("add_library_paths",),
                           remedies=("add_library_paths",))
    found = verdict("missing_library", ("add_library_paths",), (before,))
    assert found.stop_after_s == 0.0 and "ladder is spent" in found.reason


def test_a_ladder_whose_remedies_have_nothing_to_do_stops_at_once() -> None:
    found = early_verdict(Recognised(category="missing_library", text="the line", fingerprint="fp", retryable=True,
                                     ladder=("add_library_paths",), progress_done=10),
                          Standing(history=[], number=1, max_attempts=6, fail_fast=False, cache_on=False,
                                   unavailable=frozenset({"add_library_paths"})))
    assert found.stop_after_s == 0.0 and found.remedy is None


def test_max_attempts_reached_stops_at_once() -> None:
    assert verdict("missing_library", ("add_library_paths",), max_attempts=1).stop_after_s == 0.0


def test_a_remedy_that_keeps_objects_lets_running_jobs_finish_within_a_bound() -> None:
    found = verdict("missing_library", ("add_library_paths",))
    assert found.stop_after_s == RUNNING_JOBS_BOUND_S and "add_library_paths" in found.reason


def test_a_clean_helps_only_through_the_compiler_cache() -> None:
    assert verdict("stale_build", ("clean_build",)).stop_after_s == 0.0
    assert verdict("stale_build", ("clean_build",), cache_on=True).stop_after_s == RUNNING_JOBS_BOUND_S
    assert not continuing_helps("lower_optimization", cache_on=True)


def test_not_retryable_and_unknown() -> None:
    assert verdict("toolchain_missing", (), retryable=False).stop_after_s == 0.0
    assert verdict("unknown", ()).stop_after_s is None


BUILD = r"""
for i in 1 2; do (trap '' INT TERM; n=0; while [ $n -lt 40 ]; do
  sleep 1; echo "[$n/80] Building HIP object o$n.o"; n=$((n+1)); done) & done
sleep 0.3
echo 'FAILED: CMakeFiles/_C.dir/csrc/gemm.hip.o'
date +%s.%N > "$MARK"; echo "$LINE"
wait
exit 1
"""


HEADER = "/src/csrc/gemm.hip:3:10: fatal error: hipblas/hipblas.h: No such file or directory"
NOWHERE = "/usr/bin/ld: cannot find -lrocmbuild_nowhere: No such file or directory"


@pytest.mark.parametrize(("line", "signature", "exit_code"), [(HEADER, "rocm-library-header-missing", 4),
                                                                (NOWHERE, "ld-cannot-find-library", 1)])
@pytest.mark.integration
def test_real_run_stops_at_the_decisive_line_whatever_keeps_running(tmp_path: Path, line: str, signature: str,
                                                                      exit_code: int) -> None:
    script = tmp_path / "build.sh"
    script.write_text(BUILD)
    recipe = tmp_path / "v.toml"
    recipe.write_text(f'name = "v"\n[steps]\nbuild = ["sh {script}"]\n[resources]\nmemory_per_job_gb = 1\n')
    (tmp_path / "tree").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_")}
    env.update(XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               MARK=str(tmp_path / "mark"), LINE=line)
    result = subprocess.run([ROCMBUILD, str(recipe), "--source", str(tmp_path / "tree"), "--skip-preflight",
                             "--no-cache", "--arch", "gfx90a", "--run-dir", str(tmp_path / "run")],
                            env=env, capture_output=True, text=True, timeout=120)
    ended = time.time()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    attempt = summary["attempts"][0]
    assert result.returncode == exit_code, result.stderr
    assert attempt["diagnosis"]["signature"] == signature
    assert attempt["stopped_early"]
    # The jobs would have run 40 s more; the verdict comes long before (goal 5 s, see the benchmark).
    assert ended - float((tmp_path / "mark").read_text()) < 30


def test_a_named_unknown_stops_only_under_fail_fast() -> None:
    def named(fail_fast: bool, signature: str | None):
        return early_verdict(Recognised(category="unknown", text="#error", fingerprint="fp", retryable=False,
                                        ladder=(), named=signature),
                             Standing(history=[], number=1, max_attempts=6, fail_fast=fail_fast, cache_on=False))
    stop = named(True, "hip-platform-undefined")
    assert stop.stop_after_s == 0.0 and "hip-platform-undefined" in stop.reason and stop.remedy is None
    assert named(False, "hip-platform-undefined").stop_after_s is None  # low confidence: the build goes on
    assert named(True, None).stop_after_s is None  # nothing recognised: a later line may be the cause

