"""rank_eval's tables: per-query ranks, the summary beside chance, stability across library
subsets, growth with library size, queries needed, paired comparisons and difficulty sweeps."""

from __future__ import annotations

import numpy as np
import pandas as pd

from disc21spark.matching.model import MatchingMetrics
from disc21spark.matching.stats.compare import holm
from disc21spark.queries.transforms import parse_tests
from disc21spark.ranks import spec as rank_spec

CHANCE_SLOPE_PER_1000 = 500.0  # (N + 1) / 2 grows by 0.5 per image
# the columns of ranks.parquet, queries_needed.csv and queries_needed_summary.csv
RANK_COLUMNS = [
    "method",
    "test",
    "query_id",
    "reference_id",
    "rank",
    "rank_pessimistic",
    "tied",
    "subset",
    "rank_in_subset",
]
NEEDED_COLUMNS = ["method", "test", "statistic", "queries", "value", "ci_low", "ci_high"]
NEEDED_SUMMARY_COLUMNS = [
    "method",
    "test",
    "statistic",
    "final",
    "queries_run",
    "queries_needed",
    "share_of_library",
]


def tables(
    queries: pd.DataFrame,
    ranked: pd.DataFrame,
    micro: dict,
    lay: rank_spec.Layout,
    job,
    n_refs: int,
    metrics: dict | None = None,
) -> dict:
    """Every table of the report, from the per-query ranks and the scorer's metrics."""
    q = queries[["query_id", "test", "reference_id"]]
    per_query = ranked.merge(q, on="query_id")
    matched = per_query[per_query.reference_id != ""].copy()
    methods = list(dict.fromkeys(ranked.method))
    tests = list(dict.fromkeys(queries.test))
    matched["tied"] = matched["rank_pessimistic"] - matched["better"]
    ranks_table = matched[RANK_COLUMNS]
    cells = _cells(per_query, matched, methods, tests, micro, lay, job, n_refs, metrics or {})
    summary_table = pd.DataFrame(cells["summary"])
    out = {
        "ranks": ranks_table.reset_index(drop=True),
        "summary": summary_table,
        "comparisons": comparisons(summary_table, ranks_table),
        "queries_needed": pd.DataFrame(cells["needed"], columns=NEEDED_COLUMNS),
        "queries_needed_summary": pd.DataFrame(
            cells["needed_summary"], columns=NEEDED_SUMMARY_COLUMNS
        ),
    }
    families = difficulty(summary_table)
    if not families.empty:
        out["difficulty"] = families
    if job.subsets > 1:
        out["stability"] = pd.DataFrame(cells["stability"])
        out["stability_summary"] = pd.DataFrame(cells["stab_summary"])
    if lay.sizes:
        size_rows = cells["size_rows"]
        out["sizes"] = pd.DataFrame(cells["sizes"])
        out["size_ranks"] = pd.concat(size_rows, ignore_index=True) if size_rows else pd.DataFrame()
        out["slopes"] = pd.DataFrame(cells["slopes"])
    return out


def _cells(
    per_query: pd.DataFrame,
    matched: pd.DataFrame,
    methods: list,
    tests: list,
    micro: dict,
    lay: rank_spec.Layout,
    job,
    n_refs: int,
    metrics: dict,
) -> dict[str, list]:
    """The rows of every table by its name, one (method, test) at a time."""
    subset_sizes = np.bincount(lay.subset, minlength=job.subsets)
    names = "summary stability stab_summary sizes slopes size_rows needed needed_summary"
    cells: dict[str, list] = {name: [] for name in names.split()}
    for m in methods:
        for t in tests:
            key = {"method": m, "test": t}
            sel = matched[(matched.method == m) & (matched.test == t)]
            distractors = int(
                (
                    (per_query.method == m) & (per_query.test == t) & (per_query.reference_id == "")
                ).sum()
            )
            row = _summary_row(key, sel, distractors, micro.get((m, t)), n_refs)
            row["distance"] = metrics.get(m)
            cells["summary"].append(row)
            if job.subsets > 1:
                per_subset, across = _stability(key, sel, job.subsets, subset_sizes)
                cells["stability"] += per_subset
                cells["stab_summary"].append(across)
            if lay.sizes:
                per_size, rows, slope = _growth(key, sel, lay.sizes)
                cells["sizes"] += per_size
                cells["size_rows"] += rows
                cells["slopes"].append(slope)
            curve = rank_spec.queries_needed(
                sel["rank"].to_numpy(), job.seed, resamples=job.resamples
            )
            cells["needed"] += [{**key, **n} for n in curve]
            cells["needed_summary"] += [
                {**key, **n} for n in rank_spec.queries_needed_summary(curve, n_refs)
            ]
    return cells


