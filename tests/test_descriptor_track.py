"""The descriptor track on Spark: pairs equal the single-machine specification, planted
copies score as they should, and every bad descriptor file gets one clear line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from disc21spark.core.errors import InputError
from disc21spark.core.phases import Phases
from disc21spark.descriptors import job as D
from disc21spark.descriptors import spec as S
from disc21spark.matching.job import MatchingJob
from disc21spark.matching.job import run as run_matching
from disc21spark.testing.synth import read_ground_truth_csv, write_descriptor_set
from tests.helpers import watch_census_slices


def job_for(small, **kw) -> D.DescriptorJob:
    root = small["root"]
    base = D.DescriptorJob(
        ground_truth=str(root / "gt.csv"),
        query_descriptors=[str(root / "q*.h5")],
        reference_descriptors=[str(root / "r1.h5"), str(root / "r2.npy")],
        output=None,
    )
    return replace(base, **kw)


def spec_pairs(small, job: D.DescriptorJob) -> set:
    xq, xb, qids, rids = small["xq"], small["xb"], small["qids"], small["rids"]
    ranks = S.reference_order(rids.astype(str))
    shift = None
    if job.score_norm_descriptors:
        bg = S.searcher(
            S.serialize(S.filled(S.build_index("Flat", job.distance, small["bg"]), small["bg"])),
            job.distance,
            np.arange(len(small["bg"])),
        )
        a, b = job.score_norm_neighbors
        shift = S.offsets(bg, xq, a, b, job.score_norm_weight)
    full = S.brute_force_pairs(xq, xb, job.distance, shift)
    if job.knn is not None:
        nq, nb = full.shape
        best = np.lexsort((np.broadcast_to(ranks, (nq, nb)), -full), axis=1)[:, : job.knn]
        qi = np.repeat(np.arange(nq), best.shape[1])
        ri = best.ravel()
    else:
        qi, ri = np.meshgrid(np.arange(full.shape[0]), np.arange(full.shape[1]), indexing="ij")
        qi, ri = qi.ravel(), ri.ravel()
        keep = S.cut_ties(full[qi, ri], qids[qi], ranks[ri], job.max_results)
        qi, ri = qi[keep], ri[keep]
    return {(qids[q], rids[r], float(full[q, r])) for q, r in zip(qi, ri)}


CASES = [
    dict(knn=5, distance="l2", query_partitions=1),
    dict(knn=7, distance="ip", query_partitions=3, broadcast_limit=4000, block_rows=30),
    dict(knn=None, max_results=700, distance="l2", query_partitions=4),
    dict(knn=None, max_results=300, distance="l2", query_partitions=2, block_rows=25),
    dict(knn=None, max_results=700, distance="ip", query_partitions=2, broadcast_limit=3000),
    dict(
        knn=None,
        max_results=500,
        distance="l2",
        query_partitions=3,
        broadcast_limit=5000,
        score_norm_weight=0.5,
        score_norm_neighbors=(2, 4),
    ),
    dict(
        knn=4, distance="ip", query_partitions=2, score_norm_weight=1.0, score_norm_neighbors=(1, 3)
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_spark_pairs_equal_the_specification(spark, small, case):
    case = dict(case)
    if "score_norm_weight" in case:
        case["score_norm_descriptors"] = [str(small["root"] / "bg.h5")]
    job = job_for(small, **case)
    outcome = D.search_pairs(spark, job, Phases())
    try:
        got = {(r.query_id, r.reference_id, r.score) for r in outcome.pairs.collect()}
        if "broadcast_limit" in case:
            assert outcome.shards > 1
        assert got == spec_pairs(small, job)
    finally:
        outcome.release()


def test_the_search_counts_bound_the_rows_the_scoring_reads(spark, small, monkeypatch):
    """The searched pairs' count reaches the scoring as a bound on a budget's rows (each
    budget is a cut of them): the census takes its slices from it, and no job counts
    the most rows of a query first."""
    bounds, counted = watch_census_slices(monkeypatch)
    scores = D.evaluate(spark, job_for(small, knn=3))
    # kNN 3 and no budgets: the budget scored is every pair searched
    assert bounds == [scores.metrics.n_predictions] and bounds[0] > 0 and not counted


def test_descriptor_files_named_by_uris_are_read_through_hadoop_and_shipped(spark, small):
    """file: URIs (as any URI): copied to the driver through Hadoop and sent to the
    executors with addFile; the pairs are the same, a glob and a .npy's ids file too."""
    root = small["root"]
    job = job_for(
        small,
        knn=5,
        query_partitions=3,
        query_descriptors=[(root / "q1.h5").as_uri(), f"{root.as_uri()}/q2*.h5"],
        reference_descriptors=[(root / "r1.h5").as_uri(), (root / "r2.npy").as_uri()],
    )
    outcome = D.search_pairs(spark, job, Phases())
    try:
        got = {(r.query_id, r.reference_id, r.score) for r in outcome.pairs.collect()}
        assert got == spec_pairs(small, job)
    finally:
        outcome.release()
    missing = job_for(small, reference_descriptors=[(root / "none.h5").as_uri()])
    with pytest.raises(InputError, match="none.h5: no such file or directory"):
        D.search_pairs(spark, missing, Phases())


