"""The descriptor-track job: read → check → index → search → score → report.

Queries are searched against the references on the executors (plan.py, shipping.py);
the resulting pairs go through the matching track's scorer unchanged. The reference and
background vectors are written once to a folder on the driver's disk (the job's index
folder, under TMPDIR), removed when the job ends.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from argparse import Namespace
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core import config
from disc21spark.core.errors import InputError, first_line
from disc21spark.core.output import check_writable
from disc21spark.core.phases import Phases
from disc21spark.core.runner import BaseJob, fields_from_options
from disc21spark.descriptors import plan as descriptor_plan
from disc21spark.descriptors import query_side, shipping
from disc21spark.descriptors import side as descriptor_side
from disc21spark.descriptors import spec as descriptor_spec
from disc21spark.matching import report
from disc21spark.matching.ground_truth import ground_truth_phase
from disc21spark.matching.labels import SUBMISSION
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.score import Scoring, score


@dataclass(frozen=True)
class DescriptorJob(BaseJob):
    """The descriptor track; defaults from conf/defaults.ini [evaluate]."""

    DEFAULTS = "evaluate"

    ground_truth: str
    query_descriptors: list[str]
    reference_descriptors: list[str]
    output: str | None
    knn: int | None = config.from_defaults(int)  # None: max-results mode
    max_results: int = config.from_defaults(int)
    metric: str = config.from_defaults()
    index: str = config.from_defaults()
    nprobe: int | None = config.from_defaults(int)
    max_dim: int = config.from_defaults(int)
    broadcast_limit: int = config.from_defaults(config.parse_size)
    score_norm: list[str] = field(default_factory=list)
    score_norm_weight: float = config.from_defaults(float)
    score_norm_neighbors: tuple[int, int] = config.from_defaults(config.parse_span)
    train_descriptors: list[str] = field(default_factory=list)
    write_predictions: bool = False
    query_partitions: int | None = config.from_defaults(int)
    partitions: int | None = config.from_defaults(int)
    overwrite: bool = False
    curve_points: int = config.from_defaults(int)
    ground_truth_format: str = config.from_defaults()
    title: str | None = config.from_defaults()
    block_rows: int = 16384  # queries searched at a time in a task (memory per task)

    @classmethod
    def from_args(cls, args: Namespace) -> DescriptorJob:
        """`disc21spark evaluate --query-descriptors ... --reference-descriptors ...`."""
        fields = fields_from_options(
            cls,
            args,
            score_norm=args.score_norm or [],
            score_norm_neighbors=tuple(args.score_norm_neighbors),
            train_descriptors=args.train_descriptors or [],
        )
        return cls(**fields)

    def execute(self, spark: SparkSession) -> MatchingMetrics:
        return run(spark, self)

    def summary(self, metrics: MatchingMetrics) -> list[str]:
        lines = [report.format_table(metrics, "DISC21 descriptor track")]
        if self.output:
            lines.append(f"results in {self.output}/ (metrics.json, pr_curve.csv, pr_curve.png)")
        return lines

    @property
    def spec(self) -> descriptor_plan.SearchSpec:
        norm = None
        if self.score_norm:
            first, last = self.score_norm_neighbors
            norm = (first, last, self.score_norm_weight)
        return descriptor_plan.SearchSpec(
            self.metric, self.knn, self.max_results, norm, self.block_rows
        )


@dataclass
class SearchOutcome:
    pairs: DataFrame  # query_id, reference_id, score
    n_queries: int
    n_references: int
    dim: int
    shards: int
    broadcast_bytes: int  # 0 when the index travels as files
    transport: str  # "files" or "broadcast"
    cached: list = field(default_factory=list)
    folder: Path | None = None  # the job's index folder on the driver

    def release(self) -> None:
        for frame in self.cached:
            frame.unpersist()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def _prepare_queries(
    spark: SparkSession, job: DescriptorJob, dim: int, phases: Phases
) -> tuple[DataFrame, int]:
    """Read and check the queries on the executors: a persisted frame and its size."""
    with phases.phase("queries") as note:
        files = query_side.query_files(spark, job.query_descriptors)
        for f in files:
            if f.dim != -1 and f.dim != dim:
                raise InputError(
                    f.path, f"query descriptors have {f.dim} dimensions, references have {dim}"
                )
        parts = job.query_partitions or query_side.default_partitions(spark, files)
        queries = query_side.query_frame(spark, files, dim, parts)
        queries = queries.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            n_queries = query_side.check_queries(queries, ", ".join(f.path for f in files))
        except Exception:
            queries.unpersist()
            raise
        note["rows"] = n_queries
        note["detail"] = f"{parts} partitions read by the executors"
    return queries, n_queries


def search_pairs(spark: SparkSession, job: DescriptorJob, phases: Phases) -> SearchOutcome:
    """The pairs of the descriptor track, on Spark, before scoring; the caller releases
    the outcome (its cached frames and its index folder)."""
    folder = Path(tempfile.mkdtemp(prefix="disc21spark-index-"))
    try:
        return _search_pairs(spark, job, phases, folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _search_pairs(spark: SparkSession, job: DescriptorJob, phases: Phases, folder: Path):
    ref_files = descriptor_side.side_files(spark, job.reference_descriptors, "reference")
    dim = descriptor_side.declared_dim(ref_files)
    pool = ThreadPoolExecutor(max_workers=1)
    early = None
    if dim is not None and dim <= job.max_dim:
        # the executors read the queries while the driver reads the references
        early = pool.submit(_prepare_queries, spark, job, dim, phases)
    try:
        refs, background, train = _read_references(spark, job, ref_files, phases, folder)
        dim = refs.vectors.shape[1]
        shipped, bg_shipped = _ship_indexes(spark, job, refs, background, train, phases)
    except BaseException:
        if early is not None:  # no job left running behind the error
            _settle(early)
        raise
    finally:
        pool.shutdown(wait=False)
    queries, n_queries = early.result() if early else _prepare_queries(spark, job, dim, phases)
    shards = len(shipped)
    files = isinstance(shipped[0], shipping.FileShard)
    size = 0 if files else sum(s.size for s in shipped)
    cached = [queries]
    with phases.phase("search") as note:
        pairs = descriptor_plan.candidate_pairs(queries, shipped, bg_shipped, job.spec)
        if job.knn is None:
            pairs = pairs.persist(StorageLevel.MEMORY_AND_DISK)
            cached.append(pairs)
            pairs = descriptor_plan.global_cut(pairs, job.max_results)
        pairs = pairs.select("query_id", "reference_id", "score")
        pairs = pairs.persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(pairs)
        note["rows"] = pairs.count()
        mode = f"kNN {job.knn}" if job.knn is not None else f"max-results {job.max_results:,}"
        note["detail"] = mode
    transport = "files" if files else "broadcast"
    return SearchOutcome(
        pairs, n_queries, len(refs.ids), dim, shards, size, transport, cached, folder
    )


def _settle(future) -> None:
    """Wait for the query reading and release it: an error elsewhere comes first."""
    try:
        queries, _ = future.result()
    except BaseException:
        return
    queries.unpersist()


def _read_references(spark, job: DescriptorJob, files, phases: Phases, folder: Path):
    """References and background stored in ``folder`` (their files may travel to the
    executors), the training set in memory (only the driver reads it)."""
    read = partial(descriptor_side.read_side, spark, max_dim=job.max_dim)
    token = uuid.uuid4().hex  # file names unique in the session: addFile keys them by name
    with phases.phase("references") as note:
        refs = read(
            job.reference_descriptors, "reference", files=files, store=folder / f"{token}-r.f32"
        )
        dim = refs.vectors.shape[1]
        background = None
        if job.score_norm:
            background = read(job.score_norm, "background", store=folder / f"{token}-b.f32")
            _same_dim(background, dim, "background")
        train = background
        if job.train_descriptors:
            train = read(job.train_descriptors, "training")
            _same_dim(train, dim, "training")
        note["rows"] = len(refs.ids)
        note["detail"] = f"{dim} dimensions"
    return refs, background, train


def _ship_indexes(spark, job: DescriptorJob, refs, background, train, phases: Phases):
    """Build the index (trained on ``train`` when it needs training) and ship it, in
    shards when it is larger than --broadcast-limit (or, broadcast, than the driver's
    heap allows); the background set too."""
    with phases.phase("index") as note:
        try:
            shipped, bg_shipped = _build_and_ship(spark, job, refs, background, train, note)
        except RuntimeError as exc:  # FAISS refuses the factory string or its training
            raise InputError(
                f"--index {job.index}", f"FAISS cannot build it ({_faiss_reason(exc)})"
            ) from None
    return shipped, bg_shipped


def _same_dim(side: descriptor_side.Side, dim: int, name: str) -> None:
    if side.vectors.shape[1] != dim:
        raise InputError(
            side.source,
            f"{name} descriptors have {side.vectors.shape[1]} dimensions, references have {dim}",
        )


def _build_and_ship(spark, job: DescriptorJob, refs, background, train, note: dict):
    """The trained empty index, then the shards (and the background, whole)."""
    empty = descriptor_spec.build_index(job.index, job.metric, (train or refs).vectors, job.nprobe)
    if job.knn is None and not descriptor_spec.is_flat(empty):
        _check_range_search(empty, refs.vectors, job.index)
    limit, setting = shipping.shard_limit(spark, empty, job.broadcast_limit)
    try:
        shards = shipping.shard_count(empty, refs.vectors, limit)
    except ValueError as exc:
        raise InputError(setting, str(exc)) from None
    ranks = descriptor_spec.reference_order(refs.ids.astype(str))
    shipped = shipping.ship(spark, empty, refs, job.metric, ranks, shards)
    bg_shipped = None
    if background is not None:
        bg_ranks = descriptor_spec.reference_order(background.ids.astype(str))
        (bg_shipped,) = shipping.ship(spark, empty, background, job.metric, bg_ranks, 1)
    size = sum(s.size for s in shipped)
    how = "as files" if isinstance(shipped[0], shipping.FileShard) else "broadcast"
    note["rows"] = len(refs.ids)
    note["detail"] = (
        f"{job.index} {job.metric}, {shards} shard(s), {size / 2**20:,.1f} MiB {how}"
    )
    return shipped, bg_shipped


def _check_range_search(empty, vectors, factory: str) -> None:
    """--max-results searches by radius: fail now, not on the executors, if the index
    cannot (NSG, for instance)."""
    probe = descriptor_spec.filled(empty, vectors[:1024])
    try:
        probe.range_search(vectors[:1], 0.0)
    except RuntimeError:
        raise InputError(
            f"--index {factory}",
            "this index has no range search, which --max-results needs; use --knn K",
        ) from None


def _faiss_reason(exc: Exception) -> str:
    """FAISS's message without its C++ location ("Error in ... at file.cpp:123: ")."""
    text = first_line(exc, limit=None, empty=type(exc).__name__)
    _, sep, reason = text.rpartition(".cpp:")
    if sep:
        reason = reason.split(": ", 1)[-1]
    return reason or text


