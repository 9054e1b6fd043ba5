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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from disc21spark import resolve
from disc21spark.core import config, fs
from disc21spark.core.errors import InputError, first_line
from disc21spark.core.phases import Phases
from disc21spark.core.runner import BaseJob, fields_from_options
from disc21spark.descriptors import plan as descriptor_plan
from disc21spark.descriptors import query_side, shipping
from disc21spark.descriptors import report as descriptor_report
from disc21spark.descriptors import side as descriptor_side
from disc21spark.descriptors import spec as descriptor_spec
from disc21spark.descriptors.budgets import plan as budget_plan
from disc21spark.descriptors.budgets.spec import Budgets
from disc21spark.descriptors.outcome import Scores, SearchOutcome
from disc21spark.matching.ground_truth import ground_truth_phase
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.reports import report
from disc21spark.matching.spark.score import Scoring


@dataclass(frozen=True)
class DescriptorJob(BaseJob):
    """The descriptor track; defaults from conf/defaults.ini [evaluate]."""

    DEFAULTS = "evaluate"
    INPUTS = ("ground_truth", "query_descriptors", "reference_descriptors", "train_descriptors")

    ground_truth: str
    query_descriptors: list[str]
    reference_descriptors: list[str]
    output: str | None
    knn: int | None = config.from_defaults(int)  # None: max-results mode
    max_results: int = config.from_defaults(int)
    distance: str = config.from_defaults()
    index: str = config.from_defaults()
    nprobe: int | None = config.from_defaults(int)
    max_dim: int = config.from_defaults(int)
    broadcast_limit: int = config.from_defaults(config.parse_size)
    score_norm_descriptors: list[str] = field(default_factory=list)
    score_norm_weight: float = config.from_defaults(float)
    score_norm_neighbors: tuple[int, int] = config.from_defaults(config.parse_span)
    train_descriptors: list[str] = field(default_factory=list)
    write_predictions: bool = False
    query_partitions: int | None = config.from_defaults(int)
    sort_partitions: int | None = config.from_defaults(int)
    overwrite: bool = False
    curve_points: int = config.from_defaults(int)
    ground_truth_format: str = config.from_defaults()
    title: str | None = config.from_defaults()
    block_rows: int = 16384  # queries searched at a time in a task (memory per task)
    budgets: list[int] = field(default_factory=list)  # global search: budgets.csv's rows
    knn_budgets: list[int] = field(default_factory=list)  # kNN: budgets.csv's rows
    # the command's inputs, resolved by its decision (engine.settle); None: a job built by
    # hand, resolved and its output checked at the track's entry (resolve.inputs_of)
    inputs: resolve.RunInputs | None = None

    @classmethod
    def from_options(cls, request: Any, inputs: resolve.RunInputs | None = None) -> DescriptorJob:
        """`disc21spark evaluate --query-descriptors ... --reference-descriptors ...`:
        ``request`` a checked ``commands.evaluate_request.EvaluateRequest``; ``inputs``
        its decision's (``engine.Choice.inputs``)."""
        fields = fields_from_options(
            cls,
            request,
            inputs=inputs,
            score_norm_descriptors=request.score_norm_descriptors or [],
            score_norm_neighbors=tuple(request.score_norm_neighbors),
            train_descriptors=request.train_descriptors or [],
            budgets=list(request.budgets or []),
            knn_budgets=list(request.knn_budgets or []),
        )
        return cls(**fields)

    def execute(self, spark: SparkSession) -> Scores:
        return evaluate(spark, self)

    def summary(self, scores: Scores) -> list[str]:
        lines = [report.format_table(scores.metrics, "DISC21 descriptor track")]
        files = "metrics.json, pr_curve.csv, pr_curve.png"
        if scores.budgets is not None:
            lines.extend(scores.budgets.lines())
            files += ", budgets.csv, budgets.png"
        if self.output:
            lines.append(f"results in {self.output}/ ({files})")
        return lines

    @property
    def budget_request(self) -> Budgets:
        """The budgets the search is cut to: --knn-budgets under --knn, else --budgets
        (the command's check refuses the other pairings)."""
        if self.knn is not None:
            return Budgets("knn", tuple(self.knn_budgets), self.knn)
        return Budgets("max_results", tuple(self.budgets), self.max_results)

    @property
    def spec(self) -> descriptor_plan.SearchSpec:
        norm = None
        if self.score_norm_descriptors:
            first, last = self.score_norm_neighbors
            norm = (first, last, self.score_norm_weight)
        searched = self.budget_request.search  # the largest budget, searched once
        return descriptor_plan.SearchSpec(
            self.distance,
            searched if self.knn is not None else None,
            searched if self.knn is None else self.max_results,
            norm,
            self.block_rows,
        )


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
    spec = job.spec
    with phases.phase("search", unit="query partitions") as note:
        pairs = descriptor_plan.candidate_pairs(queries, shipped, bg_shipped, spec)
        if spec.knn is None:
            pairs = pairs.persist(StorageLevel.MEMORY_AND_DISK)
            cached.append(pairs)
            pairs = descriptor_plan.global_cut(pairs, spec.max_results)
        searched = pairs.select("query_id", "reference_id", "rrank", "score")
        searched = searched.persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(searched)
        n_searched = note["rows"] = searched.count()
        mode = f"kNN {spec.knn}" if spec.knn is not None else f"max-results {spec.max_results:,}"
        note["detail"] = mode
    pairs = budget_plan.main_pairs(searched, job.budget_request)
    transport = "files" if files else "broadcast"
    return SearchOutcome(
        pairs,
        n_queries,
        len(refs.ids),
        dim,
        shards,
        size,
        transport,
        cached,
        folder,
        searched=searched,
        n_searched=n_searched,
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
        if job.score_norm_descriptors:
            background = read(
                job.score_norm_descriptors, "background", store=folder / f"{token}-b.f32"
            )
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
    empty = descriptor_spec.build_index(
        job.index, job.distance, (train or refs).vectors, job.nprobe
    )
    if job.knn is None and not descriptor_spec.is_flat(empty):
        _check_range_search(empty, refs.vectors, job.index)
    limit, setting = shipping.shard_limit(spark, empty, job.broadcast_limit)
    try:
        shards = shipping.shard_count(empty, refs.vectors, limit)
    except ValueError as exc:
        raise InputError(setting, str(exc)) from None
    ranks = descriptor_spec.reference_order(refs.ids.astype(str))
    shipped = shipping.ship(spark, empty, refs, job.distance, ranks, shards)
    bg_shipped = None
    if background is not None:
        bg_ranks = descriptor_spec.reference_order(background.ids.astype(str))
        (bg_shipped,) = shipping.ship(spark, empty, background, job.distance, bg_ranks, 1)
    size = sum(s.size for s in shipped)
    how = "as files" if isinstance(shipped[0], shipping.FileShard) else "broadcast"
    note["rows"] = len(refs.ids)
    note["detail"] = f"{job.index} {job.distance}, {shards} shard(s), {size / 2**20:,.1f} MiB {how}"
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
) -> Scores:
    """The searched pairs through the one scorer: generated here, so trusted (no checks);
    the search obeys --max-results itself and kNN is not capped. Each budget is one
    submission of the same scoring passes."""
    scoring = Scoring(
        gt,
        job.curve_points,
        job.sort_partitions,
        read_detail="searched pairs labelled and counted per query",
        # each budget is a cut of the pairs searched
        rows_at_most=outcome.n_searched,
    )
    searched = outcome.searched if outcome.searched is not None else outcome.pairs
    request = job.budget_request
    return Scores(*budget_plan.score_budgets(spark, searched, request, scoring, phases))


def run(spark: SparkSession, job: DescriptorJob) -> MatchingMetrics:
    """Search and score; writes job.output (when given) whole or not at all: the
    figures of the job's own --max-results or --knn."""
    return evaluate(spark, job).metrics


def evaluate(spark: SparkSession, job: DescriptorJob) -> Scores:
    """``run``, with the budgets table (budgets.csv, budgets.png and metrics.json's
    ``budgets`` block when job.output is given)."""
    # the command's decision resolved the inputs; a job built by hand is resolved here
    inputs = job.inputs or resolve.inputs_of([], "auto", job)
    phases = Phases()
    files = fs.SparkFiles(spark)  # the descriptor track runs on Spark (engine.py)
    gt = ground_truth_phase(files, inputs.ground_truth, phases)
    outcome = search_pairs(spark, job, phases)
    try:
        scores = score_pairs(spark, job, gt, outcome, phases)
        if job.output:
            inputs = descriptor_report.run_inputs(job, outcome)
            with report.staged_report(files, phases, job.output, job.overwrite, inputs) as written:
                descriptor_report.write(job, scores, outcome, *written)
    finally:
        outcome.release()
    return scores
