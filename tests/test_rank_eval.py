"""rank_eval end to end on a small dead-leaves benchmark: Spark ranks and μAP equal the
single-machine specification; Howe's known behaviours hold; bad input gets one line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from disc21spark.core.errors import InputError
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.oracle import spec as metrics
from disc21spark.queries import bench_folder as benchset
from disc21spark.queries import codec as images
from disc21spark.queries.transforms import parse_tests
from disc21spark.ranks import distances
from disc21spark.ranks import methods as features
from disc21spark.ranks.extract_job import ExtractJob
from disc21spark.ranks.extract_job import run as extract_run
from disc21spark.ranks.job import RankJob, parse_distances, run
from disc21spark.ranks.spec import exact_ranks, layout, tied_rank
from tests.conftest import ROOT, cli_env, error_lines, without_root_file_access
from tests.scenes import TESTS

METHODS = ["colorhist", "tiny", "pdq", "tests.test_rank_eval:mean_colour"]


def mean_colour(img: np.ndarray) -> np.ndarray:
    """Mean RGB: a user descriptor"""
    return img.reshape(-1, 3).mean(axis=0)


@pytest.fixture(scope="module")
def report(spark, bench, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "r"
    run(
        spark,
        RankJob(
            str(bench),
            METHODS,
            str(out),
            knn=5,
            subsets=2,
            sizes=(12, 20, 33),
            seed=1,
            resamples=100,
        ),
    )
    return out


def vectors(bench: Path, name: str):
    b = benchset.read(bench)
    m = features.method(name)
    load = lambda p: images.decode(Path(p).read_bytes())  # noqa: E731
    xb = features.describe_all(m, [load(p) for p in b.references.path])
    xq = features.describe_all(m, [load(bench / f) for f in b.queries.file])
    return b, m, xq, xb


@pytest.mark.parametrize("name", METHODS)
def test_ranks_equal_the_specification(bench, report, name):
    b, m, xq, xb = vectors(bench, name)
    refs = list(b.references.reference_id)
    ref = b.queries.reference_id.fillna("")
    original = np.array([refs.index(r) if r else -1 for r in ref])
    lay = layout(len(refs), original, 2, (12, 20, 33), seed=1)
    expected = exact_ranks(xq, xb, original, m.metric, lay)
    got = pd.read_parquet(report / "ranks.parquet")
    got = got[got.method == name].set_index("query_id")
    matched = original >= 0
    qids = b.queries.query_id[matched]
    assert got.loc[qids, "rank"].tolist() == expected.rank[matched].tolist()
    assert got.loc[qids, "rank_in_subset"].tolist() == expected.rank_in_subset[matched].tolist()
    sizes = pd.read_parquet(report / "size_ranks.parquet")
    sizes = sizes[sizes.method == name].pivot(index="query_id", columns="size", values="rank")
    assert sizes.loc[qids].to_numpy().tolist() == expected.rank_by_size[matched].tolist()


@pytest.mark.parametrize("name", ["colorhist", "tiny"])
def test_micro_ap_equals_the_specification_per_test(bench, report, name):
    b, m, xq, xb = vectors(bench, name)
    scores = distances.brute_force_pairs(xq, xb, m.metric)
    refs = np.asarray(b.references.reference_id)
    summary = pd.read_parquet(report / "summary.parquet").set_index(["method", "test"])
    for test in parse_tests(TESTS):
        rows = np.flatnonzero(b.queries.test == test.name)
        qids, rids, sc = [], [], []
        for r in rows:
            order = np.lexsort((refs, -scores[r]))[:5]  # best 5, ties by reference id
            qids += [b.queries.query_id[r]] * 5
            rids += list(refs[order])
            sc += list(scores[r][order])
        q = b.queries.iloc[rows]
        pos = q[q.reference_id.fillna("") != ""]
        gt = GroundTruth(
            "t", q.query_id.to_numpy(), pos.query_id.to_numpy(), pos.reference_id.to_numpy()
        )
        spec = metrics.evaluate(np.array(qids), np.array(rids), np.array(sc), gt)
        assert summary.loc[(name, test.name), "micro_ap"] == spec.micro_ap
        assert summary.loc[(name, test.name), "recall_at_p90"] == pytest.approx(
            spec.recall_at_p90 if spec.recall_at_p90 is not None else np.nan, nan_ok=True
        )


def test_howes_known_behaviours(report):
    s = pd.read_parquet(report / "summary.parquet").set_index(["method", "test"])
    for m in ("colorhist", "tiny", "pdq"):
        assert (
            s.loc[(m, "identity"), "median_rank"] == 1 and s.loc[(m, "identity"), "mean_rank"] == 1
        )
    assert s.loc[("colorhist", "jumble:4x4"), "mean_rank"] == 1  # invariant when the grid divides
    assert (
        s.loc[("colorhist", "lowcon:30"), "mean_rank"] > s.loc[("tiny", "lowcon:30"), "mean_rank"]
    )


def test_report_files(report):
    for name in (
        "ranks",
        "summary",
        "stability",
        "stability_summary",
        "sizes",
        "size_ranks",
        "slopes",
        "queries_needed",
        "queries_needed_summary",
        "comparisons",
    ):
        assert (report / f"{name}.parquet").is_file() and (report / f"{name}.csv").is_file()
    for png in (
        "rank_distributions",
        "rank_summary",
        "rank_vs_size",
        "stability",
        "queries_needed",
    ):
        assert Image.open(report / f"{png}.png").width > 300
    md = (report / "report.md").read_text()
    assert "## Who wins" in md and "**jumble:4x4**" in md and "colorhist" in md
    doc = json.loads((report / "rank_eval.json").read_text())
    assert len(doc["summary"]) == len(METHODS) * 4 and doc["winners"]
    slopes = pd.read_csv(report / "slopes.csv")
    assert set(slopes.columns) >= {"mean_rank_per_1000", "mean_rank_r2"}
    assert (report / "descriptors" / "colorhist" / "references.h5").is_file()


def test_precomputed_descriptors_give_the_same_figures(spark, bench, report, tmp_path, monkeypatch):
    monkeypatch.chdir(bench.parent)  # a relative bench path, as `make demo` gives
    extract_run(spark, ExtractJob("tiny", str(tmp_path / "tiny"), bench=bench.name))
    run(
        spark,
        RankJob(
            str(bench),
            [f"tiny={tmp_path / 'tiny'}"],
            str(tmp_path / "r"),
            knn=5,
            subsets=2,
            sizes=(12, 20, 33),
            seed=1,
            resamples=100,
        ),
    )
    a = pd.read_parquet(report / "summary.parquet")
    a = a[a.method == "tiny"].reset_index(drop=True)
    b = pd.read_parquet(tmp_path / "r" / "summary.parquet")
    pd.testing.assert_frame_equal(a, b)


def test_bad_inputs(spark, bench, tmp_path):
    broken = tmp_path / "nogt"
    shutil.copytree(bench, broken)
    (broken / "ground_truth.csv").unlink()
    with pytest.raises(InputError, match="ground_truth.csv is missing"):
        run(spark, RankJob(str(broken), ["colorhist"], str(tmp_path / "o")))
    extract_run(spark, ExtractJob("colorhist", str(tmp_path / "ch"), bench=str(bench)))
    import h5py

    with h5py.File(tmp_path / "ch" / "queries.h5", "r+") as f:
        names = f["image_names"][:]
        del f["image_names"]
        f["image_names"] = np.array([n.replace(b"Q", b"X") for n in names])
    with pytest.raises(
        InputError,
        match=r"queries.h5: ids do not match the bench: 48 bench ids have no vector \(first Q000000\)",
    ):
        run(spark, RankJob(str(bench), [f"colorhist={tmp_path / 'ch'}"], str(tmp_path / "o")))
    with pytest.raises(InputError, match="--sizes"):
        run(spark, RankJob(str(bench), ["colorhist"], str(tmp_path / "o"), sizes=(5,)))
    assert not (tmp_path / "o").exists()


def test_a_bench_image_gone_or_unreadable_is_one_line(spark, bench, tmp_path):
    """A query file the bench lists is deleted, or loses its read permission: one line
    naming it (once an internal error, and a "not found" for a file that was there)."""
    damaged = tmp_path / "bench"
    shutil.copytree(bench, damaged)
    query = damaged / "queries" / sorted(p.name for p in (damaged / "queries").iterdir())[2]
    query.chmod(0)
    proc = subprocess.run(
        [
            *without_root_file_access(),
            sys.executable,
            str(ROOT / "jobs" / "rank_eval.py"),
            "--bench",
            str(damaged),
            "--methods",
            "tiny",
            "--output",
            str(tmp_path / "o"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert error_lines(proc) == [
        f"error: {query}: listed in the bench, but cannot be read (Permission denied)"
    ]
    query.unlink()
    with pytest.raises(InputError, match=f"^{re.escape(str(query))}: no such file$"):
        run(spark, RankJob(str(damaged), ["tiny"], str(tmp_path / "o")))
    assert not (tmp_path / "o").exists()


def test_extract_descriptors_on_images(spark, bench, tmp_path):
    lib = bench.parent / "library"
    bad = tmp_path / "lib"
    shutil.copytree(lib, bad)
    (bad / "broken.png").write_bytes(b"not a png")
    out = tmp_path / "refs.h5"
    doc = extract_run(spark, ExtractJob("colorhist", str(out), images=[str(bad)]))
    assert doc["images"] == 36 and doc["skipped"] == 1
    skipped = pd.read_csv(tmp_path / "refs_skipped.csv")
    assert skipped.path.str.endswith("broken.png").all()
    import h5py

    with h5py.File(out) as f:
        ids = [n.decode() for n in f["image_names"][:]]
        got = f["vectors"][:]
    assert ids == [f"dl_{i:03d}" for i in range(36)]
    expected = features.describe_all(
        features.method("colorhist"), [images.decode((lib / f"{i}.png").read_bytes()) for i in ids]
    )
    assert np.array_equal(got, expected)
    extract_run(spark, ExtractJob("colorhist", str(tmp_path / "refs.parquet"), images=[str(lib)]))
    table = pd.read_parquet(tmp_path / "refs.parquet")
    assert np.array_equal(np.stack(table.vector.to_numpy()), expected)
    extract_run(spark, ExtractJob("colorhist", str(tmp_path / "refs.npy"), images=[str(lib)]))
    assert np.array_equal(np.load(tmp_path / "refs.npy"), expected)
    assert (tmp_path / "refs_ids.txt").read_text().split() == ids


def test_the_descriptor_track_reads_the_bench_and_its_vectors(spark, bench, report):
    """ground_truth.csv and the kept vectors go straight into jobs/evaluate.py's descriptor
    track; its kNN pairs are those rank_eval scored, so μAP over all tests is theirs."""
    from disc21spark.descriptors.job import DescriptorJob
    from disc21spark.descriptors.job import run as descriptor_run

    folder = report / "descriptors" / "tiny"
    m = descriptor_run(
        spark,
        DescriptorJob(
            str(bench / "ground_truth.csv"),
            [str(folder / "queries.h5")],
            [str(folder / "references.h5")],
            None,
            knn=5,
            distance="ip",
        ),
    )
    assert m.n_queries == 48 and m.n_positives == 36 and m.n_predictions == 48 * 5
    ranks = pd.read_parquet(report / "ranks.parquet")
    tiny = ranks[ranks.method == "tiny"]
    assert m.recall_at_rank1 == pytest.approx((tiny["rank"] == 1).mean())


def test_cli_unknown_method_is_one_line(bench, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "jobs" / "rank_eval.py"),
            "--bench",
            str(bench),
            "--methods",
            "colorhist,sift",
            "--output",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=300,
    )
    assert proc.returncode == 2
    assert error_lines(proc) == [
        "error: unknown descriptor method 'sift' (built-in: colorhist, correlogram, tiny, pdq; "
        "or module:function)"
    ]


def test_mid_ties_and_a_chosen_distance_equal_the_specification(spark, bench, tmp_path):
    out = tmp_path / "mid"
    run(
        spark,
        RankJob(
            str(bench),
            ["colorhist", "pdq"],
            str(out),
            knn=5,
            subsets=2,
            sizes=(12, 33),
            seed=1,
            resamples=50,
            ties="mid",
            distances={"colorhist": "l2"},
        ),
    )
    got = pd.read_parquet(out / "ranks.parquet")
    doc = json.loads((out / "rank_eval.json").read_text())
    assert doc["ties"] == "mid" and {m["method"]: m["metric"] for m in doc["methods"]} == {
        "colorhist": "l2",
        "pdq": "l2",
    }
    some_tie = False
    for name in ("colorhist", "pdq"):
        b, m, xq, xb = vectors(bench, name)
        refs = list(b.references.reference_id)
        original = np.array([refs.index(r) if r else -1 for r in b.queries.reference_id.fillna("")])
        expected = exact_ranks(
            xq, xb, original, "l2", layout(len(refs), original, 2, (12, 33), seed=1)
        )
        matched = original >= 0
        mine = got[got.method == name].set_index("query_id").loc[b.queries.query_id[matched]]
        assert (
            mine["rank"].tolist()
            == tied_rank(expected.rank, expected.better, "mid")[matched].tolist()
        )
        assert mine["rank_pessimistic"].tolist() == expected.rank[matched].tolist()
        some_tie |= bool((mine["tied"] > 1).any())
    assert some_tie, "PDQ's Hamming distances tie: the mid-rank case is exercised"
    assert "ties: mid-rank" in (out / "report.md").read_text()


def test_distance_option_is_checked():
    assert parse_distances("colorhist=l2, correlogram=l1", ["colorhist", "correlogram"]) == {
        "colorhist": "l2",
        "correlogram": "l1",
    }
    for text, message in [
        ("colorhist", "METHOD=DISTANCE"),
        ("tiny=l1", "not one of the methods"),
        ("colorhist=cosine", "not a distance"),
    ]:
        with pytest.raises(InputError, match=message):
            parse_distances(text, ["colorhist"])


def test_micro_ap_by_test_from_the_query_groups_file(bench, report):
    """by_group.csv: each method's kNN pairs over the whole bench, by the bench's
    query_groups.csv, equal to the definition by restriction (with the same resamples)."""
    from disc21spark.core.fs import LocalFiles
    from disc21spark.matching.ground_truth import load_ground_truth
    from disc21spark.matching.oracle import groups as groups_spec
    from disc21spark.matching.stats.groups_file import read_query_groups
    from disc21spark.matching.stats.model import STATISTICS, Resampling
    from disc21spark.resolve import resolve

    b, m, xq, xb = vectors(bench, "colorhist")
    scores = distances.brute_force_pairs(xq, xb, m.metric)
    refs = np.asarray(b.references.reference_id)
    qids, rids, sc = [], [], []
    for r in range(len(b.queries)):
        order = np.lexsort((refs, -scores[r]))[:5]
        qids += [b.queries.query_id[r]] * 5
        rids += list(refs[order])
        sc += list(scores[r][order])
    gt = load_ground_truth(LocalFiles(), resolve(str(bench / "ground_truth.csv")))
    groups = read_query_groups(str(bench / "query_groups.csv"), gt)
    wanted = groups_spec.group_table(
        np.array(qids),
        np.array(rids),
        np.array(sc),
        gt,
        groups,
        Resampling(100, seed=1, groups=groups),
    )
    found = pd.read_parquet(report / "by_group.parquet")
    found = found[found.method == "colorhist"].set_index("group")
    assert sorted(found.index) == sorted(t.name for t in parse_tests(TESTS))
    for g in wanted.groups:
        row = g.row()
        for k in (*STATISTICS, "micro_ap_low", "micro_ap_high"):
            assert (found.loc[g.group, k] == row[k]) or (
                pd.isna(found.loc[g.group, k]) and row[k] is None
            )
    doc = json.loads((report / "rank_eval.json").read_text())
    assert len(doc["by_group"]) == len(METHODS) * 4
