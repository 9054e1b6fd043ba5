"""The descriptor-track job: read → check → index → search → score → report.

Queries are searched against the references on the executors (search_plan.py); the
resulting pairs go through the matching track's scorer unchanged.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core.errors import InputError
from disc21spark.core.output import check_writable, staged_output
from disc21spark.core.phases import Phases
from disc21spark.descriptors import files as descriptors
from disc21spark.descriptors import plan as search_plan
from disc21spark.descriptors import spec as search
from disc21spark.matching import report
from disc21spark.matching.job import ground_truth_phase, score_typed
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.spec import DEFAULT_CURVE_POINTS

GB = 1 << 30


@dataclass(frozen=True)
class DescriptorJob:
    ground_truth: str
    query_descriptors: list[str]
    reference_descriptors: list[str]
    output: str | None
    knn: int | None = None  # None: max-results mode
    max_results: int = 500_000
    metric: str = "l2"
    index: str = "Flat"
    nprobe: int | None = None
    max_dim: int = 256
    broadcast_limit: int = 2 * GB
    score_norm: list[str] = field(default_factory=list)
    score_norm_weight: float = 1.0
    score_norm_neighbors: tuple[int, int] = (1, 1)
    train_descriptors: list[str] = field(default_factory=list)
    write_predictions: bool = False
    query_partitions: int | None = None
    partitions: int | None = None
    overwrite: bool = False
    curve_points: int = DEFAULT_CURVE_POINTS
    title: str | None = None
    block_rows: int = 16384  # queries searched at a time in a task (memory per task)

    @property
    def spec(self) -> search_plan.SearchSpec:
        norm = None
        if self.score_norm:
            first, last = self.score_norm_neighbors
            norm = (first, last, self.score_norm_weight)
        return search_plan.SearchSpec(
            self.metric, self.knn, self.max_results, norm, self.block_rows
        )


@dataclass
class SearchOutcome:
    pairs: DataFrame  # query_id, reference_id, score
    n_queries: int
    n_references: int
    dim: int
    shards: int
    broadcast_bytes: int
    cached: list = field(default_factory=list)

    def release(self) -> None:
        for frame in self.cached:
            frame.unpersist()


def _check_queries(frame: DataFrame, source: str) -> int:
    """Count the queries; fail on the first bad vector (file order) or a repeated id.
    One job: a shuffle of the ids only, the vectors stay where they are."""
    per_id = frame.groupBy("query_id").agg(
        F.count(F.lit(1)).alias("n"),
        F.min(F.when(F.col("problem").isNotNull(), F.col("qpos"))).alias("first_bad"),
    )
    row = per_id.agg(
        F.sum("n").alias("n"),
        F.max("n").alias("most"),
        F.min("first_bad").alias("first_bad"),
        F.max_by("query_id", "n").alias("repeated"),
    ).first()
    if row["first_bad"] is not None:
        problem = frame.where(F.col("qpos") == row["first_bad"]).select("problem").first()[0]
        path, _, rest = problem.partition(": ")
        where, _, reason = rest.rpartition(": ")
        raise InputError(path, reason, where or None)
    if not row["n"]:
        raise InputError(source, "the query side has no descriptors")
    if row["most"] > 1:
        raise InputError(
            source,
            f"image id '{row['repeated']}' appears {row['most']} times in the query descriptors",
        )
    return int(row["n"])


def _prepare_queries(
    spark: SparkSession, job: DescriptorJob, dim: int, phases: Phases
) -> tuple[DataFrame, int]:
    """Read and check the queries on the executors: a persisted frame and its size."""
    with phases.phase("queries") as note:
        files = descriptors.query_files(spark, job.query_descriptors)
        for f in files:
            if f.dim != -1 and f.dim != dim:
                raise InputError(
                    f.path, f"query descriptors have {f.dim} dimensions, references have {dim}"
                )
        parts = job.query_partitions or _query_partitions(spark, files)
        queries = descriptors.query_frame(spark, files, dim, parts)
        queries = queries.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            n_queries = _check_queries(queries, ", ".join(f.path for f in files))
        except Exception:
            queries.unpersist()
            raise
        note["rows"] = n_queries
        note["detail"] = f"{parts} partitions read by the executors"
    return queries, n_queries


def search_pairs(spark: SparkSession, job: DescriptorJob, phases: Phases) -> SearchOutcome:
    """The pairs of the descriptor track, on Spark, before scoring."""
    ref_files = descriptors.side_files(spark, job.reference_descriptors, "reference")
    dim = descriptors.declared_dim(ref_files)
    pool = ThreadPoolExecutor(max_workers=1)
    early = None
    if dim is not None and dim <= job.max_dim:
        # the executors read the queries while the driver reads the references
        early = pool.submit(_prepare_queries, spark, job, dim, phases)
    try:
        refs, background, train = _read_references(spark, job, ref_files, phases)
        dim = refs.vectors.shape[1]
        shipped, bg_shipped = _ship_indexes(spark, job, refs, background, train, phases)
    except BaseException:
        if early is not None:  # no job left running behind the error
            _settle(early)
        raise
    finally:
        pool.shutdown(wait=False)
    queries, n_queries = early.result() if early else _prepare_queries(spark, job, dim, phases)
    shards, size = len(shipped), sum(s.size for s in shipped)
    cached = [queries]
    with phases.phase("search") as note:
        pairs = search_plan.candidate_pairs(queries, shipped, bg_shipped, job.spec)
        if job.knn is None:
            pairs = pairs.persist(StorageLevel.MEMORY_AND_DISK)
            cached.append(pairs)
            pairs = search_plan.global_cut(pairs, job.max_results)
        pairs = pairs.select("query_id", "reference_id", "score")
        pairs = pairs.persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(pairs)
        note["rows"] = pairs.count()
        mode = f"kNN {job.knn}" if job.knn is not None else f"max-results {job.max_results:,}"
        note["detail"] = mode
    return SearchOutcome(pairs, n_queries, len(refs.ids), dim, shards, size, cached)


def _settle(future) -> None:
    """Wait for the query reading and release it: an error elsewhere comes first."""
    try:
        queries, _ = future.result()
    except BaseException:
        return
    queries.unpersist()


def _read_references(spark, job: DescriptorJob, files, phases: Phases):
    with phases.phase("references") as note:
        refs = descriptors.read_side(
            spark, job.reference_descriptors, "reference", job.max_dim, files
        )
        dim = refs.vectors.shape[1]
        background = None
        if job.score_norm:
            background = descriptors.read_side(spark, job.score_norm, "background", job.max_dim)
            _same_dim(background, dim, "background")
        train = background
        if job.train_descriptors:
            train = descriptors.read_side(spark, job.train_descriptors, "training", job.max_dim)
            _same_dim(train, dim, "training")
        note["rows"] = len(refs.ids)
        note["detail"] = f"{dim} dimensions"
    return refs, background, train


def _ship_indexes(spark, job: DescriptorJob, refs, background, train, phases: Phases):
    """Build the index (trained on ``train`` when it needs training) and broadcast it,
    in shards when it is larger than --broadcast-limit; the background set too."""
    with phases.phase("index") as note:
        try:
            shipped, bg_shipped = _build_and_ship(spark, job, refs, background, train, note)
        except RuntimeError as exc:  # FAISS refuses the factory string or its training
            raise InputError(
                f"--index {job.index}", f"FAISS cannot build it ({_faiss_reason(exc)})"
            ) from None
    return shipped, bg_shipped


def _same_dim(side: descriptors.Side, dim: int, name: str) -> None:
    if side.vectors.shape[1] != dim:
        raise InputError(
            side.source,
            f"{name} descriptors have {side.vectors.shape[1]} dimensions, references have {dim}",
        )


def _build_and_ship(spark, job: DescriptorJob, refs, background, train, note: dict):
    """The trained empty index, then one broadcast per shard (and the background)."""
    empty = search.build_index(job.index, job.metric, (train or refs).vectors, job.nprobe)
    if job.knn is None and not search.is_flat(empty):
        _check_range_search(empty, refs.vectors, job.index)
    try:
        shards = search_plan.shard_count(empty, refs.vectors, job.broadcast_limit)
    except ValueError as exc:
        raise InputError(f"--broadcast-limit {job.broadcast_limit}", str(exc)) from None
    ref_ids = refs.ids.astype(str)
    ranks = search.reference_ranks(ref_ids)
    bounds = [round(i * len(refs.ids) / shards) for i in range(shards + 1)]
    shipped = [
        search_plan.ship(spark, empty, refs.vectors[a:b], job.metric, ranks[a:b], ref_ids[a:b])
        for a, b in zip(bounds[:-1], bounds[1:])
    ]
    bg_shipped = None
    if background is not None:
        bg_ranks = search.reference_ranks(background.ids.astype(str))
        bg_shipped = search_plan.ship(
            spark, empty, background.vectors, job.metric, bg_ranks, background.ids.astype(str)
        )
    size = sum(s.size for s in shipped)
    note["rows"] = len(refs.ids)
    note["detail"] = (
        f"{job.index} {job.metric}, {shards} shard(s), {size / 2**20:,.1f} MiB broadcast"
    )
    return shipped, bg_shipped


def _check_range_search(empty, vectors, factory: str) -> None:
    """--max-results searches by radius: fail now, not on the executors, if the index
    cannot (NSG, for instance)."""
    probe = search.filled(empty, vectors[:1024])
    try:
        probe.range_search(vectors[:1], 0.0)
    except RuntimeError:
        raise InputError(
            f"--index {factory}",
            "this index has no range search, which --max-results needs; use --knn K",
        ) from None


def _faiss_reason(exc: Exception) -> str:
    """FAISS's message without its C++ location ("Error in ... at file.cpp:123: ")."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    _, sep, reason = text.rpartition(".cpp:")
    if sep:
        reason = reason.split(": ", 1)[-1]
    return reason or text


