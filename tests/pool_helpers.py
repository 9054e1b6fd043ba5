"""The small pool the pool, kill, signal and writer tests share: a ground truth of 40
queries (a third distractors), random submissions full of ties, and a Hadoop mount
table that names a local folder through a non-local scheme."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
import pandas as pd

from disc21spark.matching.model import GroundTruth

GT = pd.DataFrame(
    {
        "query_id": [f"Q{i}" for i in range(40)],
        "reference_id": [f"R{i}" if i % 3 else "" for i in range(40)],  # a third distractors
    }
)


def ground_truth() -> GroundTruth:
    pos = GT[GT.reference_id != ""]
    return GroundTruth(
        "gt",
        GT.query_id.to_numpy(dtype=object),
        pos.query_id.to_numpy(dtype=object),
        pos.reference_id.to_numpy(dtype=object),
    )


def random_submission(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """Pairs of known and unknown queries, true and false references, scores full of ties."""
    q = np.array([f"Q{i}" for i in rng.integers(0, 46, n)], dtype=object)  # Q40+ unknown
    r = np.array([f"R{i}" for i in rng.integers(0, 45, n)], dtype=object)
    frame = pd.DataFrame({"query_id": q, "reference_id": r, "score": rng.integers(0, 6, n) / 5})
    return frame.drop_duplicates(["query_id", "reference_id"])


def mount(spark, folder: Path) -> str:
    """``viewfs://<table>/x``: a Hadoop mount table linking /x to a local folder, a
    non-local scheme with no network (a fresh table name: Hadoop caches file systems)."""
    table = f"pool{uuid.uuid4().hex[:10]}"
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set(f"fs.viewfs.mounttable.{table}.link./x", folder.as_uri())
    return f"viewfs://{table}/x"


def published_board(
    folder: Path, sha: str = "a" * 64, board: str | None = None, teams: int = 2, edit=None
):
    """A folder as a pool run publishes it, written by hand (no Spark): every part a board
    has (_SUCCESS, run.json, leaderboard.json/.csv, pr_curves/), ``teams`` scored teams;
    ``edit(doc)`` changes leaderboard.json's content before it is written."""
    folder.mkdir(parents=True, exist_ok=True)
    run = {"ground_truth_sha256": sha, **({"board": board} if board else {})}
    figures = dict(micro_ap=0.5, recall_at_rank1=0.5, recall_at_rank10=0.5, n_predictions=4)
    figures.update(n_positives=2, n_true_positives=1, n_queries=4, n_queries_with_predictions=2)
    figures.update(n_unknown_query_predictions=0)
    subs = [
        {"rank": i + 1, "submission": f"team{i}", "status": "ok", "reason": None, **figures}
        for i in range(teams)
    ]
    doc = {"run": run, "submissions": subs}
    if edit is not None:
        edit(doc)
    (folder / "leaderboard.json").write_text(json.dumps(doc))
    (folder / "leaderboard.csv").write_text("rank,submission\n1,team0\n2,team1\n")
    (folder / "leaderboard.html").write_text("<html></html>")
    (folder / "run.json").write_text(json.dumps(run))
    (folder / "pr_curves").mkdir(exist_ok=True)
    (folder / "pr_curves" / "team0.csv").write_text("precision,recall\n")
    (folder / "_SUCCESS").write_bytes(b"")
    return folder
