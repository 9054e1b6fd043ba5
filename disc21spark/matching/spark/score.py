"""The one scoring entry point: pairs of one or many submissions in, exact metrics out.

Every caller (the matching job, pools, the descriptor track, rank evaluation) hands over
one frame of the input schema below and gets each submission's metrics, or the one-line
error that makes it invalid. This module owns the whole sequence (label → census →
checks → count positions → aggregate) and the rows it caches: they are persisted once,
on local disk (``DISK_ONLY``: the heap holds none of them, whatever their number), by
the census, which is the only pass that reads the input, and released before it returns,
whatever happens (as MLlib's ``BinaryClassificationMetrics`` owns its cumulative-count
pipeline). So are the counts per query that the count phase keeps for the bootstrap
(collected to the driver instead for a small input of few rows: ``DRIVER_ROWS``).

Input schema (``PAIRS``): ``submission int, query_id string, reference_id string,
score double``. Parsed predictions (``validate.typed_predictions``) also carry ``file``
and ``bad`` (null for a fine row, else where and what is wrong): then the rows are
checked (bad rows, --max-results, repeated pairs). Pairs that this package generated
(the descriptor track's search, rank evaluation) have neither column and are trusted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core.errors import InputError, is_read_failure
from disc21spark.core.phases import Phases
from disc21spark.core.spark import spark_conf
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.positions import QueryStats
from disc21spark.matching.rows import max_results_error
from disc21spark.matching.spark import bootstrap as stats_spark
from disc21spark.matching.spark import census, labels, plan, validate
from disc21spark.matching.stats.model import Resampling

PAIRS = "submission int, query_id string, reference_id string, score double"
CHECKED = ("file", "bad")  # the columns of parsed predictions, which need checking
# the cached rows stored plain, without Spark's column encodings (run length, dictionary,
# delta): they took a fifth of the cache fill at 50M rows, and the cache's blocks took as
# much disk either way, as PySpark compresses them (``spark.rdd.compress``; docs/design.md,
# "Cost model"). The per-query counts (plan.QueryBuckets, a few million rows at most)
# keep the session's setting
PLAIN_CACHE = {"spark.sql.inMemoryColumnarStorage.compressed": "false"}
# a small input is scored on a static plan: adaptive execution runs each exchange of an
# action as a Spark job of its own, and a small input's time goes to those jobs (a
# 400-pair run: 5 jobs, not 15; docs/design.md, "Fixed costs of a small run"). Small: at
# most the rows whose bound spares the census its first job
SMALL_ROWS = census.BOUND_SLICES * census.LIST_MAX
# a small input of at most this many rows (the census's count) has its counts per query
# collected, summed and weighed on the driver: no Spark job of their own (3 jobs, not 5).
# 24 bytes a count at most a row each: 48 MB, and the kernels' arrays a few times that
DRIVER_ROWS = 2_000_000
# a static plan's shuffle partition holds the census's lists of at most this many rows of
# the bound: two at most. Two suit a 500,000-pair file on two cores (its whole run 0.92-
# 0.98x the time under adaptive execution); six, a partition a million rows, 1.09-1.10x
STATIC_PARTITION_ROWS = SMALL_ROWS // 2


class UnreadableInput(Exception):
    """Reading the pairs failed (a damaged or vanished file); ``cause`` is Spark's error."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


@dataclass(frozen=True)
class Scoring:
    """What every submission of one call is scored with."""

    gt: GroundTruth  # labels every pair
    curve_points: int
    # partitions of the repeat check's shuffle; None: as the session's (or static) plan sizes it
    partitions: int | None = None
    max_results: int = 0  # more predictions make a submission invalid; 0: no limit
    # a submission's own ground truth when it answers only part of ``gt`` (rank
    # evaluation scores each test alone; the labels, from ``gt``, are the same)
    ground_truths: dict[int, GroundTruth] = field(default_factory=dict)
    # how a submission is named in a --max-results message (its file); default "predictions"
    sources: dict[int, str] = field(default_factory=dict)
    read_detail: str = "parsed, checked, labelled by broadcast joins, repeats found per query"
    # intervals and tie sensitivity (stats/): None, or when each submission has its own
    # ground truth (rank evaluation), none
    resampling: Resampling | None = None
    # each submission's per-query table (metrics.queries): a pass of its own over ``pairs``
    per_query: bool = False
    # the resample weights of ``gt`` drawn once for many calls (stats.weighted.Drawn, a
    # pool of tables); None: the bootstrap draws them
    drawn: Any = None
    # an upper bound on any one submission's rows, known before reading (a plain CSV
    # file's size: ``resolve.rows_at_most``; a search's count): it may spare the census
    # its first job (``census.slices_of``) and give a small input a static plan
    # (``static_plan``); None: not known
    rows_at_most: int | None = None


