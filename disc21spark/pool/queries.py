"""A pool's per-query results (``--per-query`` on a pool).

Each scored submission carries its per-query table (``matching/per_query.py``, one row
per query of the ground truth). From them, in the board's order:

* ``queries.csv`` / ``queries.parquet``: every table, one after the other, with the
  submission's name first;
* ``queries_missed.csv``: the queries with a match for which no submission found a true
  pair, and how many submissions predicted something for them (all of it wrong);
* ``queries_separating.csv``: for each pair of neighbours on the board, the ``SEPARATING``
  queries whose contributions to μAP differ most between the two (a query's
  ``difference`` over all queries adds up to the neighbours' μAP gap).

Nothing here reads rows or imports PySpark: the tables came with the metrics.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from disc21spark.matching.model import Submission
from disc21spark.matching.per_query import GROUP
from disc21spark.matching.reports.report import write_queries
from disc21spark.pool.report import ordered

SEPARATING = 20  # per pair of neighbours: the queries with the largest differences
MISSED_COLUMNS = ("query_id", "true_pairs", "predicted_by", "submissions")
SEPARATING_COLUMNS = (
    "place",
    "above",
    "below",
    "query_id",
    "contribution_above",
    "contribution_below",
    "difference",
    "share_of_gap",
    "rank_above",
    "rank_below",
)


def scored(subs: list[Submission]) -> list[Submission]:
    """The scored submissions that carry a per-query table, in the board's order."""
    return [s for s in ordered(subs) if s.status == "ok" and s.metrics.queries is not None]


def pool_table(subs: list[Submission]) -> pd.DataFrame:
    """Every scored submission's table in the board's order, ``submission`` first."""
    frames = [s.metrics.queries.assign(submission=s.name) for s in scored(subs)]
    if not frames:
        return pd.DataFrame(columns=["submission"])
    table = pd.concat(frames, ignore_index=True)
    return table[["submission", *(c for c in table.columns if c != "submission")]]


def missed(subs: list[Submission]) -> pd.DataFrame:
    """The queries with a match that no scored submission found a true pair of
    (``MISSED_COLUMNS``, ``group`` after ``query_id`` with groups), in the ground
    truth's order: ``predicted_by`` submissions predicted something for it, all wrong."""
    tables = [s.metrics.queries for s in scored(subs)]
    if not tables:
        return pd.DataFrame(columns=list(MISSED_COLUMNS))
    first = tables[0]
    found = np.zeros(len(first), dtype=bool)
    predicted_by = np.zeros(len(first), dtype=np.int64)
    for t in tables:
        found |= t["found"].to_numpy() > 0
        predicted_by += t["predictions"].to_numpy() > 0
    keep = first["has_match"].to_numpy() & ~found
    columns = ["query_id", *([GROUP] if GROUP in first.columns else []), "true_pairs"]
    out = first.loc[keep, columns].reset_index(drop=True)
    out["predicted_by"] = predicted_by[keep]
    out["submissions"] = len(tables)
    return out


def separating(subs: list[Submission], top: int = SEPARATING) -> pd.DataFrame:
    """For each pair of neighbours (``place`` the upper one's place, 1 the first), the
    ``top`` queries with the largest ``|difference|`` (the upper one's contribution
    minus the lower one's; none where they are equal), largest first, then in the
    ground truth's order; ``share_of_gap`` is ``difference`` over the μAP gap (empty
    when the two tie); ``rank_*`` the query's best true pair's rank in each."""
    ranked = scored(subs)
    parts = [
        _pair(place, above, below, top)
        for place, (above, below) in enumerate(zip(ranked, ranked[1:]), start=1)
    ]
    if not parts:
        return pd.DataFrame(columns=list(SEPARATING_COLUMNS))
    return pd.concat(parts, ignore_index=True)[list(SEPARATING_COLUMNS)]


def _pair(place: int, above: Submission, below: Submission, top: int) -> pd.DataFrame:
    a, b = above.metrics.queries, below.metrics.queries
    difference = a["contribution"].to_numpy() - b["contribution"].to_numpy()
    # stable: equal magnitudes stay in the ground truth's order
    order = np.argsort(-np.abs(difference), kind="stable")
    order = order[difference[order] != 0][:top]
    gap = above.metrics.micro_ap - below.metrics.micro_ap
    return pd.DataFrame(
        {
            "place": place,
            "above": above.name,
            "below": below.name,
            "query_id": a["query_id"].to_numpy()[order],
            "contribution_above": a["contribution"].to_numpy()[order],
            "contribution_below": b["contribution"].to_numpy()[order],
            "difference": difference[order],
            "share_of_gap": difference[order] / gap if gap else math.nan,
            "rank_above": a["rank"].iloc[order].reset_index(drop=True),
            "rank_below": b["rank"].iloc[order].reset_index(drop=True),
        }
    )


def write(folder: Path, subs: list[Submission]) -> None:
    """queries.csv and queries.parquet (every table), queries_missed.csv and
    queries_separating.csv in ``folder``."""
    write_queries(folder, pool_table(subs))
    missed(subs).to_csv(folder / "queries_missed.csv", index=False)
    separating(subs).to_csv(folder / "queries_separating.csv", index=False)
