"""leaderboard.html: the pool's results as one self-contained page.

Organisers publish this file as it is (a static folder, an artefact of a scheduled run),
so it must work opened from disk with no network: styles and the sorting script are
inline and the PR curves are inline SVG. Submission names and reasons come from teams,
so every text goes through ``html.escape`` and the script never builds HTML from data:
it only reorders the rows the page already holds, by their ``data-value`` attributes.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import numpy as np

from disc21spark.matching.model import Submission
from disc21spark.matching.reports.curve_png import COLOURS as PALETTE  # the PNG's curves' colours
from disc21spark.matching.stats import compare
from disc21spark.pool.figures import intervals_figure

# (key of leaderboard.json, heading, kind): every metric column sorts; number or text
COLUMNS = (
    ("rank", "rank", "number"),
    ("tier", "tier", "number"),
    ("submission", "submission", "text"),
    ("micro_ap", "μAP", "number"),
    ("micro_ap_low", "μAP low", "number"),
    ("micro_ap_high", "μAP high", "number"),
    ("next_difference", "μAP − next", "number"),
    ("next_flip_share", "order flips", "number"),
    ("micro_ap_optimistic", "μAP, optimistic ties", "number"),
    ("tie_sensitive", "place hangs on ties", "text"),
    ("recall_at_p90", "recall@P90", "number"),
    ("threshold_at_p90", "threshold@P90", "number"),
    ("precision_at_p90", "precision@P90", "number"),
    ("recall_at_rank1", "recall@1", "number"),
    ("recall_at_rank10", "recall@10", "number"),
    ("n_predictions", "predictions", "number"),
    ("n_true_positives", "true positives", "number"),
    ("n_positives", "positives", "number"),
    ("n_queries", "queries", "number"),
    ("n_queries_with_predictions", "queries predicted", "number"),
    ("n_unknown_query_predictions", "unknown-query predictions", "number"),
    ("reused", "reused", "text"),
    ("warnings", "warnings", "text"),
)
TOP_CURVES = 10
# a curve of 5,000 points draws no better than one of 600 at this size
CURVE_POINTS = 600

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1b1f24}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.summary{color:#555;margin:0 0 16px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#f4f6f8;position:sticky;top:0;white-space:nowrap}
th button{font:inherit;font-weight:600;border:0;background:none;cursor:pointer;padding:0}
th[aria-sort=ascending] button::after{content:" ▲"}
th[aria-sort=descending] button::after{content:" ▼"}
td.text,th.text{text-align:left}
td.warn{color:#9a6700;max-width:28em}
tr.reused td.submission::after{content:" ↺";color:#888}
tr.ties td.tie_sensitive{color:#9a6700;font-weight:600}
#intervals text{font-size:11px}
pre{background:#f4f6f8;padding:12px;overflow:auto;max-height:32em}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:6px 0 0;padding:0;list-style:none}
.legend span{display:inline-block;width:14px;height:3px;margin-right:6px;vertical-align:middle}
"""

# Sorts the tbody by one column on a click on its heading: numbers by value, text by
# locale, empty cells (no value: P90 never reached) always last; a second click reverses.
SCRIPT = """
(function () {
  var table = document.getElementById("leaderboard");
  if (!table) return;
  var heads = table.tHead.rows[0].cells;
  function sortBy(index) {
    var th = heads[index], numeric = th.dataset.type === "number";
    var was = th.getAttribute("aria-sort");
    var dir = was ? (was === "ascending" ? "descending" : "ascending")
                  : (numeric && th.dataset.key !== "rank" ? "descending" : "ascending");
    var sign = dir === "ascending" ? 1 : -1;
    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[index].dataset.value, y = b.cells[index].dataset.value;
      if (x === "" || y === "") return (x === "") - (y === "");
      var c = numeric ? Number(x) - Number(y) : x.localeCompare(y);
      return c * sign || a.dataset.place - b.dataset.place;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    for (var i = 0; i < heads.length; i++) heads[i].removeAttribute("aria-sort");
    th.setAttribute("aria-sort", dir);
  }
  Array.prototype.forEach.call(heads, function (th, index) {
    th.querySelector("button").addEventListener("click", function () { sortBy(index); });
  });
})();
"""


def write_page(path: Path, rows: list[dict], scored: list[Submission], run: dict) -> None:
    """The page for ``rows`` (leaderboard.json's, in leaderboard order); ``scored``: the
    valid submissions in the same order, whose curves are drawn."""
    path.write_text(render(rows, scored, run), encoding="utf-8")


