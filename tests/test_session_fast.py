"""The ladder through the real BuildSession, in-process: a fake attempt runner (Services.attempt)
replays build output, the real watcher, classifier, ladder, remedies and recorder do the rest."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from planfactory import make_plan

from rocmbuild.commands.resumestate import killed_attempt, ladder_history
from rocmbuild.diagnosis.catalogue import load_catalogue
from rocmbuild.errors import Outcome
from rocmbuild.loop.context import RunContext
from rocmbuild.loop.session import BuildSession, attempt_requests, plan_after_attempt
from rocmbuild.options import BuildOptions
from rocmbuild.process.attempt import AttemptHooks, AttemptRequest
from rocmbuild.process.command import CommandResult
from rocmbuild.process.runner import AttemptOutcome, Limits, Step
from rocmbuild.process.watcher import Progress
from rocmbuild.records.attempts import AttemptRecord, RunFacts
from rocmbuild.records.events import EVENT_NAMES
from rocmbuild.records.recorder import RunRecorder
from rocmbuild.services import Services, Streams


class FakeAttempts:
    """Stands in for runner.run_attempt: each call writes and feeds the next scripted output."""

    def __init__(self, script: Sequence[tuple[bytes, int]]) -> None:
        self.script = list(script)
        self.calls: list[tuple[list[Step], dict[str, str]]] = []

    def __call__(self, request: AttemptRequest, hooks: AttemptHooks) -> AttemptOutcome:
        output, code = self.script[len(self.calls)]
        self.calls.append((list(request.steps), dict(request.env)))
        with request.log_path.open("ab") as log:
            log.write(output)
        hooks.watcher.feed(output)
        return AttemptOutcome(ended="exited", exit_code=code, signal=None,
                              step=None if code == 0 else request.steps[-1], started=datetime.now(UTC),
                              duration_s=0.01, progress=hooks.watcher.furthest,
                              lines_seen=hooks.watcher.lines_seen, log=request.log_path)


def no_tools(argv: Sequence[str], **_: Any) -> CommandResult:
    return CommandResult(None, f"{argv[0]}: not found", missing=True)


def session(tmp_path: Path, attempts: FakeAttempts, slept: list[float], **options: Any) -> BuildSession:
    source = tmp_path / "src"
    source.mkdir()
    plan = make_plan(source, jobs=8)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rec = RunRecorder(run_dir=run_dir, recipe="demo", source=source, archs=plan.archs)
    opts = BuildOptions(source=source, **{"memory_reserve": 0, "verbosity": "quiet", **options})
    services = Services(sleep=slept.append, run=no_tools, attempt=attempts)
    ctx = RunContext.for_options(opts, streams=Streams(io.StringIO(), io.StringIO()), services=services,
                                 catalogue=load_catalogue(user=False), interrupted=lambda: False, deadline=None)
    return BuildSession(plan, ctx, rec)


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
    assert build.rec.attempts[0].remedies == ("reduce_jobs",)
    assert set(names) <= EVENT_NAMES, "every event written is one of the typed names"


def test_a_kill_with_the_memory_guard_on_writes_only_typed_event_names(tmp_path: Path, monkeypatch: Any) -> None:
    """The OOM check after a kill (memguard.AttemptMemory.finish) writes ``memory.oom_checked``: a typed name."""
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("6,1,1000,-;boot\n")
    monkeypatch.setenv("ROCMBUILD_KERNEL_LOG", str(kmsg))
    attempts = FakeAttempts([(b"[12/90] compiling\nc++: fatal error: Killed signal terminated program cc1plus\n", 137),
                             (b"[90/90] linking\n", 0)])
    build = session(tmp_path, attempts, [], memory_reserve=None)
    assert build.run() == (Outcome.SUCCEEDED, 0)
    names = [e["event"] for e in events(tmp_path)]
    assert "memory.oom_checked" in names and build.rec.attempts[0].to_json()["memory"]["oom"]["status"] == "unconfirmed"
    assert set(names) <= EVENT_NAMES, sorted(set(names) - EVENT_NAMES)


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


def outcome_of(step: Step | None, code: int, log: Path) -> AttemptOutcome:
    return AttemptOutcome(ended="exited", exit_code=code, signal=None, step=step, started=datetime.now(UTC),
                          duration_s=0.5, progress=Progress(), lines_seen=3, log=log)


def test_the_plan_after_an_attempt_is_a_decision_of_the_loop(tmp_path: Path) -> None:
    plan = replace(make_plan(tmp_path, jobs=8), checkout=("git clone x src",))
    log = tmp_path / "attempt-1.log"
    failed_checkout = plan_after_attempt(plan, outcome_of(Step("checkout", "git clone"), 128, log), False)
    assert failed_checkout == plan, "a failed checkout runs again, and prepare with it"
    failed_prepare = plan_after_attempt(plan, outcome_of(Step("prepare", "hipify"), 1, log), True)
    assert failed_prepare.checkout == () and failed_prepare.run_prepare
    failed_build = plan_after_attempt(plan, outcome_of(Step("build", "make"), 1, log), True)
    assert failed_build.checkout == () and not failed_build.run_prepare
    assert not plan_after_attempt(plan, outcome_of(None, 0, log), False).run_prepare


def test_attempt_records_keep_the_summary_fields_of_each_kind() -> None:
    base = dict(number=1, started="2026-12-01T00:00:00+00:00", duration_s=1.0, ended="exited", exit_code=1,
                log="attempt-1.log", env={"MAX_JOBS": "8"}, diagnosis={"category": "out_of_memory"})
    ran = AttemptRecord(**base, remedies=("reduce_jobs",), step="build",
                        ran=RunFacts(None, None, None, 12), memory={"reserve": 1})
    assert list(ran.to_json()) == ["number", "started", "duration_s", "ended", "exit_code", "log", "env",
                                   "diagnosis", "remedies", "step", "signal", "stopped_early", "progress", "lines",
                                   "memory"]
    assert ran.to_json()["remedies"] == ["reduce_jobs"] and ran.to_json()["lines"] == 12
    preflight = AttemptRecord(**base, step="preflight", kind="preflight")
    assert set(preflight.to_json()) == {"number", "started", "duration_s", "ended", "exit_code", "log", "env",
                                        "diagnosis", "remedies", "step"}
    killed = AttemptRecord(**{**base, "ended": "interrupted", "diagnosis": None}, kind="killed")
    assert killed.to_json()["killed"] is True and "step" not in killed.to_json()


def test_resume_rebuilds_an_attempt_killed_between_its_diagnosis_and_its_record() -> None:
    """The record is written after the remedy's effects: a kill in between keeps the diagnosed attempt."""
    started = {"event": "attempt.started", "attempt": 2, "timestamp": "t2", "env": {"MAX_JOBS": "8"}}
    diagnosed = {"event": "failure.diagnosed", "attempt": 2, "category": "stale_build", "signature": "s",
                 "line": 3, "text": "x", "fields": {}, "retryable": True, "fingerprint": "f",
                 "remedies": ["clean_build", "uninstall_packages"]}
    finished = {"event": "attempt.finished", "attempt": 2, "ended": "exited", "exit_code": 1, "duration_s": 4.0}
    recorded = [AttemptRecord(number=1, started=None, duration_s=None, ended="exited", exit_code=0, log="attempt-1.log",
                              env={}, diagnosis=None)]
    during_remedy = killed_attempt(recorded, [started, finished, diagnosed])
    assert during_remedy is not None and during_remedy.kind == "attempt" and during_remedy.remedies == ()
    assert during_remedy.to_json()["diagnosis"]["category"] == "stale_build"
    history = ladder_history([*recorded, during_remedy], [started, finished, diagnosed])
    assert [h.category for h in history] == ["stale_build"] and history[0].ladder[0] == "clean_build"
    after = killed_attempt(recorded, [started, finished, diagnosed, {"event": "plan.changed", "remedy": "clean_build"}])
    assert after is not None and after.remedies == ("clean_build",)
    during_build = killed_attempt(recorded, [started])
    assert during_build is not None and during_build.to_json()["killed"] is True
    assert during_build.to_json()["ended"] == "interrupted"


