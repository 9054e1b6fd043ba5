"""rank_eval's report without Spark: paired tests before any "wins", difficulty sweeps,
chance in every table, the library named, and figures whose every axis is labelled."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from disc21spark.ranks import report
from disc21spark.ranks.spec import Layout, layout


def ranked_table(ranks: dict[tuple[str, str], list[float]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(queries, per-query ranks) for {(method, test): ranks}, every method ranking the
    same queries of a test."""
    queries, rows = [], []
    for (method, test), values in ranks.items():
        for i, r in enumerate(values):
            qid = f"{test}-{i}"
            if (qid, test) not in {(q["query_id"], q["test"]) for q in queries}:
                queries.append({"query_id": qid, "test": test, "reference_id": f"R{i}"})
            rows.append(
                {
                    "method": method,
                    "query_id": qid,
                    "rank": float(r),
                    "rank_pessimistic": r,
                    "better": r - 1,
                    "subset": i % 3,
                    "rank_in_subset": float(r),
                    "rank_by_size": [float(r), float(r)],
                }
            )
    return pd.DataFrame(queries), pd.DataFrame(rows)


JOB = SimpleNamespace(subsets=3, seed=0, resamples=50, ties="pessimistic", knn=5)


@pytest.fixture(scope="module")
def made() -> dict:
    a = [1, 1, 1, 1, 1, 1, 1]
    queries, ranked = ranked_table(
        {
            ("A", "crop:90"): a,
            ("B", "crop:90"): [2, 3, 4, 5, 6, 7, 8],
            ("C", "crop:90"): [2, 3, 4, 5, 6, 7, 9],
            ("A", "crop:50"): a,
            ("B", "crop:50"): a,
            ("C", "crop:50"): [9, 9, 9, 9, 9, 9, 9],
            ("A", "crop:10"): [9, 8, 9, 7, 9, 9, 9],
            ("B", "crop:10"): [9, 9, 9, 9, 8, 9, 9],
            ("C", "crop:10"): [9, 9, 9, 9, 9, 9, 9],
        }
    )
    lay = layout(10, np.arange(7), 3, (7, 10), seed=0)
    return report.tables(
        queries, ranked, {}, lay, JOB, n_refs=10, metrics={"A": "l1", "B": "d1", "C": "l2"}
    )


def test_chance_and_shares_in_the_summary(made):
    s = made["summary"].set_index(["method", "test"])
    assert (s.chance_mean_rank == 5.5).all() and (s.library_size == 10).all()
    assert s.loc[("B", "crop:90"), "mean_rank"] == 5.0
    assert s.loc[("B", "crop:90"), "mean_rank_share"] == 0.5
    assert s.loc[("A", "crop:90"), "median_rank_share"] == 0.1
    assert s.loc[("A", "crop:90"), "distance"] == "l1"
    assert not s.loc[("A", "crop:90"), "at_chance"] and s.loc[("C", "crop:50"), "at_chance"]
    assert (made["slopes"].chance_per_1000 == 500).all()
    st = made["stability_summary"]
    assert (st.subsets == 3).all() and (st.chance_mean_rank == (10 / 3 + 1) / 2).all()


def test_wins_only_after_a_paired_test(made):
    c = made["comparisons"].set_index(["test", "other"])
    # seven queries, every difference positive: exact p = 2 / 2^7; two comparisons (Holm x2)
    assert c.loc[("crop:90", "B"), "p_value"] == 2 / 128
    assert c.loc[("crop:90", "B"), "p_holm"] == 4 / 128
    lines = report.winners(made["summary"], made["comparisons"])
    assert lines[0].startswith("**crop:90**: A wins on rank") and "p ≤ 0.031" in lines[0]
    # A and B rank every crop:50 query alike: no winner, and the reason given
    assert (
        lines[1].startswith("**crop:50**: no winner on rank")
        and "B (p = 1, identical ranks)" in lines[1]
    )
    assert "at chance: C" in lines[1]
    # a difference on 2 queries of 7 is no evidence
    assert lines[2].startswith("**crop:10**: no winner on rank")


