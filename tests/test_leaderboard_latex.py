"""leaderboard.tex and ``Leaderboard.to_latex()``: the pool's board as a LaTeX table for a
paper. Its structure (escaped names, one row per submission, the caption's numbers equal
the run's settings), the same text from the API as in the file, both pool plans and each
board of a split, and a real compile when a LaTeX engine is installed."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import disc21spark as ds
from disc21spark.pool import latex, report
from tests.helpers import gt_csv, make_gt, random_submission
from tests.running import in_process

# every character LaTeX reads as a command, in one name (a table's names are free text)
ODD_NAME = "a_b%c&d#e$f{g}h~i^j\\k<l>|m"
ODD_ESCAPED = (
    r"a\_b\%c\&d\#e\$f\{g\}h\textasciitilde{}i\textasciicircum{}j\textbackslash{}k"
    r"\textless{}l\textgreater{}\textbar{}m"
)
SETTINGS = dict(resamples=200, confidence=0.9, seed=7, max_results=0)


def tables(seed: int = 5) -> tuple[object, dict[str, pd.DataFrame]]:
    """A 60-query ground truth and six tables: five scored (``flat`` gives every pair one
    score: its place hangs on ties), ``broken`` invalid (a pair given twice)."""
    gt = make_gt(60, 40)
    rng = np.random.default_rng(seed)
    frames = {name: random_submission(rng, gt, 150, 7) for name in (ODD_NAME, "b", "c", "d")}
    wrong = [f"R{i:03d}" for i in (np.arange(40) + 1) % 40]
    frames["flat"] = pd.DataFrame(  # 16 true pairs of 40 and 40 wrong ones, one score
        {
            "query_id": [*gt.positive_queries[:16], *gt.positive_queries],
            "reference_id": [*gt.positive_references[:16], *wrong],
            "score": 0.5,
        }
    )
    broken = random_submission(rng, gt, 40, 7)
    frames["broken"] = pd.concat([broken, broken.head(1)], ignore_index=True)
    return gt, frames


@pytest.fixture
def pool(tmp_path):
    gt, frames = tables()
    return str(gt_csv(tmp_path / "gt.csv", gt)), frames


def body(text: str) -> list[str]:
    """The table's rows: the lines between the heading's rule and ``\\bottomrule``."""
    lines = text.splitlines()
    start = lines.index(r"\midrule") + 1
    return [x for x in lines[start : lines.index(r"\bottomrule")] if x != r"\midrule"]


def cells(row: str) -> list[str]:
    """A row's cells (an escaped ``\\&`` is text, not a separator)."""
    return [c.strip() for c in re.split(r"(?<!\\)&", row.removesuffix(r"\\"))]


def columns(text: str) -> int:
    (spec,) = re.findall(r"\\begin\{tabular\}\{([lr]+)\}", text)
    return len(spec)


def caption(text: str) -> str:
    (line,) = [x for x in text.splitlines() if x.startswith(r"\caption")]
    return line


def assert_booktabs_table(text: str, rows: int) -> None:
    """A table float, booktabs rules in order, ``rows`` rows of the tabular's width."""
    lines = text.splitlines()
    order = [r"\begin{table}[tbp]", r"\toprule", r"\midrule", r"\bottomrule", r"\end{table}"]
    assert [lines.index(x) for x in order] == sorted(lines.index(x) for x in order)
    assert r"\label{tab:disc21-leaderboard}" in lines
    assert text.count(r"\begin{") == text.count(r"\end{")
    assert len(body(text)) == rows
    width = columns(text)
    for row in body(text):
        found = cells(row)
        spans = re.search(r"\\multicolumn\{(\d+)\}", row)
        assert len(found) - 1 + (int(spans.group(1)) if spans else 1) == width, row


def test_with_intervals_the_table_escapes_names_and_states_the_settings(pool):
    gt, frames = pool
    board = ds.evaluate_pool(gt, frames, **SETTINGS)
    text = board.to_latex()
    assert_booktabs_table(text, rows=6)
    assert columns(text) == 6
    scored = [r for r in board.to_dict()["submissions"] if r["status"] == "ok"]
    rows = body(text)
    for row, r in zip(rows, scored):
        rank, tier, name, value, delta, _ = cells(row)
        assert (rank, tier) == (str(r["rank"]), str(r["tier"]))
        mark = r"\textsuperscript{*}" if r["tie_sensitive"] else ""
        assert name == latex.escape(r["submission"]) + mark
        low, high = r["micro_ap_low"], r["micro_ap_high"]
        assert value == f"{r['micro_ap']:.4f} [{low:.4f}, {high:.4f}]"
        assert delta == ("" if r["next_difference"] is None else f"{r['next_difference']:.4f}")
    assert ODD_ESCAPED in text and ODD_NAME not in text
    assert cells(rows[-1])[:3] == ["--", "", "broken"] and "invalid" in rows[-1]
    said = caption(text)
    assert r"90\% percentile bootstrap over the queries" in said
    assert "(200 resamples, Poisson(1) weights per query, seed 7)" in said
    assert "Holm's step-down method" in said and r"$p_{\mathrm{Holm}} < 0.1$" in said
    assert "5 submissions on 60 queries" in said and "1 invalid submission," in said
    # with the true pairs first among equal scores, flat (μAP 0.4) passes c
    assert [r["submission"] for r in scored if r["tie_sensitive"]] == ["c", "flat"]
    assert [r["tier"] for r in scored] == [1, 1, 2, 2, 3]
    assert r"\textsuperscript{*}The place changes when the true pairs count first." in said


