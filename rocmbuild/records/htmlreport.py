"""``rocmbuild report RUN_DIR --html``: one self-contained page about one run.

Owns what the page says and in which order, from the run's records only (summary.json,
events.jsonl, samples.jsonl, the diff against the last good run): the outcome and the exact next
step at the top; the timeline of attempts, back-off waits and memory-guard pauses; memory and
progress over time with the pauses and any OOM kill marked; the decisive line in its context; each
remedy with what it changed (environment diff, paths removed); the code objects verified; what
differs from the last good run.  :func:`render_report` is pure; :func:`write_report` reads and writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rocmbuild.errors import RocmbuildError
from rocmbuild.records.htmlpage import epoch, esc, gib, items, page, table
from rocmbuild.records.htmlpage import key as as_key
from rocmbuild.records.notifymessage import cured_todo, decisive, human_duration
from rocmbuild.records.recorder import load_run, write_private
from rocmbuild.records.recordfile import as_list, as_object
from rocmbuild.records.rundiff import diff_runs, last_good_run
from rocmbuild.records.samples import load_samples
from rocmbuild.records.svgchart import Axes, Mark, Series, Span, clock, lane, line_chart

_GOOD = ("succeeded", "up_to_date")


def _attempts(summary: Mapping[str, object]) -> list[Mapping[str, object]]:
    return [a for a in items(summary.get("attempts")) if isinstance(a, Mapping)]


def _events(events: Sequence[object], name: str) -> list[Mapping[str, object]]:
    return [e for e in events if isinstance(e, Mapping) and e.get("event") == name]


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def run_window(summary: Mapping[str, object], events: Sequence[object], samples: Sequence[Mapping[str, float]]
               ) -> tuple[float, float]:
    """(start, end) of the run in epoch seconds: the summary's, widened to every event and sample."""
    times = [t for t in (epoch(summary.get("started")), epoch(summary.get("finished"))) if t is not None]
    times += [t for e in events if isinstance(e, Mapping) and (t := epoch(e.get("timestamp"))) is not None]
    times += [float(s["t"]) for s in samples]
    if not times:
        return 0.0, 1.0
    return min(times), max(max(times), min(times) + 1.0)


def timeline(summary: Mapping[str, object], events: Sequence[object], start: float) -> tuple[list[Span], list[Mark]]:
    """Attempts, waits and pauses as spans, OOM kills as marks, in seconds since ``start`` (pure)."""
    spans: list[Span] = []
    marks: list[Mark] = []
    attempts = {as_key(a.get("number")): a for a in _attempts(summary)}
    began = {as_key(e.get("attempt")): epoch(e.get("timestamp")) for e in _events(events, "attempt.started")}
    ended = {as_key(e.get("attempt")): epoch(e.get("timestamp")) for e in _events(events, "attempt.finished")}
    for number, attempt in attempts.items():
        t0 = began.get(number) or epoch(attempt.get("started"))
        duration = _num(attempt.get("duration_s")) or 0.0
        t1 = ended.get(number) or (t0 + duration if t0 is not None else None)
        if t0 is None or t1 is None:
            continue
        diagnosis = attempt.get("diagnosis")
        css = ("att-stop" if attempt.get("ended") in ("interrupted", "budget")
               else "att-bad" if isinstance(diagnosis, Mapping) or attempt.get("exit_code") not in (0, None)
               else "att-ok")
        what = (f"{diagnosis.get('category')}" if isinstance(diagnosis, Mapping) else str(attempt.get("ended")))
        spans.append(Span(t0 - start, t1 - start, css, f"#{number}: {what}, {human_duration(duration)}"))
        oom = as_object(attempt.get("memory")).get("oom")
        if as_object(oom).get("status") == "confirmed":  # memguard.confirm_oom's record
            marks.append(Mark(t1 - start, "oom", f"OOM kill (attempt {number})"))
    for wait in _events(events, "retry.waiting"):
        t0 = epoch(wait.get("timestamp"))
        if t0 is not None:
            seconds = _num(wait.get("seconds")) or 0.0
            spans.append(Span(t0 - start, t0 - start + seconds, "wait", f"back-off wait {seconds:g}s"))
    for kill in _events(events, "memory.oom_kill"):
        t0 = epoch(kill.get("timestamp"))
        if t0 is not None and not any(abs(m.at - (t0 - start)) < 5 for m in marks):
            marks.append(Mark(t0 - start, "oom", f"OOM kill (attempt {kill.get('attempt')})"))
    spans += pause_spans(events, start, spans)
    return spans, marks


