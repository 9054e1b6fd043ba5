"""A file past the in-process limit, read in batches (matching/inprocess/batched.py): the same
figures, intervals, groups, warnings and errors as the whole-file engine and the numpy
specification, bit for bit, whatever the batch size; ``engine.choose`` sends such a
file there (never to Spark) and says so; the one-line error when memory cannot hold it."""

from __future__ import annotations

import bz2
import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from disc21spark import engine
from disc21spark.core.errors import InputError
from disc21spark.core.phases import Phases
from disc21spark.matching.inprocess.source import Source
from disc21spark.matching.oracle import bootstrap as stats_spec
from disc21spark.matching.oracle import groups as groups_spec
from disc21spark.matching.oracle.spec import encode, evaluate_encoded
from disc21spark.matching.stats.groups_file import read_query_groups
from disc21spark.matching.stats.model import Resampling
from disc21spark.resolve import resolve
from tests.helpers import assert_same, make_gt, random_submission, score_file

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("query_id", "reference_id", "score")


def write(frame: pd.DataFrame, path: Path) -> Path:
    """The frame as a submission file: CSV (with a header line), .csv.gz, .csv.bz2 or
    Parquet."""
    if path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    elif path.suffix in (".gz", ".bz2"):
        with (gzip.open if path.suffix == ".gz" else bz2.open)(path, "wt") as fh:
            frame.to_csv(fh, index=False)
    else:
        frame.to_csv(path, index=False)
    return path


def batched(path: Path, gt, r=None, batch_bytes=97, max_results=0):
    """``score_file`` reading ``batch_bytes`` at a time (a CSV line is about 20)."""
    return score_file(
        str(path),
        "auto",
        gt,
        max_results,
        50,
        Phases(),
        announce=False,
        resampling=r,
        batch_bytes=batch_bytes,
    )


def whole(path: Path, gt, r=None, max_results=0):
    return score_file(
        str(path), "auto", gt, max_results, 50, Phases(), announce=False, resampling=r
    )


def negative_zeros(frame: pd.DataFrame, rng) -> pd.DataFrame:
    frame = frame.copy()
    zero = rng.random(len(frame)) < 0.1
    frame.loc[zero, "score"] = -0.0
    return frame


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    n_scores=st.sampled_from([1, 3, 50, 10**6]),
    batch_bytes=st.sampled_from([41, 97, 400, 1 << 20]),
    resamples=st.sampled_from([0, 25]),
)
def test_batches_give_the_specifications_figures_and_intervals(
    tmp_path_factory, seed, n, n_scores, batch_bytes, resamples
):
    """Every figure and the curve equal ``spec.evaluate_encoded``'s, the replicates
    ``stats.spec.bootstrap``'s, and the whole metrics the whole-file engine's: ties,
    -0.0, distractors, unknown queries, no true pair, one batch or hundreds."""
    tmp = tmp_path_factory.mktemp("batched")
    rng = np.random.default_rng(seed)
    gt = make_gt(30, 18)
    frame = negative_zeros(random_submission(rng, gt, n, n_scores), rng)
    frame = frame.sample(frac=1.0, random_state=seed % 1000).reset_index(drop=True)
    path = write(frame, tmp / "p.csv")
    r = Resampling(resamples, 0.9, seed % 7)
    got = batched(path, gt, r, batch_bytes)
    columns = [frame[c].to_numpy() for c in COLUMNS]
    expected = evaluate_encoded(encode(*columns, gt), gt, 50)
    for key, value in expected.to_dict().items():
        assert got.to_dict()[key] == value, key
    for field in ("precision", "recall", "threshold"):
        np.testing.assert_array_equal(getattr(got.curve, field), getattr(expected.curve, field))
    spec = stats_spec.bootstrap(*columns, gt, r)
    assert got.uncertainty.micro_ap_optimistic == spec.micro_ap_optimistic
    for name, values in spec.replicates.items():
        np.testing.assert_array_equal(got.uncertainty.replicates[name], values)
    assert_same(got, whole(path, gt, r))
    assert got.to_dict() == whole(path, gt, r).to_dict()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 200), n_groups=st.integers(1, 3))
def test_batches_give_the_group_table_of_the_definition(tmp_path_factory, seed, n, n_groups):
    tmp = tmp_path_factory.mktemp("batched_groups")
    rng = np.random.default_rng(seed)
    gt = make_gt(30, 18)
    frame = random_submission(rng, gt, n, 5)
    picked = rng.integers(-1, n_groups, size=gt.n_queries)
    mapping = {q: f"g{c}" for q, c in zip(gt.query_ids, picked) if c >= 0} or {"Q000": "g0"}
    text = "query_id,group\n" + "".join(f"{q},{g}\n" for q, g in mapping.items())
    (tmp / "groups.csv").write_text(text)
    groups = read_query_groups(str(tmp / "groups.csv"), gt)
    r = Resampling(20, 0.9, seed % 5, groups)
    found = batched(write(frame, tmp / "p.csv"), gt, r, 61).groups
    columns = [frame[c].to_numpy() for c in COLUMNS]
    assert found == groups_spec.group_table(*columns, gt, groups, r)


