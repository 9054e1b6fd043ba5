"""Coverage warnings (a submission that looks misnamed): each sign on a tiny hand-made
file, the same words from the in-process engine, the Spark job and a pool, and kept in
metrics.json and the leaderboard (also when a submission is reused)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from disc21spark import engine
from disc21spark.core.phases import Phases
from disc21spark.matching import coverage
from disc21spark.matching.job import MatchingJob, score_one
from disc21spark.matching.job import run as run_matching
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.oracle.spec import evaluate
from disc21spark.pool import job as pool
from tests.helpers import score_file

GT_CSV = "query_id,reference_id\nQ0,R0\nQ1,R1\nQ2,R2\nQ3,R3\nQ4,\nQ5,\n"
GT = GroundTruth(
    "gt.csv",
    np.array([f"Q{i}" for i in range(6)], dtype=object),
    np.array(["Q0", "Q1", "Q2", "Q3"], dtype=object),
    np.array(["R0", "R1", "R2", "R3"], dtype=object),
)
UNKNOWN_3 = "100% of the predictions (3 of 3) are for queries the ground truth does not know"
UNKNOWN_2 = "100% of the predictions (2 of 2) are for queries the ground truth does not know"
NO_REFERENCE = "no predicted reference id appears in the ground truth"
# file name -> (lines, the warnings expected, by hand)
CASES = {
    "clean": (["Q0,R0,0.9", "Q1,R5,0.8", "Q4,R1,0.2"], ()),
    "query_paths": (
        ["imgs/Q0.jpg,R0,0.9", "imgs/Q1.JPG,R1,0.8", "imgs/Q2.png,R9,0.1"],
        (
            UNKNOWN_3,
            "3 predictions name a query id the ground truth knows only without its folder "
            "or image extension (e.g. 'imgs/Q0.jpg' for 'Q0'): rename the ids",
        ),
    ),
    "reference_files": (
        ["Q0,R0.jpg,0.9", "Q1,refs\\R1.jpeg,0.5", "Q2,X,0.1"],
        (
            NO_REFERENCE,
            # the example is the smallest id: 'R0.jpg' < 'refs\\R1.jpeg'
            "2 predictions name a reference id the ground truth knows only without its "
            "folder or image extension (e.g. 'R0.jpg' for 'R0'): rename the ids",
        ),
    ),
    "unrelated": (["A,B,0.5", "C,D,0.4"], (UNKNOWN_2, NO_REFERENCE)),
    # a quarter, then exactly half of the predictions for unknown queries: not "most"
    "some_unknown": (["Q0,R0,0.9", "Q1,R1,0.8", "Q2,R2,0.7", "Q9,R3,0.6"], ()),
    "half_unknown": (["Q0,R0,0.9", "Q1,R1,0.8", "Q8,R2,0.7", "Q9,R3,0.6"], ()),
}


def write_cases(folder: Path) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, (lines, _) in CASES.items():
        path = folder / f"{name}.csv"
        path.write_text("\n".join(lines) + "\n")
        paths[name] = str(path)
    return paths


def test_bare_id_as_the_isc2021_reader_reduces_names():
    assert coverage.bare_id("images/R000123.jpg") == "R000123"
    assert coverage.bare_id("a\\b\\Q1.JPEG") == "Q1"
    assert coverage.bare_id("Q1.tiff") == "Q1"
    assert coverage.bare_id("Q1.txt") == "Q1.txt"  # not an image extension: kept
    assert coverage.bare_id("Q1") == "Q1"


@pytest.mark.parametrize("name", list(CASES))
def test_each_warning_in_process(tmp_path, capsys, name):
    path = write_cases(tmp_path)[name]
    metrics = score_file(path, "auto", GT, 0, 100)
    assert metrics.warnings == CASES[name][1]
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    if CASES[name][1]:
        assert err == [f"warning: {path}: " + "; ".join(CASES[name][1])]
    else:
        assert err == []


def test_a_clean_submission_costs_no_second_look():
    clean = evaluate(np.array(["Q0", "Q1"]), np.array(["R0", "R5"]), np.array([0.9, 0.8]), GT)
    assert not coverage.needs_id_check(clean)
    no_true_pair = evaluate(np.array(["Q0"]), np.array(["R5"]), np.array([0.9]), GT)
    assert coverage.needs_id_check(no_true_pair)


def test_metrics_json_holds_the_warnings(tmp_path):
    paths = write_cases(tmp_path / "pool")
    (tmp_path / "gt.csv").write_text(GT_CSV)
    job = MatchingJob(
        str(tmp_path / "gt.csv"), paths["unrelated"], str(tmp_path / "out"), choice=engine.LOCAL
    )
    run_matching(None, job)
    doc = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert doc["warnings"] == [UNKNOWN_2, NO_REFERENCE]


def test_spark_single_file_and_pool_give_the_same_warnings(spark, tmp_path, capsys):
    paths = write_cases(tmp_path / "pool")
    gt_file = tmp_path / "gt.csv"
    gt_file.write_text(GT_CSV)
    # one file on Spark: the single-submission job's hook
    job = MatchingJob(str(gt_file), paths["query_paths"], None)
    metrics = score_one(spark, job, Phases(), GT).metrics  # as run() does
    assert metrics.warnings == CASES["query_paths"][1]
    # the pool: every case in one plan, the leaderboard keeps them
    out = tmp_path / "out"
    result = pool.run(spark, pool.PoolJob(str(gt_file), [str(tmp_path / "pool")], str(out)))
    assert {s.name: s.metrics.warnings for s in result.submissions} == {
        name: expected for name, (_, expected) in CASES.items()
    }
    err = capsys.readouterr().err
    assert f"warning: unrelated: {UNKNOWN_2}; {NO_REFERENCE}" in err.splitlines()
    rows = json.loads((out / "leaderboard.json").read_text())["submissions"]
    assert {r["submission"]: tuple(r["warnings"]) for r in rows} == {
        name: expected for name, (_, expected) in CASES.items()
    }
    # a reused submission keeps its warnings
    again = pool.run(
        spark,
        pool.PoolJob(
            str(gt_file), [str(tmp_path / "pool")], str(tmp_path / "out2"), previous=str(out)
        ),
    )
    assert all(s.reused for s in again.submissions)
    assert {s.name: s.metrics.warnings for s in again.submissions} == {
        name: expected for name, (_, expected) in CASES.items()
    }


def test_a_leaderboard_written_before_the_warnings_is_still_reused(tmp_path):
    from disc21spark.matching.model import Submission
    from disc21spark.pool import report

    metrics = score_file(write_cases(tmp_path / "pool")["unrelated"], "auto", GT, 0, 100)
    sub = Submission("unrelated", "pool/unrelated.csv", "sha", metrics=metrics)
    out = tmp_path / "out"
    out.mkdir()
    report.write(out, [sub], {"ground_truth_sha256": "a" * 64})
    doc = json.loads((out / "leaderboard.json").read_text())
    assert doc["submissions"][0]["warnings"] == [UNKNOWN_2, NO_REFERENCE]
    del doc["submissions"][0]["warnings"]  # as an older version wrote it
    (out / "leaderboard.json").write_text(json.dumps(doc))
    (old,) = report.read_previous(str(out), {"ground_truth_sha256": "a" * 64}).values()
    assert old.metrics.warnings == () and old.metrics.micro_ap == metrics.micro_ap
