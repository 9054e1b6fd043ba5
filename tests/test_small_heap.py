"""The distributed plan in a heap smaller than the rows: nothing it keeps in memory grows
with them (the rows are cached on disk, the driver gets counts), so a file whose
compact rows could not fit in the driver's heap is scored to the end, exactly."""

from __future__ import annotations

import json
import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from disc21spark.testing.synth import read_ground_truth_csv
from tests.conftest import DEV_GT, run_evaluate, spark_submit

# compact rows in Spark's row format take 56 bytes each (8 bytes of null bits, then six
# fields of 8: submission, query index, label, score, pair hash, bad flag): 4M rows are
# 224 MB, past a 200 MB heap, whose share for execution and storage is far smaller
ROWS = 4_000_000
HEAP = "200m"


def write_submission(path, rows: int) -> None:
    """A DISC21-shaped file: every positive pair (with a random score), then distinct
    non-matching pairs of random queries (no repeat: each reference id is its row's)."""
    table = read_ground_truth_csv(DEV_GT)
    rng = np.random.default_rng(11)
    positives = table[table["reference_id"] != ""]
    queries = table["query_id"].unique()
    n = rows - len(positives)
    columns = {
        "query_id": np.concatenate([positives["query_id"], rng.choice(queries, n)]),
        "reference_id": np.concatenate(
            [positives["reference_id"], np.char.add("X", np.arange(n).astype(str))]
        ),
        "score": np.round(rng.random(rows), 4),
    }
    # no quotes, as a scorer writes it (Arrow would quote the header's names)
    path.write_text("query_id,reference_id,score\n")
    options = pacsv.WriteOptions(include_header=False, quoting_style="none")
    with open(path, "ab") as out:
        pacsv.write_csv(pa.table(columns), out, options)


def test_a_file_past_the_driver_heap_is_scored_exactly_to_the_end(tmp_path):
    data = tmp_path / "big.csv"
    write_submission(data, ROWS)
    common = ["--ground-truth", str(DEV_GT), "--predictions", str(data), "--overwrite"]
    figures = ["--resamples", "0", "--max-results", "0", "--quiet"]
    # Spark refuses a heap under 450 MB unless told to reserve none of it for itself
    small = spark_submit(
        "--master", "local[2]", "--driver-memory", HEAP, "--conf", "spark.testing.reservedMemory=0"
    )
    spark = run_evaluate(
        small, *common, *figures, "--engine", "spark", "--output", str(tmp_path / "spark")
    )
    assert spark.returncode == 0, spark.stdout[-3000:] + spark.stderr[-3000:]
    local = run_evaluate(
        [sys.executable],
        *common,
        *figures,
        "--engine",
        "local",
        "--output",
        str(tmp_path / "local"),
    )
    assert local.returncode == 0, local.stderr[-3000:]
    got, expected = (
        json.loads((tmp_path / d / "metrics.json").read_text()) for d in ("spark", "local")
    )
    assert got["run"]["engine"] == "spark" and got["n_predictions"] == ROWS
    for figure in ("micro_ap", "micro_ap_optimistic", "recall_at_p90", "recall_at_rank1"):
        assert got[figure] == expected[figure], figure
