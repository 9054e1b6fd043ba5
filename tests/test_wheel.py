"""The package as a user installs it: a wheel built from the checkout, installed in a fresh
virtualenv outside it, and every `disc21spark` command run from a folder where no
checkout is importable (the defaults and Spark profiles come from the wheel)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, error_lines

SPARK = ["--master", "local[2]", "--quiet"]


def call(*command: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    """A virtualenv holding the wheel and the dependencies it declares, installed by pip
    from the package index as a user's ``pip install`` does (pip's own cache, filled by
    ``make venv``, spares the downloads): nothing of the project's environment is
    visible there, so an import the wheel does not declare fails these tests."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"  # a copy: building in place would leave build/ in the checkout
    source.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "disc21spark", source / "disc21spark", ignore=shutil.ignore_patterns("__pycache__")
    )
    built = call(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp / "dist"), str(source)
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (tmp / "dist").glob("disc21spark-*.whl")
    venv = tmp / "venv"
    made = call(sys.executable, "-m", "venv", "--without-pip", str(venv))
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    installed = call(
        sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", str(wheel)
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv


@pytest.fixture(scope="module")
def env(fresh) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYSPARK", "SPARK"))}
    env.pop("DISC21SPARK_CONF", None)
    env.update(PYSPARK_PYTHON=str(fresh / "bin" / "python"), SPARK_LOCAL_IP="127.0.0.1")
    return env


@pytest.fixture
def work(tmp_path) -> Path:
    """A folder outside the checkout, where the commands run."""
    assert ROOT not in tmp_path.parents
    return tmp_path


def disc21spark(fresh: Path, env: dict, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return call(str(fresh / "bin" / "disc21spark"), *args, env=env, cwd=cwd)


def test_the_installed_package_is_the_wheels(fresh, env, work):
    code = "import disc21spark, pyspark; print(disc21spark.__file__); print(pyspark.__file__)"
    out = call(str(fresh / "bin" / "python"), "-c", code, env=env, cwd=work)
    assert out.returncode == 0, out.stderr
    ours, pyspark = out.stdout.split()
    assert Path(ours).is_relative_to(fresh) and not Path(ours).is_relative_to(ROOT)
    assert Path(pyspark).is_relative_to(fresh)  # installed with the wheel, not borrowed
    helped = disc21spark(fresh, env, work, "evaluate", "--help")
    assert helped.returncode == 0 and helped.stdout.startswith("usage: disc21spark evaluate")
    assert "0: no limit (default: 500000)" in " ".join(helped.stdout.split())


def test_evaluate_and_a_bad_submission(fresh, env, work):
    (work / "gt.csv").write_text("query_id,reference_id\nQ1,R1\nQ2,R2\nQ3,\n")
    (work / "preds.csv").write_text("Q1,R1,0.9\nQ2,R9,0.8\nQ2,R2,0.5\nQ3,R3,0.4\n")
    done = disc21spark(
        fresh,
        env,
        work,
        "evaluate",
        "--ground-truth",
        "gt.csv",
        "--predictions",
        "preds.csv",
        "--output",
        "out",
        *SPARK,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "μAP (micro average precision)" in done.stdout
    assert "results in out/ (metrics.json, pr_curve.csv, pr_curve.png)" in done.stdout
    assert sorted(p.name for p in (work / "out").iterdir()) == [
        "_SUCCESS",
        "metrics.json",
        "pr_curve.csv",
        "pr_curve.png",
        "run.json",
    ]
    metrics = json.loads((work / "out" / "metrics.json").read_text())
    assert metrics["n_predictions"] == 4 and metrics["n_true_positives"] == 2
    (work / "bad.csv").write_text("Q1,R1,0.9\nQ1,R2,abc\n")
    bad = disc21spark(
        fresh,
        env,
        work,
        "evaluate",
        "--ground-truth",
        "gt.csv",
        "--predictions",
        "bad.csv",
        "--output",
        "bad_out",
        *SPARK,
    )
    assert bad.returncode == 2, (bad.stdout + bad.stderr)[-3000:]
    # Spark names the file it read: the absolute path
    assert error_lines(bad) == [f"error: {work / 'bad.csv'}: line 2: score 'abc' is not a number"]
    assert "Traceback" not in bad.stderr and not (work / "bad_out").exists()


def test_queries_and_rank_eval(fresh, env, work):
    """The image side from the wheel: its images profile, Pillow's and the methods' imports.
    (make-library and extract are the same kind of job: they run in this process in
    test_library_job.py and test_rank_eval.py; each command here costs a JVM.)"""
    from PIL import Image

    from disc21spark.library import images as library

    (work / "library").mkdir()
    for i in range(12):
        image = library.dead_leaves(5, i, 96, 72)
        Image.fromarray(image).save(work / "library" / f"img_{i:02d}.png")

    bench = disc21spark(
        fresh,
        env,
        work,
        "make-queries",
        "--images",
        "library",
        "--output",
        "bench",
        "--tests",
        "crop:50,jumble:4x4",
        "--queries-per-test",
        "4",
        "--distractors",
        "0.25",
        "--seed",
        "3",
        *SPARK,
    )
    assert bench.returncode == 0, (bench.stdout + bench.stderr)[-3000:]
    assert "8 queries (2 tests × 4, 2 distractors)" in bench.stdout
    for name in ("ground_truth.csv", "queries.parquet", "references.parquet", "bench.json"):
        assert (work / "bench" / name).is_file(), name
    assert len(list((work / "bench" / "queries").iterdir())) == 8

    ranked = disc21spark(
        fresh,
        env,
        work,
        "rank-eval",
        "--bench",
        "bench",
        "--methods",
        "colorhist,tiny",
        "--output",
        "report",
        "--knn",
        "3",
        "--resamples",
        "10",
        *SPARK,
    )
    assert ranked.returncode == 0, (ranked.stdout + ranked.stderr)[-3000:]
    assert "report in report/ (report.md, summary.csv, ranks.parquet, plots)" in ranked.stdout
    for name in ("report.md", "summary.csv", "ranks.parquet", "rank_eval.json"):
        assert (work / "report" / name).is_file(), name

    unknown = disc21spark(
        fresh,
        env,
        work,
        "rank-eval",
        "--bench",
        "bench",
        "--methods",
        "sift",
        "--output",
        "report2",
        *SPARK,
    )
    assert unknown.returncode == 2
    assert error_lines(unknown) == [
        "error: unknown descriptor method 'sift' (built-in: colorhist, correlogram, tiny, pdq; "
        "or module:function)"
    ]


API_SCRIPT = """
import json
import pandas as pd
import disc21spark as ds
assert ds.__file__.startswith({venv!r}), ds.__file__  # the wheel's copy, not a checkout
gt, preds = "gt.csv", pd.read_csv("preds.csv", header=None, names=["query_id", "reference_id", "score"])
out = {{"path": ds.evaluate(gt, "preds.csv").to_dict(), "pandas": ds.evaluate(gt, preds).to_dict()}}
try:
    ds.evaluate(gt, "bad.csv")
except ds.InputError as e:
    out["error"] = str(e)
from disc21spark.core.session import spark_session
spark = spark_session("local", master="local[2]")
out["spark"] = ds.evaluate(gt, spark.createDataFrame(preds)).to_dict()
board = ds.evaluate_pool(gt, ["preds.csv", "other.csv"]).table
out["pool"] = board[["submission", "micro_ap"]].values.tolist()
found = ds.evaluate_descriptors(gt, "q.npy", "r.npy", knn=2, engine=spark)
out["descriptors"] = found.metrics.to_dict()
# the command line's descriptor run, in this process and session (one JVM for both)
from disc21spark import commands
argv = ["evaluate", "--ground-truth", gt, "--query-descriptors", "q.npy",
        "--reference-descriptors", "r.npy", "--knn", "2", "--output", "out_descriptors", "--quiet"]
out["descriptors_exit"] = commands.main(argv)
print(json.dumps(out))
"""


def descriptor_files(work: Path) -> None:
    """Query and reference vectors as .npy with their ids: Q1 and Q2 lie next to their
    originals R1 and R2, Q3 (a distractor) nearer R3 than any other but less close."""
    import numpy as np

    rng = np.random.default_rng(0)
    refs = rng.normal(size=(4, 8)).astype(np.float32)
    noise = np.array([[0.05], [0.05], [0.5]], dtype=np.float32)  # Q3 less close
    queries = refs[:3] + noise * rng.normal(size=(3, 8)).astype(np.float32)
    np.save(work / "r.npy", refs)
    (work / "r_ids.txt").write_text("R1\nR2\nR3\nR4\n")
    np.save(work / "q.npy", queries)
    (work / "q_ids.txt").write_text("Q1\nQ2\nQ3\n")


def test_the_api_from_the_installed_wheel(fresh, env, work):
    """disc21spark.evaluate on a path, a pandas DataFrame and a Spark DataFrame,
    evaluate_pool and evaluate_descriptors, from the wheel with no checkout on sys.path:
    the command line's figures."""
    (work / "gt.csv").write_text("query_id,reference_id\nQ1,R1\nQ2,R2\nQ3,\n")
    (work / "preds.csv").write_text("Q1,R1,0.9\nQ2,R9,0.8\nQ2,R2,0.5\nQ3,R3,0.4\n")
    (work / "other.csv").write_text("Q1,R1,0.3\nQ2,R2,0.8\n")
    (work / "bad.csv").write_text("Q1,R1,0.9\nQ1,R2,abc\n")
    done = disc21spark(
        fresh,
        env,
        work,
        "evaluate",
        "--ground-truth",
        "gt.csv",
        "--predictions",
        "preds.csv",
        "--output",
        "out",
        "--engine",
        "local",
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    cli = json.loads((work / "out" / "metrics.json").read_text())
    descriptor_files(work)
    code = API_SCRIPT.format(venv=str(fresh))
    ran = call(str(fresh / "bin" / "python"), "-c", code, env=env, cwd=work)
    assert ran.returncode == 0, (ran.stdout + ran.stderr)[-3000:]
    got = json.loads(ran.stdout.strip().splitlines()[-1])
    for engine in ("path", "pandas", "spark"):
        assert got[engine] == {k: cli[k] for k in got[engine]}, engine
    assert got["error"] == f"{work / 'bad.csv'}: line 2: score 'abc' is not a number"
    assert got["pool"] == [["other", 1.0], ["preds", cli["micro_ap"]]]
    assert got["descriptors_exit"] == 0
    cli_descriptors = json.loads((work / "out_descriptors" / "metrics.json").read_text())
    assert got["descriptors"] == {k: cli_descriptors[k] for k in got["descriptors"]}
    assert got["descriptors"]["micro_ap"] == 1.0  # Q1 → R1 and Q2 → R2 come first
