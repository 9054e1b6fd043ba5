"""What a leaderboard can say about its order: intervals, paired comparisons of
neighbouring places, tiers, and the places that depend on how ties are broken.

Paired comparison of places i and i + 1 (both submissions scored on the same resamples,
so their replicates pair up): d_b = μAP_b(i) − μAP_b(i + 1). Reported: the point
difference, the percentile interval of d_b, the share of resamples in which the order
flips (d_b < 0; a tie d_b = 0 counts one half), and the one-sided bootstrap p-value of
"place i is no better", p = (1 + #{d_b ≤ 0}) / (1 + B) (Davison & Hinkley 1997, eq. 4.11;
never 0). Tiers: the m neighbour pairs' p-values are adjusted by Holm's step-down method
(1979), which holds the chance of any false separation on the board at most α = 1 −
confidence; a new tier starts after each pair whose adjusted p-value is below α. A tier
is thus a run of places the data cannot tell apart at that level.

How many queries a difference needs (Sakai's topic-set-size design, 2016, on μAP's
query resampling): the bootstrap spread sd(d_b) of a neighbour difference makes the
smallest true difference a two-sided test at α detects with 80 % power,
δ_min = (z_{1−α/2} + z_{0.8}) · sd(d_b); as sd shrinks with the square root of the
queries, the observed difference δ would need n · (δ_min / δ)² queries of the same kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from disc21spark.matching.stats.difference import SMALLEST_DIFFERENCE
from disc21spark.matching.stats.model import STATISTICS, Uncertainty

# the power a difference is to be detected with, as in Sakai's topic-set-size design
POWER = 0.8


@dataclass(frozen=True)
class Neighbour:
    """A place against the next one down."""

    difference: float  # μAP here − μAP there
    low: float | None
    high: float | None
    flip_share: float | None
    p_value: float | None
    p_adjusted: float | None = None
    detectable: float | None = None  # the smallest difference detected with POWER


def compare(above: Uncertainty | None, below: Uncertainty | None, diff: float) -> Neighbour:
    """The paired comparison of two neighbouring places (None without replicates)."""
    if not above or not below or not above.replicates or not below.replicates:
        return Neighbour(diff, None, None, None, None)
    d = above.replicates["micro_ap"] - below.replicates["micro_ap"]
    d = d[np.isfinite(d)]
    if d.size == 0:
        return Neighbour(diff, None, None, None, None)
    tail = (1.0 - above.resampling.confidence) / 2
    low, high = np.quantile(d, [tail, 1.0 - tail])
    flips = (np.count_nonzero(d < 0) + 0.5 * np.count_nonzero(d == 0)) / d.size
    p = (1 + np.count_nonzero(d <= 0)) / (1 + d.size)
    least = detectable(d, above.resampling.confidence)
    return Neighbour(diff, float(low), float(high), float(flips), float(p), detectable=least)


def detectable(d: np.ndarray, confidence: float) -> float | None:
    """The smallest true difference a two-sided test at α = 1 − confidence detects with
    ``POWER``, from the replicates ``d`` (float64 (B,)) of an observed difference:
    (z_{1−α/2} + z_power) · sd(d). None with fewer than two replicates."""
    if d.size < 2:
        return None
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2) + NormalDist().inv_cdf(POWER)
    return float(z * np.std(d, ddof=1))


def queries_needed(n_queries: int, least: float | None, difference: float) -> int | None:
    """The queries (of the same kind as the ground truth's ``n_queries``) for
    ``difference`` to be detectable: the spread shrinks as 1/√n. None when nothing was
    measured, when the difference is under ``SMALLEST_DIFFERENCE`` (a tie on the board),
    or when ``least`` is 0: the two places score the same on every resample, and no
    number of queries tells them apart."""
    if not least or abs(difference) < SMALLEST_DIFFERENCE:
        return None
    return math.ceil(n_queries * (least / abs(difference)) ** 2)


NEEDED_COLUMNS = ("rank", "submission", "next_detectable", "queries_needed")


def queries_needed_rows(rows: list[dict], difference: float) -> list[dict]:
    """For each place of a board (leaderboard.json's rows) that has a next one: its rank,
    submission, ``next_detectable`` and the queries ``difference`` would need
    (``queries_needed``; None without intervals or when the two places score the same
    on every resample, ``next_detectable`` then 0)."""
    scored = [r for r in rows if r["status"] == "ok"][:-1]
    return [
        {
            "rank": r["rank"],
            "submission": r["submission"],
            "next_detectable": r["next_detectable"],
            "queries_needed": queries_needed(r["n_queries"], r["next_detectable"], difference),
        }
        for r in scored
    ]


def detectable_sentence(rows: list[dict]) -> str | None:
    """The line under a board (leaderboard.json's rows): the gap between neighbours that
    these queries tell apart, the median of ``next_detectable``; None without intervals.
    Neighbours that score the same on every resample (``next_detectable`` 0) are left
    out: no gap between them can be told apart."""
    gaps = [r["next_detectable"] for r in rows if r.get("next_detectable")]
    if not gaps:
        return None
    n = next(r["n_queries"] for r in rows if r["status"] == "ok")
    return (
        f"With these {n:,} queries, a μAP gap between neighbours under "
        f"{float(np.median(gaps)):.4f} is too small to tell apart (the median "
        "next_detectable: 80 % power at the intervals' confidence)"
    )


def neighbours(points: list[float], found: list[Uncertainty | None]) -> list[Neighbour]:
    """One Neighbour per place but the last, Holm-adjusted over the pairs that have one."""
    pairs = [
        compare(found[i], found[i + 1], points[i] - points[i + 1]) for i in range(len(found) - 1)
    ]
    tested = [i for i, n in enumerate(pairs) if n.p_value is not None]
    adjusted = holm([pairs[i].p_value for i in tested])
    for i, a in zip(tested, adjusted):
        pairs[i] = Neighbour(**{**pairs[i].__dict__, "p_adjusted": a})
    return pairs


def tiers(pairs: list[Neighbour], confidence: float) -> list[int | None]:
    """The tier of each place (1 first); a pair that could not be tested (a submission
    without replicates) does not separate."""
    out, tier = [1], 1
    for n in pairs:
        if n.p_adjusted is not None and n.p_adjusted < 1.0 - confidence:
            tier += 1
        out.append(tier)
    return out


def optimistic_places(keys: list[tuple], optimistic: list[float | None]) -> list[int | None]:
    """The place of each submission (given in board order, with its board sort key
    ``(−μAP, −recall@P90, name)``) when μAP breaks ties optimistically."""
    if any(o is None for o in optimistic):
        return [None] * len(keys)
    order = sorted(range(len(keys)), key=lambda i: (-optimistic[i], *keys[i][1:]))
    places: list[int | None] = [None] * len(keys)
    for place, i in enumerate(order, start=1):
        places[i] = place
    return places


def board_columns(
    points: list[float],
    keys: list[tuple],
    found: list[Uncertainty | None],
    n_queries: int | None = None,
) -> list[dict]:
    """The statistics columns of each scored place, in board order: the intervals, the
    optimistic μAP and its place, the tie flag, the tier, and the comparison with the
    next place (with ``n_queries``, the ground truth's, the queries its difference needs)."""
    pairs = neighbours(points, found)
    drawn = [u for u in found if u is not None and u.replicates]
    tier_of = tiers(pairs, drawn[0].resampling.confidence) if drawn else [None] * len(found)
    optimistic = [None if u is None else u.micro_ap_optimistic for u in found]
    places = optimistic_places(keys, optimistic)
    out = []
    for i, u in enumerate(found):
        row: dict = {}
        for name in STATISTICS:
            interval = u.interval(name) if u is not None else None
            row[f"{name}_low"], row[f"{name}_high"] = interval or (None, None)
        n = pairs[i] if i < len(pairs) else None
        row.update(
            micro_ap_optimistic=optimistic[i],
            place_optimistic=places[i],
            tie_sensitive=None if places[i] is None else places[i] != i + 1,
            tier=tier_of[i],
            next_difference=None if n is None else n.difference,
            next_difference_low=None if n is None else n.low,
            next_difference_high=None if n is None else n.high,
            next_flip_share=None if n is None else n.flip_share,
            next_p_adjusted=None if n is None else n.p_adjusted,
            next_detectable=None if n is None else n.detectable,
            next_queries_needed=_needed(n, n_queries),
        )
        out.append(row)
    return out


COLUMNS = [
    *(f"{name}_{end}" for name in STATISTICS for end in ("low", "high")),
    "micro_ap_optimistic",
    "place_optimistic",
    "tie_sensitive",
    "tier",
    "next_difference",
    "next_difference_low",
    "next_difference_high",
    "next_flip_share",
    "next_p_adjusted",
    "next_detectable",
    "next_queries_needed",
]


def _needed(n: Neighbour | None, n_queries: int | None) -> int | None:
    if n is None or n_queries is None:
        return None
    return queries_needed(n_queries, n.detectable, n.difference)


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment: one method beating several others is several tests."""
    m = len(p_values)
    order = np.argsort(p_values, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for i, k in enumerate(order):
        running = max(running, min(1.0, (m - i) * p_values[k]))
        adjusted[k] = running
    return adjusted.tolist()
