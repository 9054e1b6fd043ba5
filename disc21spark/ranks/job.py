"""rank_eval: Howe's rank of the original and DISC21's μAP, per test and per method, for a
benchmark folder written by make_queries.

read the bench → describe (or read) each method's vectors → one broadcast pass per method
(exact ranks + kNN pairs) → one scoring plan for every (method, test) → tables and report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import SparkSession

from disc21spark import resolve
from disc21spark.core import config, fs, record
from disc21spark.core.errors import InputError
from disc21spark.core.output import staged_output
from disc21spark.core.phases import Phases
from disc21spark.core.runner import BaseJob, fields_from_options
from disc21spark.core.spark import union_all
from disc21spark.matching.ground_truth import ground_truth_phase
from disc21spark.matching.kernel import DEFAULT_CURVE_POINTS
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.spark.score import Scoring, score
from disc21spark.matching.stats.model import Resampling
from disc21spark.queries import bench_folder
from disc21spark.ranks import distances, vectors
from disc21spark.ranks import groups as rank_groups
from disc21spark.ranks import methods as rank_methods
from disc21spark.ranks import plan as rank_plan
from disc21spark.ranks import report as rank_report
from disc21spark.ranks.describe import describe_bench
from disc21spark.ranks.spec import TIES, Layout, layout, tied_rank


@dataclass(frozen=True)
class RankJob(BaseJob):
    """rank-eval; defaults from conf/defaults.ini [rank-eval]."""

    INPUTS = ("bench",)

    bench: str
    methods: list[str]  # "colorhist" or "name=folder" (a folder written by extract --bench)
    output: str
    knn: int = config.value("rank-eval", "knn", int)
    subsets: int = config.value("rank-eval", "subsets", int)
    sizes: tuple[int, ...] = tuple(config.value("rank-eval", "sizes", config.parse_sizes) or ())
    seed: int = config.value("rank-eval", "seed", int)
    resamples: int = config.value("rank-eval", "resamples", int)
    query_partitions: int | None = config.value("rank-eval", "query_partitions", int)
    ties: str = config.value("rank-eval", "ties", str)
    distances: dict = field(default_factory=dict)  # method name → distance, over its own
    overwrite: bool = False
    keep_descriptors: bool = True

    @classmethod
    def from_options(cls, request: Any) -> RankJob:
        methods = [m.strip() for m in request.methods.split(",") if m.strip()]
        if not methods:
            raise InputError("--methods", "give at least one method")
        names = [parse_method(m)[0] for m in methods]
        if len(set(names)) != len(names):
            raise InputError("--methods", f"a method is named twice ({', '.join(names)})")
        chosen = parse_distances(getattr(request, "distance", None) or "", names)
        return cls(
            **fields_from_options(
                cls, request, methods=methods, sizes=tuple(request.sizes), distances=chosen
            )
        )

    def check(self) -> None:
        """Unknown methods and a bad bench fail before Spark starts."""
        try:
            for text in self.methods:
                name, folder = parse_method(text)
                if not folder:
                    rank_methods.method(name)
            bench_folder.read(self.bench)
        except ValueError as exc:  # a bad name, a user function's failure: said in full
            raise InputError("", str(exc)) from None

    def execute(self, spark: SparkSession) -> dict:
        return run(spark, self)

    def summary(self, document: dict) -> list[str]:
        return [
            rank_report.stdout_table(document),
            f"report in {self.output}/ (report.md, summary.csv, ranks.parquet, plots)",
        ]


def parse_distances(text: str, names: list[str]) -> dict[str, str]:
    """``colorhist=l2,correlogram=l1`` → {method: distance}; each a method being ranked."""
    out: dict[str, str] = {}
    for item in (t.strip() for t in text.split(",") if t.strip()):
        name, sep, metric = item.partition("=")
        name, metric = name.strip(), metric.strip()
        if not sep or not name or not metric:
            raise InputError(
                "--distance", f"'{item}': expected METHOD=DISTANCE, such as colorhist=l2"
            )
        if name not in names:
            raise InputError(
                "--distance", f"'{name}' is not one of the methods ranked ({', '.join(names)})"
            )
        if metric not in distances.METRICS:
            raise InputError(
                "--distance", f"'{metric}' is not a distance ({', '.join(distances.METRICS)})"
            )
        out[name] = metric
    return out


def parse_method(text: str) -> tuple[str, str | None]:
    name, sep, folder = text.partition("=")
    return name.strip(), (folder.strip() if sep else None)


def compute_vectors(
    spark: SparkSession, names: list[str], bench: bench_folder.Bench, partitions: int | None
) -> dict[str, vectors.MethodVectors]:
    """Every method's vectors in one pass over the bench's images (each decoded once)."""
    methods = [rank_methods.method(name) for name in names]
    described = describe_bench(spark, bench, methods, partitions)
    out = {}
    for method in methods:
        r, q = described[method.name]["references"], described[method.name]["queries"]
        out[method.name] = vectors.MethodVectors(
            method.name,
            method.metric,
            method.reference,
            np.asarray(r.ids),
            r.vectors,
            np.asarray(q.ids),
            q.vectors,
            origin="computed",
        )
    return out


def test_ground_truth(gt: GroundTruth, query_ids: np.ndarray, test: str) -> GroundTruth:
    """The ground truth restricted to one test's queries (its own positives and distractors)."""
    keep = np.isin(gt.positive_queries, query_ids)
    return GroundTruth(
        f"{gt.source} [{test}]",
        np.asarray(query_ids),
        gt.positive_queries[keep],
        gt.positive_references[keep],
    )


