"""Readers of run records (report, --diff, history, resume) never crash on a damaged or hostile record.

Each record is damaged the ways run dirs really get damaged (a kill mid-write, an editor that adds a
byte-order mark, a copy through a non-UTF-8 tool) or the ways a hostile one is built (nesting that blows
the parser's recursion, wrong-typed fields).  The readers run in process through ``cli.main``: a crash
would be a Python exception here, the wanted behaviour is exit 2 with which file and why, or a skip line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmbuild import cli
from rocmbuild.records.recordfile import (
    CorruptRecord,
    nesting_depth,
    read_events,
    read_path_lines,
    read_summary,
    summary_problem,
)

GOOD = {
    "recipe": "atk", "source": "/src", "arch": ["gfx942"], "run_dir": "/runs/x", "outcome": "failed",
    "exit_code": 1, "todo": "read the log", "stop_reason": "spent", "started": "2026-01-01T00:00:00+00:00",
    "finished": "2026-01-01T00:01:00+00:00", "duration_s": 60.0, "preflight": [],
    "attempts": [{"number": 1, "started": "2026-01-01T00:00:00+00:00", "duration_s": 60.0, "ended": "exited",
                  "exit_code": 1, "log": "attempt-1.log", "env": {"MAX_JOBS": "2"},
                  "diagnosis": {"category": "missing_library", "signature": "ld-cannot-find-library",
                                "line": 3, "text": "ld: cannot find -lfoo", "fields": {"library": "foo"}},
                  "remedies": ["add_library_paths"]}],
}

DAMAGED: dict[str, bytes] = {
    "invalid UTF-8": json.dumps(GOOD).encode().replace(b'"atk"', b'"\xff\xfe"'),
    "nested 100,000 deep": b"[" * 100_000 + b"]" * 100_000,
    "nested object in a field": json.dumps({**GOOD, "todo": None}).encode()[:-1] + b', "x": '
                                + b'{"a":' * 50_000 + b"1" + b"}" * 50_000 + b"}",
    "attempts not a list": json.dumps({**GOOD, "attempts": {"1": {}}}).encode(),
    "an attempt not an object": json.dumps({**GOOD, "attempts": [1, 2]}).encode(),
    "arch a number": json.dumps({**GOOD, "arch": 5}).encode(),
    "duration a string": json.dumps({**GOOD, "duration_s": "long"}).encode(),
    "remedies a number": json.dumps({**GOOD, "attempts": [{**GOOD["attempts"][0], "remedies": 7}]}).encode(),
    "diagnosis a number": json.dumps({**GOOD, "attempts": [{**GOOD["attempts"][0], "diagnosis": 5}]}).encode(),
    "env values not strings": json.dumps({**GOOD, "attempts": [{**GOOD["attempts"][0], "env": {"A": [1]}}]}).encode(),
    "line a string": json.dumps({**GOOD, "attempts": [{**GOOD["attempts"][0], "diagnosis": {
        **GOOD["attempts"][0]["diagnosis"], "line": "3"}}]}).encode(),  # type: ignore[dict-item]
    "a JSON list": b"[1, 2]",
    "a duration of Infinity": json.dumps(GOOD).encode().replace(b'"duration_s": 60.0', b'"duration_s": Infinity', 1),
    "a line number NaN": json.dumps(GOOD).encode().replace(b'"line": 3', b'"line": NaN', 1),
    "empty": b"",
}


def write_run(run_dir: Path, summary: bytes, events: bytes = b"") -> Path:
    run_dir.mkdir(parents=True)
    (run_dir / "summary.json").write_bytes(summary)
    (run_dir / "events.jsonl").write_bytes(events)
    return run_dir


def run_cli(*argv: str) -> int:
    with pytest.raises(SystemExit) as ended:
        cli.main(list(argv))
    return int(ended.value.code or 0)


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "state"


@pytest.mark.parametrize("kind", sorted(DAMAGED))
def test_report_refuses_a_damaged_summary_naming_file_and_why(kind: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = write_run(tmp_path / "run", DAMAGED[kind])
    for argv in (["report", str(run_dir)], ["report", str(run_dir), "--json"]):
        assert run_cli(*argv) == 2
        err = capsys.readouterr().err
        assert f"{run_dir / 'summary.json'}" in err and "why:" in err and "internal error" not in err


def test_report_diff_refuses_a_damaged_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write_run(tmp_path / "good", json.dumps({**GOOD, "outcome": "succeeded"}).encode())
    bad = write_run(tmp_path / "bad", DAMAGED["nested 100,000 deep"])
    assert run_cli("report", str(bad), "--diff", str(good)) == 2
    assert "nested deeper" in capsys.readouterr().err
    assert run_cli("report", str(good), "--diff", str(bad)) == 2


def test_a_byte_order_mark_is_read_not_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = write_run(tmp_path / "run", b"\xef\xbb\xbf" + json.dumps(GOOD).encode())
    assert run_cli("report", str(run_dir), "--json") == 0
    assert json.loads(capsys.readouterr().out)["recipe"] == "atk"


def test_history_skips_each_damaged_summary_with_one_line_and_lists_the_rest(
        tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index = state / "rocmbuild" / "runs.index"
    index.parent.mkdir(parents=True)
    dirs = [write_run(tmp_path / "good", json.dumps(GOOD).encode())]
    dirs += [write_run(tmp_path / f"bad{i}", DAMAGED[kind]) for i, kind in enumerate(sorted(DAMAGED))]
    index.write_bytes(b"".join(str(d).encode() + b"\n" for d in dirs) + b"/tmp/\xff\xfe-not-utf8\n\x00\n")
    for argv in (["history"], ["history", "--stats"], ["history", "--json"]):
        assert run_cli(*argv) == 0
        out, err = capsys.readouterr()
        skipped = [line for line in err.splitlines() if line.startswith("rocmbuild: skipped ")]
        assert len(skipped) == len(DAMAGED), err
        if argv == ["history", "--json"]:
            assert [json.loads(line)["recipe"] for line in out.splitlines()] == ["atk"]
    assert "ld-cannot-find-library" in (run_cli("history", "--stats"), capsys.readouterr().out)[1]


def test_events_cut_short_binary_or_of_the_wrong_shape_are_passed_over(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_bytes(b'{"event": "run.started", "options": [1, 2]}\n\xff\xfe\n[1]\n{"event": 5}\n'
                       + b"[" * 10_000 + b"\n" + b'{"event": "run.finished"')
    assert [e["event"] for e in read_events(events)] == ["run.started"]


def test_wrong_typed_run_started_options_do_not_break_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = b'{"event": "run.started", "options": ["--jobs", 3]}\n'
    good = write_run(tmp_path / "good", json.dumps({**GOOD, "outcome": "succeeded"}).encode(), events)
    bad = write_run(tmp_path / "bad", json.dumps(GOOD).encode(), events)
    (bad / "facts.json").write_bytes(b"\x00\x01binary\xff")
    assert run_cli("report", str(bad), "--diff", str(good)) == 0
    assert "internal error" not in capsys.readouterr().err


def test_resume_refuses_a_damaged_resume_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    running = {**GOOD, "outcome": "running", "exit_code": None}
    for name, body in (("deep", b"{" * 100_000), ("binary", b"\xff\x00"), ("list", b"[]")):
        run_dir = write_run(tmp_path / name, json.dumps(running).encode())
        (run_dir / "resume.json").write_bytes(body)
        assert run_cli("resume", str(run_dir)) == 2
        err = capsys.readouterr().err
        assert "resume.json" in err and "internal error" not in err


def test_the_depth_bound_counts_structure_not_brackets_in_strings() -> None:
    assert nesting_depth('{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}') == 1
    assert nesting_depth('{"a": "\\"[[[["}') == 1
    assert nesting_depth("[" * 40 + "]" * 40) == 33  # stops counting past the limit
    assert summary_problem(GOOD) is None


def test_a_summary_larger_than_the_bound_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with (run_dir / "summary.json").open("wb") as handle:
        handle.truncate(6 * 1024**3)  # sparse: 6 GB on paper, nothing on disk
    with pytest.raises(CorruptRecord, match="larger than"):
        read_summary(run_dir)


def test_the_index_passes_over_lines_that_are_not_paths(tmp_path: Path) -> None:
    index = tmp_path / "runs.index"
    index.write_bytes(b"/a\n\xff\n\n/b\x00c\n/c\n")
    assert list(read_path_lines(index)) == [Path("/a"), Path("/c")]


def test_samples_that_a_chart_cannot_place_are_passed_over(tmp_path: Path) -> None:
    from rocmbuild.records.samples import SAMPLES_FILE, load_samples

    (tmp_path / SAMPLES_FILE).write_bytes(b'{"t": NaN}\n{"t": 1.0, "avail": Infinity}\n{"t": 2.0}\n')
    assert load_samples(tmp_path) == [{"t": 2.0}]


def test_history_html_skips_a_summary_with_infinity(tmp_path: Path, state: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    index = state / "rocmbuild" / "runs.index"
    index.parent.mkdir(parents=True)
    good = write_run(tmp_path / "good", json.dumps(GOOD).encode())
    bad = write_run(tmp_path / "bad", DAMAGED["a duration of Infinity"])
    index.write_text(f"{good}\n{bad}\n")
    out = tmp_path / "history.html"
    assert run_cli("history", "--html", "-o", str(out)) == 0
    assert "skipped" in capsys.readouterr().err and out.stat().st_size > 0


@pytest.mark.parametrize("options", [{"max_attempts": "x"}, {"budget_s": "1h"}, {"arch": 5}, {"jobs": True},
                                     ["a"]])
def test_resume_refuses_wrong_typed_options_in_its_state(options: object, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    running = {**GOOD, "outcome": "running", "exit_code": None}
    run_dir = write_run(tmp_path / "run", json.dumps(running).encode())
    (run_dir / "resume.json").write_text(json.dumps({"recipe": str(tmp_path / "r.toml"), "options": options}))
    assert run_cli("resume", str(run_dir)) == 2
    err = capsys.readouterr().err
    assert ("resume.json: option" in err or "resume.json: options is a" in err) and "internal error" not in err


def test_a_slurm_restart_with_a_damaged_resume_state_starts_afresh(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from rocmbuild.commands.schedjob import _resumable

    running = {**GOOD, "outcome": "running", "exit_code": None}
    run_dir = write_run(tmp_path / "run", json.dumps(running).encode())
    (run_dir / "resume.json").write_bytes(b"{" * 100_000)
    assert _resumable(run_dir, "atk") is False


def test_the_journal_reads_back_what_it_writes() -> None:
    """resume continues the summary it loads: every key rocmbuild writes comes back the same."""
    from rocmbuild.records.journal import RunSummary

    full = {**GOOD, "rocmbuild_version": "0.1.0",
            "preflight": [{"check": "arch", "ok": False, "detail": "d", "status": "fail", "todo": "t"}],
            "requires_from": [{"recipe": "atk", "package": "torch", "installed": True}],
            "rocm": {"root": "/opt/rocm", "version": "6.4.1"}, "job": {"slurm_job_id": "7"},
            "containment": {"kind": "process-tree", "cgroup": False, "detail": "no cgroup"},
            "up_to_date": {"up_to_date": False, "differs": ["arch"]},
            "force": {"removed": ["build"], "refused": [], "patterns": ["build"], "said": "s"},
            "code_objects": {"ok": True, "detail": "ok"}, "warnings": ["w"], "fingerprint_saved": False,
            "wheels": {"ok": False, "detail": "d", "log": "wheel.log", "wheels": [], "todo": "t"},
            "records_incomplete": "events.jsonl: full", "notify": {"command": "true", "exit_code": 0}}
    full["attempts"] = [{**full["attempts"][0], "step": "build", "signal": None, "stopped_early": None,
                         "progress": None, "lines": 3},
                        {"number": 2, "started": None, "duration_s": None, "ended": "interrupted",
                         "exit_code": None, "log": "attempt-2.log", "env": {}, "diagnosis": None, "remedies": [],
                         "killed": True}]
    written = RunSummary.from_json(json.loads(json.dumps(full))).to_json()
    assert written == full
    again = RunSummary.from_json(json.loads(json.dumps(written))).to_json()
    assert json.dumps(again) == json.dumps(written)  # the same bytes, keys in the same order


@pytest.mark.parametrize("field, value", [("warnings", 5), ("containment", ["cgroup"]), ("outcome", "exploded"),
                                          ("preflight", [{"check": "arch", "ok": True, "status": "maybe"}]),
                                          ("started", "yesterday")])
def test_resume_refuses_a_journal_field_of_the_wrong_type(field: str, value: object, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = write_run(tmp_path / field, json.dumps({**GOOD, "outcome": "running", field: value}).encode())
    (run_dir / "resume.json").write_text(json.dumps({"recipe": "atk.toml", "cwd": str(tmp_path), "options": {}}))
    assert run_cli("resume", str(run_dir)) == 2
    err = capsys.readouterr().err
    assert "summary.json" in err and field in err and "internal error" not in err