def test_parquet_descriptors_give_the_same_pairs(spark, small, tmp_path):
    xq, xb, qids, rids = small["xq"], small["xb"], small["qids"], small["rids"]
    pd.DataFrame({"image_id": qids, "descriptor": list(xq.astype(np.float64))}).to_parquet(
        tmp_path / "q.parquet"
    )
    pd.DataFrame({"id": rids, "vector": list(xb)}).to_parquet(tmp_path / "r.parquet")
    job = job_for(
        small,
        knn=None,
        max_results=600,
        query_descriptors=[str(tmp_path / "q.parquet")],
        reference_descriptors=[str(tmp_path / "r.parquet")],
    )
    outcome = D.search_pairs(spark, job, Phases())
    try:
        got = {(r.query_id, r.reference_id, r.score) for r in outcome.pairs.collect()}
    finally:
        outcome.release()
    assert got == spec_pairs(small, job)


@pytest.fixture(scope="module")
def planted_gt(tmp_path_factory, dev_gt_path):
    gt = read_ground_truth_csv(dev_gt_path).iloc[:3000]
    path = tmp_path_factory.mktemp("planted") / "gt.csv"
    gt.to_csv(path, index=False)
    return gt, path


def test_planted_copies_score_near_one_and_fall_with_noise(spark, planted_gt, tmp_path):
    gt, gt_path = planted_gt
    scores = []
    for noise in (0.3, 1.2, 2.0):
        q, r = write_descriptor_set(gt, tmp_path / f"n{noise}", 4000, 32, noise, seed=1)
        job = D.DescriptorJob(str(gt_path), [str(q)], [str(r)], None, max_results=30_000)
        scores.append(D.run(spark, job).micro_ap)
    assert scores[0] > 0.99
    assert scores[0] > scores[1] > scores[2]


def test_written_predictions_rescore_to_the_same_metrics(spark, planted_gt, tmp_path):
    gt, gt_path = planted_gt
    q, r = write_descriptor_set(gt, tmp_path / "set", 4000, 16, 1.0, seed=2)
    out = tmp_path / "out"
    job = D.DescriptorJob(str(gt_path), [str(q)], [str(r)], str(out), knn=3, write_predictions=True)
    m = D.run(spark, job)
    doc = json.loads((out / "metrics.json").read_text())
    assert doc["micro_ap"] == m.micro_ap and doc["run"]["search"] == "knn 3"
    assert (out / "pr_curve.png").exists()
    preds = pd.read_csv(out / "predictions.csv")
    assert len(preds) == 3 * len(gt)
    again = run_matching(
        spark, MatchingJob(str(gt_path), str(out / "predictions.csv"), None, max_results=0)
    )
    assert again.to_dict() == m.to_dict()


def h5(path: Path, **datasets) -> str:
    with h5py.File(path, "w") as f:
        for name, value in datasets.items():
            f.create_dataset(name, data=value)
    return str(path)


