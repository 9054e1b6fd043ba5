"""The public API (disc21spark.evaluate & co.): the command line's figures to the last
digit, whatever the input holds them (a CSV path, pandas, Arrow, a Spark DataFrame), and
the command line's messages for bad input."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import disc21spark as ds
from disc21spark.commands import main
from disc21spark.matching.model import ATTACHED
from disc21spark.testing.synth import (
    read_ground_truth_csv,
    simulate_submission,
    write_descriptor_set,
    write_submission,
)

IDS = {"query_id": str, "reference_id": str}
FIGURES = [k for k in ds.MatchingMetrics.__dataclass_fields__ if k not in ATTACHED]


@pytest.fixture(scope="module")
def case(tmp_path_factory, dev_gt_path):
    """2,000 dev queries, two submissions as CSV files and as pandas frames."""
    root = tmp_path_factory.mktemp("api")
    gt = read_ground_truth_csv(dev_gt_path).iloc[:2000]
    gt_path = root / "gt.csv"
    gt.to_csv(gt_path, index=False)
    paths = {}
    for name, seed in (("team_a", 1), ("team_b", 2)):
        paths[name] = root / "pool" / f"{name}.csv"
        write_submission(simulate_submission(gt, 6000, seed=seed, decimals=2), paths[name])
    frames = {n: pd.read_csv(p, dtype=IDS) for n, p in paths.items()}
    return dict(root=root, gt=gt, gt_path=gt_path, paths=paths, frames=frames)


def cli(*args: str) -> int:
    return main(["evaluate", *args, "--quiet"])


def cli_figures(case, name: str, *engine: str) -> dict:
    out = case["root"] / f"cli_{name}_{'_'.join(engine) or 'auto'}"
    given = ["--ground-truth", str(case["gt_path"]), "--predictions", str(case["paths"][name])]
    assert cli(*given, "--output", str(out), "--overwrite", *engine) == 0
    doc = json.loads((out / "metrics.json").read_text())
    return {k: doc[k] for k in FIGURES}


def cli_error(capsys, *args: str) -> str:
    capsys.readouterr()
    assert cli(*args) == 2
    (line,) = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error: ")]
    return line[len("error: ") :]


def test_a_path_pandas_and_arrow_give_the_command_lines_figures(case):
    expected = cli_figures(case, "team_a", "--engine", "local")
    gt, frame = case["gt_path"], case["frames"]["team_a"]
    for predictions in (
        str(case["paths"]["team_a"]),
        case["paths"]["team_a"],
        frame,
        pa.Table.from_pandas(frame),
    ):
        m = ds.evaluate(gt, predictions)
        assert m.to_dict() == expected
    in_memory = ds.evaluate(case["gt"], frame)  # the ground truth as a frame too
    assert in_memory.to_dict() == expected
    curve = m.pr_curve
    assert list(curve.columns) == ["precision", "recall", "threshold"] and len(curve) > 1
    written = pd.read_csv(
        case["root"] / "cli_team_a_--engine_local" / "pr_curve.csv", float_precision="round_trip"
    )
    np.testing.assert_array_equal(curve.to_numpy(), written.to_numpy())
    figure = m.plot()
    assert type(figure).__name__ == "Figure" and figure.axes[0].get_xlabel() == "recall"


def test_the_local_api_starts_no_jvm(case, tmp_path):
    code = (
        "import sys, disc21spark as ds; "
        f"m = ds.evaluate({str(case['gt_path'])!r}, {str(case['paths']['team_b'])!r}); "
        "print(m.micro_ap, 'pyspark' in sys.modules)"
    )
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    micro_ap, spark_loaded = done.stdout.split()
    assert float(micro_ap) == cli_figures(case, "team_b", "--engine", "local")["micro_ap"]
    assert spark_loaded == "False" and done.stderr == ""


POOL_SCRIPT = """
import sys, disc21spark as ds
{guard}
    board = ds.evaluate_pool({gt!r}, {pool!r}, resamples=20)
    print([board.table.micro_ap.tolist(), board.table.micro_ap_low.tolist()])
    spark = sys.modules.get("pyspark")
    print(spark is not None and spark.SparkContext._gateway is not None)  # a JVM started
