"""Baseline: the package's single-process numpy specification, reading the CSV with pandas."""

from __future__ import annotations

import json
import sys

import pandas as pd

from disc21spark.matching.model import GroundTruth
from disc21spark.matching.oracle.spec import evaluate
from disc21spark.testing.synth import read_ground_truth_csv


def score_file(gt: GroundTruth, preds_path: str):
    preds = pd.read_csv(
        preds_path,
        header=None,
        names=["query_id", "reference_id", "score"],
        dtype={"query_id": str, "reference_id": str, "score": str},
        engine="pyarrow",
    )
    preds = preds[preds["query_id"] != "query_id"]
    return evaluate(
        preds["query_id"].to_numpy(object),
        preds["reference_id"].to_numpy(object),
        preds["score"].astype(float).to_numpy(),
        gt,
    )


def load_gt(gt_path: str) -> GroundTruth:
    table = read_ground_truth_csv(gt_path)
    has = table["reference_id"] != ""
    return GroundTruth(
        gt_path,
        table["query_id"].to_numpy(object),
        table.loc[has, "query_id"].to_numpy(object),
        table.loc[has, "reference_id"].to_numpy(object),
    )


def main(gt_path: str, preds_path: str) -> None:
    m = score_file(load_gt(gt_path), preds_path)
    print(
        json.dumps(
            {
                "micro_ap": m.micro_ap,
                "recall_at_p90": m.recall_at_p90,
                "recall_at_rank10": m.recall_at_rank10,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
