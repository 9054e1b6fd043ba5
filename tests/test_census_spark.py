"""The distributed plan's checking pass (``matching/spark/census.py``): its counts equal
counting by hand at any partitioning and any slicing of the pair hashes, the slices
follow the largest query or a bound on the rows known before reading (a plain CSV
file's size), and the first job fills the cache the census reads."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

import disc21spark as ds
from disc21spark.matching.spark.census import (
    BOUND_SLICES,
    LIST_MAX,
    census,
    most_rows_of_a_query,
    slice_count,
    slices_of,
)
from disc21spark.resolve import ResolvedInput, RunInputs, rows_at_most
from tests.helpers import tiny_inputs, watch_census_slices


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    parts=st.sampled_from([1, 2, 7]),
    list_max=st.sampled_from([LIST_MAX, 1, 4]),
    bounded=st.booleans(),
)
# 50 partitions (most hold a row or none) once: a repeat's copies split across them
@example(seed=5, n=300, parts=50, list_max=LIST_MAX, bounded=False)
# a slice a row of the largest query, and a few: a repeat's copies share a slice
@example(seed=7, n=300, parts=7, list_max=1, bounded=False)
@example(seed=8, n=300, parts=2, list_max=5, bounded=False)
@example(seed=9, n=0, parts=2, list_max=4, bounded=True)  # no row: one slice, no submission
# slices from a bound on the rows (all of them), not counted: 3 lists of at most 4
@example(seed=10, n=12, parts=2, list_max=4, bounded=True)
def test_census_of_partitions_adds_up_to_counting_by_hand(spark, seed, n, parts, list_max, bounded):
    """The census of compact rows spread over partitions, its pair hashes in one list a
    query or sliced (``list_max``; the slices from a bound on the rows when ``bounded``
    and it gives few), equals each submission's counts by hand: rows, bad
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
    bound = n if bounded else None
    flagged = rows.withColumn("bad", F.lit(None))
    found = census(rows, pairs=flagged, list_max=list_max, rows_at_most=bound)
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
    monkeypatch.setattr(
        checking, "_per_query", lambda keys, n, bad: seen.append(n) or grouped(keys, n, bad)
    )
    found = census(two_queries(spark), list_max=7)
    assert seen == [5] and found[0].n_repeated_pairs == 1 and found[0].repeating_query == 0


def test_a_bound_on_the_rows_gives_few_slices_without_the_first_job(spark, monkeypatch):
    """A bound on a submission's rows known before reading (42 here: all of them) gives
    the slices without the job that counts the most rows of a query when it gives at
    most BOUND_SLICES (lists at most 11 long: 4 slices). A bound that gives more is not
    trusted (lists at most 10 long: 5 for 42 rows): the job counts, and the largest
    query's 30 rows need 3, as without a bound."""

    _, counted = watch_census_slices(monkeypatch)
    rows = two_queries(spark)
    assert BOUND_SLICES == 4
    assert slices_of(rows, 11, rows_at_most=42) == 4 and counted == []
    assert slices_of(rows, 10, rows_at_most=42) == 3 and counted == [1]
    assert slices_of(rows, 10) == 3 and counted == [1, 1]


def two_queries(spark):
    """Compact rows of one submission: 30 of one query, 12 of another, a repeated pair
    in the first."""
    pair = [*range(29), 3, *range(100, 112)]
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
    return spark.createDataFrame(frame, schema=COMPACT_SCHEMA)


def test_a_plain_csv_files_size_bounds_its_rows():
    """A row of a plain CSV file is a line holding a character that is not white space,
    and its line end: at most one row per 2 bytes, the last line maybe without an end.
    A codec, a name that does not say plain text, Parquet, or a size unknown or negative
    tells nothing; one submission's parts add up; a pool's bound is its largest file's,
    none when one is not a file listed."""
    plain = ResolvedInput("a.csv", "/d/a.csv", False, "csv", None, 7)  # "a\nb\nc\nd"
    other = ResolvedInput("b.csv", "/d/b.csv", False, "csv", None, 10)
    part = ResolvedInput("hdfs://n/f/part-00000", None, True, "csv", None, 4)
    gz = ResolvedInput("c.csv.gz", "/d/c.csv.gz", False, "csv", ".gz", 7)
    lzo = ResolvedInput("c.csv.lzo", "/d/c.csv.lzo", False, "csv", None, 7)
    parquet = ResolvedInput("p.parquet", "/d/p.parquet", False, "parquet", None, 7)
    unsized = ResolvedInput("hdfs://n/u.csv", None, True, "csv", None, None)
    negative = ResolvedInput("http://h/u.csv", None, True, "csv", None, -1)
    bounds = [f.rows_at_most for f in (plain, other, part, gz, lzo, parquet, unsized, negative)]
    assert bounds == [4, 5, 2, None, None, None, None, None]
    assert rows_at_most([plain, other]) == 9 and rows_at_most([]) is None
    assert rows_at_most([plain, gz]) is None
    inputs = RunInputs((plain, other, gz))
    assert inputs.rows_at_most_of_one(["a.csv", "b.csv"]) == 5
    assert inputs.rows_at_most_of_one([]) is None
    assert inputs.rows_at_most_of_one(["a.csv", "c.csv.gz"]) is None
    assert inputs.rows_at_most_of_one(["a.csv", "a table's submission"]) is None