def render(rows: list[dict], scored: list[Submission], run: dict) -> str:
    ok = [r for r in rows if r["status"] == "ok"]
    bad = [r for r in rows if r["status"] != "ok"]
    reused = sum(bool(r["reused"]) for r in rows)
    summary = f"{len(rows)} submissions: {len(ok)} scored, {len(bad)} invalid" + (
        f", {reused} reused from the previous run" if reused else ""
    )
    started = run.get("start") or run.get("started") or ""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # no request may leave the page: it is opened from disk or a static host
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>DISC21 leaderboard</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>DISC21 matching track: leaderboard</h1>",
        f'<p class="summary" id="summary">{escape(summary)}'
        + (f" · run started {escape(str(started))}" if started else "")
        + "</p>",
        _table(ok),
        _detectable(ok),
        intervals_figure(ok),
        _groups(ok),
        _invalid(bad),
        _curves(scored[:TOP_CURVES], len(rows)),
        "<h2>Run record</h2>",
        f'<pre id="run">{escape(json.dumps(run, indent=2, ensure_ascii=False, default=str))}</pre>',
        f"<script>{SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _detectable(rows: list[dict]) -> str:
    """The line under the board on the gaps its queries tell apart ("" without intervals),
    as leaderboard.md has it."""
    sentence = compare.detectable_sentence(rows)
    return f'<p class="summary" id="detectable">{escape(sentence)}</p>' if sentence else ""


def _table(rows: list[dict]) -> str:
    heads = "".join(
        f'<th class="{kind}" data-key="{key}" data-type="{kind}" scope="col">'
        f'<button type="button">{escape(label)}</button></th>'
        for key, label, kind in COLUMNS
    )
    body = []
    for place, row in enumerate(rows):
        cells = "".join(_cell(key, kind, row.get(key)) for key, _, kind in COLUMNS)
        cls = " ".join(
            c for c, on in (("reused", row["reused"]), ("ties", row.get("tie_sensitive"))) if on
        )
        cls = f' class="{cls}"' if cls else ""
        body.append(f'<tr data-place="{place}"{cls}>{cells}</tr>')
    return (
        '<table id="leaderboard"><thead><tr>'
        + heads
        + "</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
    )


def _cell(key: str, kind: str, value: object) -> str:
    if key == "warnings":
        items = list(value or [])
        text = "; ".join(str(w) for w in items)
        return f'<td class="text warn" data-value="{escape(text)}">{escape(text)}</td>'
    if value is None:
        return f'<td class="{kind}" data-value="">—</td>'
    if isinstance(value, bool):
        text = "yes" if value else "no"
        return f'<td class="text" data-value="{text}">{text}</td>'
    if kind == "number":
        shown = f"{value:,}" if isinstance(value, int) else f"{value:.6g}"
        if key.startswith(("micro_ap", "recall", "precision")):
            shown = f"{value:.6f}"
        elif key == "next_difference":
            shown = f"{value:+.6f}"
        elif key == "next_flip_share":
            shown = f"{value:.1%}"
        return f'<td class="number" data-value="{value!r}">{escape(shown)}</td>'
    text = str(value)
    return f'<td class="text {key}" data-value="{escape(text)}">{escape(text)}</td>'


