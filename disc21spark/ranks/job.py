"""rank_eval: Howe's rank of the original and DISC21's μAP, per test and per method, for a
benchmark folder written by make_queries.

read the bench → describe (or read) each method's vectors → one broadcast pass per method
(exact ranks + kNN pairs) → one scoring plan for every (method, test) → tables and report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql import SparkSession

from disc21spark.core.errors import InputError
from disc21spark.core.output import check_writable, staged_output
from disc21spark.core.phases import Phases
from disc21spark.matching import labels
from disc21spark.matching import plan as scoring
from disc21spark.matching.job import ground_truth_phase
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.spec import DEFAULT_CURVE_POINTS
from disc21spark.queries import bench_folder as benchset
from disc21spark.ranks import extract_job as extract
from disc21spark.ranks import methods as features
from disc21spark.ranks import plan as rank_plan
from disc21spark.ranks import report as rank_report
from disc21spark.ranks.spec import layout


@dataclass(frozen=True)
class RankJob:
    bench: str
    methods: list[str]  # "colorhist" or "name=folder" (a folder written by extract --bench)
    output: str
    knn: int = 10
    subsets: int = 1
    sizes: tuple[int, ...] = ()
    seed: int = 0
    resamples: int = 1000
    partitions: int | None = None
    overwrite: bool = False
    keep_descriptors: bool = True


@dataclass
class MethodVectors:
    name: str
    metric: str
    reference: str
    ref_ids: np.ndarray
    xb: np.ndarray
    query_ids: np.ndarray
    xq: np.ndarray
    origin: str  # "computed" or the folder read
    extra: dict = field(default_factory=dict)


def parse_method(text: str) -> tuple[str, str | None]:
    name, sep, folder = text.partition("=")
    return name.strip(), (folder.strip() if sep else None)


def read_vectors(name: str, folder: str, bench: benchset.Bench) -> MethodVectors:
    """Vectors written by extract_descriptors --bench, checked against the bench's ids."""
    import h5py

    root = Path(folder)
    meta_path = root / "descriptors.json"
    if not meta_path.is_file():
        raise InputError(str(root), "descriptors.json is missing: not a folder written by extract_descriptors --bench")
    meta = json.loads(meta_path.read_text())
    sides = {}
    for side in ("references", "queries"):
        path = root / f"{side}.h5"
        try:
            with h5py.File(path, "r") as f:
                ids = np.array([x.decode() if isinstance(x, bytes) else str(x) for x in f["image_names"][:]])
                sides[side] = (ids, np.asarray(f["vectors"][:], dtype=np.float32))
        except (OSError, KeyError) as exc:
            raise InputError(str(path), f"cannot be read as descriptors ({exc})") from None
        if not np.isfinite(sides[side][1]).all():
            raise InputError(str(path), "holds NaN or infinite values")
    for side, expected in (("references", bench.references.reference_id), ("queries", bench.queries.query_id)):
        _same_ids(root / f"{side}.h5", sides[side][0], np.asarray(expected, dtype=str))
    if sides["references"][1].shape[1] != sides["queries"][1].shape[1]:
        raise InputError(str(root), "queries and references have different dimensions")
    return MethodVectors(name, meta.get("metric", "l2"), meta.get("reference", ""),
                         *sides["references"], *sides["queries"], origin=str(root))  # fmt: skip


def _same_ids(path: Path, found: np.ndarray, expected: np.ndarray) -> None:
    missing = np.setdiff1d(expected, found)
    extra = np.setdiff1d(found, expected)
    if len(missing) or len(extra) or len(found) != len(expected):
        detail = []
        if len(missing):
            detail.append(f"{len(missing)} bench ids have no vector (first {missing[0]})")
        if len(extra):
            detail.append(f"{len(extra)} ids are not in the bench (first {extra[0]})")
        if not detail:
            detail.append("an id is repeated")
        raise InputError(str(path), f"ids do not match the bench: {'; '.join(detail)}")