@pytest.mark.parametrize("name", ["p.csv", "p.csv.gz", "p.csv.bz2", "p.parquet"])
def test_every_format_in_batches_equals_the_whole_file(tmp_path, name):
    rng = np.random.default_rng(4)
    gt = make_gt(40, 25)
    frame = negative_zeros(random_submission(rng, gt, 3000, 200), rng)
    path = write(frame, tmp_path / name)
    r = Resampling(30, 0.95, 2)
    # Parquet batches are rows: 24 bytes of batch_bytes a row
    assert batched(path, gt, r, 24 * 101).to_dict() == whole(path, gt, r).to_dict()


def test_the_warnings_of_misnamed_ids_are_the_whole_files(tmp_path):
    gt = make_gt(10, 6)
    rows = [(f"images/Q{i:03d}.jpg", f"R{i:03d}", 0.5) for i in range(6)]
    rows += [("Q001", "R001.png", 0.4), ("Q002", "R777", 0.3), ("ZZZ", "R001", 0.2)]
    path = write(pd.DataFrame(rows, columns=COLUMNS), tmp_path / "p.csv")
    got = batched(path, gt, batch_bytes=30)
    assert got.warnings and got.warnings == whole(path, gt).warnings


def error_of(call) -> str:
    with pytest.raises(InputError) as caught:
        call()
    return str(caught.value)


@pytest.mark.parametrize(
    "bad",
    [
        "Q001,R001,abc",  # a score that is no number
        "Q001,R001,inf",  # not finite
        "Q001,,0.5",  # an empty id
        "Q001,R001",  # a field missing
        "Q001,R001,0.5,7",  # one too many
    ],
)
def test_a_bad_line_deep_in_the_file_is_named_as_the_whole_file_names_it(tmp_path, bad):
    gt = make_gt(10, 6)
    good = "".join(f"Q{i % 10:03d},R{i:05d},{i / 7000:.6f}\n" for i in range(4000))
    path = tmp_path / "p.csv"
    path.write_text("query_id,reference_id,score\n" + good + bad + "\n" + good[:200])
    said = error_of(lambda: batched(path, gt, batch_bytes=300))
    assert said == error_of(lambda: whole(path, gt))
    assert "line 4002" in said


def test_a_pair_repeated_across_batches_is_named_as_the_whole_file_names_it(tmp_path):
    gt = make_gt(10, 6)
    lines = [f"Q{i % 10:03d},R{i:05d},0.{i}" for i in range(3000)]
    lines.insert(2500, lines[17])  # the pair of line 18 again, batches later
    lines.insert(2900, lines[17])
    path = tmp_path / "p.csv"
    path.write_text("\n".join(lines) + "\n")
    said = error_of(lambda: batched(path, gt, batch_bytes=200))
    assert said == error_of(lambda: whole(path, gt))
    assert "appears 3 times" in said and "lines 18 and 2501" in said


def test_max_results_is_counted_over_every_batch(tmp_path):
    gt = make_gt(10, 6)
    path = tmp_path / "p.csv"
    path.write_text("".join(f"Q{i % 10:03d},R{i:05d},0.5\n" for i in range(500)))
    said = error_of(lambda: batched(path, gt, batch_bytes=100, max_results=499))
    assert said == error_of(lambda: whole(path, gt, max_results=499))


def test_an_empty_file_and_a_header_alone(tmp_path):
    gt = make_gt(10, 6)
    for text in ("", "query_id,reference_id,score\n"):
        path = tmp_path / "p.csv"
        path.write_text(text)
        assert batched(path, gt).to_dict() == whole(path, gt).to_dict()


def test_a_file_past_the_limit_is_read_in_batches_on_this_machine(tmp_path):
    """``engine.choose``: one local file goes to the local engine whatever its size (a
    file past memory too), in batches of a sixteenth of --local-max-bytes (2M to 64M);
    --engine spark still goes to Spark."""
    path = tmp_path / "p.csv"
    path.write_text("Q000,R000,0.5\n" * 1000)
    past = engine.choose([str(path)], local_max_bytes=1000)
    assert (past.engine, past.batch_bytes) == ("local", engine.SMALLEST_BATCH)
    assert engine.choose([str(path)], local_max_bytes=320 << 20).batch_bytes == 20 << 20
    assert engine.choose([str(path)], engine="local", local_max_bytes=1000).batch_bytes
    assert engine.choose([str(path)], engine="spark", local_max_bytes=1000).engine == "spark"
    assert engine.batch_bytes(1 << 40) == engine.BATCH_BYTES


def test_memory_that_cannot_hold_the_keys_is_one_line(tmp_path, monkeypatch):
    """The memory probe pointed at a tiny figure: the repeat check's keys do not fit."""
    from disc21spark.core import memory

    gt = make_gt(10, 6)
    path = write(random_submission(np.random.default_rng(1), gt, 500, 50), tmp_path / "p.csv")
    monkeypatch.setattr(memory, "available_bytes", lambda: 1000)
    said = error_of(lambda: batched(path, gt))
    assert said.startswith(f"{path}: ") and "more than the 0.0 GiB of memory available" in said
    assert "--engine spark" in said