def names(n: int, prefix: str = "Q") -> np.ndarray:
    return np.array([f"{prefix}{i}".encode() for i in range(n)])


BAD = {
    "missing dataset": (
        lambda p: h5(p, vectors=np.zeros((3, 4), np.float32)),
        "query",
        "missing HDF5 dataset 'image_names'",
    ),
    "lengths differ": (
        lambda p: h5(p, vectors=np.zeros((3, 4), np.float32), image_names=names(2)),
        "query",
        "2 image_names for 3 vectors",
    ),
    "dimensions differ": (
        lambda p: h5(p, vectors=np.zeros((3, 5), np.float32), image_names=names(3)),
        "query",
        "query descriptors have 5 dimensions, references have 4",
    ),
    "nan query": (
        lambda p: h5(
            p,
            vectors=np.array([[0, 0, 0, 0], [1, np.nan, 0, 0], [np.inf, 0, 0, 0]], np.float32),
            image_names=names(3),
        ),
        "query",
        "row 2 (image 'Q1'): vector has NaN or infinite values",
    ),
    "duplicate query": (
        lambda p: h5(
            p,
            vectors=np.zeros((3, 4), np.float32),
            image_names=np.array([b"Q1", b"a/Q1.jpg", b"Q2"]),
        ),
        "query",
        "image id 'Q1' appears 2 times in the query descriptors",
    ),
    "empty query side": (
        lambda p: h5(p, vectors=np.zeros((0, 4), np.float32), image_names=names(0)),
        "query",
        "the query side has no descriptors",
    ),
    "too many dimensions": (
        lambda p: h5(p, vectors=np.zeros((3, 300), np.float32), image_names=names(3, "R")),
        "reference",
        "300 dimensions, more than --max-dim 256",
    ),
    "nan reference": (
        lambda p: h5(
            p,
            vectors=np.array([[0, 0, 0, 0], [0, 0, 0, np.nan]], np.float32),
            image_names=names(2, "R"),
        ),
        "reference",
        "row 2 (image 'R1'): vector has NaN or infinite values",
    ),
    "duplicate reference": (
        lambda p: h5(p, vectors=np.zeros((2, 4), np.float32), image_names=np.array([b"R1", b"R1"])),
        "reference",
        "image id 'R1' appears 2 times in the reference descriptors",
    ),
    "empty reference side": (
        lambda p: h5(p, vectors=np.zeros((0, 4), np.float32), image_names=names(0, "R")),
        "reference",
        "the reference side has no descriptors",
    ),
    "not hdf5": (
        lambda p: (p.write_text("hello"), str(p))[1],
        "reference",
        "cannot be read as HDF5",
    ),
}


@pytest.mark.parametrize("kind", list(BAD))
def test_bad_descriptor_files_get_one_clear_line(spark, tmp_path, kind):
    make, side, message = BAD[kind]
    bad = make(tmp_path / "bad.h5")
    good_q = h5(tmp_path / "q.h5", vectors=np.zeros((3, 4), np.float32), image_names=names(3))
    good_r = h5(tmp_path / "r.h5", vectors=np.eye(4, dtype=np.float32), image_names=names(4, "R"))
    (tmp_path / "gt.csv").write_text("query_id,reference_id\nQ0,R0\nQ1,\n")
    job = D.DescriptorJob(
        str(tmp_path / "gt.csv"),
        [bad if side == "query" else good_q],
        [bad if side == "reference" else good_r],
        None,
    )
    with pytest.raises(InputError) as err:
        D.run(spark, job)
    text = str(err.value)
    assert "\n" not in text and message in text and "bad.h5" in text, text


