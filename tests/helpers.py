"""Helpers the test modules share (a test module never imports another)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from disc21spark.matching.model import GroundTruth
from disc21spark.matching.oracle.per_query import per_query
from disc21spark.matching.per_query import COLUMNS


def make_gt(n_queries: int, n_positive: int) -> GroundTruth:
    queries = np.array([f"Q{i:03d}" for i in range(n_queries)], dtype=object)
    return GroundTruth(
        "gt",
        queries,
        queries[:n_positive].copy(),
        np.array([f"R{i:03d}" for i in range(n_positive)], dtype=object),
    )


def hand_case(
    queries: list[str], matches: dict[str, str], rows: list[tuple[str, str, float]]
) -> tuple[GroundTruth, pd.DataFrame]:
    """A ground truth of `queries` with one true reference per query of `matches`, and a
    submission of (query_id, reference_id, score) `rows`, for cases computed by hand."""
    gt = GroundTruth(
        "gt",
        np.array(queries, dtype=object),
        np.array(list(matches), dtype=object),
        np.array(list(matches.values()), dtype=object),
    )
    return gt, pd.DataFrame(rows, columns=["query_id", "reference_id", "score"])


def assert_same(a, b):
    assert a.to_dict() == b.to_dict()
    for field in ("precision", "recall", "threshold"):
        np.testing.assert_array_equal(getattr(a.curve, field), getattr(b.curve, field))


def assert_same_uncertainty(found, wanted) -> None:
    """Two Uncertainty equal to the bit: every replicate, every interval, the optimistic
    μAP."""
    assert found is not None
    assert found.to_dict() == wanted.to_dict()
    assert sorted(found.replicates) == sorted(wanted.replicates)
    for name, values in wanted.replicates.items():
        assert found.replicates[name].tobytes() == values.tobytes(), name


def random_submission(rng, gt: GroundTruth, n: int, n_scores: int) -> pd.DataFrame:
    """Random pairs with many tied scores, true pairs, distractors and unknown queries."""
    q = rng.integers(0, len(gt.query_ids) + 5, size=n)  # +5: unknown queries
    r = rng.integers(0, len(gt.positive_queries) + 10, size=n)
    frame = pd.DataFrame(
        {
            "query_id": [f"Q{i:03d}" for i in q],
            "reference_id": [f"R{i:03d}" for i in r],
            "score": rng.integers(0, n_scores, size=n) / n_scores - 0.5,
        }
    )
    truth = rng.random(len(gt.positive_queries)) < 0.6
    planted = pd.DataFrame(
        {
            "query_id": gt.positive_queries[truth],
            "reference_id": gt.positive_references[truth],
            "score": rng.integers(0, n_scores, size=truth.sum()) / n_scores,
        }
    )
    frame = pd.concat([frame, planted], ignore_index=True)
    return frame.drop_duplicates(["query_id", "reference_id"]).reset_index(drop=True)


def gt_csv(path: Path, gt: GroundTruth) -> Path:
    """``gt`` written as a ground-truth CSV (header, positives, then the distractors)."""
    rows = [f"{q},{r}" for q, r in zip(gt.positive_queries, gt.positive_references)]
    rows += [f"{q}," for q in gt.query_ids if q not in set(gt.positive_queries)]
    path.write_text("query_id,reference_id\n" + "\n".join(rows) + "\n")
    return path


def as_records(table: pd.DataFrame) -> list[dict]:
    """The table's rows with every missing value as None."""
    rows = table.astype(object).where(table.notna(), None).to_dict("records")
    return [
        {k: (int(v) if k == "rank" and v is not None else v) for k, v in r.items()} for r in rows
    ]


def assert_equal_to_oracle(table: pd.DataFrame, frame: pd.DataFrame, gt: GroundTruth) -> None:
    """Row for row, by query id (the table keeps the ground truth's order, which a
    ground truth read from a file may change)."""
    wanted = sorted(
        per_query(gt, *(frame[c].to_numpy() for c in ("query_id", "reference_id", "score"))),
        key=lambda r: r["query_id"],
    )
    found = sorted(as_records(table), key=lambda r: r["query_id"])
    assert list(table.columns) == list(COLUMNS)
    assert len(found) == len(wanted)
    for f, w in zip(found, wanted):
        assert f.pop("contribution") == pytest.approx(w.pop("contribution"), rel=1e-12, abs=1e-15)
        assert f == w