def _query_partitions(spark: SparkSession, files: list[descriptors.DescriptorFile]) -> int:
    rows = sum(max(f.rows, 0) for f in files)
    # enough partitions to keep every core busy; each big enough for FAISS's batches
    return max(
        1, min(max(spark.sparkContext.defaultParallelism, rows // 200_000), max(rows // 1000, 1))
    )


def score_pairs(
    spark: SparkSession, job: DescriptorJob, gt: GroundTruth, outcome: SearchOutcome, phases: Phases
) -> MatchingMetrics:
    typed = outcome.pairs.select(
        F.lit(", ".join(job.query_descriptors)).alias("file"),
        "query_id",
        "reference_id",
        "score",
        F.lit(None).cast("struct<file:string>").alias("bad"),
    )
    return score_typed(
        spark,
        typed,
        gt,
        phases,
        source="descriptor search",
        max_results=0,  # the search obeys --max-results itself; kNN is not capped
        partitions=job.partitions,
        curve_points=job.curve_points,
        read_detail="searched pairs labelled and counted per query",
    )


def write_predictions(pairs: DataFrame, target: Path) -> None:
    """The pairs as a matching-track CSV, sorted by query then score, with every digit of
    the scores (they read back to the same floats). Streamed to the driver one partition
    at a time: the file is local, like every output, wherever the executors are."""
    ordered = pairs.orderBy("query_id", F.desc("score"), "reference_id")
    with open(target, "w", newline="") as out:
        out.write("query_id,reference_id,score\n")
        for row in ordered.toLocalIterator(prefetchPartitions=True):
            out.write(f"{row.query_id},{row.reference_id},{row.score!r}\n")


def run(spark: SparkSession, job: DescriptorJob) -> MatchingMetrics:
    """Search and score; writes job.output (when given) whole or not at all."""
    if job.output:
        check_writable(job.output, job.overwrite)
    phases = Phases()
    gt = ground_truth_phase(spark, job.ground_truth, "auto", phases)  # before the search
    outcome = search_pairs(spark, job, phases)
    try:
        metrics = score_pairs(spark, job, gt, outcome, phases)
        if job.output:
            with phases.phase("report"), staged_output(job.output, job.overwrite) as stage:
                run_info = report.run_document(
                    spark,
                    phases,
                    ground_truth=job.ground_truth,
                    query_descriptors=job.query_descriptors,
                    reference_descriptors=job.reference_descriptors,
                    search=f"knn {job.knn}" if job.knn is not None else "max_results",
                    max_results=job.max_results if job.knn is None else None,
                    metric=job.metric,
                    index=job.index,
                    nprobe=job.nprobe,
                    score_norm=job.score_norm or None,
                    score_norm_weight=job.score_norm_weight if job.score_norm else None,
                    score_norm_neighbors=list(job.score_norm_neighbors) if job.score_norm else None,
                    n_queries_searched=outcome.n_queries,
                    n_references=outcome.n_references,
                    dimensions=outcome.dim,
                    reference_shards=outcome.shards,
                    broadcast_bytes=outcome.broadcast_bytes,
                )
                title = job.title or "DISC21 descriptor track"
                report.write_matching_report(stage, metrics, run_info, title)
                if job.write_predictions:
                    write_predictions(outcome.pairs, stage / "predictions.csv")
    finally:
        outcome.release()
    return metrics


def evaluate_cli(args) -> MatchingMetrics:
    """jobs/evaluate.py's call for the descriptor track."""
    from disc21spark.core.session import spark_session

    first, last = args.score_norm_neighbors
    job = DescriptorJob(
        ground_truth=args.ground_truth,
        query_descriptors=args.query_descriptors,
        reference_descriptors=args.reference_descriptors,
        output=args.output,
        knn=args.knn,
        max_results=args.max_results,
        metric=args.metric,
        index=args.index,
        nprobe=args.nprobe,
        max_dim=args.max_dim,
        broadcast_limit=args.broadcast_limit,
        score_norm=args.score_norm or [],
        score_norm_weight=args.score_norm_weight,
        score_norm_neighbors=(first, last),
        train_descriptors=args.train_descriptors or [],
        write_predictions=args.write_predictions,
        query_partitions=args.query_partitions,
        partitions=args.partitions,
        overwrite=args.overwrite,
        curve_points=args.curve_points,
        title=args.title,
    )
    if job.output:
        check_writable(job.output, job.overwrite)
    spark = spark_session(args.profile, args.master, debug=args.debug)
    metrics = run(spark, job)
    print(report.format_table(metrics, "DISC21 descriptor track"))
    if job.output:
        print(f"results in {job.output}/ (metrics.json, pr_curve.csv, pr_curve.png)")
    return metrics
