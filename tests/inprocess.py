"""The `rocmbuild` command in this process, with one fake: the attempt runner (``Services.attempt``).

``run_cli`` runs ``rocmbuild.cli.main(argv)`` as the installed command would (option parsing, planning,
locks, run records, the real ``BuildSession`` with its watcher, classifier, ladder and remedies, the
summary and the exit code), but each attempt's steps run through :class:`PipeAttempts`: plain
``bash -c`` subprocesses on pipes instead of the PTY engine, relay process and cgroup.  What only the
PTY engine does (stall kills, the budget's kill, process-tree snapshots, signals to the build) stays in
the CLI tests (tests/test_e2e_ladder.py keeps those).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rocmbuild.process.attempt import AttemptHooks, AttemptRequest
from rocmbuild.process.command import remember_versions
from rocmbuild.process.runner import HEADER, AttemptOutcome, Step


def _exits(proc: subprocess.Popen[bytes], within: float = 30.0) -> bool:
    """The step closed its output: it exits now (a pipe's end comes before the exit status)."""
    try:
        proc.wait(timeout=within)
    except subprocess.TimeoutExpired:
        return False
    return True


@dataclass
class PipeAttempts:
    """Runs each request's steps with ``bash -c`` on a pipe: the log, the display and the watcher get the
    output as the real engine gives it to them (its step headers included), and the session's stop check
    is asked as output arrives and every ``tick`` seconds while it does not."""

    tick: float = 0.05
    requests: list[AttemptRequest] = field(default_factory=list)

    def __call__(self, request: AttemptRequest, hooks: AttemptHooks) -> AttemptOutcome:
        self.requests.append(request)
        started, t0 = datetime.now(UTC), time.monotonic()
        code: int | None = 0
        sig: int | None = None
        failed: Step | None = None
        stopped: str | None = None
        request.log_path.parent.mkdir(parents=True, exist_ok=True)
        with request.log_path.open("ab") as log:
            def emit(data: bytes) -> None:
                log.write(data)
                log.flush()
                if hooks.display is not None:
                    hooks.display.relay(data)
                hooks.watcher.feed(data)

            for step in request.steps:
                if hooks.display is not None:
                    hooks.display.step(step.name)
                emit(HEADER.format(name=step.name, command=step.command).encode())
                status, stopped, ended_line = self._step(step, request, hooks, emit)
                # As pexpect reports it: an exit status, or none and the signal that ended the step.
                code, sig = (status, None) if status >= 0 else (None, -status)
                if not ended_line:
                    emit(b"\n")  # the real engine ends the log on a line boundary too
                if code != 0 or stopped is not None:
                    failed = step
                    break
        return AttemptOutcome(ended="exited", exit_code=code, signal=sig, step=failed, started=started,
                              duration_s=time.monotonic() - t0, progress=hooks.watcher.furthest,
                              lines_seen=hooks.watcher.lines_seen, log=request.log_path, stopped_early=stopped)

    def _step(self, step: Step, request: AttemptRequest, hooks: AttemptHooks,
              emit: Any) -> tuple[int, str | None, bool]:
        proc = subprocess.Popen(["bash", "-c", step.command], cwd=request.cwd, env=dict(request.env),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        stopped: str | None = None
        last = b"\n"
        try:
            while True:
                ready, _, _ = select.select([fd], [], [], self.tick)
                if ready:
                    data = os.read(fd, 65536)
                    if not data:
                        break
                    emit(data)
                    last = data[-1:]
                if hooks.stop_check is not None and (stopped := hooks.stop_check()) is not None:
                    break
        finally:
            if stopped is not None or (proc.poll() is None and not _exits(proc)):
                # Stopped early (or gone wrong): the step's whole session goes, as the engine's kill does.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.stdout.close()
            code = proc.wait(timeout=30)
        return code, stopped, last == b"\n"


class ProbeAnswers:
    """The host's answers to rocmbuild's read-only probes, asked once a test session: ``TOOL --version``,
    ``python -c`` (installed packages, site dirs), ``ldconfig``.

    A run asks hipcc (a perl script, 0.3-1 s) for its version three or four times, with environments
    that differ only by the test's own temporary paths, and the interpreter what it holds three times:
    most of an in-process run's time.  The first asking is real; an answer is reused for the same argv
    and environment once every path inside a test's temporary directory is written as ``<tmp>`` (a
    wrapper or launcher there is the same program in every test).  Nothing a build or
    a remedy runs goes through here (steps run in :class:`PipeAttempts`, git and pip are not probes).
    """

    def __init__(self, real: Any, temp_root: Path) -> None:
        self.real = real
        self.temp = re.compile(re.escape(str(temp_root)) + r"/[^:\s]*")
        self.answers: dict[tuple[object, ...], Any] = {}
        self.asked = 0

    @staticmethod
    def is_probe(argv: Sequence[str]) -> bool:
        name = Path(argv[0]).name if argv else ""
        return (argv[-1:] == ["--version"] or name.startswith("ldconfig")
                or (name.startswith("python") and argv[1:2] == ["-c"]))

    def __call__(self, argv: Sequence[str], *, env: Mapping[str, str] | None, cwd: Path | None,
                 timeout: float) -> Any:
        if not self.is_probe(list(argv)):
            return self.real(argv, env=env, cwd=cwd, timeout=timeout)
        neutral = self.temp.sub
        key = (tuple(neutral("<tmp>", a) for a in argv), neutral("<tmp>", str(cwd)),
               tuple(sorted((k, neutral("<tmp>", v)) for k, v in (os.environ if env is None else env).items()
                            if k != "PYTEST_CURRENT_TEST")))
        if key not in self.answers:
            self.asked += 1
            answer = self.real(argv, env=env, cwd=cwd, timeout=timeout)
            if answer.returncode is None:  # a timed-out probe is asked again, as command.py does
                return answer
            self.answers[key] = answer
        return self.answers[key]


@dataclass
class CliRun:
    """What one in-process `rocmbuild` command left: exit code, stdout, stderr, the run's records."""

    returncode: int
    stdout: str
    stderr: str
    run_dir: Path
    attempts: PipeAttempts

    @property
    def summary(self) -> dict[str, Any]:
        path = self.run_dir / "summary.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (self.run_dir / "events.jsonl").read_text().splitlines()]


def isolate(monkeypatch: pytest.MonkeyPatch, tmp: Path, **env: str) -> None:
    """The environment the CLI tests give the command: XDG dirs in ``tmp``, no ROCMBUILD_* or CXXFLAGS."""
    for name in list(os.environ):
        if name.startswith("ROCMBUILD_"):
            monkeypatch.delenv(name)
    monkeypatch.delenv("CXXFLAGS", raising=False)
    # python3 is this interpreter, as in conftest.ExampleTree (and not a pyenv shim, 0.5 s a probe).
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    for name, value in dict(XDG_STATE_HOME=str(tmp / "state"), XDG_CACHE_HOME=str(tmp / "cache"),
                            XDG_CONFIG_HOME=str(tmp / "config"), HIP_PLATFORM="amd", PATH=path, **env).items():
        monkeypatch.setenv(name, value)


def run_cli(monkeypatch: pytest.MonkeyPatch, argv: Sequence[str], run_dir: Path,
            attempts: PipeAttempts | None = None) -> CliRun:
    """``rocmbuild ARGV`` in this process, its attempts through ``attempts``; never raises SystemExit."""
    from rocmbuild import cli
    from rocmbuild.commands import app

    attempts = attempts or PipeAttempts()
    real_build = app.build

    def build(*args: Any, **kw: Any) -> int:
        services = kw.pop("services", app.DEFAULT_SERVICES)
        return real_build(*args, **kw, services=replace(services, attempt=attempts))

    out, err = io.StringIO(), io.StringIO()
    with monkeypatch.context() as patch:
        patch.setattr(app, "build", build)
        patch.setattr("sys.stdout", out)
        patch.setattr("sys.stderr", err)
        patch.setattr("sys.stdin", io.StringIO())
        try:
            cli.main(list(argv))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            remember_versions(None)  # the command pointed the probe store at this test's state dir
    return CliRun(code, out.getvalue(), err.getvalue(), run_dir, attempts)


def build(tmp: Path, monkeypatch: pytest.MonkeyPatch, *args: str, env: Mapping[str, str] | None = None,
          with_source: bool = True) -> tuple[CliRun, dict[str, Any]]:
    """test_e2e_ladder.rocmbuild's command line (``tmp/src``, ``tmp/run``, gfx90a, no preflight, no cache, short
    backoff and stall timeout, --json) in this process, with ``env`` over the isolated environment."""
    source = tmp / "src"
    source.mkdir(exist_ok=True)
    isolate(monkeypatch, tmp, **(env or {}))
    argv = [*args, *(["--source", str(source)] if with_source else []), "--run-dir", str(tmp / "run"),
            "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--backoff", "0.01", "--stall-timeout", "1s",
            "--json"]
    run = run_cli(monkeypatch, argv, tmp / "run")
    return run, run.summary