def compute_vectors(
    spark: SparkSession, names: list[str], bench: benchset.Bench, partitions: int | None
) -> dict[str, MethodVectors]:
    """Every method's vectors in one pass over the bench's images (each decoded once)."""
    out = {}
    for name, sides in extract.describe_bench(spark, bench, names, partitions).items():
        method = features.method(name)
        r, q = sides["references"], sides["queries"]
        out[name] = MethodVectors(name, method.metric, method.reference, np.asarray(r.ids),
                                  r.vectors, np.asarray(q.ids), q.vectors, origin="computed")  # fmt: skip
    return out


def test_ground_truth(gt: GroundTruth, query_ids: np.ndarray, test: str) -> GroundTruth:
    """The ground truth restricted to one test's queries (its own positives and distractors)."""
    keep = np.isin(gt.positive_queries, query_ids)
    return GroundTruth(f"{gt.source} [{test}]", np.asarray(query_ids), gt.positive_queries[keep],
                       gt.positive_references[keep])  # fmt: skip


def score_submissions(
    spark: SparkSession, pairs, gt: GroundTruth, gt_of: dict[int, GroundTruth], phases: Phases
) -> dict[int, MatchingMetrics]:
    """Every (method, test) through the scorer's plan at once, each with its own ground truth."""
    queries = labels.ground_truth_frame(spark, gt)
    with phases.phase("label") as note:
        labelled = labels.label(pairs.withColumnRenamed("submission", labels.SUBMISSION), queries)
        rows = labels.compact(labelled).persist()
        censuses = scoring.census(rows)
        for sub in gt_of:
            censuses.setdefault(sub, scoring.EMPTY_CENSUS)
        stats = scoring.query_stats(censuses, labelled)
        note["rows"] = sum(s.n_predictions for s in stats.values())
    try:
        partitions = scoring.default_partitions(
            sum(s.n_predictions for s in stats.values()), spark.sparkContext.defaultParallelism
        )
        return scoring.score_rows(
            rows, gt, partitions, DEFAULT_CURVE_POINTS, stats,
            {i: c.ranks for i, c in censuses.items()}, phases, gt_of=gt_of,
        )  # fmt: skip
    finally:
        rows.unpersist()