def test_resume_keeps_an_unknown_the_catalogue_named_out_of_the_generic_ladder() -> None:
    named = AttemptRecord(number=1, started=None, duration_s=None, ended="exited", exit_code=1, log="attempt-1.log",
                          env={}, diagnosis={"category": "unknown", "signature": "hip-platform-undefined"})
    plain = replace(named, number=2, diagnosis={"category": "unknown", "signature": None})
    history = ladder_history([named, plain], [])
    assert [h.named_unknown for h in history] == ["hip-platform-undefined", None]


def test_an_attempt_is_requested_as_data(tmp_path: Path) -> None:
    plan = replace(make_plan(tmp_path / "src", jobs=4), checkout=("git clone -q u src",))
    limits = Limits(stall_timeout_s=60)
    checkout, steps = attempt_requests(plan, tmp_path / "attempt-1.log", limits)
    assert checkout is not None and checkout.cwd == tmp_path and checkout.tree == plan.source
    assert [s.name for s in checkout.steps] == ["checkout"]
    assert steps.cwd == plan.source and steps.env["MAX_JOBS"] == "4" and steps.limits is limits
    assert [s.name for s in steps.steps][-1] in ("build", "verify")
    assert attempt_requests(replace(plan, checkout=()), tmp_path / "a.log", limits)[0] is None