def pause_spans(events: Sequence[object], start: float, attempts: Sequence[Span] = ()) -> list[Span]:
    """Memory-guard pauses: from a ``memory.paused`` until the ``memory.resumed`` that leaves none paused."""
    spans: list[Span] = []
    opened: float | None = None
    names: list[str] = []
    for event in events:
        if not isinstance(event, Mapping) or event.get("event") not in ("memory.paused", "memory.resumed"):
            continue
        t = epoch(event.get("timestamp"))
        if t is None:
            continue
        if event["event"] == "memory.paused":
            if opened is None:
                opened, names = t, []
            names += [str(n) for n in items(event.get("names"))]
        elif opened is not None and not event.get("paused_now"):
            spans.append(Span(opened - start, t - start, "pause",
                              f"memory guard paused {len(names)} job(s): {', '.join(names[:6])}"))
            opened = None
    if opened is not None:  # paused until the end of what was recorded
        end = max((s.end for s in attempts), default=opened - start + 1)
        spans.append(Span(opened - start, end, "pause", f"memory guard paused {len(names)} job(s)"))
    return spans


def _header(summary: Mapping[str, object], run_dir: Path) -> str:
    outcome = str(summary.get("outcome") or "unknown")
    attempts = _attempts(summary)
    arch = ";".join(str(a) for a in items(summary.get("arch")))
    line = decisive(summary)
    todo = (cured_todo(summary) or summary.get("todo")
            or ("nothing: the build succeeded and was verified" if outcome in _GOOD else ""))
    parts = [f"<section class=\"banner {esc(outcome)}\" id=\"outcome\"><h1>{esc(summary.get('recipe'))} "
             f"for {esc(arch)}: {esc(outcome)}</h1><div class=\"meta\">exit {esc(summary.get('exit_code'))} · "
             f"{len(attempts)} attempt(s) · {esc(human_duration(summary.get('duration_s')))} · started "
             f"{esc(str(summary.get('started') or '?')[:19].replace('T', ' '))} UTC</div></section>",
             f"<div class=\"next\" id=\"next-step\"><b>Next step</b>{esc(todo)}</div>"]
    if line:
        parts.append(f"<p><b>Decisive line:</b> <code>{esc(line)}</code></p>")
    parts.append(f"<p class=\"muted\">records: <code>{esc(run_dir)}</code></p>")
    return "".join(parts)


def _timeline_section(summary: Mapping[str, object], events: Sequence[object], start: float, end: float) -> str:
    spans, marks = timeline(summary, events, start)
    items = sorted([(s.start, s.label, s.css) for s in spans] + [(m.at, m.label, m.css) for m in marks])
    tone = {"att-bad": "bad", "oom": "bad", "att-ok": "ok"}
    listed = "".join(f"<li><code>{esc(clock(at))}</code> <span class=\"{tone.get(css, 'muted')}\">"
                     f"{esc(label)}</span></li>" for at, label, css in items)
    legend = ("<div class=\"legend\"><span><i style=\"background:var(--ok)\"></i>attempt succeeded</span>"
              "<span><i style=\"background:var(--bad)\"></i>attempt failed / OOM kill</span>"
              "<span><i style=\"background:var(--warn)\"></i>back-off wait · memory-guard pause</span></div>")
    return (f"<h2 id=\"timeline\">Timeline</h2>{lane('attempts, waits and pauses', spans, marks, duration=end - start)}"
            f"{legend}<ol class=\"timeline\">{listed}</ol>")