def run(spark: SparkSession, job: RankJob) -> dict:
    phases = Phases()
    bench = benchset.read(job.bench)
    gt = ground_truth_phase(spark, str(bench.ground_truth), "csv", phases)
    tests = [t["name"] for t in bench.settings["tests"]]
    n_refs = len(bench.references)
    ref_index = {r: i for i, r in enumerate(bench.references.reference_id)}
    q = bench.queries.assign(reference_id=bench.queries.reference_id.fillna("").astype(str))
    original = np.array([ref_index.get(r, -1) if r else -1 for r in q.reference_id], dtype=np.int64)
    if any(r and r not in ref_index for r in q.reference_id):
        raise InputError(str(bench.folder / "queries.parquet"), "a query names a reference that is not in references.parquet")
    _check_layout(job, n_refs, original)
    lay = layout(n_refs, original, job.subsets, tuple(job.sizes), job.seed)
    test_index = {t: i for i, t in enumerate(tests)}
    partitions = job.partitions or 2 * spark.sparkContext.defaultParallelism

    with staged_output(job.output, job.overwrite) as stage:
        with phases.phase("describe") as note:
            to_compute = [parse_method(t)[0] for t in job.methods if not parse_method(t)[1]]
            computed = compute_vectors(spark, to_compute, bench, job.partitions) if to_compute else {}
            note.update(rows=len(bench.references) + len(q), detail=", ".join(to_compute) or "none")
        results, rank_tables, gt_of, method_info = [], [], {}, []
        for m_index, text in enumerate(job.methods):
            name, folder = parse_method(text)
            with phases.phase(f"{name}") as note:
                vec = read_vectors(name, folder, bench) if folder else computed[name]
                if job.keep_descriptors and not folder:
                    target = stage / "descriptors" / name.replace(":", "_")
                    target.mkdir(parents=True)
                    about = {"method": name, "metric": vec.metric, "dim": int(vec.xb.shape[1]),
                             "reference": vec.reference}  # fmt: skip
                    sides = {
                        "references": extract.Described(list(vec.ref_ids), vec.xb, []),
                        "queries": extract.Described(list(vec.query_ids), vec.xq, []),
                    }
                    extract.write_set(target, about, bench, sides)
                # vectors in the bench's row order
                rpos = pd.Index(vec.ref_ids).get_indexer(bench.references.reference_id.astype(str))
                qpos = pd.Index(vec.query_ids).get_indexer(q.query_id.astype(str))
                table = pd.DataFrame({
                    "submission": m_index * len(tests) + q.test.map(test_index).to_numpy(),
                    "query_id": q.query_id.astype(str), "original": original,
                })  # fmt: skip
                result = rank_plan.rank_pass(
                    spark, table, vec.xq[qpos], np.asarray(bench.references.reference_id, dtype=str),
                    vec.xb[rpos], vec.metric, lay, job.knn, partitions,
                )  # fmt: skip
                ranked = rank_plan.ranks_of(result)
                # each query is ranked within the subset holding its original
                orig = ranked.query_id.map(dict(zip(q.query_id, original))).to_numpy()
                ranked["subset"] = np.where(orig >= 0, lay.subset[np.maximum(orig, 0)], -1)
                note.update(rows=len(ranked), detail=f"{vec.metric}, {vec.xb.shape[1]} dims, {vec.origin}")
            rank_tables.append(ranked.assign(method=name))
            results.append(result)
            method_info.append({"method": name, "metric": vec.metric, "dim": int(vec.xb.shape[1]),
                                "reference": vec.reference, "vectors": vec.origin})  # fmt: skip
            for t, test in enumerate(tests):
                gt_of[m_index * len(tests) + t] = test_ground_truth(gt, q.query_id[q.test == test].to_numpy(), test)
        pairs = results[0].transform(rank_plan.pairs_of)
        for r in results[1:]:
            pairs = pairs.unionByName(rank_plan.pairs_of(r))
        metrics = score_submissions(spark, pairs, gt, gt_of, phases)
        for r in results:
            r.unpersist()
        with phases.phase("report"):
            names = [parse_method(t)[0] for t in job.methods]
            micro = {
                (names[sub // len(tests)], tests[sub % len(tests)]): m for sub, m in metrics.items()
            }
            document = rank_report.write(
                stage, q, pd.concat(rank_tables, ignore_index=True), micro, method_info, lay, job,
                bench,
            )  # fmt: skip
    document["seconds"] = phases.seconds
    return document


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


def rank_cli(args) -> dict:
    """jobs/rank_eval.py's call."""
    from disc21spark.core.session import spark_session

    methods = [m.strip() for m in args.descriptors.split(",") if m.strip()]
    if not methods:
        raise InputError("--descriptors", "give at least one method")
    names = [parse_method(m)[0] for m in methods]
    if len(set(names)) != len(names):
        raise InputError("--descriptors", f"a method is named twice ({', '.join(names)})")
    for text in methods:
        name, folder = parse_method(text)
        if not folder:
            features.method(name)  # an unknown method fails before Spark starts
    benchset.read(args.bench)
    check_writable(args.output, args.overwrite)
    job = RankJob(
        bench=args.bench, methods=methods, output=args.output, knn=args.knn,
        subsets=args.subsets, sizes=tuple(args.sizes), seed=args.seed,
        resamples=args.resamples, partitions=args.partitions, overwrite=args.overwrite,
    )  # fmt: skip
    spark = spark_session(args.profile, args.master, debug=args.debug)
    document = run(spark, job)
    print(rank_report.stdout_table(document))
    print(f"report in {args.output}/ (report.md, summary.csv, ranks.parquet, plots)")
    return document