def test_the_command_past_a_small_limit_scores_every_format_in_batches(tmp_path):
    """``python jobs/evaluate.py`` with defaults but for --local-max-bytes (so that these
    files count as past memory, read in 2 MiB batches): the metrics.json of the file read
    in one batch, for CSV, gzip and Parquet; the phase line says batches; no Spark."""
    gt_path = ROOT / "data" / "disc21_dev_ground_truth.csv"
    sub = tmp_path / "p.csv"
    subprocess.run(
        [sys.executable, "-m", "disc21spark.testing.synth", "--ground-truth", str(gt_path)]
        + ["--output", str(sub), "--predictions", "120000", "--seed", "8"],
        check=True,
        capture_output=True,
    )
    frame = pd.read_csv(sub, dtype={"query_id": str, "reference_id": str})
    variants = [sub, *(write(frame, tmp_path / f"p.{kind}") for kind in ("csv.gz", "parquet"))]
    results = {}
    for path, limit in [(sub, "1G"), *((v, "100K") for v in variants)]:
        out = tmp_path / f"out_{path.name}_{limit}"
        done = subprocess.run(
            [sys.executable, str(ROOT / "jobs" / "evaluate.py"), "--ground-truth", str(gt_path)]
            + ["--predictions", str(path), "--output", str(out), "--local-max-bytes", limit]
            + ["--resamples", "50"],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert ("batches" in done.stderr) == (limit != "1G")
        assert "SparkSession" not in done.stderr
        metrics = json.loads((out / "metrics.json").read_text())
        metrics.pop("run", None)
        results[(path.name, limit)] = metrics
    first, *rest = results.values()
    assert all(other == first for other in rest)


def test_a_source_is_read_the_same_in_batches(tmp_path):
    """The reader alone: concatenated batches are the whole file's pairs."""
    from disc21spark.matching.inprocess.local_read import iter_pairs

    path = tmp_path / "p.csv"
    path.write_text(" Q1 , R1 ,0.5\n\nquery_id,reference_id,score\nQ2,R2,-0.0\n" * 50)
    source = Source.of_input(resolve(str(path)))
    parts = list(iter_pairs(source, 40))
    assert len(parts) > 5
    (all_at_once,) = iter_pairs(source, 1 << 20)
    assert sum(len(p.score) for p in parts) == len(all_at_once.score)
    np.testing.assert_array_equal(np.concatenate([p.score for p in parts]), all_at_once.score)
    assert [v for p in parts for v in p.query.to_pylist()] == all_at_once.query.to_pylist()


def test_pairs_that_share_a_key_are_told_apart_by_their_ids(tmp_path, monkeypatch):
    """Every reference hashed alike (a collision for every pair of a query): a file with
    no repeated pair is scored as the whole file is, and one with a repeat is named as
    the whole file names it."""
    from disc21spark.matching.inprocess import codes

    gt = make_gt(10, 6)
    frame = random_submission(np.random.default_rng(3), gt, 400, 50)
    path = write(frame, tmp_path / "p.csv")
    expected = whole(path, gt).to_dict()
    monkeypatch.setattr(codes, "string_hashes", lambda values: np.zeros(len(values), np.uint64))
    assert batched(path, gt, batch_bytes=500).to_dict() == expected
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, lines[7], ""]))
    said = error_of(lambda: batched(path, gt, batch_bytes=500))
    monkeypatch.undo()
    assert said == error_of(lambda: whole(path, gt))


def test_string_hashes_follow_the_bytes():
    from disc21spark.matching.inprocess.arrays import strings
    from disc21spark.matching.inprocess.codes import string_hashes

    values = ["R1", "R1", "R10", "1R", "R01", "é", "R1 ", "x" * 5000]
    h = string_hashes(strings(values))
    assert h[0] == h[1] and len(set(h[1:].tolist())) == len(values) - 1
    sliced = strings(["a", *values]).slice(1)  # an offset into the buffers
    np.testing.assert_array_equal(string_hashes(sliced), h)


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("batch_bytes", [37, 64, 301])
def test_the_bad_line_is_counted_alike_for_every_line_end(tmp_path, end, batch_bytes):
    """The scan for the bad line starts at the batch that found it: its line number is
    the file's, whichever line ends the file uses and wherever the batches cut (a CR LF
    split between two blocks included), plain or gzip."""
    gt = make_gt(10, 6)
    lines = [f"Q{i % 10:03d},R{i:05d},0.{i}" for i in range(700)]
    lines[613] = "Q001,R00613,zero"
    text = "query_id,reference_id,score" + end + end.join(lines) + end
    for path in (tmp_path / "p.csv", tmp_path / "p.csv.gz"):
        data = text.encode()
        path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
        said = error_of(lambda p=path: batched(p, gt, batch_bytes=batch_bytes))
        assert said == f"{path}: line 615: score 'zero' is not a number"