def _summary_row(
    key: dict, sel: pd.DataFrame, distractors: int, mm: MatchingMetrics | None, n_refs: int
) -> dict:
    """Howe's figures of one (method, test), chance beside them, and the scorer's μAP."""
    row = {**key, **rank_spec.summary(sel["rank"].to_numpy(), n_refs)}
    row["distractor_queries"] = distractors
    row["micro_ap"] = mm.micro_ap if mm else None
    row["recall_at_p90"] = mm.recall_at_p90 if mm else None
    row["pairs"] = mm.n_predictions if mm else 0
    return row


def _stability(
    key: dict, sel: pd.DataFrame, subsets: int, subset_sizes: np.ndarray
) -> tuple[list[dict], dict]:
    """Figures of each disjoint library subset, and their spread across the subsets."""
    per = [
        rank_spec.summary(sel[sel.subset == k].rank_in_subset.to_numpy(), int(subset_sizes[k]))
        for k in range(subsets)
    ]
    med = [p["median_rank"] for p in per if p["queries"]]
    mean = [p["mean_rank"] for p in per if p["queries"]]
    across = {
        **key,
        "subsets": subsets,
        "subset_size": float(np.mean(subset_sizes)),
        "chance_mean_rank": rank_spec.chance_mean_rank(float(np.mean(subset_sizes))),
        "median_rank_mean": float(np.mean(med)) if med else None,
        "median_rank_std": float(np.std(med, ddof=1)) if len(med) > 1 else None,
        "mean_rank_mean": float(np.mean(mean)) if mean else None,
        "mean_rank_std": float(np.std(mean, ddof=1)) if len(mean) > 1 else None,
    }
    return [{**key, "subset": k, **s} for k, s in enumerate(per)], across


def _growth(
    key: dict, sel: pd.DataFrame, sizes: tuple[int, ...]
) -> tuple[list[dict], list[pd.DataFrame], dict]:
    """Figures at each library size, every query's rank at each, and the fitted lines."""
    by_size = np.array(list(sel.rank_by_size), dtype=np.float64).reshape(len(sel), len(sizes))
    per_size, rows = [], []
    for j, size in enumerate(sizes):
        per_size.append({**key, "size": size, **rank_spec.summary(by_size[:, j], size)})
        rows.append(
            pd.DataFrame(
                {**key, "query_id": sel.query_id.to_numpy(), "size": size, "rank": by_size[:, j]}
            )
        )
    x = np.asarray(sizes, dtype=float)
    fm = rank_spec.fit_line(x, [r["mean_rank"] for r in per_size])
    fd = rank_spec.fit_line(x, [r["median_rank"] for r in per_size])
    slope = {
        **key,
        "mean_rank_per_1000": None if fm["slope"] is None else 1000 * fm["slope"],
        "mean_rank_intercept": fm["intercept"],
        "mean_rank_r2": fm["r2"],
        "median_rank_per_1000": None if fd["slope"] is None else 1000 * fd["slope"],
        "median_rank_intercept": fd["intercept"],
        "median_rank_r2": fd["r2"],
        "chance_per_1000": CHANCE_SLOPE_PER_1000,
    }
    return per_size, rows, slope


def comparisons(summary: pd.DataFrame, ranks: pd.DataFrame) -> pd.DataFrame:
    """Per test, the best method (lowest median rank, then mean) against each other one:
    Wilcoxon signed-rank test on the per-query ranks of the same queries, p-values
    Holm-adjusted over the test's comparisons."""
    rows = []
    for test, part in summary.groupby("test", sort=False):
        part = part.dropna(subset=["median_rank"]).sort_values(
            ["median_rank", "mean_rank", "method"]
        )
        if len(part) < 2:
            continue
        best = part.iloc[0].method
        mine = ranks[ranks.test == test].pivot(index="query_id", columns="method", values="rank")
        found = []
        for other in part.method.iloc[1:]:
            both = mine[[best, other]].dropna()
            found.append(
                {
                    "test": test,
                    "best": best,
                    "other": other,
                    **rank_spec.paired_test(both[best], both[other]),
                }
            )
        for row, p in zip(found, holm([r["p_value"] for r in found])):
            row["p_holm"] = p
        rows += found
    return pd.DataFrame(
        rows, columns=["test", "best", "other", "pairs", "differ", "statistic", "p_value", "p_holm"]
    )