"""


def run_script(folder, text: str):
    import subprocess

    script = folder / "score_pool.py"
    script.write_text(text)
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=folder, timeout=300
    )


def test_a_pool_of_local_files_from_python_starts_no_jvm(case, tmp_path):
    """``evaluate_pool`` on local files: this machine's worker processes, as the command
    chooses (no JVM started), its leaderboard, intervals included, Spark's per-file
    plan's."""
    given = {"gt": str(case["gt_path"]), "pool": str(case["root"] / "pool" / "*.csv")}
    done = run_script(tmp_path, POOL_SCRIPT.format(guard='if __name__ == "__main__":', **given))
    assert done.returncode == 0, done.stderr
    figures, jvm = done.stdout.splitlines()
    out = tmp_path / "cli"
    flags = ["--output", str(out), "--resamples", "20", "--engine", "spark"]
    assert cli("--ground-truth", given["gt"], "--predictions", given["pool"], *flags) == 0
    expected = pd.read_csv(out / "leaderboard.csv")
    assert figures == str([expected.micro_ap.tolist(), expected.micro_ap_low.tolist()])
    assert jvm == "False"


def test_a_script_read_from_standard_input_scores_its_pool_on_spark(case, monkeypatch):
    """Workers cannot import a script read from standard input (``__file__`` is
    ``<stdin>``): such a pool goes to Spark, and ``engine="local"`` is refused in one
    line; a script file is scored in process."""
    from disc21spark.api import inputs

    request = inputs.request(
        "evaluate",
        ground_truth=str(case["gt_path"]),
        predictions=[str(case["root"] / "pool" / "*.csv")],
        output=None,
    )
    assert inputs.pool_engine("auto", request).engine == "local"
    monkeypatch.setattr(sys.modules["__main__"], "__file__", "<stdin>", raising=False)
    assert inputs.pool_engine("auto", request) is None
    with pytest.raises(ds.InputError, match="standard input cannot be"):
        inputs.pool_engine("local", request)
    with pytest.raises(ds.InputError, match="engine='sparks': give 'auto'"):
        inputs.pool_engine("sparks", request)  # refused, not sent to Spark


def test_a_script_scoring_a_pool_without_a_main_guard_is_told_why_it_failed(case, tmp_path):
    """Each worker imports the script first; one with no ``__main__`` guard would start the
    pool again in each: one line says so, naming the script."""
    given = {"gt": str(case["gt_path"]), "pool": str(case["root"] / "pool" / "*.csv")}
    done = run_script(tmp_path, POOL_SCRIPT.format(guard="if True:", **given))
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "disc21spark.core.errors.WorkersLost: a worker process of the pool ended before "
        f"its file was scored: each worker imports {tmp_path / 'score_pool.py'} first, so a "
        'script that scores a pool must do so under `if __name__ == "__main__":`'
    )


def test_a_spark_dataframe_is_scored_in_its_session(spark, case):
    expected = cli_figures(case, "team_a", "--engine", "local")
    frame = spark.createDataFrame(case["frames"]["team_a"])
    m = ds.evaluate(case["gt_path"], frame)
    assert m.to_dict() == expected
    assert spark.sparkContext._jsc.getPersistentRDDs().isEmpty()  # caching released
    forced = ds.evaluate(case["gt_path"], case["frames"]["team_a"], engine=spark)
    assert forced.to_dict() == expected


def test_a_groups_file_named_by_a_uri_is_read_on_spark(spark, case, tmp_path):
    """A groups file named by a URI (file: included) is read through Hadoop's file systems:
    ``engine="auto"`` scores on Spark, as the command does, with the figures of the plain
    path; ``engine="local"`` says to use Spark (it said so after reading the ground truth,
    from below the decision, when the decision did not look at the groups file)."""
    groups = tmp_path / "groups.csv"
    queries = case["gt"]["query_id"].drop_duplicates().iloc[:1000]
    pd.DataFrame({"query_id": queries, "group": "first half"}).to_csv(groups, index=False)
    given = (case["gt_path"], case["paths"]["team_a"])
    from disc21spark.api import inputs

    side = (groups.as_uri(),)
    assert inputs.choose_engine("auto", list(given), ["auto"] * 2, None, side).name == "spark"
    plain = ds.evaluate(*given, query_groups=groups, resamples=0, engine="local")
    assert (
        ds.evaluate(*given, query_groups=groups.as_uri(), resamples=0).to_dict() == plain.to_dict()
    )
    with pytest.raises(ds.InputError, match=r"--engine local: file:.*groups.csv: read or written"):
        ds.evaluate(*given, query_groups=groups.as_uri(), engine="local")


