"""The descriptor track and the image side from Python: ``evaluate_descriptors``,
``make_library``, ``make_queries``, ``rank_eval``. Each builds the command's own job from
the command's options (defaults from conf/defaults.ini) and runs the job's functions on
Spark."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from disc21spark.api import inputs
from disc21spark.api.renamed import old_keywords
from disc21spark.api.results import DescriptorResult
from disc21spark.core import config
from disc21spark.core.errors import InputError
from disc21spark.core.phases import Phases

Paths = str | os.PathLike | Sequence[str | os.PathLike]


def _paths(value: Paths) -> list[str]:
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    return [os.fspath(v) for v in value]


def _given(**options: Any) -> dict[str, Any]:
    """The options a caller set (None: the command's default)."""
    return {k: v for k, v in options.items() if v is not None}


def _comma_list(value: str | Sequence[str] | None) -> str | None:
    """A sequence of names as the command line's comma list; a str or None as given."""
    if value is not None and not isinstance(value, str):
        return ",".join(value)
    return value


@old_keywords
def evaluate_descriptors(
    ground_truth: Any,
    query_descriptors: Paths,
    reference_descriptors: Paths,
    *,
    knn: int | None = None,
    max_results: int = config.value("evaluate", "max_results", int),
    distance: str = config.value("evaluate", "distance"),
    index: str | None = None,
    nprobe: int | None = None,
    score_norm_descriptors: Paths | None = None,
    budgets: Sequence[int] | None = None,
    knn_budgets: Sequence[int] | None = None,
    return_pairs: bool = False,
    engine: Any = "spark",
    **options: Any,
) -> DescriptorResult:
    """The descriptor track as ``disc21spark evaluate --query-descriptors ...``: every
    query vector searched against the references with FAISS on Spark, the pairs scored
    by the matching track's scorer (no interval: ``resamples`` is refused).

    Parameters
    ----------
    ground_truth : path, pandas.DataFrame, pyarrow.Table or Spark DataFrame
        As for ``evaluate``.
    query_descriptors, reference_descriptors : path or sequence of paths
        Vectors: HDF5 (``vectors`` float32 (n, d), ``image_names``), .npy with
        ``<name>_ids.txt``, or Parquet; globs allowed.
    knn, max_results, distance : int or None, int, {"l2", "ip"}
        K nearest references per query (None: the best ``max_results`` pairs overall);
        l2: score = -squared distance, ip: inner product.
    index, nprobe, score_norm_descriptors : str or None, int or None, path(s) or None
        A FAISS factory string (None: Flat, exact), the IVF lists visited per query,
        background descriptors for score normalisation.
    budgets, knn_budgets : sequence of int or None
        ``--budgets`` (global search), ``--knn-budgets`` (with ``knn``): the metrics of
        one search cut to each budget, as ``DescriptorResult.budgets``.
    return_pairs, engine : bool, "spark" or SparkSession
        Also return the searched pairs as a pandas DataFrame (collected to the driver).
    **options
        Any other option of the command by name (broadcast_limit, query_partitions...).

    Returns
    -------
    DescriptorResult
        ``metrics`` (MatchingMetrics), ``pairs`` (None unless ``return_pairs``) and
        ``budgets`` (a pandas DataFrame, None unless budgets were given).

    Raises
    ------
    InputError
        The command line's messages (not vectors, dimensions that differ...); what the
        search caches is released before the call returns.
    """
    norm, cuts = score_norm_descriptors or None, (_listed(budgets), _listed(knn_budgets))
    given = _given(index=index, nprobe=nprobe, score_norm_descriptors=norm)
    given.update(_given(budgets=cuts[0], knn_budgets=cuts[1]))
    vectors, searched = (query_descriptors, reference_descriptors), (knn, max_results, distance)
    job = _descriptor_job(ground_truth, *vectors, engine, *searched, **given, **options)
    return _search_and_score(job, ground_truth, engine, return_pairs)


def _descriptor_job(
    ground_truth: Any,
    queries: Paths,
    references: Paths,
    engine: Any,
    knn: int | None,
    max_results: int,
    distance: str,
    **options: Any,
) -> Any:
    """The command's DescriptorJob of these inputs and options; InputError for an engine
    other than Spark, a local input that is not there, or a bad option (checked in that
    order, before Spark starts)."""
    from disc21spark.descriptors import job as descriptor_job

    if engine == "local":
        raise InputError("engine='local'", "the descriptor track runs on Spark; use engine='spark'")
    for value in [ground_truth, *_paths(queries), *_paths(references)]:
        inputs.check_exists(value)  # said at once, not after starting Spark
    if "score_norm_descriptors" in options:
        options["score_norm_descriptors"] = _paths(options["score_norm_descriptors"])
    request = inputs.request(
        "evaluate",
        ground_truth=inputs.label("ground_truth", ground_truth),
        query_descriptors=_paths(queries),
        reference_descriptors=_paths(references),
        output=None,
        knn=knn,
        max_results=max_results,
        distance=distance,
        **options,
    )
    return descriptor_job.DescriptorJob.from_options(request)


def _search_and_score(
    job: Any, ground_truth: Any, engine: Any, return_pairs: bool
) -> DescriptorResult:
    """The descriptor job's search then its scoring (``descriptors/job.py``), on Spark;
    the search's cached frames released whatever happens."""
    from disc21spark.descriptors import job as descriptor_job

    chosen = inputs.Engine("spark", inputs.spark_session(engine, [ground_truth]))
    phases = Phases()
    gt = inputs.ground_truth(ground_truth, job.ground_truth_format, chosen)
    outcome = descriptor_job.search_pairs(chosen.spark, job, phases)
    try:
        scores = descriptor_job.score_pairs(chosen.spark, job, gt, outcome, phases)
        pairs = _pairs_table(outcome.pairs) if return_pairs else None
    finally:
        outcome.release()
    table = scores.budgets.to_pandas() if scores.budgets is not None else None
    return DescriptorResult(scores.metrics, pairs, table)


def _listed(values: Any) -> Any:
    """A sequence of budgets as the option's list (the command's check judges it);
    anything else as given, for the check to name."""
    if values is None or isinstance(values, (str, bytes)):
        return values
    try:
        return list(values)
    except TypeError:
        return values


def _pairs_table(pairs: Any) -> Any:
    """The searched pairs as predictions.csv orders them (query, score descending,
    reference), as pandas."""
    from pyspark.sql import functions as F

    ordered = pairs.orderBy("query_id", F.desc("score"), "reference_id")
    return ordered.select("query_id", "reference_id", "score").toPandas()


def _run_command(command: str, engine: Any, **given: Any) -> dict:
    """A command whose result is a folder (make-queries, rank-eval): its job built from
    its options, checked, and run as the runner runs it (the folder checked first, then
    Spark); the document it returns."""
    from disc21spark.commands import COMMANDS
    from disc21spark.core.output import check_writable

    job = COMMANDS[command].job_of(inputs.request(command, **given))
    job.check()
    check_writable(job.output_folder(), job.overwrite)
    return job.execute(inputs.spark_session(engine, []))


def make_library(
    output: str | os.PathLike,
    *,
    size: int,
    seed: int | None = None,
    width: int | None = None,
    height: int | None = None,
    leaves: str | None = None,
    no_photos: bool = False,
    overwrite: bool = False,
    engine: Any = "spark",
) -> dict:
    """Write an image library as ``disc21spark make-library``: the photographs
    scikit-image ships and seeded dead-leaves images, rendered on Spark, nothing
    downloaded (the same seed, the same bytes).

    Parameters
    ----------
    output : path
        The library folder (the images and library.csv), written whole or not at all.
    size : int
        Images in the library.
    seed, width, height, leaves : int, int, int, {"textured", "flat"} or None
        ``--seed`` (the same seed, the same bytes), the dead-leaves images' size in
        pixels, their kind (None: each one's default in conf/defaults.ini).
    no_photos, overwrite : bool
        Dead-leaves images only; replace a non-empty ``output``.
    engine : "spark" or SparkSession

    Returns
    -------
    dict
        library.json's content (size, seed, photos, deadleaves...) and ``seconds``.

    Raises
    ------
    InputError
        An option out of range. OutputError: ``output`` is not empty and ``overwrite``
        is False.
    """
    given = _given(seed=seed, width=width, height=height, leaves=leaves)
    folder = os.fspath(output)
    return _run_command(
        "make-library",
        engine,
        output=folder,
        size=size,
        no_photos=no_photos,
        overwrite=overwrite,
        **given,
    )


@old_keywords
def make_queries(
    images: Paths,
    output: str | os.PathLike,
    *,
    tests: str | Sequence[str] | None = None,
    queries_per_test: int | None = None,
    distractors: float | None = None,
    seed: int | None = None,
    query_format: str | None = None,
    sheet_per_test: int | None = None,
    image_partitions: int | None = None,
    overwrite: bool = False,
    engine: Any = "spark",
) -> dict:
    """Write a Howe-style benchmark folder as ``disc21spark make-queries``: altered
    copies of library images as queries, their originals as references.

    Parameters
    ----------
    images : path or sequence of paths
        Image files: folders (searched recursively), globs.
    output : path
        The benchmark folder (ground_truth.csv, queries.parquet, references.parquet,
        bench.json, queries/), written whole or not at all.
    tests : str or sequence of str or None
        Alterations such as "crop:50", "jumble:4x4" (None: the command's default).
    queries_per_test, distractors, seed, query_format, sheet_per_test, image_partitions
        As the command's options (None: its default from conf/defaults.ini).
    overwrite : bool
        Replace a non-empty ``output``.
    engine : "spark" or SparkSession

    Returns
    -------
    dict
        bench.json's content (``counts``, ``settings``...) and ``seconds`` per phase.

    Raises
    ------
    InputError
        A bad test, no image found, an option out of range. OutputError: ``output`` is
        not empty and ``overwrite`` is False.
    """
    return _run_command(
        "make-queries",
        engine,
        images=_paths(images),
        output=os.fspath(output),
        overwrite=overwrite,
        **_given(
            tests=_comma_list(tests),
            queries_per_test=queries_per_test,
            distractors=distractors,
            seed=seed,
            query_format=query_format,
            sheet_per_test=sheet_per_test,
            image_partitions=image_partitions,
        ),
    )


@old_keywords
def rank_eval(
    bench: str | os.PathLike,
    output: str | os.PathLike,
    *,
    methods: str | Sequence[str] | None = None,
    knn: int | None = None,
    overwrite: bool = False,
    engine: Any = "spark",
    **options: Any,
) -> dict:
    """Howe's rank of the original and DISC21's μAP per test and method, as
    ``disc21spark rank-eval``; the report folder is written whole or not at all.

    Parameters
    ----------
    bench : path
        A folder written by ``make_queries``.
    output : path
        The report folder (report.md, summary.csv, ranks.parquet, plots).
    methods : str or sequence of str or None
        Built-in methods (colorhist, correlogram, tiny, pdq), ``module:function`` or
        ``name=folder`` of precomputed vectors (None: the command's default).
    knn : int or None
        Pairs per query for μAP.
    overwrite : bool
    engine : "spark" or SparkSession
    **options
        Any other option of the command by its name (subsets, sizes, seed, resamples,
        query_partitions, ties, distance).

    Returns
    -------
    dict
        rank_eval.json's content and ``seconds`` per phase.

    Raises
    ------
    InputError
        An unknown method, a bad bench folder, an option out of range.
    """
    return _run_command(
        "rank-eval",
        engine,
        bench=os.fspath(bench),
        output=os.fspath(output),
        overwrite=overwrite,
        **_given(methods=_comma_list(methods), knn=knn),
        **options,
    )
