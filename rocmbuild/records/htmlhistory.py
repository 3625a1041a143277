"""``rocmbuild history --html``: one self-contained page about the runs of this host (and a shared state dir).

Owns the page's content, from the summaries ``history`` already loads: per recipe and arch the
success rate and the durations over time (an inline SVG, failures in red), the signatures seen and
what cured them (history.signature_stats), and every run with a link to its report page where one
was written.  Pure: summaries in, HTML out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rocmbuild.records.history import history_rows, signature_stats
from rocmbuild.records.htmlpage import epoch, esc, items, page, table
from rocmbuild.records.notifymessage import human_duration
from rocmbuild.records.recordfile import as_list, as_number, as_objects
from rocmbuild.records.svgchart import PAD_B, PAD_L, PAD_R, PAD_T, W

_GOOD = ("succeeded", "up_to_date")


def duration_chart(title: str, points: Sequence[tuple[float, float, bool]]) -> str:
    """Durations over time: one dot per run at (started, duration), green when it succeeded (pure)."""
    height = 180
    inner_w, inner_h = W - PAD_L - PAD_R, height - PAD_T - PAD_B
    if not points:
        return ""
    t0 = min(p[0] for p in points)
    t1 = max(max(p[0] for p in points), t0 + 1)
    y_max = max(max(p[1] for p in points), 1.0)
    out = [f"<svg class=\"chart durations\" viewBox=\"0 0 {W} {height}\" role=\"img\" aria-label=\"{esc(title)}\">",
           f"<title>{esc(title)}</title><text x=\"{PAD_L}\" y=\"14\">{esc(title)}</text>"]
    for fraction in (0.0, 0.5, 1.0):
        gy = PAD_T + inner_h * (1 - fraction)
        out.append(f"<line class=\"grid\" x1=\"{PAD_L}\" x2=\"{W - PAD_R}\" y1=\"{gy:.1f}\" y2=\"{gy:.1f}\"/>"
                   f"<text x=\"4\" y=\"{gy + 4:.1f}\">{esc(human_duration(y_max * fraction))}</text>")
    from datetime import UTC, datetime

    for when, anchor in ((t0, "start"), (t1, "end")):
        gx = PAD_L + inner_w * (when - t0) / (t1 - t0)
        label = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d %H:%M")
        out.append(f"<text x=\"{gx:.1f}\" y=\"{height - 8}\" text-anchor=\"{anchor}\">{esc(label)}</text>")
    ordered = sorted(points)
    line = " ".join(f"{PAD_L + inner_w * (t - t0) / (t1 - t0):.1f},{PAD_T + inner_h * (1 - d / y_max):.1f}"
                    for t, d, _ in ordered)
    if len(ordered) > 1:
        out.append(f"<polyline class=\"grid\" fill=\"none\" points=\"{line}\"/>")
    for t, d, ok in ordered:
        cx, cy = PAD_L + inner_w * (t - t0) / (t1 - t0), PAD_T + inner_h * (1 - d / y_max)
        out.append(f"<circle class=\"{'att-ok' if ok else 'att-bad'}\" cx=\"{cx:.1f}\" cy=\"{cy:.1f}\" r=\"5\">"
                   f"<title>{esc(human_duration(d))} {'ok' if ok else 'failed'}</title></circle>")
    out.append("</svg>")
    return "".join(out)


def _groups(summaries: Sequence[Mapping[str, object]]) -> dict[tuple[str, str], list[Mapping[str, object]]]:
    groups: dict[tuple[str, str], list[Mapping[str, object]]] = {}
    for s in summaries:
        key = (str(s.get("recipe")), ";".join(str(a) for a in items(s.get("arch"))) or "?")
        groups.setdefault(key, []).append(s)
    return groups


def usable(summary: Mapping[str, object]) -> dict[str, object] | None:
    """A summary with the shapes the page reads, or None (a record of the wrong shape is left out)."""
    if not isinstance(summary.get("arch"), list) or not isinstance(summary.get("attempts"), list):
        return None
    attempts = [dict(a, remedies=[str(r) for r in items(a.get("remedies"))],
                     diagnosis=a.get("diagnosis") if isinstance(a.get("diagnosis"), Mapping) else None)
                for a in as_objects(summary.get("attempts"))]
    duration = summary.get("duration_s")
    return dict(summary, arch=[str(a) for a in as_list(summary.get("arch"))], attempts=attempts,
                duration_s=duration if isinstance(duration, int | float) and not isinstance(duration, bool) else None,
                started=str(summary.get("started") or ""), recipe=str(summary.get("recipe")))


def render_history(summaries: Sequence[Mapping[str, object]]) -> str:
    summaries = [u for s in summaries if isinstance(s, Mapping) and (u := usable(s)) is not None]
    rows = history_rows(summaries)
    groups = _groups(summaries)
    ok_runs = sum(1 for r in rows if r.outcome in _GOOD)
    parts = [f"<section class=\"banner {'succeeded' if rows and ok_runs == len(rows) else 'failed' if rows else ''}\" "
             f"id=\"outcome\"><h1>rocmbuild history</h1><div class=\"meta\">{len(rows)} run(s), {ok_runs} succeeded, "
             f"{len(groups)} recipe/arch pair(s)</div></section>"]
    group_rows = []
    charts = []
    for (recipe, arch), runs in sorted(groups.items()):
        finished = [r for r in runs if r.get("outcome") not in ("running", None)]
        good = sum(1 for r in finished if r.get("outcome") in _GOOD)
        rate = f"{100 * good / len(finished):.0f}%" if finished else "-"
        durations = [float(d) for r in runs if isinstance(d := r.get("duration_s"), (int, float))]
        last = max(runs, key=lambda r: str(r.get("started") or ""))
        group_rows.append([esc(recipe), esc(arch), str(len(runs)), esc(rate),
                           esc(human_duration(sum(durations) / len(durations)) if durations else "-"),
                           f"<span class=\"{'ok' if last.get('outcome') in _GOOD else 'bad'}\">"
                           f"{esc(last.get('outcome'))}</span>"])
        points = [(t, d, r.get("outcome") in _GOOD) for r in runs
                  if (t := epoch(r.get("started"))) is not None and (d := as_number(r.get("duration_s"))) is not None]
        charts.append(duration_chart(f"{recipe} for {arch}: duration per run", points))
    parts.append("<h2 id=\"by-recipe\">By recipe and arch</h2>"
                 + table(["recipe", "arch", "runs", "success rate", "mean duration", "last"], group_rows,
                         frozenset({2, 3, 4})))
    parts.append("<h2 id=\"durations\">Durations over time</h2>" + "".join(charts))
    stats = signature_stats(summaries)
    stat_rows = [[f"<code>{esc(s.signature)}</code>", esc(s.category), str(s.seen), str(s.cured),
                  esc(", ".join(f"{k} ({v})" for k, v in sorted(s.cured_by.items(), key=lambda kv: -kv[1])) or "-")]
                 for s in stats]
    parts.append("<h2 id=\"signatures\">Failures seen and what cured them</h2>"
                 + (table(["signature", "category", "seen", "cured", "cured by (times)"], stat_rows, frozenset({2, 3}))
                    if stat_rows else "<p class=\"muted\">no diagnosed failures recorded</p>"))
    run_rows = []
    for r in reversed(rows):
        report = Path(r.run_dir) / "report.html"
        where = (f"<a href=\"{esc(report.as_uri())}\">{esc(r.run_dir)}</a>" if report.is_absolute() and report.is_file()
                 else f"<code>{esc(r.run_dir)}</code>")
        run_rows.append([esc(r.started[:16].replace("T", " ")), esc(r.recipe), esc(r.arch),
                         f"<span class=\"{'ok' if r.outcome in _GOOD else 'bad'}\">{esc(r.outcome)}</span>",
                         str(r.attempts), esc(human_duration(r.duration_s)), esc(r.cured_by or "-"), where])
    parts.append("<h2 id=\"runs\">Runs</h2>" + table(["started (UTC)", "recipe", "arch", "outcome", "attempts",
                                                     "duration", "cured by", "run dir"], run_rows, frozenset({4, 5})))
    return page("rocmbuild history", "".join(parts))
