"""The ladder through the real BuildSession, in-process: a fake attempt runner (Services.attempt)
replays build output, the real watcher, classifier, ladder, remedies and recorder do the rest."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from planfactory import make_plan

from rocmbuild.build.session import BuildSession
from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.errors import Outcome
from rocmbuild.options import BuildOptions
from rocmbuild.process.command import CommandResult
from rocmbuild.process.runner import AttemptOutcome, Step
from rocmbuild.records.events import EVENT_NAMES
from rocmbuild.records.recorder import RunRecorder
from rocmbuild.services import Services, Streams


class FakeAttempts:
    """Stands in for runner.run_attempt: each call writes and feeds the next scripted output."""

    def __init__(self, script: Sequence[tuple[bytes, int]]) -> None:
        self.script = list(script)
        self.calls: list[tuple[list[Step], dict[str, str]]] = []

    def __call__(self, steps: list[Step], *, cwd: Path, env: dict[str, str], log_path: Path, watcher: Any,
                 **_: Any) -> AttemptOutcome:
        output, code = self.script[len(self.calls)]
        self.calls.append((list(steps), dict(env)))
        with log_path.open("ab") as log:
            log.write(output)
        watcher.feed(output)
        return AttemptOutcome(ended="exited", exit_code=code, signal=None, step=None if code == 0 else steps[-1],
                              started=datetime.now(UTC), duration_s=0.01, progress=watcher.furthest,
                              lines_seen=watcher.lines_seen, log=log_path)


def no_tools(argv: Sequence[str], **_: Any) -> CommandResult:
    return CommandResult(None, f"{argv[0]}: not found", missing=True)


def session(tmp_path: Path, attempts: FakeAttempts, slept: list[float], **options: Any) -> BuildSession:
    source = tmp_path / "src"
    source.mkdir()
    plan = make_plan(source, jobs=8)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rec = RunRecorder(run_dir=run_dir, recipe="demo", source=source, archs=plan.archs)
    opts = BuildOptions(source=source, memory_reserve=0, verbosity="quiet", **options)
    services = Services(sleep=slept.append, run=no_tools, attempt=attempts)
    return BuildSession(plan, opts, rec, Streams(io.StringIO(), io.StringIO()), services, load_catalogue(user=False),
                        lambda: False, None)


def events(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]


def test_out_of_memory_reduces_jobs_then_succeeds(tmp_path: Path) -> None:
    attempts = FakeAttempts([(b"[12/90] compiling\nc++: fatal error: Killed signal terminated program cc1plus\n", 1),
                             (b"[90/90] linking\n", 0)])
    slept: list[float] = []
    build = session(tmp_path, attempts, slept)
    assert build.run() == (Outcome.SUCCEEDED, 0)
    assert len(attempts.calls) == 2 and slept == []
    first, second = (int(env["MAX_JOBS"]) for _steps, env in attempts.calls)
    assert second < first == 8
    names = [e["event"] for e in events(tmp_path)]
    assert names.count("attempt.started") == 2 and "remedy.applied" in names
    diagnosed = next(e for e in events(tmp_path) if e["event"] == "failure.diagnosed")
    assert diagnosed["category"] == "out_of_memory"
    assert build.rec.attempts[0]["remedies"] == ["reduce_jobs"]
    assert set(names) <= EVENT_NAMES, "every event written is one of the typed names"


def test_network_failures_wait_with_backoff_through_the_injected_sleep(tmp_path: Path) -> None:
    failure = b"ERROR: Could not fetch URL https://pypi.org/simple/x/: connection error\n"
    attempts = FakeAttempts([(failure, 1), (failure, 1), (b"done\n", 0)])
    slept: list[float] = []
    build = session(tmp_path, attempts, slept, backoff_s=2.0)
    assert build.run() == (Outcome.SUCCEEDED, 0)
    waits = [e["seconds"] for e in events(tmp_path) if e["event"] == "retry.waiting"]
    assert len(waits) == 2 and 2.0 <= waits[0] <= 3.0 and 4.0 <= waits[1] <= 5.0
    assert abs(sum(slept) - sum(waits)) < 0.2 and max(slept) <= 0.5


def test_the_attempt_cap_stops_the_loop(tmp_path: Path) -> None:
    oom = b"c++: fatal error: Killed signal terminated program cc1plus\n"
    attempts = FakeAttempts([(oom, 1)] * 3)
    build = session(tmp_path, attempts, [], max_attempts=2)
    outcome, code = build.run()
    assert (outcome, code) == (Outcome.FAILED, 1) and len(attempts.calls) == 2
    assert "--max-attempts 2" in build.state.reason
