"""Overnight features (issue 16) end to end through the installed command: notify, detach, history, resume.

Real processes, PTY, files and signals; the build is a fakebuild scenario.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.test_e2e_ladder import ROCMBUILD, base_env, rocmbuild, write_recipe

NOTIFY_SCRIPT = f"""{sys.executable} -c 'import json, os, sys; s = json.load(sys.stdin); \
open(os.environ["OUT"], "w").write(json.dumps({{"outcome": s["outcome"], "env": [os.environ["ROCMBUILD_OUTCOME"], \
os.environ["ROCMBUILD_EXIT_CODE"], os.environ["ROCMBUILD_RUN_DIR"]]}}))'"""


def test_notify_gets_summary_on_stdin_and_outcome_in_env(tmp_path: Path) -> None:
    out = tmp_path / "notified.json"
    env = base_env(tmp_path, OUT=str(out))
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "ok")), "--notify", NOTIFY_SCRIPT, env=env)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text())
    assert got == {"outcome": "succeeded", "env": ["succeeded", "0", str((tmp_path / "run").resolve())]}
    assert summary["notify"]["exit_code"] == 0 and summary["notify"]["error"] is None
    names = [json.loads(line)["event"] for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    assert names[-1] == "notify.finished"


def test_a_failing_notify_is_recorded_and_never_changes_the_exit_code(tmp_path: Path) -> None:
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "unknown")), "--notify",
                              "cat >/dev/null; echo webhook down >&2; exit 7")
    assert proc.returncode == 3, proc.stderr
    assert summary["outcome"] == "unrecognised"
    assert summary["notify"]["exit_code"] == 7 and "webhook down" in summary["notify"]["output"]
    assert "--notify command exited with 7" in proc.stderr


def test_a_hanging_notify_is_killed_at_its_time_limit(tmp_path: Path) -> None:
    env = base_env(tmp_path, ROCMBUILD_NOTIFY_TIMEOUT="1s")
    started = time.monotonic()
    # The shell's child (sleep) is in the notify's process group: it must go too, or the pipe stays open.
    proc, summary = rocmbuild(tmp_path, str(write_recipe(tmp_path, "ok")), "--notify", "sleep 31.25; echo late",
                              env=env)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 20
    assert summary["notify"]["timed_out"] is True and summary["notify"]["exit_code"] is None
    assert not any("sleep" in " ".join(p.info["cmdline"] or []) and "31.25" in (p.info["cmdline"] or [])
                   for p in psutil.process_iter(["cmdline"]))


def test_a_bad_notify_timeout_is_a_usage_error(tmp_path: Path) -> None:
    env = base_env(tmp_path, ROCMBUILD_NOTIFY_TIMEOUT="5")
    proc, _ = rocmbuild(tmp_path, str(write_recipe(tmp_path, "ok")), "--notify", "true", env=env)
    assert proc.returncode == 2 and "ROCMBUILD_NOTIFY_TIMEOUT" in proc.stderr and "Traceback" not in proc.stderr
