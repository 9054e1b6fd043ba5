"""The distributed plan's checking pass (``matching/spark/census.py``): its counts equal
counting by hand at any partitioning and any slicing of the pair hashes, the slices
follow the largest query, and the first job fills the cache the census reads."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from disc21spark.matching.spark.census import LIST_MAX, census, most_rows_of_a_query, slice_count


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    parts=st.sampled_from([1, 2, 7]),
    list_max=st.sampled_from([LIST_MAX, 1, 4]),
)
# 50 partitions (most hold a row or none) once: a repeat's copies split across them
@example(seed=5, n=300, parts=50, list_max=LIST_MAX)
# a slice a row of the largest query, and a few: a repeat's copies share a slice
@example(seed=7, n=300, parts=7, list_max=1)
@example(seed=8, n=300, parts=2, list_max=5)
@example(seed=9, n=0, parts=2, list_max=4)  # no row: one slice, no submission
def test_census_of_partitions_adds_up_to_counting_by_hand(spark, seed, n, parts, list_max):
    """The census of compact rows spread over partitions, its pair hashes in one list a
    query or sliced (``list_max``), equals each submission's counts by hand: rows, bad
    rows, unknown queries, distinct known queries, repeats (a pair's copies beyond its
    first) and the smallest query holding one, its true pairs."""

    rng = np.random.default_rng(seed)
    sub = rng.integers(0, 3, n).astype(np.int32)
    # pair hashes of both signs: a slice is the hash's remainder, never negative
    query, pair = rng.integers(-3, 12, n), rng.integers(-10, 10, n)
    bad, label = rng.random(n) < 0.1, rng.random(n) < 0.2
    frame = pd.DataFrame(
        {
            "submission": sub,
            "query_index": query,
            "label": label,
            "score": rng.random(n),
            "pair": pair,
            "bad": bad,
        }
    )
    rows = spark.createDataFrame(frame, schema=COMPACT_SCHEMA).repartition(parts)
    found = census(rows, pairs=rows.withColumn("bad", F.lit(None)), list_max=list_max)
    assert set(found) == set(sub.tolist())
    assert most_rows_of_a_query(rows) == max(Counter(zip(sub, query)).values(), default=0)
    for s, got in found.items():
        m = sub == s
        copies = Counter(zip(query[m].tolist(), pair[m].tolist()))
        repeating = sorted(q for (q, _), c in copies.items() if c > 1)
        assert got.n_predictions == m.sum() and got.n_bad == bad[m].sum()
        assert got.n_unknown_query_predictions == (query[m] < 0).sum()
        assert got.n_known_queries == len({q for q in query[m].tolist() if q >= 0})
        assert got.n_repeated_pairs == sum(c - 1 for c in copies.values())
        assert got.repeating_query == (repeating[0] if repeating else None)
        true = sorted(zip(query[m & label].tolist(), frame["score"][m & label].tolist()))
        assert sorted(zip(got.truth.query.tolist(), got.truth.score.tolist())) == true


def test_a_query_is_sliced_only_as_its_largest_query_needs():
    """One slice while no query holds more than LIST_MAX rows; then as few as keep a
    list at most LIST_MAX long, with no upper limit; a list_max under 1 is refused."""
    assert [slice_count(n) for n in (0, 1, LIST_MAX)] == [1, 1, 1]
    assert slice_count(LIST_MAX + 1) == 2 and slice_count(500_000_000) == 250
    assert slice_count(300, 40) == 8 and slice_count(300, 1) == 300
    with pytest.raises(ValueError, match="list_max"):
        slice_count(10, 0)


def test_the_census_collects_in_as_many_slices_as_its_largest_query_needs(spark, monkeypatch):
    """The census groups the hashes in the slices its largest query needs: 30 rows of one
    query and 12 of another, lists at most 7 long: 5 slices (not the 6 that all 42 rows
    would need); the repeat found the same."""
    from disc21spark.matching.spark import census as checking

    seen = []
    grouped = checking._per_query
    monkeypatch.setattr(checking, "_per_query", lambda keys, n: seen.append(n) or grouped(keys, n))
    pair = [*range(29), 3, *range(100, 112)]  # one repeat, in the first query
    frame = pd.DataFrame(
        {
            "submission": np.zeros(42, np.int32),
            "query_index": [0] * 30 + [1] * 12,
            "label": False,
            "score": 0.5,
            "pair": pair,
            "bad": False,
        }
    )
    found = census(spark.createDataFrame(frame, schema=COMPACT_SCHEMA), list_max=7)
    assert seen == [5] and found[0].n_repeated_pairs == 1 and found[0].repeating_query == 0


def test_the_first_job_fills_the_cache_that_the_census_reads(spark, tmp_path):
    """Persisted rows are read from the input once: after the first job (the most rows
    of a query) the input's files are deleted, and the census still counts every row."""
    import shutil

    from pyspark import StorageLevel

    rng = np.random.default_rng(3)
    n = 500
    frame = pd.DataFrame(
        {
            "submission": np.zeros(n, np.int32),
            "query_index": rng.integers(0, 20, n),
            "label": rng.random(n) < 0.2,
            "score": rng.random(n),
            "pair": np.arange(n),
            "bad": False,
        }
    )
    path = str(tmp_path / "rows")
    spark.createDataFrame(frame, schema=COMPACT_SCHEMA).repartition(3).write.parquet(path)
    rows = spark.read.parquet(path).persist(StorageLevel.DISK_ONLY)
    try:
        most = most_rows_of_a_query(rows)
        shutil.rmtree(path)
        found = census(rows)
    finally:
        rows.unpersist()
    assert most == frame["query_index"].value_counts().max()
    assert found[0].n_predictions == n and found[0].n_repeated_pairs == 0


COMPACT_SCHEMA = (
    "submission int, query_index long, label boolean, score double, pair long, bad boolean"
)
