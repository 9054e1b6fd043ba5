"""The matching-track job end to end: files in, files out, and every bad input."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from disc21spark.core.errors import InputError, OutputError
from disc21spark.matching.job import MatchingJob, run
from disc21spark.matching.oracle.spec import evaluate
from disc21spark.testing.synth import read_ground_truth_csv, simulate_submission
from tests.conftest import run_evaluate, spark_submit
from tests.evaluate_inputs import BAD_GROUND_TRUTH, BAD_PREDICTIONS, GT_LINES, write

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def gt_file(tmp_path) -> str:
    return write(tmp_path / "gt.csv", GT_LINES)


def job(gt, preds, out=None, **kw) -> MatchingJob:
    return MatchingJob(ground_truth=str(gt), predictions=str(preds), output=out and str(out), **kw)


def test_hand_computed_file_with_header_ties_and_distractors(spark, tmp_path, gt_file):
    preds = write(
        tmp_path / "p.csv",
        "query_id,reference_id,score\nQ1,R1,0.9\nQ3,R1,0.9\nQ2,R9,0.5\nQ2,R2,0.5\nQX,R4,0.4\n",
    )
    out = tmp_path / "out"
    m = run(spark, job(gt_file, preds, out))
    # order: Q3 miss(0.9) Q1 hit(0.9) Q2 miss(0.5) Q2 hit(0.5) QX miss → ⅓·½ + ⅓·½ = 1/3
    assert m.micro_ap == pytest.approx(1 / 3, abs=1e-15)
    assert m.recall_at_rank1 == pytest.approx(1 / 3) and m.recall_at_rank10 == pytest.approx(2 / 3)
    assert m.n_unknown_query_predictions == 1 and m.n_queries_with_predictions == 4
    doc = json.loads((out / "metrics.json").read_text())
    for key in (
        "micro_ap",
        "recall_at_p90",
        "threshold_at_p90",
        "recall_at_rank1",
        "recall_at_rank10",
        "n_predictions",
        "n_positives",
        "n_queries_with_predictions",
        "n_unknown_query_predictions",
    ):
        assert key in doc
    assert doc["recall_at_p90"] is None and doc["threshold_at_p90"] is None
    assert doc["n_positives"] == 3 and doc["n_predictions"] == 5
    curve = pd.read_csv(out / "pr_curve.csv")
    assert list(curve.columns) == ["precision", "recall", "threshold"] and len(curve) == 3
    assert (out / "pr_curve.png").read_bytes()[:4] == b"\x89PNG"


def test_csv_gzip_and_parquet_give_the_same_exact_result(spark, tmp_path, dev_gt_path):
    table = read_ground_truth_csv(dev_gt_path)
    frame = simulate_submission(table, 30_000, seed=11)
    csv_path = tmp_path / "s.csv"
    frame.to_csv(csv_path, index=False, header=False, float_format="%.17g")
    with gzip.open(tmp_path / "s.csv.gz", "wt") as fh:
        frame.to_csv(fh, index=False, float_format="%.17g")
    frame.to_parquet(tmp_path / "s.parquet", index=False)
    gt_parquet = tmp_path / "gt.parquet"
    table.replace({"reference_id": {"": None}}).to_parquet(gt_parquet, index=False)

    results = [
        run(spark, job(dev_gt_path, csv_path)),
        run(spark, job(dev_gt_path, tmp_path / "s.csv.gz", sort_partitions=3)),
        run(spark, job(gt_parquet, tmp_path / "s.parquet", sort_partitions=9)),
    ]
    has = table["reference_id"] != ""
    from disc21spark.matching.model import GroundTruth

    gt = GroundTruth(
        "dev",
        table["query_id"].to_numpy(object),
        table.loc[has, "query_id"].to_numpy(object),
        table.loc[has, "reference_id"].to_numpy(object),
    )
    spec = evaluate(
        frame["query_id"].to_numpy(),
        frame["reference_id"].to_numpy(),
        frame["score"].to_numpy(),
        gt,
    )
    for m in results:
        assert m.to_dict() == spec.to_dict()


def test_empty_predictions_score_zero(spark, tmp_path, gt_file):
    m = run(spark, job(gt_file, write(tmp_path / "p.csv", "")))
    assert m.micro_ap == 0.0 and m.n_predictions == 0 and m.recall_at_p90 is None


@pytest.mark.parametrize("text,message", BAD_PREDICTIONS)
def test_bad_predictions_get_one_line_naming_file_row_and_reason(
    spark, tmp_path, gt_file, text, message
):
    preds = write(tmp_path / "p.csv", text)
    out = tmp_path / "out"
    with pytest.raises(InputError, match=message) as info:
        run(spark, job(gt_file, preds, out))
    assert "\n" not in str(info.value)
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["gt.csv", "p.csv"]


def test_too_many_predictions(spark, tmp_path, gt_file):
    preds = write(tmp_path / "p.csv", "Q1,R1,0.9\nQ2,R2,0.8\nQ4,R4,0.7\n")
    with pytest.raises(InputError, match=r"3 predictions, more than --max-results 2"):
        run(spark, job(gt_file, preds, max_results=2))
    assert run(spark, job(gt_file, preds, max_results=0)).micro_ap == pytest.approx(1.0)


def test_unreadable_and_missing_files(spark, tmp_path, gt_file):
    (tmp_path / "p.csv.gz").write_bytes(b"this is not gzip data")
    with pytest.raises(InputError, match=r"p\.csv\.gz: cannot be read as gzip \(not gzip: "):
        run(spark, job(gt_file, tmp_path / "p.csv.gz"))
    with pytest.raises(InputError, match=r"nope\.csv: no such file or directory"):
        run(spark, job(gt_file, tmp_path / "nope.csv"))
    with pytest.raises(InputError, match=r"nope\.csv: no such file or directory"):
        run(spark, job(tmp_path / "nope.csv", gt_file))


def test_parquet_without_a_score_column(spark, tmp_path, gt_file):
    pd.DataFrame({"query_id": ["Q1"], "reference_id": ["R1"]}).to_parquet(tmp_path / "p.parquet")
    with pytest.raises(InputError, match=r"p\.parquet: missing column 'score'"):
        run(spark, job(gt_file, tmp_path / "p.parquet"))


def test_parquet_non_finite_score_names_the_row(spark, tmp_path, gt_file):
    pd.DataFrame(
        {"query_id": ["Q1", "Q2"], "reference_id": ["R1", "R2"], "score": [0.5, np.inf]}
    ).to_parquet(tmp_path / "p.parquet")
    with pytest.raises(
        InputError,
        match=r"p\.parquet: row query_id='Q2', reference_id='R2': score 'Infinity' is not finite",
    ):
        run(spark, job(gt_file, tmp_path / "p.parquet"))


@pytest.mark.parametrize("text,message", BAD_GROUND_TRUTH)
def test_bad_ground_truth(spark, tmp_path, text, message):
    gt = write(tmp_path / "gt.csv", text)
    preds = write(tmp_path / "p.csv", "Q1,R1,0.5\n")
    with pytest.raises(InputError, match=r"gt\.csv: " + message):
        run(spark, job(gt, preds, tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_existing_output_is_kept_unless_overwrite(spark, tmp_path, gt_file):
    preds = write(tmp_path / "p.csv", "Q1,R1,0.9\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("precious")
    with pytest.raises(OutputError, match="not empty"):
        run(spark, job(gt_file, preds, out))
    assert (out / "mine.txt").read_text() == "precious"
    run(spark, job(gt_file, preds, out, overwrite=True))
    assert sorted(p.name for p in out.iterdir()) == [
        "_SUCCESS",
        "metrics.json",
        "pr_curve.csv",
        "pr_curve.png",
        "run.json",
    ]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_spark_submit_end_to_end(tmp_path, dev_gt_path):
    """The command of the tutorial's step 1, with spark-submit, on a DISC21-shaped submission."""
    frame = simulate_submission(read_ground_truth_csv(dev_gt_path), 20_000, seed=5)
    frame.to_csv(tmp_path / "preds.csv", index=False)
    out = tmp_path / "out"
    proc = run_evaluate(
        spark_submit("--master", "local[2]"),
        "--ground-truth",
        str(dev_gt_path),
        "--predictions",
        str(tmp_path / "preds.csv"),
        "--output",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "μAP (micro average precision)" in proc.stdout
    # spark-submit merges the Python driver's stderr into its stdout; a file this small
    # is scored in process on the driver (engine.py), with no session started for it
    said = proc.stdout + proc.stderr
    for phase in ("read:", "validate:", "score:", "(Arrow, in process)", "no Spark session"):
        assert phase in said
    assert "count:" not in said
    doc = json.loads((out / "metrics.json").read_text())
    assert doc["n_predictions"] == len(frame) and doc["n_positives"] == 4991
    assert doc["run"]["engine"] == "local" and doc["run"]["spark_master"] is None
    assert " INFO " not in proc.stderr  # conf/log4j2.properties keeps Spark quiet


def test_cli_bad_input_is_one_line_and_exit_code_2(tmp_path, gt_file):
    preds = write(tmp_path / "p.csv", "Q1,R1,0.5\nQ1,R1,x\n")
    proc = run_evaluate(
        [sys.executable],
        "--quiet",
        "--ground-truth",
        gt_file,
        "--predictions",
        preds,
        "--output",
        str(tmp_path / "out"),
    )
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {preds}: line 2: score 'x' is not a number"]
    assert "Traceback" not in proc.stderr and "at org.apache" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_parquet_ground_truth_without_reference_column(spark, tmp_path):
    pd.DataFrame({"query_id": ["Q1"]}).to_parquet(tmp_path / "gt.parquet")
    preds = write(tmp_path / "p.csv", "Q1,R1,0.5\n")
    with pytest.raises(InputError, match=r"gt\.parquet: missing column 'reference_id'"):
        run(spark, job(tmp_path / "gt.parquet", preds))


def test_folder_without_data_files(spark, tmp_path, gt_file):
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(InputError, match=r"empty_dir: folder holds no data file"):
        run(spark, job(gt_file, tmp_path / "empty_dir"))


def test_damaged_parquet_and_text_scores_in_parquet(spark, tmp_path, gt_file):
    (tmp_path / "p.parquet").write_bytes(b"PAR1 this is not a parquet file")
    with pytest.raises(InputError, match=r"p\.parquet: cannot be read as Parquet \(not a Parquet"):
        run(spark, job(gt_file, tmp_path / "p.parquet"))
    pd.DataFrame(
        {"query_id": ["Q1", "Q2"], "reference_id": ["R1", "R2"], "score": ["0.5", "abc"]}
    ).to_parquet(tmp_path / "s.parquet")
    with pytest.raises(
        InputError,
        match=r"s\.parquet: row query_id='Q2', reference_id='R2': missing or non-numeric score",
    ):
        run(spark, job(gt_file, tmp_path / "s.parquet"))


def test_a_jobs_resampling_is_built_once_and_follows_replace():
    from dataclasses import replace

    from disc21spark.matching.stats.model import Resampling

    job = MatchingJob("gt.csv", "preds.csv", None, resamples=7, confidence=0.9, seed=3)
    assert job.resampling is job.resampling
    assert job.resampling == Resampling(7, 0.9, 3)
    grouped = replace(job, groups="groups")
    assert grouped.resampling.groups == "groups" and job.resampling.groups is None
