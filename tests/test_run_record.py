"""run.json in the output of every job, the same block in the result files, and reruns
of the same inputs and settings that are up to date."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import pytest

from disc21spark import commands
from disc21spark.testing.synth import read_ground_truth_csv, simulate_submission

KEYS = {
    "command",
    "started",
    "ended",
    "spark_application_id",
    "spark_master",
    "versions",
    "git_commit",
    "settings",
    "inputs",
    "phase_seconds",
}


def check_record(doc: dict, engine_spark: bool = True) -> None:
    assert KEYS <= set(doc), KEYS - set(doc)
    started = dt.datetime.fromisoformat(doc["started"])
    ended = dt.datetime.fromisoformat(doc["ended"])
    assert started.tzinfo is not None and ended >= started
    assert set(doc["versions"]) >= {"disc21spark", "python", "pyspark", "numpy", "pyarrow", "faiss"}
    assert all(doc["versions"][k] for k in ("disc21spark", "numpy", "pyarrow"))
    assert doc["phase_seconds"] and all(v >= 0 for v in doc["phase_seconds"].values())
    assert (doc["spark_application_id"] is not None) == engine_spark
    assert doc["git_commit"] is None or len(doc["git_commit"]) == 40
    for item in doc["inputs"]:
        assert len(item["sha256"]) == 64 and item["bytes"] >= 0, item
        if Path(item["path"]).is_file():
            data = Path(item["path"]).read_bytes()
            assert item["sha256"] == hashlib.sha256(data).hexdigest()
            assert item["bytes"] == len(data)


def main(*argv: str) -> int:
    return commands.main([str(a) for a in argv])


@pytest.fixture(scope="module")
def preds(tmp_path_factory, dev_gt_path) -> Path:
    path = tmp_path_factory.mktemp("record") / "preds.csv"
    simulate_submission(read_ground_truth_csv(dev_gt_path), 3_000, seed=4).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_evaluate_writes_run_json_and_reruns_are_up_to_date(
    spark, tmp_path, dev_gt_path, preds, engine, capsys
):
    out = tmp_path / "out"
    args = [
        "evaluate",
        "--ground-truth",
        dev_gt_path,
        "--predictions",
        preds,
        "--output",
        out,
        "--engine",
        engine,
    ]
    assert main(*args) == 0
    doc = json.loads((out / "run.json").read_text())
    check_record(doc, engine_spark=engine == "spark")
    assert [i["path"] for i in doc["inputs"]] == [str(dev_gt_path), str(preds)]
    assert doc["settings"]["max_results"] == 500_000 and "output" not in doc["settings"]
    assert "evaluate" in doc["command"]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["run"]["inputs"] == doc["inputs"] and metrics["run"]["engine"] == engine
    # one document per run: the same end time; a matching run records no descriptor option
    assert metrics["run"]["ended"] == doc["ended"] and doc["engine"] == engine
    assert "knn" not in doc["settings"] and "index" not in doc["settings"]
    assert sorted(p.name for p in out.iterdir()) == [
        "_SUCCESS",
        "metrics.json",
        "pr_curve.csv",
        "pr_curve.png",
        "run.json",
    ]
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    # a retried task: same inputs and settings, nothing to do, exit 0, nothing touched
    assert main(*args) == 0
    assert "up to date" in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    # another setting, or changed input content: not up to date, the folder is refused
    assert main(*args, "--curve-points", "10") == 2
    changed = tmp_path / "preds.csv"
    changed.write_text(preds.read_text().replace("\n", "\n", 1) + "Q00000,R999999,0.1\n")
    moved = [a if a != preds else changed for a in args]
    assert main(*moved) == 2
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_every_job_writes_run_json(spark, tmp_path, dev_gt_path, preds):
    pool = tmp_path / "pool"
    pool.mkdir()
    for i in range(2):
        (pool / f"team{i}.csv").write_bytes(preds.read_bytes())
    assert (
        main(
            "evaluate",
            "--ground-truth",
            dev_gt_path,
            "--predictions",
            pool,
            "--output",
            tmp_path / "board",
        )
        == 0
    )
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    record = json.loads((tmp_path / "board" / "run.json").read_text())
    check_record(record, engine_spark=False)  # a pool of local files: in process
    assert record["engine"] == "local"
    assert board["run"]["inputs"] == record["inputs"]
    assert record["inputs"][1]["files"] == 2

    assert main("make-library", "--output", tmp_path / "lib", "--size", "8", "--seed", "2") == 0
    check_record(json.loads((tmp_path / "lib" / "run.json").read_text()))
    assert (
        main(
            "make-queries",
            "--images",
            tmp_path / "lib",
            "--output",
            tmp_path / "bench",
            "--tests",
            "crop:50",
            "--queries-per-test",
            "3",
            "--seed",
            "1",
        )
        == 0
    )
    doc = json.loads((tmp_path / "bench" / "run.json").read_text())
    check_record(doc)
    assert doc["inputs"][0]["files"] >= 8  # the images, and the library's manifests
    assert (
        main(
            "extract",
            "--bench",
            tmp_path / "bench",
            "--method",
            "tiny",
            "--output",
            tmp_path / "vectors",
        )
        == 0
    )
    check_record(json.loads((tmp_path / "vectors" / "run.json").read_text()))
    assert (
        main(
            "extract",
            "--images",
            tmp_path / "lib",
            "--method",
            "tiny",
            "--output",
            tmp_path / "one.h5",
        )
        == 0
    )
    check_record(json.loads((tmp_path / "one_run.json").read_text()))
    assert (
        main(
            "rank-eval",
            "--bench",
            tmp_path / "bench",
            "--methods",
            "tiny",
            "--output",
            tmp_path / "report",
            "--subsets",
            "1",
            "--resamples",
            "10",
        )
        == 0
    )
    check_record(json.loads((tmp_path / "report" / "run.json").read_text()))


def test_each_input_is_digested_once_per_run(tmp_path, monkeypatch):
    """The pool's reuse checks and run.json share one SHA-256 of each file (issue 25):
    the second ask, under another spelling of the same path, reads nothing."""
    import hashlib

    from disc21spark.core import fs, record

    path = tmp_path / "gt.csv"
    path.write_text("query_id,reference_id\nQ1,R1\n")
    reads = []
    real = fs.sha256
    monkeypatch.setattr(fs, "sha256", lambda p, spark=None: reads.append(p) or real(p, spark))
    run = record.begin()
    try:
        first = record.sha256(str(path))
        assert (
            record.sha256(f"file:{path}") == first == hashlib.sha256(path.read_bytes()).hexdigest()
        )
        assert run.inputs() == [] and reads == [str(path)]
    finally:
        record.end()


def test_a_job_hands_the_record_its_inputs(tmp_path):
    """The record knows no stage's field names: a job names its inputs (``INPUTS``), and
    those, whatever they are called, are hashed and kept out of the settings."""
    import dataclasses

    from disc21spark.core import record
    from disc21spark.core.runner import BaseJob

    @dataclasses.dataclass(frozen=True)
    class Weighing(BaseJob):
        INPUTS = ("scale", "weights")  # not fields: no annotation
        PRIVATE_INPUTS = ("weights",)

        weights: str
        scale: str
        rounds: int = 3

    (tmp_path / "w.txt").write_text("1\n")
    (tmp_path / "s.txt").write_text("2\n")
    job = Weighing(str(tmp_path / "w.txt"), str(tmp_path / "s.txt"))
    run = record.begin(job, ["weigh"])
    try:
        assert run.settings() == {"rounds": 3}
        digest = hashlib.sha256(b"1\n").hexdigest()
        assert [(i["path"], i.get("sha256")) for i in run.inputs(private=True)] == [
            (job.scale, hashlib.sha256(b"2\n").hexdigest()),
            (job.weights, digest),
        ]
        assert run.inputs()[1] == {"path": job.weights, "withheld": True}
    finally:
        record.end()
    assert "ground_truth" not in Path(record.__file__).read_text(encoding="utf-8")


def test_the_record_says_what_ran_beside_what_was_asked(tmp_path, dev_gt_path, preds):
    """metrics.json's run block: the engine and plan as decided beside the engine asked,
    and the format each input was read in, as the decision resolved it (a CSV file named
    .tsv, read as csv because --predictions-format says so)."""
    tsv = tmp_path / "preds.tsv"
    tsv.write_bytes(preds.read_bytes())
    out = tmp_path / "out"
    argv = ["evaluate", "--ground-truth", dev_gt_path, "--predictions", tsv]
    assert main(*argv, "--predictions-format", "csv", "--output", out, "--quiet") == 0
    run = json.loads((out / "metrics.json").read_text())["run"]
    resolved = run["resolved"]
    assert run["settings"]["engine"] == "auto" and run["engine"] == "local"
    assert (resolved["engine"], resolved["engine_asked"]) == ("local", "auto")
    assert (resolved["plan"], resolved["input"]) == ("per-file", "one submission")
    (read,) = resolved["predictions"]
    assert (read["path"], read["format"], read["codec"], read["local"]) == (
        str(tsv),
        "csv",
        None,
        True,
    )
    assert read["bytes"] == tsv.stat().st_size and read["arrow_reads_as_spark"] is True
    assert resolved["ground_truth"]["format"] == "csv"
    assert resolved["ground_truth"]["path"] == str(dev_gt_path)