def test_resume_puts_back_the_arch_list_narrow_archs_left(tmp_path: Path) -> None:
    """After narrow_archs the recorded plan state names the narrowed list: a resumed run expects it."""
    from rocmbuild.commands.resumestate import last_plan_state, restored_plan
    from rocmbuild.host.arch import Targets

    wide = replace(make_plan(tmp_path), targets=Targets.parse("gfx90a;gfx942;gfx1100"))
    narrowed = replace(wide, targets=Targets.parse("gfx942"))
    recorded = [{"event": "attempt.started", "arch": list(wide.archs), "env": wide.env_set, "jobs": 8},
                {"event": "plan.changed", "arch": list(narrowed.archs), "env": narrowed.env_set, "jobs": 8,
                 "remedy": "narrow_archs"}]
    assert restored_plan(wide, last_plan_state(recorded)).archs == ("gfx942",)
    # A record from before the field existed leaves the plan's list alone.
    assert restored_plan(wide, {"event": "plan.changed", "env": wide.env_set}).archs == wide.archs


def test_a_download_gone_for_good_stops_at_the_first_attempt_without_waiting(tmp_path: Path) -> None:
    # rocm-arch/rocm-arch#98, ROCm/triton#631: the server says 404; no retry can bring the file back
    gone = b"Downloading aotriton\ncurl: (22) The requested URL returned error: 404\n"
    attempts = FakeAttempts([(gone, 22), (b"done\n", 0)])
    slept: list[float] = []
    build = session(tmp_path, attempts, slept)
    outcome, _code = build.run()
    assert outcome != Outcome.SUCCEEDED and len(attempts.calls) == 1 and slept == []
    assert not [e for e in events(tmp_path) if e["event"] == "retry.waiting"]


def test_a_hash_mismatch_is_fetched_again_once_then_the_run_stops(tmp_path: Path) -> None:
    # pytorch/pytorch#169920, rocm-arch/rocm-arch#875: a second mismatch is not the network
    mismatch = b"ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.\n"
    attempts = FakeAttempts([(mismatch, 1), (mismatch, 1), (b"done\n", 0)])
    slept: list[float] = []
    build = session(tmp_path, attempts, slept)
    outcome, _code = build.run()
    assert outcome != Outcome.SUCCEEDED and len(attempts.calls) == 2 and slept == []
    assert build.rec.attempts[0].remedies == ("refetch_download",)
    assert attempts.calls[1][1]["PIP_NO_CACHE_DIR"] == "1", "the second attempt fetches afresh"


def test_a_library_of_another_rocm_release_is_named_against_the_hosts_rocm(tmp_path: Path) -> None:
    # mozilla-ai/llamafile#547: a prebuilt binary wants libamdhip64.so.5; the plan's ROCm is 6.2.4
    failure = b"ImportError: libamdhip64.so.5: cannot open shared object file: No such file or directory\n"
    attempts = FakeAttempts([(failure, 1)] * 3)
    build = session(tmp_path, attempts, [], max_attempts=1)
    build.run()
    diagnosed = next(e for e in events(tmp_path) if e["event"] == "failure.diagnosed")
    assert diagnosed["fields"]["rocm_release"] == "5" and diagnosed["fields"]["host_rocm"] == "6.2.4", diagnosed
