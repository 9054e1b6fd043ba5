"""Rank of the original (Howe 2000): the single-machine specification and the summaries.

The rank of query q's original o is the number of references r with score(q, r) ≥
score(q, o): 1 when the original comes first, ties counted against the method (a reference
scoring exactly as well as the original is ranked before it: the pessimistic rank, as
DISC21 scores ties). The references scoring strictly better are counted too, which gives
the mid-rank of the tied group, (better + 1 + pessimistic) / 2, for ``--ties mid``. Scores
are those of ``ranks.distances``: summed in float64 and rounded once to float32.

A library may be cut into R disjoint subsets (each query ranked within the subset holding
its original) and grown in nested sizes (the originals first, then the other references in
a seeded order: every size holds every original, so the same queries are ranked at each).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from disc21spark.ranks.distances import pair_scores

TIES = ("pessimistic", "mid")


@dataclass(frozen=True)
class Layout:
    """Where each reference sits in the subset and size experiments."""

    subset: np.ndarray  # int, subset of each reference (0 when there is one)
    position: np.ndarray  # int, each reference's place in the growth order
    sizes: tuple[int, ...]  # library sizes to rank at (each ≥ the number of originals)


def layout(
    n_refs: int, originals: np.ndarray, subsets: int, sizes: tuple[int, ...], seed: int
) -> Layout:
    """Seeded subsets (as equal as possible) and growth order for `n_refs` references."""
    rng = np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(3,)))
    subset = np.empty(n_refs, dtype=np.int64)
    subset[rng.permutation(n_refs)] = np.arange(n_refs) % subsets
    first = np.unique(originals[originals >= 0])
    rest = np.setdiff1d(np.arange(n_refs), first)
    order = np.concatenate([rng.permutation(first), rng.permutation(rest)])
    position = np.empty(n_refs, dtype=np.int64)
    position[order] = np.arange(n_refs)
    return Layout(subset, position, tuple(sizes))


@dataclass(frozen=True)
class Ranks:
    """Pessimistic ranks (references scoring ≥ the original) and the count of references
    scoring strictly better (``better``), in the whole library, the original's subset and
    each size; 0 for a distractor (it has no original)."""

    rank: np.ndarray  # (nq,) int
    rank_in_subset: np.ndarray  # (nq,) int
    rank_by_size: np.ndarray  # (nq, len(sizes)) int
    better: np.ndarray  # (nq,) int
    better_in_subset: np.ndarray  # (nq,) int
    better_by_size: np.ndarray  # (nq, len(sizes)) int

    @staticmethod
    def zeros(nq: int, n_sizes: int) -> Ranks:
        return Ranks(*(np.zeros(shape, dtype=np.int64) for shape in [nq, nq, (nq, n_sizes)] * 2))


def _counts(found: np.ndarray, orig: int, lay: Layout) -> tuple[int, int, np.ndarray]:
    in_subset = int(np.count_nonzero(lay.subset[found] == lay.subset[orig]))
    pos = np.sort(lay.position[found])
    by_size = np.searchsorted(pos, np.asarray(lay.sizes, dtype=np.int64), side="left")
    return len(found), in_subset, by_size


def count_at_least(
    out: Ranks, q: int, beating: np.ndarray, better: np.ndarray, orig: int, lay: Layout
) -> None:
    """Fill row q of ``out`` from the references scoring ≥ the original (``beating``,
    indexes) and > it (``better``)."""
    out.rank[q], out.rank_in_subset[q], out.rank_by_size[q] = _counts(beating, orig, lay)
    out.better[q], out.better_in_subset[q], out.better_by_size[q] = _counts(better, orig, lay)


def exact_ranks(
    xq: np.ndarray, xb: np.ndarray, original: np.ndarray, metric: str, lay: Layout
) -> Ranks:
    """The specification: every pair scored one at a time, then counted."""
    nq, nb = len(xq), len(xb)
    out = Ranks.zeros(nq, len(lay.sizes))
    refs = np.arange(nb)
    for q in np.flatnonzero(original >= 0):
        scores = pair_scores(xq, xb, np.full(nb, q), refs, metric)
        target = scores[original[q]]
        beating, better = np.flatnonzero(scores >= target), np.flatnonzero(scores > target)
        count_at_least(out, q, beating, better, int(original[q]), lay)
    return out


def tied_rank(pessimistic: np.ndarray, better: np.ndarray, ties: str) -> np.ndarray:
    """The rank under a ties rule: ``pessimistic`` as is (int), or ``mid``, the mean of the
    tied group's places: better + (tied + 1) / 2 with tied = pessimistic − better."""
    pessimistic = np.asarray(pessimistic)
    if ties == "pessimistic":
        return pessimistic
    if ties == "mid":
        return (np.asarray(pessimistic, dtype=np.float64) + np.asarray(better) + 1) / 2
    raise ValueError(f"unknown ties rule {ties!r} (known: {', '.join(TIES)})")


def chance_mean_rank(n_refs: int) -> float:
    """The mean rank of a method that orders the library at random: (N + 1) / 2."""
    return (n_refs + 1) / 2


# A method is "at chance" when its mean rank is not below chance by more than this many
# standard errors of a random order's mean (ranks uniform on 1..N: variance (N² − 1)/12).
CHANCE_Z = 1.96


