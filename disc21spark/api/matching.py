"""The matching track from Python: ``evaluate`` (one submission) and ``evaluate_pool``.

Both call the functions the command line's jobs call (``matching.job.score_one``
for a file, ``score_frame`` for a Spark DataFrame, ``pool.job.run`` for a pool of files,
the in-process engine's for a table in memory), so their figures are the command line's
to the last digit; they write nothing, print nothing and log through ``logging``
("disc21spark"). Bad input raises ``InputError`` with the command line's message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from disc21spark.api import inputs, pool_files
from disc21spark.api.inputs import ARROW, PATH, SPARK, Engine, kind, label
from disc21spark.api.renamed import old_keywords
from disc21spark.api.results import Leaderboard
from disc21spark.api.tables import score_table
from disc21spark.core import config
from disc21spark.core.errors import InputError, column_list
from disc21spark.core.phases import Phases
from disc21spark.engine import LOCAL_MAX_BYTES
from disc21spark.matching.ground_truth import groups_phase
from disc21spark.matching.job import MatchingJob, score_frame, score_one
from disc21spark.matching.model import GroundTruth, MatchingMetrics, Submission

_MAX_RESULTS = config.value("evaluate", "max_results", int)
_CURVE_POINTS = config.value("evaluate", "curve_points", int)
# the intervals' options (docs/statistics.md), the command's defaults
_RESAMPLES = config.value("evaluate", "resamples", int)
_CONFIDENCE = config.value("evaluate", "confidence", float)
_SEED = config.value("evaluate", "seed", int)


@old_keywords
def evaluate(
    ground_truth: Any,
    predictions: Any,
    *,
    max_results: int = _MAX_RESULTS,
    engine: Any = "auto",
    curve_points: int = _CURVE_POINTS,
    sort_partitions: int | None = None,
    predictions_format: str = "auto",
    ground_truth_format: str = "auto",
    local_max_bytes: int | None = LOCAL_MAX_BYTES,
    query_groups: str | os.PathLike | None = None,
    resamples: int = _RESAMPLES,
    confidence: float = _CONFIDENCE,
    seed: int = _SEED,
    per_query: bool = False,
) -> MatchingMetrics:
    """One matching-track submission's figures, exactly as ``disc21spark evaluate``.

    Parameters
    ----------
    ground_truth : str, os.PathLike, pandas.DataFrame, pyarrow.Table or Spark DataFrame
        Columns ``query_id``, ``reference_id`` (text; empty or missing: a distractor
        query). A path is any path Spark reads (CSV, .csv.gz, Parquet; hdfs://, s3a://).
    predictions : str, os.PathLike, pandas.DataFrame, pyarrow.Table or Spark DataFrame
        Columns ``query_id``, ``reference_id`` (text or integers) and ``score`` (numbers;
        higher is more confident), n rows. A path is read as the command reads
        ``--predictions`` (a glob or a folder is one submission: ``evaluate_pool`` scores many).
    max_results : int
        More predictions than this is an error, as the official scorer says (0: no limit).
    engine : {"auto", "local", "spark"} or SparkSession
        "auto": a Spark DataFrame (where it is; its cache released before returning), a
        remote path, a glob or a folder → Spark; a table or a local file → this process.
    curve_points, sort_partitions, local_max_bytes : int, int or None, int or None (auto)
        Points kept in ``pr_curve`` (figures are exact); partitions of the repeat check's
        shuffle on Spark (None: Spark sizes it); the memory the local engine plans for.
    predictions_format, ground_truth_format : {"auto", "csv", "parquet"}
        The format of a path (auto: from its name). Defaults: conf/defaults.ini.
    query_groups, per_query : path or None, bool
        A CSV ``query_id,group`` (``--query-groups``): each group's figures, with
        intervals (docs/statistics.md); ``--per-query``: one row per query (matching.md).
    resamples, confidence, seed : int, float, int
        The intervals (``--resamples``: 0 for none; the same seed, the same bits).

    Returns
    -------
    MatchingMetrics
        The figures as attributes, ``to_dict()``, ``pr_curve`` (pandas), ``plot()``,
        ``warnings``; ``by_group()`` and ``queries`` (pandas, as groups.csv and
        queries.csv) with ``query_groups`` and ``per_query``.

    Raises
    ------
    InputError
        Bad input: one line naming the file (a table: ``predictions (DataFrame)``), the
        line or row (a pandas index label, an Arrow position) and the reason."""
    given = (max_results, curve_points, sort_partitions, predictions_format, ground_truth_format)
    options = _options(*given, query_groups, (resamples, confidence, seed), per_query)
    one = {label("predictions", predictions): predictions}
    return _score_one(*_prepared(ground_truth, one, engine, local_max_bytes, options), predictions)


def _options(
    max_results: int,
    curve_points: int,
    sort_partitions: int | None,
    predictions_format: str,
    ground_truth_format: str,
    query_groups: str | os.PathLike | None,
    intervals: tuple[int, float, int],
    per_query: bool = False,
) -> dict[str, Any]:
    """The command's options both functions take, by their option names."""
    resamples, confidence, seed = intervals
    return {
        "per_query": per_query,
        "resamples": resamples,
        "confidence": confidence,
        "seed": seed,
        "max_results": max_results,
        "curve_points": curve_points,
        "sort_partitions": sort_partitions,
        "predictions_format": predictions_format,
        "ground_truth_format": ground_truth_format,
        "query_groups": None if query_groups is None else os.fspath(query_groups),
    }


def _prepared(
    ground_truth: Any,
    submissions: Mapping[str, Any],
    engine: Any,
    local_max_bytes: int | None,
    options: dict[str, Any],
    pool: bool = False,
) -> tuple[Any, Engine, GroundTruth]:
    """The command's options, the engine chosen once for the ground truth and every
    submission (``evaluate``: its one input by its label, read in ``predictions_format``;
    ``pool``: name → table), and the ground truth read on that engine."""
    given = ["-"] if pool else list(submissions)
    gt_format = options["ground_truth_format"]
    fmt = "auto" if pool else options["predictions_format"]
    request = inputs.request(
        "evaluate",
        ground_truth=label("ground_truth", ground_truth),
        predictions=given,
        output=None,
        **options,
    )
    chosen = inputs.choose_engine(
        engine,
        [ground_truth, *submissions.values()],
        [gt_format] + [fmt] * len(submissions),
        local_max_bytes,
        side=(request.query_groups, request.private_queries),
    )
    return request, chosen, inputs.ground_truth(ground_truth, gt_format, chosen)


def _score_one(
    request: Any,
    engine: Engine,
    gt: GroundTruth,
    predictions: Any,
    name: str = "predictions",
    groups: Any = None,
    drawn: Any = None,
) -> MatchingMetrics:
    """One submission on the chosen engine, through the command line's functions;
    ``name``: how a table names itself in messages; ``groups``: the query groups read
    against ``gt`` (None: ``request.query_groups`` read against it, if any); ``drawn``:
    a pool's resample weights of ``gt``, drawn once for its tables (``_drawn``)."""
    job = MatchingJob.from_options(request, engine.choice)
    if kind(predictions) == PATH:  # the command's sequence, its ground truth read here
        return score_one(engine.spark, job, Phases(), gt, groups).metrics
    if groups is None:
        groups = groups_phase(engine.spark, job.query_groups, gt, Phases())
    job = replace(job, groups=groups)
    source = label(name, predictions)
    if not engine.choice.needs_spark:
        # a table gets what a file gets: the intervals, and with resamples=0 the
        # optimistic μAP (tie sensitivity needs no resample)
        limits = (job.max_results, job.curve_points)
        return score_table(predictions, source, gt, limits, job.resampling, job.per_query, drawn)
    # a table's rows are not known before it is read
    read = (_spark_raw(engine.spark, predictions, source), source, "csv", None)
    return score_frame(engine.spark, read, gt, job, Phases(), drawn)


def _spark_raw(spark: Any, value: Any, source: str, keep: tuple[str, ...] = ()) -> Any:
    """A table (Spark, pandas or Arrow) as raw predictions on Spark (``read.typed_table``)."""
    from pyspark.sql import functions as F

    from disc21spark.matching.rows import PREDICTION_COLUMNS
    from disc21spark.matching.spark.read import typed_table

    if kind(value) == ARROW:  # a table in memory forced onto Spark, checked as in process
        inputs.arrow_columns(value, source, (*PREDICTION_COLUMNS, *keep))
        value = spark.createDataFrame(
            value if not hasattr(value, "to_pandas") else value.to_pandas()
        )
    missing = [c for c in (*PREDICTION_COLUMNS, *keep) if c not in value.columns]
    if missing:
        has = column_list(value.columns)
        raise InputError(source, f"missing column {missing[0]!r} (has: {has})")
    return typed_table(value, F.lit(source), keep)


@old_keywords
def evaluate_pool(
    ground_truth: Any,
    predictions: Any,
    *,
    submission_column: str | None = None,
    max_results: int = _MAX_RESULTS,
    engine: Any = "auto",
    curve_points: int = _CURVE_POINTS,
    sort_partitions: int | None = None,
    predictions_format: str = "auto",
    ground_truth_format: str = "auto",
    pool_plan: str | None = None,
    local_max_bytes: int | None = LOCAL_MAX_BYTES,
    query_groups: str | os.PathLike | None = None,
    resamples: int = _RESAMPLES,
    confidence: float = _CONFIDENCE,
    seed: int = _SEED,
    private_queries: str | os.PathLike | None = None,
    per_query: bool = False,
) -> Leaderboard:
    """Score a pool as ``disc21spark evaluate`` does: a bad submission is invalid, alone.

    Parameters
    ----------
    ground_truth : path, pandas.DataFrame, pyarrow.Table or Spark DataFrame
        As for ``evaluate`` (a pool of files needs it as a path, as the command does).
    predictions : path, sequence of paths, table, or mapping name → table
        Paths (a file per submission, named by its file name) scored by the command's
        pool job where it would score them (local files: docs/api.md); one table and
        its ``submission_column``; or a mapping of name → table.
    submission_column : str or None
        The column of a table (or of a Parquet pool file) naming each row's submission.
    max_results, engine, curve_points, sort_partitions, predictions_format,
    ground_truth_format, local_max_bytes : as for ``evaluate`` (local_max_bytes: the
        largest file of a pool the per-file plan scores)
    pool_plan, private_queries : {"auto", "per-file", "distributed"} or None, path or None
    query_groups, resamples, confidence, seed, per_query : as for ``evaluate``; per_query
        also gives ``queries()``, ``missed_queries()``, ``separating_queries()``.

    Returns
    -------
    Leaderboard
        ``table`` (as leaderboard.csv), ``submissions``, ``board[name]``, ``invalid``,
        with ``private_queries`` the public board, ``private``, ``rank_changes()``.

    Raises
    ------
    InputError
        Bad ground truth, options or pool (a bad submission: in the leaderboard).
    WorkersLost
        A RuntimeError: a worker process ended (killed; a script with no main guard)."""
    given = (max_results, curve_points, sort_partitions, predictions_format, ground_truth_format)
    options = _options(*given, query_groups, (resamples, confidence, seed), per_query)
    if private_queries is not None:
        options["private_queries"] = os.fspath(private_queries)
    if pool_files.all_paths(predictions):
        options.update(local_max_bytes=local_max_bytes, pool_plan=pool_plan)
        return pool_files.score(ground_truth, predictions, submission_column, engine, options)
    tables = _named_tables(predictions, submission_column)
    return _pool_of_tables(ground_truth, tables, engine, local_max_bytes, options)


def _pool_of_tables(
    ground_truth: Any, tables: dict[str, Any], engine: Any, local_max_bytes: Any, options: dict
) -> Leaderboard:
    """Each table scored on the engine chosen once for them all, a bad one marked invalid;
    with ``private_queries`` among ``options``, both boards."""
    request, chosen, gt = _prepared(ground_truth, tables, engine, local_max_bytes, options, True)
    groups = groups_phase(chosen.spark, request.query_groups, gt, Phases())  # once for all
    drawn = _drawn(request, chosen, gt)
    if request.private_queries is None:
        return Leaderboard(
            [_submission(chosen, gt, t, request, n, (groups, drawn)) for n, t in tables.items()]
        )
    # validity on the tables as given: the boards' figures replace these, so no per-query
    # or group tables here (as the pool job's first pass)
    judged = replace(request, per_query=False, query_groups=None)
    scored = [_submission(chosen, gt, t, judged, n, (None, drawn)) for n, t in tables.items()]
    return _boards_of_tables(chosen, gt, tables, request, scored, groups)


def _boards_of_tables(
    engine: Engine, gt: GroundTruth, tables: dict[str, Any], request: Any, subs: list, groups: Any
) -> Leaderboard:
    """A pool of tables with ``request.private_queries`` (``pool/boards.py``): ``subs``
    judged on the tables as given, then each board scored on its own ground truth, its
    part of ``groups`` and the tables' rows of its queries, on the pool's engine."""
    from disc21spark.pool import boards
    from disc21spark.pool.split import read_split

    split = read_split(request.private_queries, gt, engine.spark)

    def board(name: str, board_gt: GroundTruth, ids: list[str], valid: list[Submission]) -> None:
        mine, drawn = split.groups(groups, name), _drawn(request, engine, board_gt)
        for s in valid:
            rows = inputs.rows_of_queries(tables[s.name], ids)
            s.metrics = _score_one(request, engine, board_gt, rows, s.name, mine, drawn)

    private = boards.score_boards(gt, split, subs, subs, board)
    return Leaderboard(subs, Leaderboard(private))


def _submission(
    engine: Engine, gt: GroundTruth, table: Any, request: Any, name: str, shared: tuple = ()
) -> Submission:
    """One table of a pool scored (``shared``: the pool's groups and drawn weights, as
    ``_score_one`` takes them), or marked invalid with its message."""
    s = Submission(name, label(name, table))
    try:
        s.metrics = _score_one(request, engine, gt, table, name, *shared)
    except InputError as error:
        s.invalid(error)
    return s


def _drawn(request: Any, engine: Engine, gt: GroundTruth) -> Any:
    """A pool's resample weights of ``gt`` (``stats.weighted.Drawn``; none drawn with
    ``resamples=0``), drawn once for all its tables, in this process or on Spark."""
    from disc21spark.matching.stats import weighted

    return weighted.Drawn.of(gt, MatchingJob.from_options(request, engine.choice).resampling)


def _named_tables(predictions: Any, submission: str | None) -> dict[str, Any]:
    """Submission name → table: a mapping as given, or one table split by its column."""
    if isinstance(predictions, Mapping):
        return {str(k): v for k, v in sorted(predictions.items(), key=lambda kv: str(kv[0]))}
    if submission is None:
        raise InputError(
            "", "a pool of one table needs submission_column=<the column naming each row's>"
        )
    source = label("predictions", predictions)
    if kind(predictions) == SPARK:
        return _split_spark(predictions, submission, source)
    frame = predictions.to_pandas() if hasattr(predictions, "to_pylist") else predictions
    if submission not in frame.columns:
        has = column_list(frame.columns)
        raise InputError(source, f"missing column {submission!r} (has: {has})")
    if frame[submission].isna().any():
        raise InputError(source, f"rows without a {submission} (the submission)")
    groups = frame.groupby(frame[submission].astype(str), sort=True)
    return {name: group.drop(columns=[submission]) for name, group in groups}


def _split_spark(frame: Any, submission: str, source: str) -> dict[str, Any]:
    """A Spark DataFrame's submissions, each a filtered DataFrame (Spark reads the
    table once per submission; a pool of thousands belongs in files, scored by the pool
    plan)."""
    from pyspark.sql import functions as F

    if submission not in frame.columns:
        raise InputError(
            source, f"missing column {submission!r} (has: {column_list(frame.columns)})"
        )
    names = [r[0] for r in frame.select(F.col(submission).cast("string")).distinct().collect()]
    if None in names:
        raise InputError(source, f"rows without a {submission} (the submission)")
    column = F.col(submission).cast("string")
    return {n: frame.where(column == n).drop(submission) for n in sorted(names)}