def _charts(samples: Sequence[Mapping[str, float]], summary: Mapping[str, object], events: Sequence[object],
            start: float, end: float) -> str:
    if not samples:
        return ("<h2 id=\"resources\">Memory and progress</h2><p class=\"muted\">no resource samples were "
                "recorded for this run (a run from an older rocmbuild, or no step ran).</p>")
    spans, marks = timeline(summary, events, start)
    pauses = [s for s in spans if s.css == "pause"]
    duration = end - start
    avail = tuple((s["t"] - start, float(s["avail"])) for s in samples if isinstance(s.get("avail"), int))
    cg = tuple((s["t"] - start, float(s["cg"])) for s in samples if isinstance(s.get("cg"), int))
    totals = [s["total"] for s in samples if isinstance(s.get("total"), int)]
    y_max = float(max(totals) if totals else max([v for _, v in avail + cg] or [1.0]))
    reserves = [m.get("reserve") for a in _attempts(summary) if isinstance(m := a.get("memory"), Mapping)]
    reserve = next((r for r in reserves if isinstance(r, int) and r > 0), None)
    memory = line_chart("memory: available to the build, and its cgroup's usage",
                        [Series("available", "s-avail", avail), Series("build cgroup usage", "s-cg", cg)],
                        axes=Axes(duration=duration, y_max=y_max, y_format=gib,
                                  level=(float(reserve), f"reserve {gib(reserve)}") if reserve else None),
                        spans=pauses, marks=marks, css="memory")
    progress_points = []
    for s in samples:
        if isinstance(s.get("done"), int) and isinstance(s.get("of"), int) and s["of"] > 0:
            progress_points.append((s["t"] - start, 100.0 * s["done"] / s["of"]))
        elif isinstance(s.get("pct"), (int, float)):
            progress_points.append((s["t"] - start, float(s["pct"])))
    jobs = tuple((s["t"] - start, float(s["jobs"])) for s in samples if isinstance(s.get("jobs"), int))
    paused = tuple((s["t"] - start, float(s["paused"])) for s in samples if isinstance(s.get("paused"), int))
    jobs_max = max([v for _, v in jobs + paused] or [1.0])
    progress = (line_chart("build progress (ninja/make N/M, CMake %)", [Series("progress", "s-prog",
                           tuple(progress_points))],
                           axes=Axes(duration=duration, y_max=100.0, y_format=lambda v: f"{v:.0f}%", height=160),
                           spans=pauses, marks=marks, css="progress")
                if progress_points else "<p class=\"muted\">no progress counter (ninja [N/M], CMake [NN%]) "
                                        "was printed while samples were taken</p>")
    jobs_chart = line_chart("compile jobs running, and paused by the memory guard",
                            [Series("running", "s-jobs", jobs), Series("paused", "s-paused", paused)],
                            axes=Axes(duration=duration, y_max=max(jobs_max, 1.0), y_format=lambda v: f"{v:g}",
                                      height=160),
                            spans=pauses, marks=marks, css="jobs")
    least = min(avail, key=lambda p: p[1]) if avail else None
    last = samples[-1]
    facts = [f"{len(samples)} samples", f"least available: {gib(least[1])} at {clock(least[0])}" if least else "",
             f"load at the end: {last.get('load', '-')}", f"guard pauses: {len(pauses)}",
             f"OOM kills: {len(marks)}"]
    legend = ("<div class=\"legend\"><span><i style=\"background:var(--mem)\"></i>available</span>"
              "<span><i style=\"background:var(--cg)\"></i>build cgroup usage</span>"
              "<span><i style=\"background:var(--warn)\"></i>reserve · paused</span>"
              "<span><i style=\"background:var(--bad)\"></i>OOM kill</span></div>")
    return (f"<h2 id=\"resources\">Memory and progress</h2>{memory}{legend}"
            f"<p class=\"muted\">{esc(' · '.join(f for f in facts if f))}</p>{progress}{jobs_chart}")