@dataclass
class Scored:
    """Per submission: its metrics, or the error that makes it invalid."""

    metrics: dict[int, MatchingMetrics] = field(default_factory=dict)
    errors: dict[int, InputError] = field(default_factory=dict)


def score(
    spark: SparkSession,
    pairs: DataFrame,
    submissions: Sequence[int],
    scoring: Scoring,
    phases: Phases | None = None,
) -> Scored:
    """Score every listed submission of ``pairs`` (a submission with no row is scored as
    empty), a small input on a static plan (``static_plan``). Raises ``UnreadableInput``
    when an input file cannot be read, after releasing what it cached; rows of a
    submission not listed are an internal error."""
    small = is_small(scoring.rows_at_most, len(submissions))
    # the session the pairs belong to, as the rows' cache settings below
    with spark_conf(pairs.sparkSession, static_plan(scoring.rows_at_most, len(submissions))):
        return _scored(spark, pairs, submissions, scoring, phases or Phases(), small)


def is_small(rows_at_most: int | None, submissions: int) -> bool:
    """Whether a bound on each submission's rows (``rows_at_most``) holds all
    ``submissions`` within ``SMALL_ROWS``: a small input, scored on a static plan
    (``static_plan``), its counts per query summed and weighed on the driver within
    ``DRIVER_ROWS`` rows (``_kept_counts``)."""
    return rows_at_most is not None and rows_at_most * submissions <= SMALL_ROWS


