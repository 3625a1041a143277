"""The frame every rocmbuild HTML page shares: escaping, the stylesheet, the page skeleton.

Owns the rules that make a page safe and self-contained: every text that reaches the page goes
through :func:`esc` (build output is hostile: ``<script>``, quotes, terminal escapes), and the page
forbids itself any network or script with a Content-Security-Policy (``default-src 'none'``), so
even a mistake in escaping could not fetch or run anything.  One inline stylesheet, responsive (a
phone and a desktop), no JavaScript, no web font, no CDN: it opens offline after ``scp``.
"""

from __future__ import annotations

import html
import re
from datetime import datetime

_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x00-\x08\x0b-\x1f\x7f]")

CSS = """
:root{--ok:#1a7f37;--bad:#cf222e;--warn:#bf8700;--muted:#57606a;--bg:#fff;--fg:#1f2328;--card:#f6f8fa;
--line:#d0d7de;--mem:#0969da;--cg:#8250df;--prog:#1a7f37}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--card:#161b22;--line:#30363d;--muted:#8d96a0}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
main{max-width:1040px;margin:0 auto;padding:12px}
h1{font-size:1.3rem;margin:.2rem 0}h2{font-size:1.1rem;margin:1.4rem 0 .4rem;border-bottom:1px solid var(--line)}
.banner{border-radius:8px;padding:12px 14px;color:#fff;background:var(--bad)}
.banner.succeeded,.banner.up_to_date{background:var(--ok)}
.banner.running,.banner.interrupted,.banner.none{background:#57606a}
.banner .meta{opacity:.9;font-size:.9rem}
.next{margin-top:10px;padding:10px 12px;border-left:4px solid var(--warn);background:var(--card);border-radius:4px}
.next b{display:block}
pre,code{font:13px/1.35 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:var(--card);padding:8px;border-radius:6px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
pre .hit{background:#ffebe9;color:#82071e;font-weight:600;display:block}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{border-bottom:1px solid var(--line);padding:4px 6px;text-align:left;vertical-align:top}
td.num{text-align:right;white-space:nowrap}
.ok{color:var(--ok)}.bad{color:var(--bad)}.muted{color:var(--muted)}
svg{width:100%;height:auto;display:block;background:var(--card);border-radius:6px}
svg text{font:11px system-ui,sans-serif;fill:var(--fg)}
svg .grid{stroke:var(--line);stroke-width:1}
svg .s-avail{stroke:var(--mem);fill:none;stroke-width:2}
svg .s-cg{stroke:var(--cg);fill:none;stroke-width:2;stroke-dasharray:5 3}
svg .s-prog{stroke:var(--prog);fill:none;stroke-width:2}
svg .s-jobs{stroke:var(--mem);fill:none;stroke-width:1.5}
svg .s-paused{stroke:var(--warn);fill:none;stroke-width:1.5}
svg .reserve{stroke:var(--warn);stroke-dasharray:2 3}
svg .pause{fill:var(--warn);opacity:.25}
svg .oom{stroke:var(--bad);stroke-width:2}
svg .att-ok{fill:var(--ok)}svg .att-bad{fill:var(--bad)}svg .att-stop{fill:var(--muted)}
svg .wait{fill:var(--warn);opacity:.6}
.legend span{display:inline-block;margin-right:12px;font-size:.85rem}
.legend i{display:inline-block;width:14px;height:4px;margin-right:4px;vertical-align:middle}
ol.timeline{padding-left:1.3rem}ol.timeline li{margin:.15rem 0}
details summary{cursor:pointer}
main,.next,p,li,td{overflow-wrap:anywhere}
@media (max-width:600px){body{font-size:14px}main{padding:6px}th,td{padding:3px}svg text{font-size:20px}}
"""


def esc(value: object) -> str:
    """Text for the page: control sequences dropped, then HTML-escaped (quotes too, for attributes)."""
    return html.escape(_CONTROL.sub("", str(value)), quote=True)


def page(title: str, body: str) -> str:
    """A whole self-contained page around ``body`` (already escaped HTML)."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; img-src data:\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head>\n<body><main>\n{body}\n</main></body></html>\n")


def epoch(stamp: object) -> float | None:
    """Seconds since the epoch from an ISO timestamp of the records (None when it is not one)."""
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def items(value: object) -> list[object]:
    """A record's list field, or [] when the record holds something else there (records are not trusted)."""
    return list(value) if isinstance(value, list | tuple) else []


def key(value: object) -> object:
    """A value usable as a dict key (a list or dict where a number belongs is no key: None)."""
    return value if isinstance(value, str | int | float | None) else None


def gib(value: object) -> str:
    return f"{value / 1024 ** 3:.1f} GiB" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def table(headers: list[str], rows: list[list[str]], num: frozenset[int] = frozenset()) -> str:
    """A table from escaped cells (wrapped so a wide one scrolls on a phone instead of the page)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td class=\"num\">{c}</td>" if i in num else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<div class=\"scroll\"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