def _failures(summary: Mapping[str, object], events: Sequence[object]) -> str:
    diagnosed = {as_key(e.get("attempt")): e for e in _events(events, "failure.diagnosed")}
    blocks = []
    for attempt in _attempts(summary):
        diagnosis = attempt.get("diagnosis")
        if not isinstance(diagnosis, Mapping):
            continue
        event = diagnosed.get(as_key(attempt.get("number")), {})
        text = str(diagnosis.get("text") or "")
        context = [str(c) for c in items(event.get("context")) if isinstance(c, (str, int, float))]
        if text and text not in context:
            context.append(text)
        lines = "".join(f"<span class=\"hit\">{esc(c)}</span>" if c == text else esc(c) + "\n" for c in context)
        blocks.append(f"<h3>attempt {esc(attempt.get('number'))}: {esc(diagnosis.get('category'))} "
                      f"<span class=\"muted\">({esc(diagnosis.get('signature'))}, "
                      f"{esc(attempt.get('log'))} line {esc(diagnosis.get('line'))})</span></h3>"
                      f"<pre class=\"context\">{lines}</pre>")
    if not blocks:
        return ""
    return "<h2 id=\"decisive\">The decisive line in its context</h2>" + "".join(blocks)


def _env_diff(before: Mapping[str, object], after: Mapping[str, object]) -> list[str]:
    changes = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            if key not in before:
                changes.append(f"+ {key}={after[key]}")
            elif key not in after:
                changes.append(f"- {key} (was {before[key]})")
            else:
                changes.append(f"~ {key}={after[key]} (was {before[key]})")
    return changes


def _remedies(summary: Mapping[str, object], events: Sequence[object]) -> str:
    attempts = _attempts(summary)
    applied = _events(events, "remedy.applied")
    removed = _events(events, "path.removed")
    if not applied and not any(a.get("remedies") for a in attempts):
        return ""
    rows = []
    for index, attempt in enumerate(attempts[:-1]):
        names = [str(r) for r in items(attempt.get("remedies"))]
        if not names:
            continue
        nxt = attempts[index + 1]
        details = [str(e.get("detail")) for e in applied if e.get("remedy") in names]
        paths = [str(e.get("path")) for e in removed if e.get("remedy") in names]
        before, after = as_object(attempt.get("env")), as_object(nxt.get("env"))
        diff = _env_diff(before, after)
        changed = "".join(f"<code>{esc(d)}</code><br>" for d in diff) or "<span class=\"muted\">no env change</span>"
        gone = "".join(f"<code>{esc(p)}</code><br>" for p in paths) or "<span class=\"muted\">none</span>"
        jobs = (f"<br>MAX_JOBS {esc(before.get('MAX_JOBS'))} → {esc(after.get('MAX_JOBS'))}"
                if before and after and before.get("MAX_JOBS") != after.get("MAX_JOBS") else "")
        result = ("cured it" if not isinstance(nxt.get("diagnosis"), Mapping) and nxt.get("exit_code") == 0
                  else "not cured" if isinstance(nxt.get("diagnosis"), Mapping) else str(nxt.get("ended")))
        rows.append([f"after #{esc(attempt.get('number'))}", f"<b>{esc(', '.join(names))}</b><br>"
                     f"{'<br>'.join(esc(d) for d in details)}", changed + jobs, gone,
                     f"<span class=\"{'ok' if result == 'cured it' else 'bad'}\">#{esc(nxt.get('number'))} "
                     f"{esc(result)}</span>"])
    return ("<h2 id=\"remedies\">Remedies and what they changed</h2>"
            + table(["when", "remedy", "environment diff", "paths removed", "next attempt"], rows))