def score_submissions(
    spark: SparkSession, pairs, gt: GroundTruth, gt_of: dict[int, GroundTruth], phases: Phases
) -> dict[int, MatchingMetrics]:
    """Every (method, test) through the one scorer at once, each with its own ground truth;
    the pairs come from our own search, so they are trusted."""
    scoring = Scoring(
        gt, DEFAULT_CURVE_POINTS, ground_truths=gt_of, read_detail="kNN pairs of every test"
    )
    return score(spark, pairs, sorted(gt_of), scoring, phases).metrics


@dataclass(frozen=True)
class _Setup:
    """The bench as every method's pass uses it: its queries (reference_id "" for a
    distractor), the row of each one's original (-1 for a distractor), its tests, the
    library's layout and the query partitions."""

    bench: bench_folder.Bench
    q: pd.DataFrame
    original: np.ndarray
    tests: list[str]
    lay: Layout
    partitions: int


def run(spark: SparkSession, job: RankJob) -> dict:
    phases = Phases()
    bench = bench_folder.read(job.bench)
    # the bench's ground truth resolved once, here at the track's entry (no Choice)
    truth = resolve.resolve(str(bench.ground_truth), "csv")
    gt = ground_truth_phase(fs.SparkFiles(spark), truth, phases)
    setup = _prepare(spark, job, bench)

    with staged_output(job.output, job.overwrite) as stage:
        computed = _describe(spark, job, setup, phases)
        results, rank_tables, gt_of, method_info = [], [], {}, []
        for m_index, text in enumerate(job.methods):
            first = m_index * len(setup.tests)  # its tests are the submissions first, first + 1...
            result, ranked, info = _rank_method(
                spark, job, setup, text, first, computed, stage, phases
            )
            rank_tables.append(ranked.assign(method=info["method"]))
            results.append(result)
            method_info.append(info)
            for t, test in enumerate(setup.tests):
                gt_of[first + t] = test_ground_truth(
                    gt, setup.q.query_id[setup.q.test == test].to_numpy(), test
                )
        pairs = union_all([rank_plan.pairs_of(r) for r in results])
        metrics = score_submissions(spark, pairs, gt, gt_of, phases)
        names = [parse_method(t)[0] for t in job.methods]
        resampling = Resampling(job.resamples, seed=job.seed)
        grouped = rank_groups.by_group(
            spark, pairs, len(setup.tests), names, gt, bench.folder, resampling, phases
        )
        for r in results:
            r.unpersist()
        with phases.phase("report"):
            micro = {
                (names[sub // len(setup.tests)], setup.tests[sub % len(setup.tests)]): m
                for sub, m in metrics.items()
            }
            document = rank_report.write(
                stage,
                setup.q,
                pd.concat(rank_tables, ignore_index=True),
                micro,
                method_info,
                setup.lay,
                job,
                bench,
                grouped,
            )
        # the run record, as metrics.json and leaderboard.json carry it
        document["run"] = record.current().document()
        (stage / "rank_eval.json").write_text(json.dumps(document, indent=2) + "\n")
    document["seconds"] = phases.seconds
    return document


def _prepare(spark: SparkSession, job: RankJob, bench: bench_folder.Bench) -> _Setup:
    """The bench's tests, queries and layout, checked against the job before anything runs."""
    tests = [t["name"] for t in bench.settings["tests"]]
    q, original = _bench_queries(bench)
    n_refs = len(bench.references)
    _check_layout(job, n_refs, original)
    lay = layout(n_refs, original, job.subsets, tuple(job.sizes), job.seed)
    partitions = job.query_partitions or 2 * spark.sparkContext.defaultParallelism
    return _Setup(bench, q, original, tests, lay, partitions)


def _describe(
    spark: SparkSession, job: RankJob, setup: _Setup, phases: Phases
) -> dict[str, vectors.MethodVectors]:
    """The describe phase: the vectors of every method not read from a folder, in one pass."""
    with phases.phase("describe") as note:
        to_compute = [parse_method(t)[0] for t in job.methods if not parse_method(t)[1]]
        computed = (
            compute_vectors(spark, to_compute, setup.bench, job.query_partitions)
            if to_compute
            else {}
        )
        note.update(
            rows=len(setup.bench.references) + len(setup.q), detail=", ".join(to_compute) or "none"
        )
    return computed


def _rank_method(
    spark: SparkSession,
    job: RankJob,
    setup: _Setup,
    text: str,
    first: int,
    computed: dict[str, vectors.MethodVectors],
    stage: Path,
    phases: Phases,
) -> tuple:
    """One method's phase: its vectors (read from its folder, or computed; kept if asked),
    then the rank pass of its tests as submissions first, first + 1...; the pass's result,
    its ranks under the ties rule, and the method's entry of the report."""
    name, folder = parse_method(text)
    with phases.phase(f"{name}") as note:
        vec = vectors.read_vectors(name, folder, setup.bench) if folder else computed[name]
        vec.metric = job.distances.get(name, vec.metric)
        vectors.check_distance(vec)
        if job.keep_descriptors and not folder:
            vectors.keep_vectors(stage / "descriptors" / name.replace(":", "_"), vec, setup.bench)
        result = rank_plan.rank_pass(
            spark,
            _rank_table(setup.q, setup.original, setup.tests, first),
            *vectors.in_bench_order(vec, setup.q, setup.bench),
            vec.metric,
            setup.lay,
            job.knn,
            setup.partitions,
        )
        ranked = _subset_ranks(
            _apply_ties(rank_plan.ranks_of(result), job.ties), setup.q, setup.original, setup.lay
        )
        note.update(rows=len(ranked), detail=f"{vec.metric}, {vec.xb.shape[1]} dims, {vec.origin}")
    info = {
        "method": name,
        "metric": vec.metric,
        "dim": int(vec.xb.shape[1]),
        "reference": vec.reference,
        "vectors": vec.origin,
    }
    return result, ranked, info


def _bench_queries(bench: bench_folder.Bench) -> tuple[pd.DataFrame, np.ndarray]:
    """The bench's queries (reference_id "" for a distractor) and the row of each one's
    original in references.parquet (-1 for a distractor)."""
    ref_index = {r: i for i, r in enumerate(bench.references.reference_id)}
    q = bench.queries.assign(reference_id=bench.queries.reference_id.fillna("").astype(str))
    original = np.array([ref_index.get(r, -1) if r else -1 for r in q.reference_id], dtype=np.int64)
    if any(r and r not in ref_index for r in q.reference_id):
        raise InputError(
            str(bench.folder / "queries.parquet"),
            "a query names a reference that is not in references.parquet",
        )
    return q, original


def _rank_table(
    q: pd.DataFrame, original: np.ndarray, tests: list[str], first: int
) -> pd.DataFrame:
    """submission (first + the test's index), query_id, original: the rank pass's queries."""
    test_index = {t: i for i, t in enumerate(tests)}
    return pd.DataFrame(
        {
            "submission": first + q.test.map(test_index).to_numpy(),
            "query_id": q.query_id.astype(str),
            "original": original,
        }
    )


def _subset_ranks(
    ranked: pd.DataFrame, q: pd.DataFrame, original: np.ndarray, lay: Layout
) -> pd.DataFrame:
    """Each query is ranked within the subset holding its original (-1: a distractor)."""
    orig = ranked.query_id.map(dict(zip(q.query_id, original))).to_numpy()
    ranked["subset"] = np.where(orig >= 0, lay.subset[np.maximum(orig, 0)], -1)
    return ranked


def _apply_ties(ranked: pd.DataFrame, ties: str) -> pd.DataFrame:
    """The ranks under the ties rule; the pessimistic rank and the strictly better count kept."""
    out = ranked.assign(rank_pessimistic=ranked["rank"])
    out["rank"] = tied_rank(ranked["rank"].to_numpy(), ranked["better"].to_numpy(), ties)
    out["rank_in_subset"] = tied_rank(
        ranked.rank_in_subset.to_numpy(), ranked.better_in_subset.to_numpy(), ties
    )
    out["rank_by_size"] = [
        list(tied_rank(np.asarray(a), np.asarray(b), ties))
        for a, b in zip(ranked.rank_by_size, ranked.better_by_size)
    ]
    return out.drop(columns=["better_in_subset", "better_by_size"])


def _check_layout(job: RankJob, n_refs: int, original: np.ndarray) -> None:
    n_orig = len(np.unique(original[original >= 0]))
    if not 1 <= job.subsets <= n_refs:
        raise InputError("--subsets", f"must be between 1 and the {n_refs:,} references")
    for size in job.sizes:
        if not n_orig <= size <= n_refs:
            raise InputError(
                "--sizes",
                f"{size:,} is outside {n_orig:,}..{n_refs:,} (every size holds the "
                f"{n_orig:,} originals of the queries; the bench has {n_refs:,} references)",
            )
    if job.knn < 1:
        raise InputError("--knn", "must be at least 1")
    if job.ties not in TIES:
        raise InputError("--ties", f"'{job.ties}' is not one of {', '.join(TIES)}")