def summary(ranks: np.ndarray, n_refs: int | None = None) -> dict:
    """Howe's figures for one method and test: mean and median rank, recall at 1 and 10;
    with the library size N, chance (N + 1)/2, the ranks as shares of the library and
    whether the mean is at chance (within CHANCE_Z standard errors of it, or worse)."""
    r = np.asarray(ranks, dtype=np.float64)
    out: dict = {
        "queries": int(len(r)),
        "mean_rank": None,
        "median_rank": None,
        "recall_at_1": None,
        "recall_at_10": None,
    }
    if len(r):
        out.update(
            mean_rank=float(r.mean()),
            median_rank=float(np.median(r)),
            recall_at_1=float(np.mean(r <= 1)),
            recall_at_10=float(np.mean(r <= 10)),
        )
    if n_refs is None:
        return out
    chance = chance_mean_rank(n_refs)
    out["library_size"] = int(n_refs)
    out["chance_mean_rank"] = chance
    out["mean_rank_share"] = None if not len(r) else out["mean_rank"] / n_refs
    out["median_rank_share"] = None if not len(r) else out["median_rank"] / n_refs
    if len(r):
        error = np.sqrt((n_refs**2 - 1) / 12 / len(r))
        out["at_chance"] = bool(out["mean_rank"] >= chance - CHANCE_Z * error)
    else:
        out["at_chance"] = None
    return out


def fit_line(x: np.ndarray, y: np.ndarray) -> dict:
    """Least-squares y = slope·x + intercept and its R² (Howe found rank linear in size);
    R² is None when y does not vary: a flat line explains nothing."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) < 2 or np.ptp(x) == 0:
        return {"slope": None, "intercept": None, "r2": None}
    slope, intercept = np.polyfit(x, y, 1)
    fitted = slope * x + intercept
    total = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float(((y - fitted) ** 2).sum()) / total if total > 0 else None
    return {"slope": float(slope), "intercept": float(intercept), "r2": r2}


STATISTICS = ("mean", "median")
TOLERANCE = 0.10  # queries needed: the 95 % interval within ±10 % of the final value


def _statistic(name: str, samples: np.ndarray) -> np.ndarray:
    return samples.mean(axis=-1) if name == "mean" else np.median(samples, axis=-1)


def query_counts(n: int) -> list[int]:
    """The numbers of queries the curve is computed at: about 40 steps, evenly spaced on
    a log scale from 10 (or n) to n."""
    if n <= 10:
        return list(range(1, n + 1))
    return sorted({int(round(c)) for c in np.geomspace(10, n, 40)} | {n})


def queries_needed(
    ranks: np.ndarray, seed: int, resamples: int = 1000, counts: tuple[int, ...] = ()
) -> list[dict]:
    """How the mean and the median rank settle as queries are added in a seeded order: per
    statistic and number of queries n, the estimate on the first n queries and its 95 %
    bootstrap interval (``resamples`` draws with replacement)."""
    r = np.asarray(ranks, dtype=np.float64)
    n = len(r)
    if n == 0:
        return []
    rng = np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(4,)))
    order = r[rng.permutation(n)]
    rows = []
    for c in counts or query_counts(n):
        if c > n:
            continue
        sample = order[:c]
        boot = sample[rng.integers(0, c, size=(resamples, c))]
        for name in STATISTICS:
            low, high = np.percentile(_statistic(name, boot), [2.5, 97.5])
            rows.append(
                {
                    "statistic": name,
                    "queries": int(c),
                    "value": float(_statistic(name, sample)),
                    "ci_low": float(low),
                    "ci_high": float(high),
                }
            )
    return rows


def queries_needed_summary(
    curve: list[dict], n_refs: int, tolerance: float = TOLERANCE
) -> list[dict]:
    """Per statistic, the fewest queries from which on every 95 % interval of the curve lies
    within ±tolerance of the final value (the estimate on all queries): Howe's "how many
    queries must be run", as a count and a share of the library. None when even the
    last interval is wider (more queries are needed than were run)."""
    out = []
    for name in STATISTICS:
        rows = sorted((r for r in curve if r["statistic"] == name), key=lambda r: r["queries"])
        if not rows:
            continue
        final = rows[-1]["value"]
        inside = [
            final * (1 - tolerance) <= r["ci_low"] and r["ci_high"] <= final * (1 + tolerance)
            for r in rows
        ]
        needed = None
        for i in range(len(rows) - 1, -1, -1):
            if not inside[i]:
                break
            needed = rows[i]["queries"]
        out.append(
            {
                "statistic": name,
                "final": final,
                "queries_run": rows[-1]["queries"],
                "queries_needed": needed,
                "share_of_library": None if needed is None else needed / n_refs,
            }
        )
    return out


ALPHA = 0.05  # a "wins" sentence needs every paired test below this (Holm-adjusted)


def paired_test(a: np.ndarray, b: np.ndarray) -> dict:
    """Wilcoxon signed-rank test of per-query ranks a and b of the same queries (two-sided;
    pairs with equal ranks dropped, Wilcoxon's rule): n pairs, pairs that differ, the
    statistic and the p-value (1.0 when no pair differs: no evidence of a difference)."""
    from scipy.stats import wilcoxon

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("paired ranks must be of the same queries")
    differ = int(np.count_nonzero(a != b))
    if differ == 0:
        return {"pairs": int(len(a)), "differ": 0, "statistic": None, "p_value": 1.0}
    result = wilcoxon(a, b, zero_method="wilcox", alternative="two-sided")
    return {
        "pairs": int(len(a)),
        "differ": differ,
        "statistic": float(result.statistic),
        "p_value": float(result.pvalue),
    }
