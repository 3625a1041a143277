"""`rocmbuild report`'s text: why the run stopped comes from summary.json, and from the event for old records."""

from __future__ import annotations

from rocmbuild.records.report import render_summary

FAILED = {"outcome": "failed", "exit_code": 3, "attempts": [], "run_dir": "/runs/r1"}


def test_the_stop_reason_is_read_from_the_summary() -> None:
    text = render_summary({**FAILED, "stop_reason": "the ladder is exhausted"},
                          [{"event": "run.finished", "reason": "an older reason the summary replaced"}])
    assert "why rocmbuild stopped: the ladder is exhausted" in text
    assert "older reason" not in text


def test_a_record_from_before_stop_reason_falls_back_to_its_run_finished_event() -> None:
    text = render_summary(FAILED, [{"event": "run.started"}, {"event": "run.finished", "reason": "budget spent"}])
    assert "why rocmbuild stopped: budget spent" in text


def test_a_run_that_succeeded_says_no_reason() -> None:
    text = render_summary({**FAILED, "outcome": "succeeded", "exit_code": 0, "stop_reason": "verified"})
    assert "why rocmbuild stopped" not in text