def winners(summary: pd.DataFrame, compared: pd.DataFrame) -> list[str]:
    """One sentence per test. "X wins" only when the paired test says X's ranks are lower
    than every other method's (Holm-adjusted p < ALPHA); else the methods it cannot be told
    apart from are named with their p-values. μAP is reported, not tested."""
    lines = []
    for test, part in summary.groupby("test", sort=False):
        part = part.dropna(subset=["median_rank"]).sort_values(
            ["median_rank", "mean_rank", "method"]
        )
        if part.empty:
            continue
        best = part.iloc[0]
        mine = compared[compared.test == test]
        same = mine[mine.p_holm >= rank_spec.ALPHA]
        figures = f"median {best.median_rank:g}, mean {best.mean_rank:.1f}"
        if part.shape[0] == 1:
            text = f"**{test}**: {best.method} alone ({figures})"
        elif same.empty:
            worst_p = mine.p_holm.max()
            text = (
                f"**{test}**: {best.method} wins on rank ({figures}; lower ranks than each "
                f"other method, Wilcoxon signed-rank, Holm-adjusted p ≤ {worst_p:.2g})"
            )
        else:
            tied = ", ".join(
                f"{r.other} (p = {r.p_holm:.2g}" + (", identical ranks)" if r.differ == 0 else ")")
                for r in same.itertuples()
            )
            text = (
                f"**{test}**: no winner on rank: {best.method} has the lowest ({figures}) "
                f"but is not told apart from {tied} by a Wilcoxon signed-rank test at "
                f"{rank_spec.ALPHA:g}"
            )
        others = ", ".join(f"{r.method} {r.median_rank:g}" for r in part.iloc[1:].itertuples())
        if others:
            text += f"; others' medians: {others}"
        chance = part[part.at_chance.fillna(False).astype(bool)]
        if len(chance):
            text += f"; at chance: {', '.join(chance.method)}"
        ap = part.dropna(subset=["micro_ap"]).sort_values(
            ["micro_ap", "method"], ascending=[False, True]
        )
        if not ap.empty:
            top = ap.iloc[0]
            text += (
                f"; highest μAP {top.method} ({top.micro_ap:.3f}"
                + (f" vs {ap.iloc[1].method} {ap.iloc[1].micro_ap:.3f}" if len(ap) > 1 else "")
                + ")"
            )
        lines.append(text + ".")
    return lines


def _sweep_key(test: str) -> list[tuple[tuple, str, float]]:
    """(what the test holds apart from one step's number, that step's kind, the number) for
    each step with a numeric parameter: tests sharing the first are one difficulty sweep."""
    found = []
    steps = parse_tests(test)[0].steps
    for i, step in enumerate(steps):
        value = step.value
        if step.kind.name == "jumble":
            value = value[0] * value[1]  # difficulty grows with the number of tiles
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        rest = tuple(s.text for j, s in enumerate(steps) if j != i)
        found.append(((rest, i, step.kind.name), step.kind.name, float(value)))
    return found


def difficulty(summary: pd.DataFrame) -> pd.DataFrame:
    """Difficulty sweeps (slide 11): tests that differ in one step's parameter only, three
    or more of them, with each method's median and mean rank at each value."""
    tests = list(dict.fromkeys(summary.test))
    groups: dict = {}
    for t in tests:
        for key, kind, value in _sweep_key(t):
            groups.setdefault(key, []).append((t, kind, value))
    rows = []
    for (rest, _i, kind), members in groups.items():
        if len({v for _, _, v in members}) < 3:
            continue
        family = ("jumble:RxR" if kind == "jumble" else f"{kind}:K") + "".join(
            f"+{r}" for r in rest
        )
        for t, _, value in members:
            for r in summary[summary.test == t].itertuples():
                rows.append(
                    {
                        "family": family,
                        "kind": kind,
                        "parameter": value,
                        "test": t,
                        "method": r.method,
                        "median_rank": r.median_rank,
                        "mean_rank": r.mean_rank,
                        "chance_mean_rank": r.chance_mean_rank,
                    }
                )
    return pd.DataFrame(rows)


def records(table: pd.DataFrame) -> list[dict]:
    """Rows for JSON with every digit (pandas' to_json keeps 10), NaN as null."""
    rows = table.astype(object).where(table.notna(), None).to_dict(orient="records")
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in rows]