def static_plan(rows_at_most: int | None, submissions: int) -> dict[str, str]:
    """The session settings of a small input's scoring (``is_small``): adaptive execution
    off and a shuffle partition per ``STATIC_PARTITION_ROWS`` of the bound (one or two);
    none otherwise (adaptive execution sizes the shuffles). Not sized by the cores: one
    core would hold all 8M rows' lists in one task."""
    if not is_small(rows_at_most, submissions):
        return {}
    partitions = max(1, -(-rows_at_most * submissions // STATIC_PARTITION_ROWS))
    return {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": str(partitions)}


def _scored(
    spark: SparkSession,
    pairs: DataFrame,
    submissions: Sequence[int],
    scoring: Scoring,
    phases: Phases,
    small: bool,
) -> Scored:
    """``score`` under the session settings it chose; ``small``: ``is_small``'s answer."""
    checked = all(c in pairs.columns for c in CHECKED)
    # only a flag per row moves on: the wording of a bad row is read again if there is one
    rows = labels.labelled(pairs, scoring.gt, *(("bad IS NOT NULL AS bad",) if checked else ()))
    kept = None  # the counts per query the bootstrap weighs, filled by the count phase
    error = None  # an error on its way out, which a failed release must not hide
    try:
        # Spark reads the setting when the cache is defined (in a copy of the session's
        # settings) or, in some sessions, when the census's first job fills it
        with spark_conf(rows.sparkSession, PLAIN_CACHE):
            rows = rows.persist(StorageLevel.DISK_ONLY)
            censuses = _census(rows, submissions, pairs if checked else None, scoring, phases)
        result = Scored()
        if checked:
            with phases.phase("validate") as note:
                result.errors = _problems(spark, pairs, censuses, scoring)
                note["rows"] = sum(c.n_predictions for c in censuses.values())
                if len(submissions) > 1:
                    note["detail"] = f"{len(result.errors)} invalid"
        valid = {s: c for s, c in censuses.items() if s not in result.errors}
        if valid:
            sorted_rows = rows.drop("bad") if checked else rows
            if len(valid) < len(censuses):
                sorted_rows = sorted_rows.where(F.col(labels.SUBMISSION).isin(list(valid)))
                pairs = pairs.where(F.col(labels.SUBMISSION).isin(list(valid)))
            stats = _query_stats(pairs, valid, scoring, phases)
            kept = _kept_counts(sorted_rows, valid, scoring, small)
            found = plan.count_phase(sorted_rows, valid, kept, phases)
            if kept is not None and not _by_query(scoring):  # no bootstrap weighs them
                kept.release()
                kept = None
            truths = {s: scoring.ground_truths.get(s, scoring.gt) for s in stats}
            result.metrics, true_pairs = plan.aggregate_phase(
                truths, scoring.curve_points, stats, valid, found, phases
            )
            if scoring.per_query:
                result.metrics = _with_queries(result.metrics, pairs, true_pairs, scoring, phases)
            if _bootstrapped(scoring):
                result.metrics = stats_spark.attach(
                    kept, result.metrics, true_pairs, scoring, phases
                )
        return result
    except BaseException as exc:
        error = exc
        raise
    finally:
        _release(rows, kept, error)


def _with_queries(
    metrics: dict, pairs: DataFrame, ranked: dict, scoring: Scoring, phases: Phases
) -> dict[int, MatchingMetrics]:
    """``metrics`` with each submission's per-query table: the ids read once more."""
    from disc21spark.matching.spark import per_query as per_query_spark

    groups = scoring.resampling.groups if scoring.resampling is not None else None
    with phases.phase("per query") as note:
        out = per_query_spark.with_tables(metrics, pairs, ranked, scoring.gt, groups)
        note["rows"] = sum(m.n_predictions for m in out.values())
        note["detail"] = "the pairs read again, one aggregation per query"
    return out


def _bootstrapped(scoring: Scoring) -> bool:
    """Whether the intervals are computed here (not when each submission has its own
    ground truth: rank evaluation)."""
    return scoring.resampling is not None and not scoring.ground_truths


def _by_query(scoring: Scoring) -> bool:
    """Whether the bootstrap weighs the non-matches counted per query (so that it reads
    no row again): the count phase then keeps them."""
    return _bootstrapped(scoring) and stats_spark.needs_query_counts(scoring.resampling)


def _kept_counts(
    rows: DataFrame, censuses: dict[int, census.Census], scoring: Scoring, small: bool
) -> plan.QueryBuckets | None:
    """The counts per query the count's job fills (``plan.QueryBuckets``): collected to
    the driver, which sums them, for a small input of at most ``DRIVER_ROWS`` rows;
    else persisted when the bootstrap weighs them (``_by_query``); else none."""
    on_driver = small and sum(c.n_predictions for c in censuses.values()) <= DRIVER_ROWS
    if on_driver or _by_query(scoring):
        return plan.QueryBuckets.of(rows, censuses, on_driver=on_driver)
    return None


def _release(rows: DataFrame, kept: plan.QueryBuckets | None, error: BaseException | None) -> None:
    """Unpersist the counts kept per query and the cached rows, each whatever befalls the
    other. The first failure is raised, unless ``error`` is on its way out (a JVM that ran
    out of heap fails these calls too): that one must not be hidden."""
    failed = None
    for release in ([kept.release] if kept is not None else []) + [rows.unpersist]:
        try:
            release()
        except BaseException as exc:
            failed = failed or exc
    if failed is not None and error is None:
        raise failed


def _census(
    rows: DataFrame,
    submissions: Sequence[int],
    pairs: DataFrame | None,
    scoring: Scoring,
    phases: Phases,
) -> dict[int, census.Census]:
    """The first pass over the input (Spark is lazy: reading happens here)."""
    with phases.phase("read") as note:
        try:
            found = census.census(
                rows, pairs, scoring.partitions, rows_at_most=scoring.rows_at_most
            )
        except Exception as exc:
            if is_read_failure(exc):
                raise UnreadableInput(exc) from None
            raise
        stray = set(found) - set(submissions)
        if stray:  # a row that no submission claims: never score silently
            raise RuntimeError(
                f"internal error: {sum(found[s].n_predictions for s in stray)} rows "
                f"of no listed submission"
            )
        censuses = {s: found.get(s, census.EMPTY_CENSUS) for s in submissions}
        note["rows"] = sum(c.n_predictions for c in censuses.values())
        note["detail"] = scoring.read_detail
    return censuses


def _problems(
    spark: SparkSession, pairs: DataFrame, censuses: dict[int, census.Census], scoring: Scoring
) -> dict[int, InputError]:
    """The single-file scorer's error of each invalid submission: bad row, then too many
    predictions, then a repeated pair (the order a user fixing a file meets them)."""
    errors: dict[int, InputError] = {}
    for sub, found in censuses.items():
        error = None
        if found.n_bad:
            error = validate.problem_error(spark, found.first_bad)
        if error is None:
            source = scoring.sources.get(sub, "predictions")
            error = max_results_error(source, found.n_predictions, scoring.max_results)
        if error is None and found.n_repeated_pairs:
            suspect = labels.query_key(found.repeating_query, scoring.gt)
            mine = pairs.where(F.col(labels.SUBMISSION) == sub)
            error = validate.duplicate_error(spark, mine, suspect)
        if error is not None:
            errors[sub] = error
    return errors


def _query_stats(
    pairs: DataFrame, censuses: dict[int, census.Census], scoring: Scoring, phases: Phases
) -> dict[int, QueryStats]:
    """The label phase: each submission's pairs, pairs of unknown queries and queries."""
    with phases.phase("label") as note:
        stats = plan.query_stats(censuses, pairs, scoring.gt)
        note["rows"] = sum(s.n_predictions for s in stats.values())
        if len(censuses) == 1:
            ((sub, only),) = stats.items()
            found = len(censuses[sub].truth)
            note["detail"] = (
                f"{found:,} true pairs found, "
                f"{only.n_unknown_query_predictions:,} predictions for unknown queries"
            )
    return stats