def test_bad_input_raises_the_command_lines_message(case, capsys, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("Q00001,R000001,0.9\nQ00002,R000002,abc\n")
    gt = str(case["gt_path"])
    said = cli_error(
        capsys,
        "--ground-truth",
        gt,
        "--predictions",
        str(bad),
        "--output",
        str(tmp_path / "o"),
        "--engine",
        "local",
    )
    with pytest.raises(ds.InputError) as raised:
        ds.evaluate(gt, bad)
    assert str(raised.value) == said == f"{bad}: line 2: score 'abc' is not a number"
    frame = case["frames"]["team_a"].copy()
    frame.loc[17, "reference_id"] = ""
    with pytest.raises(
        ds.InputError, match=r"^predictions \(DataFrame\): row 17: empty reference_id$"
    ):
        ds.evaluate(gt, frame)
    with pytest.raises(ds.InputError, match="missing column 'score'"):
        ds.evaluate(gt, frame.drop(columns="score"))
    with pytest.raises(
        ds.InputError, match=r"^predictions \(DataFrame\): 6,000 predictions, more than"
    ):
        ds.evaluate(gt, case["frames"]["team_a"], max_results=10)
    with pytest.raises(ds.InputError, match="no such file or directory"):
        ds.evaluate(gt, tmp_path / "missing.csv")
    with pytest.raises(ds.InputError, match="--curve-points ≥ 2"):
        ds.evaluate(gt, bad, curve_points=1)


def test_a_repeated_pair_is_named_by_its_rows(case):
    frame = case["frames"]["team_a"].iloc[:5]
    twice = pd.concat([frame, frame.iloc[[3]]], ignore_index=True)
    q, r = frame.iloc[3][["query_id", "reference_id"]]
    with pytest.raises(ds.InputError) as raised:
        ds.evaluate(case["gt_path"], twice)
    assert str(raised.value) == (
        f"predictions (DataFrame): rows 3 and 5: duplicate pair ({q}, {r}) appears 2 times; "
        "the official scorer rejects duplicate predictions"
    )


UNCONVERTIBLE = {  # a table Arrow cannot convert as it is → the reason given
    "two score columns": (
        pd.DataFrame(
            [("Q1", "R1", 0.9, 0.5)], columns=["query_id", "reference_id"] + ["score"] * 2
        ),
        "column 'score' named twice",
    ),
    "complex scores": (
        pd.DataFrame({"query_id": ["Q1"], "reference_id": ["R1"], "score": [0.9 + 1j]}),
        "column 'score' (complex128) cannot be read: complex numbers, not real ones",
    ),
    "floats and text": (
        pd.DataFrame(
            {"query_id": ["Q1", "Q2"], "reference_id": ["R1", "R2"], "score": [0.9, "0.5"]}
        ),
        "column 'score' (object) cannot be read: Could not convert '0.5' with type str: "
        "tried to convert to double",
    ),
}


@pytest.mark.parametrize("bad", sorted(UNCONVERTIBLE))
def test_a_table_arrow_cannot_convert_is_one_bad_submission(spark, bad):
    """A pool marks such a table invalid and scores the rest, on either engine;
    ``evaluate`` raises InputError with the same reason. A column the scorer never reads
    is never converted."""
    table, reason = UNCONVERTIBLE[bad]
    gt = pd.DataFrame({"query_id": ["Q1", "Q2", "Q3"], "reference_id": ["R1", "R2", None]})
    good = pd.DataFrame(
        {"query_id": ["Q1", "Q2"], "reference_id": ["R1", "R9"], "score": [0.9, 0.8]}
    )
    for engine in ("local", spark):
        board = ds.evaluate_pool(gt, {"good": good, "bad": table}, engine=engine, resamples=0)
        assert board.invalid == {"bad": f"bad (DataFrame): {reason}"}
        assert board["good"].micro_ap == 0.5
        with pytest.raises(ds.InputError) as raised:
            ds.evaluate(gt, table, engine=engine, resamples=0)
        assert str(raised.value) == f"predictions (DataFrame): {reason}"
    noted = good.assign(note=[1j, "x"])  # complex and text: no Arrow type, never read
    assert ds.evaluate(gt, noted, resamples=0).micro_ap == 0.5


def test_pools_in_memory_and_on_spark_give_the_command_lines_leaderboard(spark, case):
    out = case["root"] / "cli_pool"
    assert (
        cli(
            "--ground-truth",
            str(case["gt_path"]),
            "--predictions",
            str(case["root"] / "pool"),
            "--output",
            str(out),
            "--overwrite",
        )
        == 0
    )
    expected = pd.read_csv(out / "leaderboard.csv")
    figures = ["submission", "micro_ap", "recall_at_p90", "recall_at_rank1", "n_predictions"]
    broken = case["frames"]["team_b"].assign(score=case["frames"]["team_b"].score.astype(object))
    broken.loc[4, "score"] = None
    tables = {**case["frames"], "team_c": broken}
    one_table = pd.concat([f.assign(team=n) for n, f in case["frames"].items()], ignore_index=True)
    boards = [
        ds.evaluate_pool(case["gt_path"], [str(p) for p in case["paths"].values()]),
        ds.evaluate_pool(case["gt_path"], str(case["root"] / "pool"), engine="spark"),
        ds.evaluate_pool(case["gt_path"], tables),
        ds.evaluate_pool(case["gt_path"], one_table, submission_column="team"),
        ds.evaluate_pool(
            case["gt_path"], spark.createDataFrame(one_table), submission_column="team"
        ),
    ]
    for board in boards:
        table = board.table
        ok = table[table.status == "ok"].reset_index(drop=True)
        pd.testing.assert_frame_equal(ok[figures], expected[figures], check_dtype=False)
        assert board["team_a"].micro_ap == expected.micro_ap[expected.submission == "team_a"].item()
    # one file alone is a pool of one (on Spark, as the pool job lists it)
    (one,) = ds.evaluate_pool(case["gt_path"], str(case["paths"]["team_a"])).submissions
    assert one.name == "team_a" and one.metrics.micro_ap == boards[0]["team_a"].micro_ap
    assert boards[2].invalid == {
        "team_c": "team_c (DataFrame): row 4: missing or non-numeric score"
    }
    assert type(boards[0].plot()).__name__ == "Figure"


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_pool_of_tables_draws_its_resample_weights_once(case, monkeypatch, request, engine):
    """Every table of a pool in memory meets the same queries: their weights are drawn
    once for the pool, in this process or for Spark's plan, not once per table."""
    if engine == "spark":
        request.getfixturevalue("spark")
    from disc21spark.matching.stats import weights

    draws = []
    real = weights.Table.draw.__func__

    def counted(cls, keys, resamples):
        draws.append(len(keys))
        return real(cls, keys, resamples)

    monkeypatch.setattr(weights.Table, "draw", classmethod(counted))
    tables = {f"t{i}": case["frames"]["team_a"].iloc[i * 500 :] for i in range(4)}
    board = ds.evaluate_pool(case["gt_path"], tables, resamples=40, engine=engine)
    assert len(draws) == 1 and sorted(board.table.submission) == sorted(tables)
    alone = ds.evaluate(case["gt_path"], tables["t2"], resamples=40, engine=engine)
    assert board["t2"].uncertainty.interval("micro_ap") == alone.uncertainty.interval("micro_ap")


def test_descriptors_give_the_command_lines_figures(spark, case, tmp_path):
    q, r = write_descriptor_set(case["gt"], tmp_path / "set", 3000, 8, 1.0, seed=3)
    out = tmp_path / "out"
    assert (
        cli(
            "--ground-truth",
            str(case["gt_path"]),
            "--query-descriptors",
            str(q),
            "--reference-descriptors",
            str(r),
            "--knn",
            "3",
            "--output",
            str(out),
            "--master",
            "local[2]",
        )
        == 0
    )
    doc = json.loads((out / "metrics.json").read_text())
    result = ds.evaluate_descriptors(case["gt_path"], q, [r], knn=3, return_pairs=True)
    assert all(doc[k] == v for k, v in result.metrics.to_dict().items())
    assert len(result.pairs) == 3 * len(case["gt"]) and list(result.pairs.columns) == [
        "query_id",
        "reference_id",
        "score",
    ]
    again = ds.evaluate(case["gt_path"], result.pairs, max_results=0)
    assert again.micro_ap == result.metrics.micro_ap
    assert ds.evaluate_descriptors(case["gt_path"], q, r, knn=3).pairs is None
    with pytest.raises(ds.InputError, match="--knn, --max-dim and --nprobe must be ≥ 1"):
        ds.evaluate_descriptors(case["gt_path"], q, r, knn=0)


def test_make_library_make_queries_and_rank_eval_as_functions(spark, tmp_path):
    lib = tmp_path / "library"
    library = ds.make_library(lib, size=16, no_photos=True, width=96, height=72, seed=5)
    assert (library["size"], library["deadleaves"]) == (16, 16) and (lib / "library.csv").is_file()
    with pytest.raises(ds.InputError, match="size"):
        ds.make_library(tmp_path / "none", size=0)
    made = ds.make_queries(
        lib,
        tmp_path / "bench",
        tests=["crop:50", "jumble:4x4"],
        queries_per_test=4,
        distractors=0.25,
        seed=3,
    )
    assert made["counts"]["queries"] == 8 and (tmp_path / "bench" / "ground_truth.csv").is_file()
    out = tmp_path / "cli_report"
    assert (
        main(
            [
                "rank-eval",
                "--bench",
                str(tmp_path / "bench"),
                "--methods",
                "colorhist",
                "--output",
                str(out),
                "--knn",
                "3",
                "--resamples",
                "10",
                "--quiet",
            ]
        )
        == 0
    )
    doc = ds.rank_eval(
        tmp_path / "bench", tmp_path / "report", methods=["colorhist"], knn=3, resamples=10
    )
    assert doc["summary"] == json.loads((out / "rank_eval.json").read_text())["summary"]
    with pytest.raises(ds.InputError, match="unknown descriptor method 'sift'"):
        ds.rank_eval(tmp_path / "bench", tmp_path / "r2", methods="sift")
    with pytest.raises(ds.OutputError):
        ds.make_queries(lib, tmp_path / "bench", tests="crop:50")


def test_the_intervals_are_keywords_of_the_command_lines_names(case):
    """resamples, confidence and seed, as --resamples, --confidence and --seed: a path and
    a table get the command line's intervals; resamples=0 turns them off (the optimistic
    μAP stays)."""
    gt, path, frame = case["gt"], str(case["paths"]["team_a"]), case["frames"]["team_a"]
    out = case["root"] / "cli_intervals"
    given = ["--ground-truth", str(case["gt_path"]), "--predictions", path, "--output", str(out)]
    assert cli(*given, "--resamples", "40", "--seed", "3", "--confidence", "0.9") == 0
    expected = json.loads((out / "metrics.json").read_text())["bootstrap"]
    assert expected["resamples"] == 40 and expected["confidence"] == 0.9
    for value in (path, frame):
        got = ds.evaluate(gt, value, resamples=40, seed=3, confidence=0.9).uncertainty
        assert json.loads(json.dumps(got.to_dict()))["bootstrap"] == expected
    other = ds.evaluate(gt, path, resamples=40, seed=4, confidence=0.9).uncertainty
    assert other.to_dict()["bootstrap"]["intervals"] != expected["intervals"]
    # resamples=0: no interval, the optimistic μAP still (it needs no resample), alike
    none = [ds.evaluate(gt, value, resamples=0).uncertainty.to_dict() for value in (path, frame)]
    assert none[0] == none[1] and none[0]["bootstrap"] is None
    assert none[0]["micro_ap_optimistic"] >= ds.evaluate(gt, path, resamples=0).micro_ap
