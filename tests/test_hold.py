"""Holding under attack through the real command: signals, readers, locks, filesystems, bad recipes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from test_e2e_ladder import ROCMBUILD, base_env

PY = sys.executable


def recipe(tmp: Path, build: str, name: str = "hold", env: str = "") -> Path:
    path = tmp / f"{name}.toml"
    path.write_text(f'name = "{name}"\n[env]\n{env}\n[steps]\nbuild = [{json.dumps(build)}]\n')
    return path


def argv(tmp: Path, recipe_path: Path, *extra: str, run: str = "run") -> list[str]:
    src = tmp / "src"
    src.mkdir(exist_ok=True)
    return [ROCMBUILD, str(recipe_path), "--source", str(src), "--run-dir", str(tmp / run), "--arch", "gfx90a",
            "--skip-preflight", "--no-cache", "--max-attempts", "1", *extra]


def summary(tmp: Path, run: str = "run") -> dict[str, Any]:
    return json.loads((tmp / run / "summary.json").read_text())


def wait_for(predicate: Any, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Any]:
    """mount(name, options): a small tmpfs under tmp_path, unmounted afterwards whatever happens."""
    mounted: list[Path] = []

    def mount(name: str, options: str = "size=1M") -> Path:
        where = tmp_path / name
        where.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True)
        mounted.append(where)
        return where

    try:
        yield mount
    finally:
        for where in reversed(mounted):
            subprocess.run(["umount", "-l", str(where)], check=False)


# -- item 2: SIGHUP ------------------------------------------------------------------------------


@pytest.mark.integration
def test_sighup_finishes_the_records_stops_the_build_and_exits_130(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    build = (f"{PY} -c 'import os,time; open(\"{pidfile}\",\"w\").write(str(os.getpid()));"
             " print(\"up\", flush=True); time.sleep(60)'")
    proc = subprocess.Popen(argv(tmp_path, recipe(tmp_path, build)), env=base_env(tmp_path),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: pidfile.exists() and pidfile.read_text())
        child = int(pidfile.read_text())
        proc.send_signal(signal.SIGHUP)
        rc = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 130, proc.stderr.read() if proc.stderr else ""
    s = summary(tmp_path)
    assert s["outcome"] == "interrupted" and s["exit_code"] == 130
    assert not _alive(child)


# -- item 5: a reader going away ---------------------------------------------------------------------


@pytest.mark.integration
def test_a_reader_going_away_never_stops_the_build(tmp_path: Path) -> None:
    done = tmp_path / "done"
    build = (f"{PY} -c 'import time\nfor i in range(3000): print(\"line\", i, flush=True)\n"
             f"time.sleep(0.5)\nopen(\"{done}\",\"w\").write(\"x\")'")
    command = " ".join(map(repr, argv(tmp_path, recipe(tmp_path, build))))
    proc = subprocess.run(["bash", "-c", f"{command} | head -2; echo \"status=${{PIPESTATUS[0]}}\" >&2"],
                          env=base_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert len(proc.stdout.splitlines()) == 2
    assert done.exists(), "the build ran to its end"
    assert summary(tmp_path)["exit_code"] == 0 and summary(tmp_path)["outcome"] == "succeeded"
    assert "status=0" in proc.stderr, proc.stderr


# -- item 4: one build per tree ----------------------------------------------------------------------


@pytest.mark.integration
def test_two_builds_in_one_tree_with_different_state_dirs_do_not_run_at_once(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    build = f"{PY} -c 'import os,time; open(\"{pidfile}\",\"w\").write(str(os.getpid())); time.sleep(30)'"
    r = recipe(tmp_path, build)
    first = subprocess.Popen(argv(tmp_path, r, run="run1"), env=base_env(tmp_path / "a"),
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: pidfile.exists() and pidfile.read_text())
        # the same tree, spelt through a symlink, with another state dir
        (tmp_path / "alias").symlink_to(tmp_path / "src")
        second_argv = argv(tmp_path, r, run="run2")
        second_argv[second_argv.index("--source") + 1] = str(tmp_path / "alias")
        second = subprocess.run(second_argv, env=base_env(tmp_path / "b"), capture_output=True, text=True,
                                timeout=30, stdin=subprocess.DEVNULL)
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=20)
    assert second.returncode == 2, second.stderr
    assert f"PID {first.pid}" in second.stderr and "is building in" in second.stderr


# -- item 6: filesystem errors -------------------------------------------------------------------


@pytest.mark.integration
def test_a_full_run_dir_is_exit_2_before_the_run_starts(tmp_path: Path, tmpfs: Any) -> None:
    full = tmpfs("full")
    with open(full / "filler", "wb") as f, pytest.raises(OSError):
        while True:
            f.write(b"\0" * 65536)
            f.flush()
    proc = subprocess.run(argv(tmp_path, recipe(tmp_path, "true"), run="full/run"), env=base_env(tmp_path),
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    assert "cannot write the run directory" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.integration
def test_a_run_dir_filling_up_during_the_build_is_disk_full(tmp_path: Path, tmpfs: Any) -> None:
    tmpfs("small")
    build = f"{PY} -c 'import sys\nfor i in range(40000): print(\"x\" * 60, i, flush=i % 100 == 0)'"
    proc = subprocess.run(argv(tmp_path, recipe(tmp_path, build), "--json", run="small/run"),
                          env=base_env(tmp_path), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 4, proc.stderr
    s = summary(tmp_path, "small/run")
    assert s["outcome"] == "not_retryable" and s["exit_code"] == 4, "the summary is finalised in place"
    assert "cannot write the build log" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("which", ["run dir", "state dir"])
@pytest.mark.integration
def test_read_only_run_or_state_dir_is_exit_2(tmp_path: Path, tmpfs: Any, which: str) -> None:
    ro = tmpfs("ro", "size=1M,ro")
    env = base_env(tmp_path)
    args = argv(tmp_path, recipe(tmp_path, "true"), run="ro/run" if which == "run dir" else "run")
    if which == "state dir":
        env["XDG_STATE_HOME"] = str(ro)
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    assert "Read-only file system" in proc.stderr and "Traceback" not in proc.stderr


# -- item 7: bad recipes, steps that cannot start -------------------------------------------------


@pytest.mark.parametrize("body, key", [
    ('name = "x"\n[env]\n"A=B" = "1"\n[steps]\nbuild = ["true"]\n', "env.A=B"),
    ('name = "x"\n[env]\n"" = "1"\n[steps]\nbuild = ["true"]\n', "env."),
    ('name = "x"\n[env]\nA = "a\\u0000b"\n[steps]\nbuild = ["true"]\n', "env.A"),
    ('name = "x"\n[steps]\nbuild = ["echo a\\u0000b"]\n', "steps.build[0]"),
    ('name = "x"\n[arch]\nvariables = ["X;touch y"]\n[steps]\nbuild = ["true"]\n', "arch.variables"),
    (f'name = "{"n" * 300}"\n[steps]\nbuild = ["true"]\n', "name"),
])
def test_bad_recipes_are_refused_at_load(tmp_path: Path, body: str, key: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(body)
    proc = subprocess.run(argv(tmp_path, path), env=base_env(tmp_path), capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert str(path) in proc.stderr and f"'{key}'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.integration
def test_non_utf8_recipe_and_too_long_names_are_usage_errors(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes('name = "caf\xe9"\n[steps]\nbuild = ["true"]\n'.encode("latin-1"))
    proc = subprocess.run(argv(tmp_path, path), env=base_env(tmp_path), capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and str(path) in proc.stderr and "UTF-8" in proc.stderr, proc.stderr
    for name in ("r" * 300 + ".toml", "d/" + "r" * 300):
        proc = subprocess.run(argv(tmp_path, Path(name)), env=base_env(tmp_path), capture_output=True, text=True,
                              timeout=30)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


def test_a_step_that_cannot_start_never_runs_rocmbuild_code_in_the_child(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from rocmbuild.diagnosis.catalogue import load_catalogue
    from rocmbuild.diagnosis.classifier import Classifier
    from rocmbuild.process import runner
    from rocmbuild.process.attempt import AttemptHooks, AttemptRequest
    from rocmbuild.process.watcher import Watcher

    def run(env: dict[str, str]) -> tuple[Any, str]:
        log = tmp_path / f"a{len(env)}.log"
        request = AttemptRequest((runner.Step("build", "echo $((6 * 7))"),), cwd=tmp_path, env=env, log_path=log,
                                 limits=runner.Limits())
        outcome = runner.run_attempt(request, AttemptHooks(watcher=Watcher(Classifier(load_catalogue()))))
        return outcome, log.read_text()

    base = {"PATH": os.environ["PATH"]}
    outcome, log = run({**base, "A=B": "1"})
    assert outcome.exit_code == 127 and "could not start" in log and "42" not in log
    # Past the parent's check (as if it missed something): execve fails in the child, which ends at once.
    monkeypatch.setattr(runner, "_unstartable", lambda command, env: None)
    outcome, log = run({**base, "X": "nul\0value"})
    assert outcome.exit_code == 127 and "could not start: ValueError" in log
    assert "Traceback" not in log and "rocmbuild:" not in log.replace("==> rocmbuild:", "")


@pytest.mark.integration
def test_closed_stdout_and_stderr_never_stop_the_build(tmp_path: Path) -> None:
    command = " ".join(map(repr, argv(tmp_path, recipe(tmp_path, "echo built"))))
    proc = subprocess.run(["bash", "-c", f"{command} >&- 2>&-; echo \"status=$?\""], env=base_env(tmp_path),
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "status=0"
    s = summary(tmp_path)
    assert s["outcome"] == "succeeded" and s["exit_code"] == 0
    events = (tmp_path / "run" / "events.jsonl").read_text().splitlines()
    assert all(json.loads(line) for line in events), "no console text went into the records"
