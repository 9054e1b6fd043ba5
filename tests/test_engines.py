"""The two engines of one submission: Spark and in-process (Arrow + the numpy specification)
give the same figures, bit for bit, and the same errors, word for word."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from disc21spark import engine
from disc21spark.commands import evaluate as evaluate_command
from disc21spark.core.errors import InputError
from disc21spark.matching.job import MatchingJob, run
from disc21spark.matching.oracle.spec import evaluate
from tests.conftest import cli_env
from tests.evaluate_inputs import BAD_GROUND_TRUTH, BAD_PREDICTIONS, GT_LINES, args_for, write
from tests.helpers import assert_same, gt_csv, make_gt, random_submission

ROOT = Path(__file__).resolve().parents[1]


def both(spark, gt, preds, **kw):
    """(Spark's, in-process) result of the same job: metrics, or the error's text."""
    out = []
    for session, choice in ((spark, engine.DISTRIBUTED), (None, engine.LOCAL)):
        job = MatchingJob(str(gt), str(preds), None, choice=choice, **kw)
        try:
            out.append(run(session, job))
        except InputError as exc:
            out.append(f"InputError: {exc}")
    return out


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    n_scores=st.sampled_from([1, 7, 10**6]),
    fmt=st.sampled_from(["csv", "parquet"]),
)
# both formats at least once, with many ties (a Spark run costs seconds: one format an example)
@example(seed=3, n=300, n_scores=7, fmt="csv")
@example(seed=3, n=300, n_scores=7, fmt="parquet")
def test_engines_equal_the_specification_on_random_files(
    spark, tmp_path_factory, seed, n, n_scores, fmt
):
    tmp = tmp_path_factory.mktemp("engines")
    gt = make_gt(40, 25)
    frame = random_submission(np.random.default_rng(seed), gt, n, n_scores)
    expected = evaluate(
        frame.query_id.to_numpy(), frame.reference_id.to_numpy(), frame.score.to_numpy(), gt
    )
    preds = tmp / f"p.{fmt}"
    if fmt == "csv":
        frame.to_csv(preds, index=False)
    else:
        frame.to_parquet(preds)
    truth = gt_csv(tmp / "gt.csv", gt)
    for metrics in both(spark, truth, preds, max_results=0):
        assert_same(metrics, expected)


def test_odd_but_legal_text_scores_like_the_clean_file(spark, tmp_path):
    gt = write(tmp_path / "gt.csv", GT_LINES)
    clean = write(tmp_path / "clean.csv", "Q1,R1,0.9\nQ2,R9,0.5\nQ2,R2,0.5\nQX,R4,-0.0\n")
    odd = write(
        tmp_path / "odd.csv",
        "query_id,reference_id,score\r\n Q1 ,\tR1,0.9 \r\n\r\n   \r\nQ2,R9,.5\r\nQ2,R2,5e-1\r\n"
        "query_id,reference_id,score\r\nQX,R4,0\r\n",
    )
    reference = both(spark, gt, clean)[0]
    for metrics in both(spark, gt, odd):
        assert_same(metrics, reference)


@pytest.mark.parametrize("text,message", BAD_PREDICTIONS)
def test_bad_predictions_same_message_on_both_engines(spark, tmp_path, text, message):
    gt = write(tmp_path / "gt.csv", GT_LINES)
    spark_error, local_error = both(spark, gt, write(tmp_path / "p.csv", text))
    assert spark_error == local_error and local_error.startswith("InputError: ")


@pytest.mark.parametrize("text,message", BAD_GROUND_TRUTH)
def test_bad_ground_truth_same_message_on_both_engines(spark, tmp_path, text, message):
    gt = write(tmp_path / "gt.csv", text)
    spark_error, local_error = both(spark, gt, write(tmp_path / "p.csv", "Q1,R1,0.5\n"))
    assert spark_error == local_error and local_error.startswith("InputError: ")


def test_parquet_and_limits_same_on_both_engines(spark, tmp_path):
    gt = write(tmp_path / "gt.csv", GT_LINES)
    preds = write(tmp_path / "p.csv", "Q1,R1,0.9\nQ2,R2,0.8\nQ4,R4,0.7\n")
    first, second = both(spark, gt, preds, max_results=2)
    assert first == second and "more than --max-results 2" in second
    cases = {
        "inf": {"query_id": ["Q1", "Q2"], "reference_id": ["R1", "R2"], "score": [0.5, np.inf]},
        "empty": {"query_id": ["Q1", ""], "reference_id": ["R1", "R2"], "score": [0.5, 0.1]},
        "no_score": {"query_id": ["Q1"], "reference_id": ["R1"]},
        "null": {"query_id": ["Q1", "Q2"], "reference_id": ["R1", "R2"], "score": [0.5, None]},
    }
    for name, columns in cases.items():
        pd.DataFrame(columns).to_parquet(tmp_path / f"{name}.parquet")
        first, second = both(spark, gt, tmp_path / f"{name}.parquet")
        assert first == second and second.startswith("InputError: "), name
    empty = write(tmp_path / "empty.csv", "")
    first, second = both(spark, gt, empty)
    assert_same(first, second)


def test_auto_engine_choice(tmp_path, monkeypatch):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)

    def choose(args):
        # a file past --local-max-bytes is read in batches on this machine, not on Spark
        return evaluate_command.choice_of(args.request).engine

    assert choose(args_for(tmp_path)) == "local"
    assert choose(args_for(tmp_path, "--master", "local[2]")) == "spark"
    assert choose(args_for(tmp_path, "--engine", "spark")) == "spark"
    assert choose(args_for(tmp_path, "--local-max-bytes", "4")) == "local"  # the file is larger
    (tmp_path / "pool").mkdir()
    write(tmp_path / "pool" / "a.csv", "Q1,R1,0.5\n")
    # a pool of local files: scored in worker processes here (pool/in_process.py)
    pool = [str(tmp_path / "pool")]
    assert choose(args_for(tmp_path, predictions=pool)) == "local"
    assert choose(args_for(tmp_path, predictions=[str(tmp_path / "pool" / "*.csv")])) == "local"
    for spark_asked in (["--engine", "spark"], ["--master", "local[2]"]):
        assert choose(args_for(tmp_path, *spark_asked, predictions=pool)) == "spark"
    assert choose(args_for(tmp_path, "--pool-plan", "distributed", predictions=pool)) == "spark"
    assert choose(args_for(tmp_path, predictions=[str(tmp_path / "pool" / "[ab].csv")])) == "spark"
    write(tmp_path / "pool" / "b.csv.deflate", "")  # a codec Arrow does not read
    assert choose(args_for(tmp_path, predictions=pool)) == "spark"
    # started by spark-submit: one local file that fits is still scored here (the per-file
    # plan on the driver needs no session), and --engine local is honoured
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")
    assert choose(args_for(tmp_path)) == "local"
    assert choose(args_for(tmp_path, "--engine", "local")) == "local"
    assert choose(args_for(tmp_path, "--local-max-bytes", "4")) == "local"
    # but a pool goes to spark-submit's cluster (--engine local keeps it here)
    (tmp_path / "pool" / "b.csv.deflate").unlink()
    assert choose(args_for(tmp_path, predictions=pool)) == "spark"
    said = evaluate_command.choice_of(args_for(tmp_path, predictions=pool).request).lines()
    assert any("spark-submit: a pool goes to its cluster" in line for line in said), said
    assert choose(args_for(tmp_path, "--engine", "local", predictions=pool)) == "local"


def test_a_side_file_named_by_a_uri_sends_the_run_to_spark(tmp_path, monkeypatch):
    """A side file with a scheme (file: included) is read or written through Hadoop's file
    systems: the decision sends the run to Spark (it went to the in-process engine, whose
    first read of it then ended in an internal error), and --engine local says why."""
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    (tmp_path / "pool").mkdir()
    write(tmp_path / "pool" / "a.csv", "Q1,R1,0.5\n")
    split = write(tmp_path / "split.csv", "query_id\nQ1\n")
    private = str(tmp_path / "private")
    pool = [str(tmp_path / "pool")]

    def choice(*extra, predictions=pool):
        return evaluate_command.choice_of(
            args_for(tmp_path, *extra, predictions=predictions).request
        )

    assert choice("--private-queries", split, "--private-output", private).engine == "local"
    board = (tmp_path / "board").as_uri()
    for options in [
        ["--private-queries", Path(split).as_uri(), "--private-output", private],
        ["--private-queries", split, "--private-output", Path(private).as_uri()],
        ["--query-groups", Path(split).as_uri()],
        ["--previous", board],
        ["--compare-to", board],
    ]:
        for predictions in (pool, None):  # a pool, one file
            chosen = choice(*options, predictions=predictions)
            assert chosen.engine == "spark", options
            assert "Hadoop's file systems" in " ".join(chosen.lines()), options
    with pytest.raises(InputError, match=r"--engine local: file:.*split.csv: read or written"):
        choice("--engine", "local", "--query-groups", Path(split).as_uri())


def test_a_uri_read_without_a_session_is_one_line(tmp_path, monkeypatch):
    """Below the decision a URI with no Spark session is one line naming it (it was a
    TypeError: the error was built with one argument)."""
    from disc21spark.core import fs
    from disc21spark.core.errors import OutputError

    monkeypatch.setattr(fs, "active_session", lambda: None)  # as in a run with no Spark
    uri = Path(write(tmp_path / "split.csv", "query_id\nQ1\n")).as_uri()
    with pytest.raises(InputError, match=r"split.csv: a URI is read through Spark's file systems"):
        fs.read_text(uri)
    with pytest.raises(OutputError, match=r"^file:.*/out: a URI is read through Spark"):
        fs.session_for((tmp_path / "out").as_uri(), OutputError)


def test_local_engine_refuses_what_it_cannot_read(tmp_path, monkeypatch):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    (tmp_path / "pool").mkdir()
    write(tmp_path / "pool" / "part-00000.csv", "Q1,R1,0.5\n")  # one submission's parts
    args = args_for(tmp_path, "--engine", "local", predictions=[str(tmp_path / "pool")])
    with pytest.raises(
        InputError, match=r"--engine local: .*not one local file; use --engine spark"
    ):
        evaluate_command.choice_of(args.request)
    write(tmp_path / "pool" / "b.csv.deflate", "")  # a pool with a codec Arrow does not read
    with pytest.raises(
        InputError, match=r"--engine local: .*b.csv.deflate: .*; use --engine spark"
    ):
        evaluate_command.choice_of(args.request)
    pd.DataFrame({"query_id": [1], "reference_id": ["R1"], "score": [0.5]}).to_parquet(
        tmp_path / "ints.parquet"
    )
    args = args_for(tmp_path, "--engine", "auto", predictions=[str(tmp_path / "ints.parquet")])
    assert (
        evaluate_command.choice_of(args.request).engine == "spark"
    )  # Spark casts integer ids itself


def test_python_jobs_evaluate_needs_no_java_for_a_local_file(tmp_path):
    gt = write(tmp_path / "gt.csv", GT_LINES)
    preds = write(tmp_path / "p.csv", "Q1,R1,0.9\nQ2,R2,0.8\n")
    env = dict(cli_env(), JAVA_HOME=str(tmp_path / "no-java"), PATH=os.path.dirname(sys.executable))
    cmd = [
        sys.executable,
        str(ROOT / "jobs" / "evaluate.py"),
        "--ground-truth",
        gt,
        "--predictions",
        preds,
        "--output",
        str(tmp_path / "out"),
    ]
    import subprocess

    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert doc["run"]["engine"] == "local" and doc["run"]["spark_master"] is None
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "_SUCCESS",
        "metrics.json",
        "pr_curve.csv",
        "pr_curve.png",
        "run.json",
    ]
    proc = subprocess.run(
        [*cmd, "--overwrite", "--engine", "spark"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2 and "Java 17" in proc.stderr


def test_one_submission_on_spark_takes_the_per_file_plan_when_it_fits(spark, tmp_path):
    """With --master one file within --local-max-bytes is scored in process on the
    driver: the distributed plan's figures, no sort; a larger one goes through the
    distributed plan."""
    gt = make_gt(40, 25)
    frame = random_submission(np.random.default_rng(5), gt, 200, 7)
    frame.to_csv(tmp_path / "p.csv", index=False)
    args = args_for(tmp_path, "--master", "local[2]", predictions=[str(tmp_path / "p.csv")])
    truth = gt_csv(tmp_path / "truth.csv", gt)
    choice = evaluate_command.choice_of(args.request)
    assert choice == engine.Choice("spark", "auto", "auto")
    seen = {}
    for name, limit in (("fits", 1 << 20), ("larger", 16)):
        job = MatchingJob(
            str(truth),
            str(tmp_path / "p.csv"),
            str(tmp_path / name),
            max_results=0,
            choice=engine.Choice("spark", "auto", "auto", limit),
        )
        seen[name] = run(spark, job)
        record = json.loads((tmp_path / name / "metrics.json").read_text())["run"]
        assert ("count" in record["phase_seconds"]) == (name == "larger"), record
        # the run record says which plan ran and why
        assert record["plan"] == ("distributed" if name == "larger" else "per-file")
        assert ("more than --local-max-bytes" in record["plan_reasons"][-1]) == (name == "larger")
    assert_same(seen["fits"], seen["larger"])
    expected = evaluate(
        frame.query_id.to_numpy(), frame.reference_id.to_numpy(), frame.score.to_numpy(), gt
    )
    assert_same(seen["fits"], expected)


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".csv.bz2", ".parquet"])
def test_the_in_process_engine_scores_bytes_as_it_scores_the_file(tmp_path, suffix):
    """What a per-file task gets from Spark (the file's bytes, under its URI) scores as the
    local file does: the same figures, and the same messages naming the URI."""
    import bz2
    import gzip

    from disc21spark.matching.inprocess import local
    from disc21spark.matching.inprocess.source import Source
    from disc21spark.matching.model import Settings
    from disc21spark.resolve import resolve

    gt = make_gt(40, 25)
    frame = random_submission(np.random.default_rng(11), gt, 150, 10**6)
    cases = {"good": frame, "repeats": pd.concat([frame, frame.iloc[:1]], ignore_index=True)}
    packers = {".csv.gz": gzip.compress, ".csv.bz2": bz2.compress}
    for name, table in cases.items():
        path = tmp_path / f"{name}{suffix}"
        if suffix == ".parquet":
            table.to_parquet(path)
        else:
            text = table.to_csv(index=False).encode()
            path.write_bytes(packers.get(suffix, lambda b: b)(text))
        outcomes = []
        uri = f"viewfs://t/x/{path.name}"
        for source in (
            Source.of_input(resolve(str(path))),
            Source.of_bytes(uri, path.read_bytes(), resolve(uri)),
        ):
            try:
                outcomes.append(local.score_source(source, gt, Settings(0, 100), announce=False))
            except InputError as exc:
                outcomes.append(str(exc).replace(f"viewfs://t/x/{path.name}", str(path)))
        if name == "good":
            assert_same(*outcomes)
        else:
            assert outcomes[0] == outcomes[1] and "duplicate pair" in outcomes[0]
    if suffix == ".csv.gz":  # a damaged stream: one line naming the file, either way
        cut = (tmp_path / f"good{suffix}").read_bytes()[:40]
        with pytest.raises(
            InputError, match=r"^viewfs://t/x/cut.csv.gz: cannot be read as gzip \(truncated"
        ):
            source = Source.of_bytes(
                "viewfs://t/x/cut.csv.gz", cut, resolve("viewfs://t/x/cut.csv.gz")
            )
            local.score_source(source, gt, Settings(0, 100))


def test_explain_prints_the_decision_and_scores_nothing(spark, tmp_path, capsys):
    """--explain added to a command: the engine, the input's kind, the plan and the
    reasons, then exit 0 with nothing written to --output; a local file starts no
    Spark, a folder is listed on Spark with --engine spark."""
    from tests.running import in_process

    gt = make_gt(40, 25)
    truth = gt_csv(tmp_path / "truth.csv", gt)
    random_submission(np.random.default_rng(3), gt, 50, 7).to_csv(tmp_path / "p.csv", index=False)
    common = ["evaluate", "--ground-truth", str(truth), "--explain"]
    out = tmp_path / "out"
    local = in_process(
        [*common, "--predictions", str(tmp_path / "p.csv"), "--output", str(out)], capsys, None
    )
    assert local.code == 0, local.err
    lines = local.out.splitlines()
    assert lines[:3] == ["engine: local", "input: one submission", "plan: per-file"]
    assert any(line.startswith("because: one local file: scored in this process") for line in lines)
    assert not out.exists()
    pool = tmp_path / "pool"
    pool.mkdir()
    for name in ("a", "b"):
        (pool / f"{name}.csv").write_text((tmp_path / "p.csv").read_text())
    argv = [*common, "--predictions", str(pool), "--output", str(out), "--pool-plan", "auto"]
    listed = in_process([*argv, "--engine", "spark"], capsys, spark)
    assert listed.code == 0, listed.err
    lines = listed.out.splitlines()
    assert lines[:3] == ["engine: spark", "input: pool", "plan: per-file"]
    assert sum(line.startswith("file: ") for line in lines) == 2
    assert lines[-2:] == [
        "because: --engine spark",
        f"because: every file read alike by Arrow and Spark, at most {engine.TASK_MAX_BYTES:,} "
        "bytes: one task a file",
    ]
