"""leaderboard.html's error bars: each scored submission's μAP with its bootstrap
interval, one row per place, tiers shaded in turn (inline SVG, no script)."""

from __future__ import annotations

from html import escape

TOP = 40  # places drawn; the table holds every one
TIER_FILL = ("#f4f6f8", "#ffffff")


def intervals_figure(rows: list[dict]) -> str:
    """The figure for the scored rows of leaderboard.json (board order); a sentence when
    no row has an interval (the bootstrap was off)."""
    drawn = [r for r in rows[:TOP] if r.get("micro_ap_low") is not None]
    title = f"μAP with bootstrap intervals: top {len(drawn)} of {len(rows)}"
    if not drawn:
        return (
            '<h2>μAP intervals</h2><p id="intervals-none">No interval: no submission has '
            "bootstrap replicates (they need --resamples above 0).</p>"
        )
    lo = min(r["micro_ap_low"] for r in drawn)
    hi = max(r["micro_ap_high"] for r in drawn)
    span = max(hi - lo, 1e-9)
    lo, hi = max(0.0, lo - 0.05 * span), min(1.0, hi + 0.05 * span)
    left, right, top, step = 230, 40, 24, 18
    width = 760
    height = top + step * len(drawn) + 36
    inner = width - left - right

    def x(v: float) -> float:
        return left + (v - lo) / max(hi - lo, 1e-12) * inner

    parts = []
    for i, r in enumerate(drawn):
        y = top + step * i + step / 2
        tier = r.get("tier") or 1
        name = escape(str(r["submission"]))
        parts.append(
            f'<rect x="0" y="{y - step / 2:.1f}" width="{width}" height="{step}" '
            f'fill="{TIER_FILL[(tier - 1) % 2]}"/>'
            f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{r["rank"]}. {name}'
            f"{'' if r.get('tier') is None else f' (tier {tier})'}</text>"
            f'<g class="interval" data-submission="{name}" data-low="{r["micro_ap_low"]!r}" '
            f'data-high="{r["micro_ap_high"]!r}">'
            f'<line x1="{x(r["micro_ap_low"]):.1f}" y1="{y:.1f}" x2="{x(r["micro_ap_high"]):.1f}" '
            f'y2="{y:.1f}" stroke="#1f77b4" stroke-width="2"/>'
            f'<circle cx="{x(r["micro_ap"]):.1f}" cy="{y:.1f}" r="3.5" fill="#000"/>'
            f"<title>{name}: μAP {r['micro_ap']:.6f} [{r['micro_ap_low']:.6f}, "
            f"{r['micro_ap_high']:.6f}]</title></g>"
        )
    axis_y = top + step * len(drawn) + 4
    for k in range(6):
        v = lo + (hi - lo) * k / 5
        parts.append(
            f'<line x1="{x(v):.1f}" y1="{top}" x2="{x(v):.1f}" y2="{axis_y}" stroke="#ddd"/>'
            f'<text x="{x(v):.1f}" y="{axis_y + 14}" text-anchor="middle">{v:.4f}</text>'
        )
    svg = (
        f'<svg id="intervals" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}">'
        + "".join(parts)
        + f'<text x="{left + inner / 2}" y="{height - 4}" text-anchor="middle">μAP</text></svg>'
    )
    return f"<h2>{escape(title)}</h2>{svg}"