def score_pairs(
    spark: SparkSession, job: DescriptorJob, gt: GroundTruth, outcome: SearchOutcome, phases: Phases
) -> MatchingMetrics:
    """The searched pairs through the one scorer: generated here, so trusted (no checks);
    the search obeys --max-results itself and kNN is not capped."""
    pairs = outcome.pairs.select(F.lit(0).alias(SUBMISSION), "query_id", "reference_id", "score")
    scoring = Scoring(
        gt,
        job.curve_points,
        job.partitions,
        read_detail="searched pairs labelled and counted per query",
    )
    return score(spark, pairs, [0], scoring, phases).metrics[0]


def write_predictions(pairs: DataFrame, target: Path) -> None:
    """The pairs as a matching-track CSV, sorted by query then score, with every digit of
    the scores (they read back to the same floats). Streamed to the driver one partition
    at a time: the file is local, like every output, wherever the executors are."""
    ordered = pairs.orderBy("query_id", F.desc("score"), "reference_id")
    with open(target, "w", newline="") as out:
        out.write("query_id,reference_id,score\n")
        for row in ordered.toLocalIterator(prefetchPartitions=True):
            out.write(f"{row.query_id},{row.reference_id},{row.score!r}\n")


def _run_inputs(job: DescriptorJob, outcome: SearchOutcome) -> dict:
    """The settings metrics.json records, and what the search found."""
    norm = bool(job.score_norm)
    return {
        "ground_truth": job.ground_truth,
        "query_descriptors": job.query_descriptors,
        "reference_descriptors": job.reference_descriptors,
        "search": f"knn {job.knn}" if job.knn is not None else "max_results",
        "max_results": job.max_results if job.knn is None else None,
        "metric": job.metric,
        "index": job.index,
        "nprobe": job.nprobe,
        "score_norm": job.score_norm or None,
        "score_norm_weight": job.score_norm_weight if norm else None,
        "score_norm_neighbors": list(job.score_norm_neighbors) if norm else None,
        "n_queries_searched": outcome.n_queries,
        "n_references": outcome.n_references,
        "dimensions": outcome.dim,
        "reference_shards": outcome.shards,
        "index_transport": outcome.transport,
        "broadcast_bytes": outcome.broadcast_bytes,
    }


def run(spark: SparkSession, job: DescriptorJob) -> MatchingMetrics:
    """Search and score; writes job.output (when given) whole or not at all."""
    if job.output:
        check_writable(job.output, job.overwrite)
    phases = Phases()
    gt = ground_truth_phase(spark, job.ground_truth, job.ground_truth_format, phases)
    outcome = search_pairs(spark, job, phases)
    try:
        metrics = score_pairs(spark, job, gt, outcome, phases)
        if job.output:
            inputs = _run_inputs(job, outcome)
            with report.staged_report(spark, phases, job.output, job.overwrite, inputs) as written:
                stage, run_info = written
                title = job.title or "DISC21 descriptor track"
                report.write_matching_report(stage, metrics, run_info, title)
                if job.write_predictions:
                    write_predictions(outcome.pairs, stage / "predictions.csv")
    finally:
        outcome.release()
    return metrics