def test_no_plain_csv_file_holds_more_rows_than_its_size_bounds(spark, tmp_path):
    """The bound against Spark's own reading of the rows: one-character rows, each line
    end Hadoop knows, the last line without one, are exactly as many as the size
    bounds. Blank lines, a header and longer rows only add bytes. A folder's parts add
    up."""
    from disc21spark.matching.spark.read import read_predictions
    from disc21spark.resolve import resolve

    files = {
        "lf.csv": b"x\n" * 50 + b"x",
        "cr.csv": b"x\r" * 50 + b"x",
        "crlf.csv": b"x\r\n" * 50,
        "blank.csv": b"query_id,reference_id,score\n" + b"q,r,1\n\n  \n" * 20 + b",\n",
    }
    folder = tmp_path / "parts"
    folder.mkdir()
    (folder / "part-00000").write_bytes(b"x\n" * 10)
    (folder / "part-00001.csv").write_bytes(b"y\n" * 5 + b"y")
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    found = {}
    for name in files:
        path = str(tmp_path / name)
        found[name] = (read_predictions(spark, path, "csv").count(), resolve(path).rows_at_most)
    assert found["lf.csv"] == found["cr.csv"] == (51, 51)
    assert all(rows <= bound for rows, bound in found.values())
    parts = [resolve(str(p)) for p in sorted(folder.iterdir())]
    assert read_predictions(spark, str(folder), "csv").count() == rows_at_most(parts) == 16


def test_a_run_lists_its_file_once_and_a_file_gone_since_is_named(spark, tmp_path, monkeypatch):
    """The run's decision lists the predictions file; the read does not list it again. A
    file gone between the listing and the read gets the InputError the listing gives
    (not Spark's error on a missing path), for CSV and Parquet alike."""
    from disc21spark.core.errors import InputError
    from disc21spark.matching.spark import read

    gt, predictions = tiny_inputs(tmp_path)
    listings = []
    listed = read.data_files
    monkeypatch.setattr(read, "data_files", lambda *a: listings.append(a[1]) or listed(*a))
    ds.evaluate(gt, predictions, engine=spark)
    assert str(predictions) not in listings and listings  # the ground truth's is read here
    listings.clear()
    gone = str(tmp_path / "gone.csv")
    for fmt in ("csv", "parquet"):
        with pytest.raises(InputError) as caught:
            read.read_predictions(spark, gone, fmt, listed=True)
        assert "gone.csv" in str(caught.value) and "no such file" in str(caught.value)
    assert listings == [gone] * 2


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_a_run_of_a_plain_csv_file_spares_the_first_job(spark, tmp_path, monkeypatch, suffix):
    """A run on Spark of a plain CSV file hands the census the bound its size gives, so
    no job counts the most rows of a query first; a compressed file's size tells nothing,
    and the job counts. The figures are the in-process engine's either way."""

    gt, predictions = tiny_inputs(tmp_path)
    path = tmp_path / f"submission{suffix}"
    data = Path(predictions).read_bytes()
    path.write_bytes(gzip.compress(data) if suffix == ".csv.gz" else data)
    bounds, counted = watch_census_slices(monkeypatch)
    found = ds.evaluate(gt, str(path), engine=spark, resamples=0)
    plain = suffix == ".csv"
    assert bounds == [(len(data) + 1) // 2 if plain else None]
    assert counted == ([] if plain else [1])
    assert found.to_dict() == ds.evaluate(gt, str(path), engine="local", resamples=0).to_dict()


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