def _verified(events: Sequence[object]) -> str:
    rows = [[f"<span class=\"{'ok' if e.get('ok') else 'bad'}\">{'ok' if e.get('ok') else 'failed'}</span>",
             "artifacts", f"<code>{esc(e.get('detail'))}</code>"] for e in _events(events, "artifacts.verified")]
    rows += [[f"<span class=\"{'ok' if e.get('ok') else 'bad'}\">{'ok' if e.get('ok') else 'failed'}</span>",
              f"wheel {esc(e.get('wheel'))}", f"<code>{esc(e.get('detail'))}</code>"]
             for e in _events(events, "wheel.verified")]
    if not rows:
        return ""
    return "<h2 id=\"verified\">Code objects verified</h2>" + table(["result", "what", "per artifact"], rows)


def _diff_section(diff: Mapping[str, object] | None, note: str | None) -> str:
    if diff is None:
        return f"<h2 id=\"diff\">Against the last good run</h2><p class=\"muted\">{esc(note or 'no diff')}</p>"
    rows = []
    for group, title in (("env", "environment"), ("facts", "toolchain / source"), ("options", "options")):
        for key, pair in as_object(diff.get(group)).items():
            if isinstance(pair, Mapping):
                rows.append([esc(title), f"<code>{esc(key)}</code>", f"<code>{esc(pair.get('this'))}</code>",
                             f"<code>{esc(pair.get('other'))}</code>"])
    body = table(["what", "name", "this run", "last good run"], rows) if rows else "<p>nothing differs</p>"
    new = as_list(diff.get("new_log_lines"))
    if new:
        body += "<p>log lines new against the good run's log:</p><pre>" + "\n".join(esc(x) for x in new) + "</pre>"
    return (f"<h2 id=\"diff\">Against the last good run</h2><p class=\"muted\">vs <code>{esc(diff.get('other'))}"
            f"</code></p>{body}")


def render_report(summary: Mapping[str, object], events: Sequence[object], samples: Sequence[Mapping[str, float]],
                  run_dir: Path, diff: Mapping[str, object] | None = None, diff_note: str | None = None) -> str:
    """The whole page (pure)."""
    start, end = run_window(summary, events, samples)
    notify = summary.get("notify")
    notify_line = ""
    if isinstance(notify, Mapping):
        notify_line = (f"<p class=\"muted\">notification: {esc(notify.get('command'))}: "
                       f"{esc(notify.get('error') or 'sent')}</p>")
    body = "".join([
        _header(summary, run_dir), _timeline_section(summary, events, start, end),
        _charts(samples, summary, events, start, end), _failures(summary, events), _remedies(summary, events),
        _verified(events), _diff_section(diff, diff_note), notify_line,
        "<p class=\"muted\">rendered by <code>rocmbuild report --html</code> from the run's records</p>"])
    title = f"rocmbuild: {summary.get('recipe')} {summary.get('outcome')}"
    return page(title, body)


def write_report(run_dir: Path, output: Path | None) -> Path | None:
    """Render ``run_dir`` to ``output`` (None: return nothing, the caller prints); the path written."""
    text = report_html(run_dir)
    if output is None:
        return None
    tmp = output.with_name(f".{output.name}.tmp")
    write_private(tmp, text)  # a record of the run dir: private like the others
    tmp.replace(output)
    return output


def report_html(run_dir: Path) -> str:
    """The page of ``run_dir``, with the diff against the last good run of its recipe when there is one."""
    summary, events = load_run(run_dir)
    diff: Mapping[str, object] | None = None
    note = None
    try:
        diff = diff_runs(run_dir, last_good_run(run_dir, summary)).to_json()
    except RocmbuildError as exc:
        note = exc.what
    except (OSError, ValueError) as exc:
        note = f"could not compare: {exc}"
    return render_report(summary, events, load_samples(run_dir), run_dir, diff, note)
