"""Inline SVG charts (pure): lines over time with shaded spans and marked instants, and a timeline lane.

Owns the drawing only: values in, an ``<svg>`` string out, scaled by ``viewBox`` so it fits any
width.  Every label goes through ``htmlpage.esc``; numbers are formatted here, never taken as text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rocmbuild.records.htmlpage import esc

W, PAD_L, PAD_R, PAD_T, PAD_B = 800, 56, 12, 22, 26


@dataclass(frozen=True)
class Series:
    name: str
    css: str                                 # the CSS class that colours it (s-avail, s-cg, ...)
    points: tuple[tuple[float, float], ...]  # (seconds since start, value)


@dataclass(frozen=True)
class Span:
    start: float
    end: float
    css: str      # pause, wait, att-ok, att-bad, att-stop
    label: str


@dataclass(frozen=True)
class Mark:
    at: float
    css: str      # oom
    label: str


def clock(seconds: float) -> str:
    """Elapsed time for an axis: 0:45, 12:05, 3h07."""
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


@dataclass(frozen=True, kw_only=True)
class Axes:
    """A line chart's frame: [0, duration] seconds by [0, y_max], its height, and a reference line."""

    duration: float
    y_max: float
    y_format: Callable[[float], str]  # a value as the y axis labels it
    height: int = 220
    level: tuple[float, str] | None = None  # a horizontal line: (value, label)


def line_chart(title: str, series: Sequence[Series], *, axes: Axes, spans: Sequence[Span] = (),
               marks: Sequence[Mark] = (), css: str = "") -> str:
    """Lines over the ``axes``' [0, duration] seconds and [0, y_max], spans shaded and instants marked."""
    duration = max(axes.duration, 1.0)
    y_max = max(axes.y_max, 1e-9)
    y_format, height, level = axes.y_format, axes.height, axes.level
    inner_w, inner_h = W - PAD_L - PAD_R, height - PAD_T - PAD_B

    def x(t: float) -> float:
        return PAD_L + inner_w * min(max(t, 0.0), duration) / duration

    def y(v: float) -> float:
        return PAD_T + inner_h * (1 - min(max(v, 0.0), y_max) / y_max)

    out = [f"<svg class=\"chart {esc(css)}\" viewBox=\"0 0 {W} {height}\" role=\"img\" aria-label=\"{esc(title)}\">",
           f"<title>{esc(title)}</title>", f"<text x=\"{PAD_L}\" y=\"14\">{esc(title)}</text>"]
    for fraction in (0.0, 0.5, 1.0):
        gy = y(y_max * fraction)
        out.append(f"<line class=\"grid\" x1=\"{PAD_L}\" x2=\"{W - PAD_R}\" y1=\"{gy:.1f}\" y2=\"{gy:.1f}\"/>"
                   f"<text x=\"4\" y=\"{gy + 4:.1f}\">{esc(y_format(y_max * fraction))}</text>")
    for fraction in (0.0, 0.25, 0.5, 0.75, 1.0):
        gx = x(duration * fraction)
        anchor = "end" if fraction == 1.0 else "start" if fraction == 0.0 else "middle"
        out.append(f"<text x=\"{gx:.1f}\" y=\"{height - 8}\" text-anchor=\"{anchor}\">"
                   f"{esc(clock(duration * fraction))}</text>")
    for span in spans:
        x0, x1 = x(span.start), max(x(span.end), x(span.start) + 2)
        out.append(f"<rect class=\"{esc(span.css)}\" x=\"{x0:.1f}\" y=\"{PAD_T}\" width=\"{x1 - x0:.1f}\" "
                   f"height=\"{inner_h}\"><title>{esc(span.label)}</title></rect>")
    if level is not None:
        ly = y(level[0])
        out.append(f"<line class=\"reserve\" x1=\"{PAD_L}\" x2=\"{W - PAD_R}\" y1=\"{ly:.1f}\" y2=\"{ly:.1f}\"/>"
                   f"<text x=\"{W - PAD_R - 4}\" y=\"{ly - 3:.1f}\" text-anchor=\"end\">{esc(level[1])}</text>")
    for s in series:
        if not s.points:
            continue
        if len(s.points) == 1:  # one sample: a dot, not an invisible line
            px, py = s.points[0]
            out.append(f"<circle class=\"{esc(s.css)}\" cx=\"{x(px):.1f}\" cy=\"{y(py):.1f}\" r=\"3\"/>")
            continue
        pts = " ".join(f"{x(px):.1f},{y(py):.1f}" for px, py in s.points)
        out.append(f"<polyline class=\"{esc(s.css)}\" points=\"{pts}\"><title>{esc(s.name)}</title></polyline>")
    for mark in marks:
        mx = x(mark.at)
        out.append(f"<line class=\"{esc(mark.css)}\" x1=\"{mx:.1f}\" x2=\"{mx:.1f}\" y1=\"{PAD_T}\" "
                   f"y2=\"{PAD_T + inner_h}\"><title>{esc(mark.label)}</title></line>"
                   f"<text x=\"{mx + 3:.1f}\" y=\"{PAD_T + 12}\" class=\"bad\">{esc(mark.label)}</text>")
    out.append("</svg>")
    return "".join(out)


def lane(title: str, spans: Sequence[Span], marks: Sequence[Mark], *, duration: float) -> str:
    """One horizontal lane: attempts, waits and pauses as bars, OOM kills as red lines, over the run."""
    duration = max(duration, 1.0)
    height = 70
    inner_w = W - PAD_L - PAD_R

    def x(t: float) -> float:
        return PAD_L + inner_w * min(max(t, 0.0), duration) / duration

    out = [f"<svg class=\"chart timeline\" viewBox=\"0 0 {W} {height}\" role=\"img\" aria-label=\"{esc(title)}\">",
           f"<title>{esc(title)}</title>"]
    for span in spans:
        x0, x1 = x(span.start), max(x(span.end), x(span.start) + 2)
        top, tall = (14, 26) if span.css.startswith("att") or span.css == "wait" else (42, 8)
        out.append(f"<rect class=\"{esc(span.css)}\" x=\"{x0:.1f}\" y=\"{top}\" width=\"{x1 - x0:.1f}\" "
                   f"height=\"{tall}\" rx=\"2\"><title>{esc(span.label)}</title></rect>")
        if span.css.startswith("att") and x1 - x0 > 24:
            out.append(f"<text x=\"{x0 + 4:.1f}\" y=\"31\" style=\"fill:#fff\">{esc(span.label.split(':')[0])}</text>")
    for mark in marks:
        mx = x(mark.at)
        out.append(f"<line class=\"{esc(mark.css)}\" x1=\"{mx:.1f}\" x2=\"{mx:.1f}\" y1=\"8\" y2=\"52\">"
                   f"<title>{esc(mark.label)}</title></line>")
    for fraction in (0.0, 0.5, 1.0):
        anchor = "end" if fraction == 1.0 else "start" if fraction == 0.0 else "middle"
        out.append(f"<text x=\"{x(duration * fraction):.1f}\" y=\"{height - 4}\" text-anchor=\"{anchor}\">"
                   f"{esc(clock(duration * fraction))}</text>")
    out.append("</svg>")
    return "".join(out)
