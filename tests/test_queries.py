"""make_queries on Spark equals the single-process specification, byte for byte, whatever the
partitioning; bad libraries and bad commands get one line; distractors are held out."""

from __future__ import annotations

import io
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from disc21spark.core.errors import InputError
from disc21spark.queries import bench_folder as benchset
from disc21spark.queries.job import QueryJob, run
from disc21spark.queries.spec import Settings, make_local
from disc21spark.queries.transforms import parse_tests
from tests.conftest import ROOT, cli_env, error_lines

TESTS = "crop:50,jumble:3x3,lowcon:60,crop:70+lowcon:80,text:12,pad:5+rotate:10"


def picture(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 3 + y, y * 2, (x * y) % 256], -1) + rng.integers(0, 40, size=3)
    return (base % 256).astype(np.uint8)


def save(img: np.ndarray, path: Path, fmt: str) -> None:
    Image.fromarray(img).save(path, format=fmt)


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    """22 readable images in three formats and subfolders, and three bad files."""
    root = tmp_path_factory.mktemp("library")
    rng = np.random.default_rng(0)
    (root / "a").mkdir()
    (root / "b" / "deep").mkdir(parents=True)
    for i in range(22):
        h, w = int(rng.integers(40, 90)), int(rng.integers(40, 90))
        folder = (root / "a", root / "b", root / "b" / "deep")[i % 3]
        fmt = ("JPEG", "PNG", "WEBP")[i % 3]
        save(picture(rng, h, w), folder / f"img {i:02d}.{fmt.lower()}", fmt)
    good = io.BytesIO()
    Image.fromarray(picture(rng, 64, 64)).save(good, format="JPEG")
    (root / "a" / "truncated.jpg").write_bytes(good.getvalue()[:700])
    (root / "a" / "not_an_image.jpg").write_text("hello")
    save(picture(rng, 2, 2), root / "b" / "tiny.png", "PNG")  # too small for jumble:3x3
    (root / "README.txt").write_text("not listed: not an image extension")
    return root