def test_without_intervals_the_caption_says_so_and_no_interval_column(pool):
    gt, frames = pool
    text = ds.evaluate_pool(gt, frames, **{**SETTINGS, "resamples": 0}).to_latex()
    assert_booktabs_table(text, rows=6)
    heads = cells(text.splitlines()[text.splitlines().index(r"\toprule") + 1])
    assert heads == ["Rank", "Submission", r"$\mu$AP", r"$\Delta$ next"]
    assert "No intervals, tiers or tests: the run drew 0 bootstrap resamples." in caption(text)
    assert "interval" not in text.replace("No intervals", "") and "Holm" not in text
    first = cells(body(text)[0])
    assert first[0] == "1" and re.fullmatch(r"0\.\d{4}", first[2]), first


def test_the_api_returns_the_text_the_pool_writes(pool, tmp_path):
    gt, frames = pool
    board = ds.evaluate_pool(gt, frames, **SETTINGS)
    report.write(tmp_path, board.submissions, {"ground_truth": gt})
    assert (tmp_path / "leaderboard.tex").read_text(encoding="utf-8") == board.to_latex()


ESCAPES = {v: k for k, v in latex.SPECIAL.items()}
CONTROLS = [chr(c) for c in (*range(32), 127)]


def unescape(text: str) -> str:
    pattern = "|".join(re.escape(k) for k in sorted(ESCAPES, key=len, reverse=True))
    return re.sub(pattern, lambda m: ESCAPES[m.group(0)], text)


@given(st.text(st.characters(blacklist_characters=CONTROLS)))
def test_escaping_keeps_every_name_and_leaves_no_command_of_it(name):
    escaped = latex.escape(name)
    assert unescape(escaped) == name
    rest = re.sub("|".join(re.escape(v) for v in ESCAPES), "", escaped)
    assert not set(rest) & (set(latex.SPECIAL) - {"-"}) and "--" not in rest


def test_escaping_by_hand():
    assert latex.escape(ODD_NAME) == ODD_ESCAPED
    assert latex.escape("a--b---c-d") == "a-{}-b-{}-{}-c-d"  # no dash ligature
    assert latex.escape("a\n\nb\x00c\td") == "a  b c d"  # no blank line ends the cell


ENGINES = ("pdflatex", "lualatex")


@pytest.mark.skipif(
    not any(map(shutil.which, ENGINES)),
    reason="no LaTeX engine (Debian: apt-get install texlive-latex-base "
    "texlive-latex-recommended); the structure tests above still run",
)
def test_the_tables_compile(pool, tmp_path):
    """Both tables (with and without intervals) in a minimal document with booktabs."""
    gt, frames = pool
    with_intervals = ds.evaluate_pool(gt, frames, **SETTINGS).to_latex()
    without = ds.evaluate_pool(gt, frames, **{**SETTINGS, "resamples": 0}).to_latex()
    (tmp_path / "paper.tex").write_text(
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
        + with_intervals
        + without
        + "\\end{document}\n",
        encoding="utf-8",
    )
    engine = next(e for e in ENGINES if shutil.which(e))
    done = subprocess.run(
        [engine, "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "paper.pdf").stat().st_size > 0


@pytest.mark.parametrize("plan", ["per-file", "distributed"])
def test_every_pool_run_writes_each_board_as_the_api_returns_it(spark, tmp_path, capsys, plan):
    """The command on both plans, with a split: the published folder's leaderboard.tex is
    the public board's, the private folder's the private board's; the summary names it."""
    gt = make_gt(40, 25)
    rng = np.random.default_rng(11)
    (tmp_path / "pool").mkdir()
    for name in ("team_0", "team_1", "team_2"):
        random_submission(rng, gt, 200, 9).to_csv(tmp_path / "pool" / f"{name}.csv", index=False)
    truth = str(gt_csv(tmp_path / "gt.csv", gt))
    private = sorted(rng.choice(gt.query_ids, 16, replace=False))
    (tmp_path / "private.csv").write_text("query_id\n" + "".join(f"{q}\n" for q in private))
    argv = ["evaluate", "--ground-truth", truth, "--predictions", str(tmp_path / "pool")]
    argv += ["--output", str(tmp_path / "out"), "--private-output", str(tmp_path / "hidden")]
    argv += ["--private-queries", str(tmp_path / "private.csv"), "--pool-plan", plan]
    argv += ["--engine", "spark"]  # the per-file plan on Spark (the local pool: its own tests)
    argv += ["--resamples", "50", "--confidence", "0.9", "--seed", "3", "--max-results", "0"]
    screen = in_process(argv, capsys, spark)
    assert screen.code == 0, screen.text
    assert "leaderboard.csv/.json/.md/.html/.tex" in screen.out
    board = ds.evaluate_pool(
        truth,
        [str(tmp_path / "pool")],
        engine=spark,
        private_queries=str(tmp_path / "private.csv"),
        resamples=50,
        confidence=0.9,
        seed=3,
        max_results=0,
    )
    public = (tmp_path / "out" / "leaderboard.tex").read_text(encoding="utf-8")
    hidden = (tmp_path / "hidden" / "leaderboard.tex").read_text(encoding="utf-8")
    assert public == board.to_latex() and hidden == board.private.to_latex()
    assert public != hidden and "team\\_0" in public
    assert f"on {40 - 16} queries" in caption(public) and "on 16 queries" in caption(hidden)