def test_npy_without_ids_file_and_parquet_without_vectors(spark, tmp_path):
    gt = tmp_path / "gt.csv"
    gt.write_text("query_id,reference_id\nQ0,R1\n")
    np.save(tmp_path / "r.npy", np.zeros((2, 4), np.float32))
    with pytest.raises(InputError, match=r"r\.npy: needs its ids file .*r_ids\.txt"):
        D.run(spark, D.DescriptorJob(str(gt), ["q.h5"], [str(tmp_path / "r.npy")], None))
    pd.DataFrame({"id": ["R1"], "score": [1.0]}).to_parquet(tmp_path / "r.parquet")
    with pytest.raises(
        InputError, match="needs one string id column and one array<float> vector column"
    ):
        D.run(spark, D.DescriptorJob(str(gt), ["q.h5"], [str(tmp_path / "r.parquet")], None))


def test_cli_descriptor_track_bad_file_is_one_line_and_exit_2(spark, tmp_path, capsys):
    from tests.running import in_process

    (tmp_path / "gt.csv").write_text("query_id,reference_id\nQ0,R0\n")
    q = h5(tmp_path / "q.h5", vectors=np.array([[np.nan, 0]], np.float32), image_names=names(1))
    r = h5(tmp_path / "r.h5", vectors=np.eye(2, dtype=np.float32), image_names=names(2, "R"))
    argv = [
        "evaluate",
        "--ground-truth",
        str(tmp_path / "gt.csv"),
        "--query-descriptors",
        str(q),
        "--reference-descriptors",
        str(r),
        "--output",
        str(tmp_path / "out"),
        "--quiet",
    ]
    screen = in_process(argv, capsys, spark)
    assert screen.code == 2, screen.out + screen.err
    assert [x for x in screen.err.splitlines() if x.startswith("error:")] == [
        f"error: {q}: row 1 (image 'Q0'): vector has NaN or infinite values"
    ]
    assert not (tmp_path / "out").exists()


def test_codec_trained_on_background_equals_single_machine(spark, small):
    """PCA whitening + unit length learnt on the background set, searched on Spark,
    gives the pairs of the same codec applied in one process."""
    job = job_for(
        small,
        knn=3,
        distance="ip",
        index="PCAW4,L2norm,Flat",
        train_descriptors=[str(small["root"] / "bg.h5")],
        query_partitions=3,
    )
    outcome = D.search_pairs(spark, job, Phases())
    try:
        got = {(r.query_id, r.reference_id) for r in outcome.pairs.collect()}
    finally:
        outcome.release()
    empty = S.build_index("PCAW4,L2norm,Flat", "ip", small["bg"])
    s = S.searcher(
        S.serialize(S.filled(empty, small["xb"])),
        "ip",
        S.reference_order(small["rids"].astype(str)),
    )
    p = S.knn(s, small["xq"], 3)
    assert got == set(zip(small["qids"][p.query], small["rids"][p.reference]))


def test_approximate_ivf_index_with_nprobe(spark, planted_gt, tmp_path):
    gt, gt_path = planted_gt
    q, r = write_descriptor_set(gt, tmp_path / "ivf", 4000, 32, 0.3, seed=3)
    job = D.DescriptorJob(
        str(gt_path), [str(q)], [str(r)], str(tmp_path / "out"), knn=5, index="IVF32,Flat", nprobe=8
    )
    m = D.run(spark, job)
    doc = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert doc["run"]["index"] == "IVF32,Flat" and doc["run"]["nprobe"] == 8
    assert m.n_predictions == 5 * len(gt) and m.micro_ap > 0.95


def test_index_without_range_search_and_tiny_broadcast_limit(spark, small):
    with pytest.raises(InputError, match="NSG8: this index has no range search"):
        D.search_pairs(spark, job_for(small, index="NSG8", knn=None), Phases())
    with pytest.raises(InputError, match="--broadcast-limit 10: 10 bytes cannot hold even one"):
        D.search_pairs(spark, job_for(small, broadcast_limit=10), Phases())


def test_unknown_index_factory_is_one_line(spark, small):
    with pytest.raises(InputError) as err:
        D.search_pairs(spark, job_for(small, index="NotAnIndex,Flat"), Phases())
    text = str(err.value)
    assert text == (
        "--index NotAnIndex,Flat: FAISS cannot build it "
        "(could not parse index string NotAnIndex,Flat)"
    )