def settings(**kw) -> Settings:
    base = dict(tests=tuple(parse_tests(TESTS)), per_test=10, distractors=0.3, seed=7)
    base.update(kw)
    return Settings(**base)


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """The results of a folder: the run record (times, ids) and the marker say when and
    how, not what."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name not in ("run.json", "_SUCCESS")
    }


@pytest.fixture(scope="module")
def spark_bench(spark, library, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("benches") / "bench"
    run(spark, QueryJob([str(library)], str(out), settings()))
    return out


def test_spark_equals_the_single_process_specification(spark_bench, library, tmp_path):
    from disc21spark.core.spark_images import local_paths

    s = settings()
    selection, made = make_local(local_paths([str(library)]), s, str(tmp_path / "queries"))
    benchset.write(tmp_path, s, selection, made, [str(library)])
    assert folder_bytes(tmp_path) == folder_bytes(spark_bench)


@pytest.mark.parametrize("partitions", [1, 5])
def test_same_seed_same_bytes_whatever_the_partitions(
    spark, library, spark_bench, tmp_path, partitions
):
    out = tmp_path / "bench"
    run(spark, QueryJob([str(library)], str(out), settings(), image_partitions=partitions))
    assert folder_bytes(out) == folder_bytes(spark_bench)


def test_another_seed_gives_other_queries(spark, library, spark_bench, tmp_path):
    out = tmp_path / "bench"
    run(spark, QueryJob([str(library)], str(out), settings(seed=8)))
    a, b = folder_bytes(out), folder_bytes(spark_bench)
    assert a.keys() == b.keys() and a["queries/Q000000.png"] != b["queries/Q000000.png"]


def test_the_benchmark_folder(spark_bench):
    bench = benchset.read(spark_bench)
    q, refs = bench.queries, bench.references
    n_tests = len(parse_tests(TESTS))
    assert len(q) == 10 * n_tests and list(q.query_id) == [f"Q{i:06d}" for i in range(len(q))]
    assert list(refs.reference_id) == [f"R{i:06d}" for i in range(len(refs))]
    # 23 readable (22 + tiny), 3 of the 10 sources held out as distractors
    assert len(refs) == 23 - 3
    assert (q.reference_id.fillna("") == "").sum() == 3 * n_tests
    # every test alters the same 10 sources
    assert q.groupby("test").source_path.apply(frozenset).nunique() == 1
    held = set(q.source_path[q.reference_id.fillna("") == ""])
    assert not held & set(refs.path)
    matched = q[q.reference_id.fillna("") != ""].merge(refs, on="reference_id")
    assert (matched.source_path == matched.path).all()
    for row in q.itertuples():
        data = (spark_bench / row.file).read_bytes()
        img = Image.open(io.BytesIO(data))
        assert (img.width, img.height, len(data)) == (row.width, row.height, row.bytes)
    gt = pd.read_csv(spark_bench / "ground_truth.csv", dtype=str, keep_default_na=False)
    assert list(gt.columns) == ["query_id", "reference_id"]
    assert (gt.reference_id == "").sum() == 3 * n_tests
    # the test of each matched query; distractors in no group
    groups = pd.read_csv(spark_bench / "query_groups.csv", dtype=str)
    assert list(groups.columns) == ["query_id", "group"] and len(groups) == 7 * n_tests
    assert (groups.merge(q, on="query_id").eval("group == test")).all()
    skipped = pd.read_csv(spark_bench / "skipped.csv")
    reasons = dict(zip(skipped.path.map(lambda p: Path(p).name), skipped.reason))
    assert reasons["truncated.jpg"].startswith("damaged image")
    assert reasons["not_an_image.jpg"] == "not an image Pillow can read"
    assert "too small for jumble:3x3" in reasons["tiny.png"]
    assert "README.txt" not in reasons
    assert bench.settings["counts"]["library_files"] == 25
    assert Image.open(spark_bench / "contact_sheet.png").width > 300


def test_the_ground_truth_is_read_by_the_scorer(spark, spark_bench):
    from disc21spark.core.fs import SparkFiles
    from disc21spark.matching.ground_truth import load_ground_truth
    from disc21spark.resolve import resolve

    gt = load_ground_truth(SparkFiles(spark), resolve(str(spark_bench / "ground_truth.csv")))
    assert gt.n_queries == 60 and gt.n_positives == 42


def test_globs_with_double_star_and_several_patterns(spark, library, tmp_path):
    out = tmp_path / "bench"
    run(
        spark,
        QueryJob(
            [f"{library}/**/*.png", f"{library}/a/*.jpeg"],
            str(out),
            settings(per_test=4, distractors=0.0),
        ),
    )
    refs = pd.read_csv(out / "references.csv")
    names = sorted(Path(p).name for p in refs.path)
    assert all(n.endswith((".png", ".jpeg")) for n in names)
    assert "tiny.png" in names and len(names) == 7 + 1 + 8


def test_bad_libraries(spark, library, tmp_path):
    with pytest.raises(InputError, match="needs 30 distinct source images; the library has 22"):
        run(spark, QueryJob([str(library)], str(tmp_path / "x"), settings(per_test=30)))
    with pytest.raises(InputError, match="no such file or folder"):
        run(spark, QueryJob([str(tmp_path / "missing")], str(tmp_path / "x"), settings()))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no image files found"):
        run(spark, QueryJob([str(tmp_path / "empty")], str(tmp_path / "x"), settings()))
    assert not (tmp_path / "x").exists()


def make_queries(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "jobs" / "make_queries.py"), *args],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=300,
    )


def test_cli_errors_are_one_line_and_nothing_is_overwritten(library, tmp_path):
    proc = make_queries(
        "--images", str(library), "--output", str(tmp_path / "o"), "--tests", "crop:50,blurr:2"
    )
    assert proc.returncode == 2
    (line,) = error_lines(proc)
    assert line.startswith("error: unknown test 'blurr:2' (known: crop:K, jumble:RxC")
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "mine.txt").write_text("mine")
    proc = make_queries("--images", str(library), "--output", str(kept), "--queries-per-test", "2")
    assert proc.returncode == 2
    assert error_lines(proc) == [
        f"error: {kept}: folder exists and is not empty (pass --overwrite to replace it)"
    ]
    assert (kept / "mine.txt").read_text() == "mine"


@pytest.mark.parametrize("signum,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_mid_run_removes_the_staging_folder_and_keeps_the_output(
    library, tmp_path, signum, code
):
    """A scheduler stopping the task (SIGTERM) or Ctrl-C: staging gone, the previous
    output byte for byte as it was, Spark stopped, exit 143 / 130."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("the previous run")
    # many queries, so that the job is still altering images when the signal comes
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "jobs" / "make_queries.py"),
            "--images",
            str(library),
            "--output",
            str(out),
            "--overwrite",
            "--tests",
            ",".join(f"crop:{p}" for p in range(30, 90, 2)),
            "--queries-per-test",
            "20",
            "--seed",
            "3",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    try:
        deadline = time.monotonic() + 240
        while not list(tmp_path.glob(".out.staging-*")) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert list(tmp_path.glob(".out.staging-*")), "the job never started writing"
        time.sleep(1.0)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == code, stderr[-2000:]
    assert [x for x in stderr.splitlines() if x.startswith("error:")] == [
        f"error: {'terminated (SIGTERM)' if code == 143 else 'interrupted'}; nothing was "
        "written, any previous output is untouched"
    ]
    assert "Traceback" not in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "the previous run"