def test_difficulty_sweeps_are_found_from_the_test_names():
    summary = pd.DataFrame(
        [
            {"method": "m", "test": t, "median_rank": v, "mean_rank": v, "chance_mean_rank": 50.5}
            for t, v in [
                ("crop:90", 1),
                ("crop:50", 3),
                ("crop:10", 40),
                ("lowcon:80", 2),
                ("jumble:2x2", 1),
                ("jumble:4x4", 2),
                ("jumble:8x8", 9),
                ("crop:50+lowcon:80", 5),
            ]
        ]
    )
    d = report.difficulty(summary)
    assert sorted(set(d.family)) == ["crop:K", "jumble:RxR"]
    crop = d[d.family == "crop:K"]
    assert crop.parameter.tolist() == [90, 50, 10] and crop.median_rank.tolist() == [1, 3, 40]
    assert d[d.family == "jumble:RxR"].parameter.tolist() == [4, 16, 64]  # tiles


def test_every_figure_has_labelled_axes_one_scale_per_row_and_a_legend(made):
    t = dict(made)
    t["difficulty"] = pd.DataFrame(
        [
            {
                "family": "crop:K",
                "kind": "crop",
                "parameter": p,
                "test": f"crop:{p}",
                "method": m,
                "median_rank": r,
                "mean_rank": r,
                "chance_mean_rank": 5.5,
            }
            for m in "AB"
            for p, r in [(90, 1), (50, 2), (10, 8)]
        ]
    )
    figures = report.figures(t, n_refs=10)
    assert set(figures) == {
        "rank_distributions.png",
        "rank_summary.png",
        "queries_needed.png",
        "difficulty.png",
        "rank_vs_size.png",
        "stability.png",
    }
    for name, fig in figures.items():
        axes = [ax for ax in fig.axes if ax.axison]
        assert axes, name
        for ax in axes:
            assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title(), (name, ax.get_title())
        assert fig.legends, name
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert {"A", "B", "C"} <= set(labels) and any(
            "chance" in x or "mean ± s.d." in x or "goal" in x for x in labels
        )
        grid = fig.axes[0].get_subplotspec().get_gridspec()
        for row in range(grid.nrows):
            in_row = [ax for ax in axes if ax.get_subplotspec().rowspan.start == row]
            for ax in in_row[1:]:
                assert in_row[0].get_shared_y_axes().joined(in_row[0], ax), (name, row)


def test_the_markdown_states_the_library_the_ties_and_chance(made, tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "library.json").write_text(
        json.dumps(
            {
                "size": 6000,
                "seed": 1,
                "width": 512,
                "height": 384,
                "photos": 26,
                "deadleaves": 5974,
                "leaves": "textured",
                "patch_sources": ["skimage/data/astronaut.png"] * 18,
            }
        )
    )
    about = report.library_about([str(lib / "**" / "*.jpg")])
    assert about["leaves"] == "textured"
    assert (
        "6,000 images" in about["text"]
        and "5,974 textured dead-leaves images 512×384" in about["text"]
    )
    assert "18 shipped photographs" in about["text"]
    # a relative glob from another working folder: found from the references' paths
    found = report.library_about(
        ["elsewhere/lib"], [str(lib / "deadleaves" / "a.jpg"), str(lib / "photos" / "b.png")]
    )
    assert found["source"] == str(lib)
    other = report.library_about([str(tmp_path / "photos")])
    assert "not written by make_library" in other["text"]
    bench = SimpleNamespace(
        folder=tmp_path / "bench", references=pd.DataFrame({"reference_id": range(10)})
    )
    queries = pd.DataFrame({"query_id": ["q"], "test": ["crop:90"], "reference_id": ["R0"]})
    info = [
        {"method": m, "metric": d, "dim": 4, "reference": "x"}
        for m, d in [("A", "l1"), ("B", "d1"), ("C", "l2")]
    ]
    md = report._markdown(
        made,
        [],
        queries,
        info,
        Layout(np.zeros(10, int), np.arange(10), (7, 10)),
        JOB,
        bench,
        about,
        ["line"],
    )
    assert "**Library**: make_library output" in md and "ties: pessimistic" in md
    assert "chance mean rank (N+1)/2 = 5.5" in md and "compared by −Huang's d1" in md
    assert "| chance_mean_rank |" in md and "**at chance**" in md