def score_file(
    path: str,
    fmt: str,
    gt: GroundTruth,
    max_results: int,
    curve_points: int,
    phases=None,
    *,
    announce: bool = True,
    resampling=None,
    batch_bytes: int | None = None,
    per_query: bool = False,
):
    """The in-process engine on the local file ``path``, resolved as the decision
    resolves it (``resolve.resolve``) and scored with those settings; ``path`` as given
    names it in the messages and warnings."""
    from disc21spark.matching.inprocess.batched import score_source
    from disc21spark.matching.inprocess.source import Source
    from disc21spark.matching.model import Settings
    from disc21spark.resolve import resolve

    settings = Settings(max_results, curve_points, resampling, per_query, batch_bytes)
    source = Source.of_input(resolve(path, fmt))
    return score_source(source, gt, settings, phases, announce, given=path)


def weighing(r, keys=None):
    """A ``stats.weighted.Drawn`` for weighing rows that carry their own query keys:
    ``r``'s resampling, no table (each weight drawn where weighed, as the specification
    does), ``keys`` the ground truth's query keys when a counter looks them up."""
    from disc21spark.matching.stats.weighted import Drawn

    empty = np.zeros(0, np.uint64)
    return Drawn(r, empty if keys is None else keys, empty)


def tiny_inputs(folder: Path) -> tuple[str, str]:
    """A 60-query ground truth and 400 well-named pairs (every query known, true pairs
    among them, tied scores): what a user's first try on Spark looks like."""
    gt = make_gt(60, 40)
    rng = np.random.default_rng(47)
    query = rng.integers(0, 60, 400)
    reference = rng.integers(0, 50, 400)
    frame = pd.DataFrame(
        {
            "query_id": [f"Q{i:03d}" for i in query],
            "reference_id": [f"R{i:03d}" for i in reference],
            "score": rng.integers(0, 40, 400) / 40,
        }
    ).drop_duplicates(["query_id", "reference_id"])
    frame.to_csv(folder / "predictions.csv", index=False)
    return str(gt_csv(folder / "gt.csv", gt)), str(folder / "predictions.csv")


@contextmanager
def py4j_calls() -> Iterator[list[int]]:
    """The py4j round trips (``send_command``) made inside the block, whatever the thread
    (a released proxy is a call too), as ``[count]``; a call made inside another is not
    counted again. py4j's own sending is put back when the block ends."""
    from py4j import clientserver, java_gateway

    count, inside, saved = [0], threading.local(), []
    for cls in (clientserver.ClientServerConnection, java_gateway.GatewayConnection):
        send = cls.send_command
        saved.append((cls, send))

        def counted(connection, command, *args, _send=send, **kwargs):
            if getattr(inside, "busy", False):
                return _send(connection, command, *args, **kwargs)
            count[0] += 1
            inside.busy = True
            try:
                return _send(connection, command, *args, **kwargs)
            finally:
                inside.busy = False

        cls.send_command = counted
    try:
        yield count
    finally:
        for cls, send in saved:
            cls.send_command = send


def watch_census_slices(monkeypatch) -> tuple[list, list]:
    """Spies on how the census chose its slices, as (bounds, counted): the bound on the
    rows each call of ``census.slices_of`` got (``rows_at_most``, None when unknown), and
    a 1 for each Spark job that counted the most rows of a query."""
    from disc21spark.matching.spark import census

    bounds, counted = [], []
    slices, most = census.slices_of, census.most_rows_of_a_query

    def spy(rows, list_max=census.LIST_MAX, rows_at_most=None):
        bounds.append(rows_at_most)
        return slices(rows, list_max, rows_at_most)

    monkeypatch.setattr(census, "slices_of", spy)
    monkeypatch.setattr(census, "most_rows_of_a_query", lambda r: counted.append(1) or most(r))
    return bounds, counted


def settings_at(monkeypatch, spark, method: str, *keys: str) -> list[tuple]:
    """The session's values of ``keys``, a tuple at each call of Spark 4's classic
    DataFrame ``method`` (``collect``, ``persist``) made from here on, in call order."""
    frames = type(spark.range(1))  # Spark 4's classic DataFrame, not the abstract one
    original, seen = getattr(frames, method), []

    def spy(self, *args, **kwargs):
        seen.append(tuple(self.sparkSession.conf.get(key) for key in keys))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(frames, method, spy)
    return seen
