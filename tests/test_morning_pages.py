"""The morning after, as a person sees it: report and history pages rendered in headless Chromium.

The overnight-style run is the bundled HIP example with its real link failure, cured by the ladder,
with the memory guard on and its reserve set above what is available, so that it really pauses
compile jobs; the notification goes to a JSON webhook on 127.0.0.1.  The pages are checked in the
DOM (outcome, timeline, charts), in the console (nothing: no script, no blocked load) and in the
screenshot's pixels (the banner, the failed and the cured attempt, the memory line).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import psutil
import pytest

from rocmbuild.records.htmlreport import render_report, timeline
from rocmbuild.records.samples import MAX_SAMPLES, SAMPLES_FILE, SampleLog, load_samples
from tests import browser
from tests.test_example_e2e import EXAMPLE, ROCMBUILD, env_for
from tests.test_notify_contained import receiver  # noqa: F401  (the fixture)

GREEN, RED, BLUE = (0x1A, 0x7F, 0x37), (0xCF, 0x22, 0x2E), (0x09, 0x69, 0xDA)


def test_ten_hours_of_samples_stay_bounded_and_keep_the_dip(tmp_path: Path) -> None:
    log = SampleLog(tmp_path)
    start = 1_800_000_000.0
    for i in range(18_000):  # 10 hours, one sample every 2 s
        avail = 1_000_000 if i == 1234 else 8_000_000_000 - i
        log.add({"t": start + 2 * i, "attempt": 1, "avail": avail, "jobs": 4, "paused": 3 if i == 1234 else 0})
    lines = (tmp_path / SAMPLES_FILE).read_text().splitlines()
    assert len(lines) <= MAX_SAMPLES
    assert (tmp_path / SAMPLES_FILE).stat().st_size < 300_000
    samples = load_samples(tmp_path)
    assert samples[0]["t"] - start < 3600 and samples[-1]["t"] == start + 2 * 17_999  # the whole night, both ends
    dip = min(samples, key=lambda s: s["avail"])
    assert dip["avail"] == 1_000_000 and dip["paused"] == 3  # the low point before an OOM survives thinning


def test_corrupt_sample_lines_are_skipped(tmp_path: Path) -> None:
    (tmp_path / SAMPLES_FILE).write_bytes(b'{"t": 1, "avail": 5}\n\xff\xfe\n[1]\n{"t": "x"}\n{"t": 2, "avail": true}\n'
                                          + b"[" * 100_000 + b"\n")
    assert load_samples(tmp_path) == [{"t": 1, "avail": 5}]


HOSTILE = '</pre><script>alert(1)</script><img src="http://127.0.0.1:9/x" onerror="x()">\x1b]52;c;AAAA\x07'


def _tags(dom: str) -> list[tuple[str, list[str]]]:
    """Every element of the rendered DOM and its attribute names."""
    from html.parser import HTMLParser

    found: list[tuple[str, list[str]]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, [name for name, _ in attrs]))

    Collect().feed(dom)
    return found


@pytest.mark.browser
def test_hostile_build_output_is_text_in_the_page_and_the_console_stays_silent(tmp_path: Path) -> None:
    summary: dict[str, Any] = {
        "recipe": "torch<b>", "arch": ["gfx942"], "outcome": "unrecognised", "exit_code": 3, "todo": HOSTILE,
        "started": "2026-12-01T01:00:00+00:00", "finished": "2026-12-01T02:00:00+00:00", "duration_s": 3600,
        "attempts": [{"number": 1, "started": "2026-12-01T01:00:00+00:00", "duration_s": 3500, "ended": "exited",
                      "exit_code": 1, "log": "attempt-1.log", "remedies": [],
                      "diagnosis": {"category": "unknown", "signature": None, "line": 9, "text": HOSTILE}}]}
    events = [{"event": "failure.diagnosed", "attempt": 1, "context": ["make: ***", HOSTILE],
               "timestamp": "2026-12-01T01:58:00+00:00"}]
    page = tmp_path / "report.html"
    page.write_text(render_report(summary, events, [], tmp_path))
    rendered = browser.dump_dom(page)
    tags = _tags(rendered.dom)
    assert not {"script", "img", "iframe", "object"} & {name for name, _ in tags}
    assert not [a for _, attrs in tags for a in attrs if a.startswith("on")]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered.dom
    assert "\x1b" not in rendered.dom and "]52;" not in rendered.dom
    assert rendered.console == [], rendered.console


@pytest.mark.browser
def test_the_console_check_sees_a_page_that_breaks_the_rules(tmp_path: Path) -> None:
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">"
                    "<script>console.error('boom')</script><p>x</p>")
    assert browser.dump_dom(page).console, "the console check would miss a blocked script"


def _example(tmp: Path, source: Path, run: str, url: str) -> subprocess.CompletedProcess[str]:
    total = psutil.virtual_memory().total
    reserve = f"{(total >> 20) - 256}M"  # above what is available: the guard pauses for real
    # --no-cache: compiles answered from a warm compiler cache end before the guard's next poll, and
    # there would be no pause to show
    argv = [ROCMBUILD, "example", "--arch", "gfx90a", "--source", str(source), "--run-dir", str(tmp / run),
            "--memory-reserve", reserve, "--notify", url, "--no-cache"]
    return subprocess.run(argv, env=env_for(tmp), capture_output=True, text=True, timeout=300)


@pytest.mark.hip
@pytest.mark.browser
@pytest.mark.integration
def test_the_morning_after_a_failed_then_cured_night(tmp_path: Path, receiver: Any) -> None:  # noqa: F811
    port, received = receiver
    url = f"json://127.0.0.1:{port}/night"
    for night in ("run1", "run2"):  # two nights, each a fresh tree: the same failure, the same cure
        source = tmp_path / f"hipvec-{night}"
        shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.so", "lib", "__pycache__"))
        proc = _example(tmp_path, source, night, url)
        assert proc.returncode == 0, proc.stderr
    run = tmp_path / "run2"
    summary = json.loads((run / "summary.json").read_text())
    assert [a["diagnosis"]["category"] if a["diagnosis"] else None for a in summary["attempts"]] == \
        ["missing_library", None]
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    assert any(e["event"] == "memory.paused" for e in events), "the guard did not pause: no pause to show"
    samples = load_samples(run)
    assert {s["attempt"] for s in samples} == {1, 2} and all(s["avail"] > 0 for s in samples)

    # The notification: outcome, the decisive line, the next step and where the report is.
    assert len(received) == 2
    message = received[-1]["body"]["message"]
    assert "outcome: succeeded" in message
    assert "cannot find -lhipvecmath" in message and "cured by add_library_paths" in message
    assert "next step: " in message and "LIBRARY_PATH=" in message
    assert f"report: {run / 'report.html'}" in message

    # The pages, through the command a person types.
    report = tmp_path / "morning.html"
    history = tmp_path / "history.html"
    env = env_for(tmp_path)
    for argv in ([ROCMBUILD, "report", str(run), "--html", "-o", str(report)],
                 [ROCMBUILD, "history", "--html", "-o", str(history)]):
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    rendered = browser.dump_dom(report)
    assert rendered.console == [], rendered.console
    dom = rendered.dom
    assert "example for gfx90a: succeeded" in dom
    assert 'id="timeline"' in dom and dom.count('class="att-bad"') >= 1 and dom.count('class="att-ok"') >= 1
    assert 'class="chart memory"' in dom and 'class="s-avail"' in dom
    assert 'class="pause"' in dom  # the guard's pause, shaded on the charts and the timeline
    assert "cannot find -lhipvecmath" in dom and "add_library_paths" in dom and "LIBRARY_PATH" in dom
    assert "gfx90a" in dom.split('id="verified"')[1]
    assert "Against the last good run" in dom and str(tmp_path / "run1") in dom

    shot = tmp_path / "morning.png"
    assert browser.screenshot(report, shot) == []
    assert shot.stat().st_size > 20_000 and browser.distinct_colours(shot) > 50
    assert browser.colour_count(shot, GREEN) > 20_000      # the outcome banner and the cured attempt
    assert browser.colour_count(shot, RED, tolerance=16) > 2_000  # the failed attempt on the timeline
    assert browser.colour_count(shot, BLUE, tolerance=16) > 300   # the memory line

    rendered = browser.dump_dom(history)
    assert rendered.console == [], rendered.console
    assert "ld-cannot-find-library" in rendered.dom and "add_library_paths (2)" in rendered.dom
    assert 'class="chart durations"' in rendered.dom and "100%" in rendered.dom
    shot = tmp_path / "history.png"
    assert browser.screenshot(history, shot, height=1400) == []
    assert browser.colour_count(shot, GREEN) > 5_000 and browser.distinct_colours(shot) > 30


PROGRESS_RECIPE = """
name = "steps"
packages = []
[steps]
build = ["for i in 1 2 3 4 5 6; do echo \\"[$i/6] Building CXX object part$i.o\\"; sleep 0.7; done"]
"""


@pytest.mark.browser
@pytest.mark.integration
def test_samples_follow_a_build_s_progress_and_the_page_draws_it(tmp_path: Path) -> None:
    from tests.test_e2e_ladder import base_env

    recipe = tmp_path / "steps.toml"
    recipe.write_text(PROGRESS_RECIPE)
    (tmp_path / "src").mkdir()
    run = tmp_path / "run"
    proc = subprocess.run([ROCMBUILD, str(recipe), "--source", str(tmp_path / "src"), "--run-dir", str(run),
                           "--arch", "gfx90a", "--skip-preflight", "--no-cache"], env=base_env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    samples = load_samples(run)
    assert len(samples) >= 2
    done = [s["done"] for s in samples if "done" in s]
    assert done and done == sorted(done) and done[-1] >= 3 and {s["of"] for s in samples if "of" in s} == {6}
    assert all(s["attempt"] == 1 and s["total"] >= s["avail"] > 0 and s["load"] >= 0 for s in samples)
    page = tmp_path / "page.html"
    assert subprocess.run([ROCMBUILD, "report", str(run), "--html", "-o", str(page)], env=base_env(tmp_path),
                          capture_output=True, timeout=60).returncode == 0
    rendered = browser.dump_dom(page)
    assert 'class="chart progress"' in rendered.dom and 'class="s-prog"' in rendered.dom
    assert rendered.console == []


def test_records_of_the_wrong_shape_never_crash_the_pages_or_the_message(tmp_path: Path) -> None:
    import random

    from rocmbuild.records.htmlhistory import render_history
    from rocmbuild.records.notifymessage import build_message

    summary: dict[str, Any] = {
        "recipe": "vllm", "arch": ["gfx942"], "outcome": "succeeded", "exit_code": 0, "duration_s": 7200.0,
        "started": "2026-12-01T01:00:00+00:00", "todo": "nothing",
        "attempts": [{"number": 1, "started": "2026-12-01T01:00:00+00:00", "duration_s": 3000, "ended": "exited",
                      "exit_code": 1, "env": {"MAX_JOBS": "64"}, "remedies": ["reduce_jobs"],
                      "memory": {"reserve": 1 << 30, "oom": {"status": "confirmed"}},
                      "diagnosis": {"category": "out_of_memory", "signature": "oom", "text": "Killed", "line": 3}},
                     {"number": 2, "duration_s": 4000, "ended": "exited", "exit_code": 0, "env": {"MAX_JOBS": "8"},
                      "remedies": [], "diagnosis": None}]}
    events: list[dict[str, Any]] = [
        {"event": "attempt.started", "attempt": 1, "timestamp": "2026-12-01T01:00:00+00:00"},
        {"event": "memory.paused", "attempt": 1, "names": ["cc1plus"], "paused_now": 1,
         "timestamp": "2026-12-01T01:10:00+00:00"},
        {"event": "failure.diagnosed", "attempt": 1, "context": ["a", "Killed"], "timestamp": "2026-12-01T01:50:00Z"},
        {"event": "remedy.applied", "remedy": "reduce_jobs", "detail": "64 -> 8"},
        {"event": "retry.waiting", "seconds": 30, "timestamp": "2026-12-01T01:50:01+00:00"}]
    weird: list[Any] = [None, 7, -1.5, "x", [], {}, [1, [2]], {"k": [1]}, True]

    def mutate(value: Any, rng: random.Random) -> Any:
        if isinstance(value, dict):
            return {k: rng.choice(weird) if rng.random() < 0.25 else mutate(v, rng) for k, v in value.items()}
        if isinstance(value, list):
            return [rng.choice(weird) if rng.random() < 0.15 else mutate(v, rng) for v in value]
        return value

    rng = random.Random(20261201)
    for _ in range(300):
        bent, bent_events = mutate(summary, rng), [mutate(e, rng) for e in events]
        assert "<!DOCTYPE html>" in render_report(bent, bent_events, [], tmp_path)
        assert "<!DOCTYPE html>" in render_history([bent, summary])
        assert build_message(bent, bent_events, "report.html").title


def test_report_html_writes_into_the_run_dir_by_default_and_refuses_an_unwritable_target(tmp_path: Path) -> None:
    from tests.test_e2e_ladder import base_env

    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({"recipe": "r", "arch": ["gfx942"], "outcome": "failed",
                                                  "exit_code": 1, "attempts": [], "todo": "install libfoo"}))
    (run / "events.jsonl").write_text("")
    env = base_env(tmp_path)
    proc = subprocess.run([ROCMBUILD, "report", str(run), "--html"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == (run / "report.html").resolve().as_uri()
    assert "install libfoo" in (run / "report.html").read_text()
    proc = subprocess.run([ROCMBUILD, "report", str(run), "--html", "-o", "/proc/version/page.html"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "cannot write" in proc.stderr and "-o -" in proc.stderr


def test_the_sampler_never_walks_the_tree_beside_the_memory_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """A walk reads all of /proc (~0.15 s on a busy host): beside the guard, the sampler uses the guard's."""
    import os

    from rocmbuild.process import sampler as sampler_module
    from rocmbuild.process.memguard import MemoryGuard
    from rocmbuild.process.watcher import Watcher

    walks: list[int] = []
    monkeypatch.setattr(sampler_module, "tree_procs", lambda pid: walks.append(pid) or [])
    got: list[dict[str, Any]] = []
    guard = MemoryGuard(1, lambda *a, **k: None)
    sampler = sampler_module.ResourceSampler(got.append, 3, Watcher(), guard)
    sampler.measure(os.getpid())
    assert walks == [] and got == []  # nothing walked; measure() returns, poll() records
    sampler.poll(os.getpid())
    assert walks == [] and len(got) == 1 and got[0]["attempt"] == 3 and got[0]["avail"] > 0
    alone = sampler_module.ResourceSampler(got.append, 1, Watcher())
    alone.poll(os.getpid())
    assert walks == [os.getpid()]  # without a guard it walks itself


@pytest.mark.parametrize(("status", "marked"), [("confirmed", True), ("unconfirmed", False)])
def test_the_timeline_marks_an_oom_kill_the_attempt_record_confirms(status: str, marked: bool) -> None:
    # The attempt's memory.oom is memguard.confirm_oom's record: {"status": "confirmed", "victim": ...}.
    summary = {"started": "2026-12-01T01:00:00+00:00",
               "attempts": [{"number": 1, "started": "2026-12-01T01:00:00+00:00", "duration_s": 600, "ended": "exited",
                             "exit_code": 137, "memory": {"oom": {"status": status, "victim": "cc1plus"}},
                             "diagnosis": {"category": "out_of_memory"}}]}
    _spans, marks = timeline(summary, [], start=0.0)
    assert [m.label for m in marks] == (["OOM kill (attempt 1)"] if marked else [])