def _groups(rows: list[dict]) -> str:
    """μAP by query group (--query-groups): one row per scored submission, one column
    per group, the μAP and its interval; nothing without groups."""
    scored = [r for r in rows if r.get("groups")]
    if not scored:
        return ""
    block = scored[0]["groups"]
    heads = "".join(
        f'<th class="number" scope="col">{escape(g["group"])}</th>' for g in block["groups"]
    )
    body = []
    for r in scored:
        cells = []
        for g in r["groups"]["groups"]:
            ap, low, high = g["micro_ap"], g["micro_ap_low"], g["micro_ap_high"]
            text = "—" if ap is None else f"{ap:.4f}"
            if low is not None:
                text += f" ({low:.4f}–{high:.4f})"
            cells.append(f'<td class="number">{escape(text)}</td>')
        body.append(
            f'<tr><td class="text">{escape(str(r["submission"]))}</td>{"".join(cells)}</tr>'
        )
    note = (
        f"each group with the {block['ungrouped_queries']:,} queries in no group "
        f"({escape(str(block['file']))})"
    )
    return (
        f'<h2>μAP by query group</h2><p class="summary">{note}</p><table id="groups"><thead><tr>'
        f'<th class="text" scope="col">submission</th>{heads}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _invalid(rows: list[dict]) -> str:
    if not rows:
        return '<h2>Invalid submissions</h2><p id="invalid-none">None.</p>'
    body = "".join(
        f'<tr><td class="text">{escape(str(r["submission"]))}</td>'
        f'<td class="text">{escape(str(r["reason"]))}</td>'
        f'<td class="text">{escape(str(r["checksum"] or ""))}</td></tr>'
        for r in rows
    )
    return (
        '<h2>Invalid submissions</h2><table id="invalid"><thead><tr>'
        '<th class="text" scope="col">submission</th><th class="text" scope="col">reason</th>'
        '<th class="text" scope="col">checksum</th></tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def _curves(scored: list[Submission], total: int) -> str:
    """Precision against recall of the top submissions, as one inline SVG."""
    title = f"PR curves: top {len(scored)} of {total}"
    if not scored:
        return f"<h2>{escape(title)}</h2><p>No scored submission.</p>"
    width, height, pad = 640, 440, 48
    inner_w, inner_h = width - 2 * pad, height - 2 * pad

    def xy(recall: np.ndarray, precision: np.ndarray) -> str:
        x = pad + np.clip(recall, 0, 1) * inner_w
        y = pad + (1 - np.clip(precision, 0, 1)) * inner_h
        return " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x, y))

    grid = []
    for t in np.linspace(0, 1, 6):
        gx, gy = pad + t * inner_w, pad + (1 - t) * inner_h
        grid.append(
            f'<line x1="{gx:.1f}" y1="{pad}" x2="{gx:.1f}" y2="{pad + inner_h}" stroke="#eee"/>'
            f'<line x1="{pad}" y1="{gy:.1f}" x2="{pad + inner_w}" y2="{gy:.1f}" stroke="#eee"/>'
            f'<text x="{gx:.1f}" y="{pad + inner_h + 16}" text-anchor="middle">{t:.1f}</text>'
            f'<text x="{pad - 6}" y="{gy + 4:.1f}" text-anchor="end">{t:.1f}</text>'
        )
    p90 = pad + 0.1 * inner_h
    lines, legend = [], []
    for i, s in enumerate(scored):
        m = s.metrics
        colour = PALETTE[i % len(PALETTE)]
        idx = _thin(len(m.curve))
        points = xy(m.curve.recall[idx], m.curve.precision[idx])
        name = escape(s.name)
        lines.append(
            f'<polyline class="curve" data-submission="{name}" fill="none" stroke="{colour}" '
            f'stroke-width="1.6" points="{points}"><title>{name}</title></polyline>'
        )
        if len(idx) == 1:  # one point draws no line: a dot of the curve's colour
            cx, cy = points.split(",")
            lines.append(f'<circle cx="{cx}" cy="{cy}" r="3.5" fill="{colour}"/>')
        if m.recall_at_p90 is not None:
            cx, cy = xy(np.array([m.recall_at_p90]), np.array([m.precision_at_p90])).split(",")
            lines.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="#000"/>')
        legend.append(
            f'<li><span style="background:{colour}"></span>{name} (μAP {m.micro_ap:.4f})</li>'
        )
    svg = (
        f'<svg id="pr-curves" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-size="11" role="img" '
        f'aria-label="{escape(title)}">'
        + "".join(grid)
        + f'<rect x="{pad}" y="{pad}" width="{inner_w}" height="{inner_h}" fill="none" '
        'stroke="#999"/>'
        + f'<line x1="{pad}" y1="{p90:.1f}" x2="{pad + inner_w}" y2="{p90:.1f}" stroke="#888" '
        'stroke-dasharray="4 3"/>'
        + "".join(lines)
        + f'<text x="{width / 2}" y="{height - 8}" text-anchor="middle">recall</text>'
        + f'<text transform="rotate(-90)" x="{-height / 2}" y="14" text-anchor="middle">'
        "precision</text></svg>"
    )
    return f'<h2>{escape(title)}</h2>{svg}<ul class="legend">{"".join(legend)}</ul>'


def _thin(n: int) -> np.ndarray:
    if n <= CURVE_POINTS:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, CURVE_POINTS).round().astype(np.int64))
