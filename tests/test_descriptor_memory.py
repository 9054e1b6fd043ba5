"""The descriptor track on a reference set larger than the driver's heap could hold as
one broadcast copy, with default settings: the flat index travels as files the workers
memory-map, never through the JVM (issue 21). Scaled down for CI: a 512m driver and
488 MiB of references stand for the default 1g driver and DISC21's 977 MiB."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from disc21spark.core.fs import LocalFiles
from disc21spark.descriptors import spec as S
from disc21spark.matching.ground_truth import load_ground_truth
from disc21spark.matching.oracle import spec as matching_spec
from disc21spark.resolve import resolve
from disc21spark.testing.synth import write_hdf5_descriptors
from tests.conftest import run_evaluate, spark_submit

N_REFERENCES, DIM, N_QUERIES, K = 1_000_000, 128, 300, 3


def _descriptors(root):
    """Random references; half the queries are noisy copies of one of them."""
    rng = np.random.default_rng(21)
    xb = rng.standard_normal((N_REFERENCES, DIM), dtype=np.float32)
    rids = np.array([f"R{i:07d}" for i in range(N_REFERENCES)], dtype=object)
    source = rng.choice(N_REFERENCES, N_QUERIES, replace=False)
    xq = xb[source] + rng.standard_normal((N_QUERIES, DIM), dtype=np.float32)
    xq[N_QUERIES // 2 :] = rng.standard_normal((N_QUERIES - N_QUERIES // 2, DIM))
    qids = np.array([f"Q{i:05d}" for i in range(N_QUERIES)], dtype=object)
    truth = np.where(np.arange(N_QUERIES) < N_QUERIES // 2, rids[source], "")
    pd.DataFrame({"query_id": qids, "reference_id": truth}).to_csv(root / "gt.csv", index=False)
    write_hdf5_descriptors(root / "q.h5", qids, xq)
    write_hdf5_descriptors(root / "r.h5", rids, xb)
    return qids, xq, rids, xb


def test_references_above_one_broadcast_copy_run_with_default_settings(tmp_path):
    qids, xq, rids, xb = _descriptors(tmp_path)
    assert xb.nbytes > 480 * 2**20  # above what the 512m driver held as one broadcast
    proc = run_evaluate(
        spark_submit("--conf", "spark.driver.memory=512m"),
        "--ground-truth",
        str(tmp_path / "gt.csv"),
        "--query-descriptors",
        str(tmp_path / "q.h5"),
        "--reference-descriptors",
        str(tmp_path / "r.h5"),
        "--knn",
        str(K),
        "--output",
        str(tmp_path / "out"),
        "--write-predictions",
        "--quiet",
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    # the specification: exact kNN in one process, then the matching track's numpy scorer
    s = S.flat_searcher(xb, "l2", S.reference_order(rids.astype(str)), S.largest_norm(xb))
    p = S.knn(s, xq, K)
    expected = set(zip(qids[p.query], rids[p.reference], p.score.tolist()))
    got = pd.read_csv(
        tmp_path / "out" / "predictions.csv",
        dtype={"reference_id": str},
        float_precision="round_trip",
    )
    assert set(zip(got["query_id"], got["reference_id"], got["score"].tolist())) == expected
    gt = load_ground_truth(LocalFiles(), resolve(str(tmp_path / "gt.csv")))
    metrics = matching_spec.evaluate(qids[p.query], rids[p.reference], p.score, gt)
    doc = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert doc["micro_ap"] == metrics.micro_ap and doc["micro_ap"] > 0.5
    assert doc["recall_at_rank1"] == metrics.recall_at_rank1
    assert doc["run"]["index_transport"] == "files" and doc["run"]["broadcast_bytes"] == 0
