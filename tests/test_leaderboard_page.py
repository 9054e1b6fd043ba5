"""leaderboard.html in headless Chromium (the rendered table read back from the DOM,
sorted by real clicks), and leaderboard.csv/.md safe against names a team chooses."""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import numpy as np
import pytest

from disc21spark.matching.model import GroundTruth, Submission
from disc21spark.matching.oracle.bootstrap import bootstrap
from disc21spark.matching.oracle.spec import evaluate
from disc21spark.matching.stats.model import Resampling
from disc21spark.pool import report
from tests.chromium import Browser, chromium_path
from tests.helpers import make_gt, random_submission, score_file

# four queries, three with a true reference (Q3 a distractor)
GT = GroundTruth(
    "gt",
    np.array(["Q0", "Q1", "Q2", "Q3"], dtype=object),
    np.array(["Q0", "Q1", "Q2"], dtype=object),
    np.array(["R0", "R1", "R2"], dtype=object),
)
SCRIPT_NAME = "<script>window.pwned=1"  # a file name cannot hold the closing tag's slash
IMG_NAME = '<img src=x onerror="window.pwned=2">'
FORMULA_NAME = "=cmd|' /C calc'!A0"
RUN = {"ground_truth": "gt.csv", "predictions": ["pool/"], "note": "</pre><b>not bold</b>"}


def scored(name: str, pairs: list[tuple[str, str, float]], reused: bool = False) -> Submission:
    q, r, s = zip(*pairs)
    metrics = evaluate(np.array(q, dtype=object), np.array(r, dtype=object), np.array(s), GT)
    sub = Submission(name, f"pool/{name}.csv", f"sha-{name}", metrics=metrics, reused=reused)
    return sub


def pool() -> list[Submission]:
    """μAP by hand (3 positives): best 1, script 2/3, img 1/3·(1/2) = 1/6, formula 0."""
    best = scored("best", [("Q0", "R0", 0.9), ("Q1", "R1", 0.8), ("Q2", "R2", 0.7)])
    script = scored(SCRIPT_NAME, [("Q0", "R0", 0.9), ("Q1", "R1", 0.8), ("Q3", "R9", 0.1)])
    img = scored(IMG_NAME, [("Q3", "R5", 0.9), ("Q0", "R0", 0.5)], reused=True)
    formula = scored(FORMULA_NAME, [("Q0", "R7", -0.5)])
    bad = Submission("broken", "pool/broken.csv", "sha-broken")
    bad.invalid(ValueError("pool/broken.csv: line 2: score 'abc' is not a number"))
    return [formula, img, bad, best, script]


def test_hand_computed_pool_figures():
    by_name = {s.name: s.metrics for s in pool() if s.metrics is not None}
    assert by_name["best"].micro_ap == pytest.approx(1.0)
    assert by_name[SCRIPT_NAME].micro_ap == pytest.approx(2 / 3)
    assert by_name[IMG_NAME].micro_ap == pytest.approx(1 / 6)
    assert by_name[FORMULA_NAME].micro_ap == 0.0
    assert by_name[IMG_NAME].recall_at_p90 is None  # precision peaks at 1/2


def test_csv_escapes_formulas_and_markdown_escapes_html(tmp_path):
    report.write(tmp_path, pool(), RUN)
    with (tmp_path / "leaderboard.csv").open() as fh:
        rows = {r["checksum"]: r for r in csv.DictReader(fh)}
    assert rows[f"sha-{FORMULA_NAME}"]["submission"] == "'" + FORMULA_NAME
    assert rows[f"sha-{FORMULA_NAME}"]["threshold_at_p90"] == ""  # never reached: empty
    assert rows[f"sha-{SCRIPT_NAME}"]["submission"] == SCRIPT_NAME  # not a formula: as is
    assert rows["sha-best"]["submission"] == "best"
    md = (tmp_path / "leaderboard.md").read_text()
    assert "\\<script\\>" in md and "<script>" not in md
    assert "=cmd\\|' /C calc'!A0" in md  # the pipe does not end the cell


def test_csv_keeps_negative_figures_as_numbers(tmp_path):
    sub = scored("neg", [("Q0", "R0", -0.25), ("Q1", "R1", -0.5), ("Q2", "R2", -0.75)])
    report.write(tmp_path, [sub], RUN)
    with (tmp_path / "leaderboard.csv").open() as fh:
        (row,) = csv.DictReader(fh)
    assert row["threshold_at_p90"] == "-0.75"


ROWS_JS = """JSON.stringify(Array.from(document.querySelectorAll('#leaderboard tbody tr'))
  .map(function (tr) { return Array.from(tr.cells).map(function (td) {
    return td.textContent; }); }))"""


def column(browser: Browser, key: str) -> list[str]:
    heads = json.loads(
        browser.evaluate(
            "JSON.stringify(Array.from(document.querySelectorAll('#leaderboard th'))"
            ".map(function (th) { return th.dataset.key; }))"
        )
    )
    rows = json.loads(browser.evaluate(ROWS_JS))
    return [row[heads.index(key)] for row in rows]


@pytest.fixture(scope="module")
def browser():
    if chromium_path() is None:
        pytest.skip(
            "chromium could not be installed (make chromium installs Debian's package with "
            "apt-get; it needs root and the Debian mirror)"
        )
    with Browser() as b:
        yield b


def test_page_in_headless_chromium(tmp_path, browser):
    report.write(tmp_path, pool(), RUN)
    page = tmp_path / "leaderboard.html"
    browser.open(page.as_uri())
    try:
        # leaderboard order, names rendered as text; no script of a team's ran
        assert column(browser, "submission") == ["best", SCRIPT_NAME, IMG_NAME, FORMULA_NAME]
        assert column(browser, "rank") == ["1", "2", "3", "4"]
        assert column(browser, "micro_ap") == ["1.000000", "0.666667", "0.166667", "0.000000"]
        assert browser.evaluate("document.querySelectorAll('script').length") == 1
        assert browser.evaluate("document.querySelectorAll('img').length") == 0
        assert browser.evaluate("typeof window.pwned") == "undefined"
        assert column(browser, "reused") == ["no", "no", "yes", "no"]
        # the page asked for nothing: no resource beyond itself
        assert browser.evaluate("performance.getEntriesByType('resource').length") == 0
        invalid = json.loads(
            browser.evaluate(
                "JSON.stringify(Array.from(document.querySelectorAll('#invalid tbody tr'))"
                ".map(function (tr) { return Array.from(tr.cells).map(function (td) {"
                " return td.textContent; }); }))"
            )
        )
        assert invalid == [
            ["broken", "pool/broken.csv: line 2: score 'abc' is not a number", "sha-broken"]
        ]
        curves = browser.evaluate(
            "Array.from(document.querySelectorAll('#pr-curves polyline.curve'))"
            ".map(function (p) { return p.dataset.submission; })"
        )
        assert curves == ["best", SCRIPT_NAME, IMG_NAME, FORMULA_NAME]
        run_text = browser.evaluate("document.getElementById('run').textContent")
        assert json.loads(run_text) == RUN
        browser.screenshot(tmp_path / "leaderboard.png")
        print(f"screenshot: {tmp_path / 'leaderboard.png'}")

        # sorting by clicks: a number column first descending, then ascending; a column
        # with empty cells (P90 never reached) keeps them last both ways
        browser.click('#leaderboard th[data-key="n_predictions"] button')
        assert column(browser, "n_predictions") == ["3", "3", "2", "1"]
        browser.click('#leaderboard th[data-key="n_predictions"] button')
        assert column(browser, "n_predictions") == ["1", "2", "3", "3"]
        assert column(browser, "submission")[2:] == ["best", SCRIPT_NAME]  # ties: board order
        browser.click('#leaderboard th[data-key="recall_at_p90"] button')
        assert column(browser, "recall_at_p90") == ["1.000000", "0.666667", "—", "—"]
        browser.click('#leaderboard th[data-key="recall_at_p90"] button')
        assert column(browser, "recall_at_p90") == ["0.666667", "1.000000", "—", "—"]
        # text by the locale's collation: punctuation before letters, "best" last, then first
        browser.click('#leaderboard th[data-key="submission"] button')
        names = column(browser, "submission")
        assert names[-1] == "best" and set(names) == {"best", SCRIPT_NAME, IMG_NAME, FORMULA_NAME}
        browser.click('#leaderboard th[data-key="submission"] button')
        assert column(browser, "submission") == names[::-1]
        browser.click('#leaderboard th[data-key="micro_ap"] button')
        assert column(browser, "submission") == ["best", SCRIPT_NAME, IMG_NAME, FORMULA_NAME]
        assert (
            browser.evaluate(
                "document.querySelector('#leaderboard th[data-key=\"micro_ap\"]')"
                ".getAttribute('aria-sort')"
            )
            == "descending"
        )
    finally:
        if not (tmp_path / "leaderboard.png").exists():
            browser.screenshot(tmp_path / "leaderboard.png")
    assert (tmp_path / "leaderboard.png").stat().st_size > 10_000


def pool_with_intervals() -> list[Submission]:
    """Three teams on 60 queries, scored with 200 resamples: 'tied' puts every true pair
    on one score with its non-matches (optimistic ties would lift it to the top)."""
    gt = make_gt(60, 40)
    rng = np.random.default_rng(0)
    subs = []
    for name, noise in (("blunt", 0.2), ("sharp", 0.5), ("tied", None)):
        frame = random_submission(rng, gt, 150, 1000)
        if noise is None:
            frame["score"] = 0.5
        else:
            truth = spec_label(frame, gt)
            frame.loc[truth, "score"] += noise
        columns = [frame[c].to_numpy() for c in ("query_id", "reference_id", "score")]
        metrics = evaluate(*columns, gt)
        found = bootstrap(*columns, gt, Resampling(200, 0.95, 0))
        subs.append(
            Submission(
                name, f"pool/{name}.csv", f"sha-{name}", metrics=replace(metrics, uncertainty=found)
            )
        )
    return subs


def spec_label(frame, gt) -> np.ndarray:
    from disc21spark.matching.oracle.spec import label_pairs

    return label_pairs(frame.query_id.to_numpy(), frame.reference_id.to_numpy(), gt)


def test_page_draws_intervals_tiers_and_tie_flags(tmp_path, browser):
    subs = pool_with_intervals()
    report.write(tmp_path, subs, RUN)
    rows = json.loads((tmp_path / "leaderboard.json").read_text())["submissions"]
    browser.open((tmp_path / "leaderboard.html").as_uri())
    try:
        names = column(browser, "submission")
        assert names == [r["submission"] for r in rows]
        bars = json.loads(
            browser.evaluate(
                "JSON.stringify(Array.from(document.querySelectorAll('#intervals g.interval'))"
                ".map(function (g) { var l = g.querySelector('line').getBBox();"
                " return [g.dataset.submission, Number(g.dataset.low), Number(g.dataset.high), l.width]; }))"
            )
        )
        assert [b[0] for b in bars] == names
        for (_, low, high, width), row in zip(bars, rows):
            assert (low, high) == (row["micro_ap_low"], row["micro_ap_high"])
            assert low <= row["micro_ap"] <= high and width > 0
        assert column(browser, "tier") == [str(r["tier"]) for r in rows]
        assert column(browser, "tie_sensitive")[names.index("tied")] == "yes"
        flips = column(browser, "next_flip_share")
        assert flips[-1] == "—" and flips[0].endswith("%")
        browser.screenshot(tmp_path / "intervals.png")
        print(f"screenshot: {tmp_path / 'intervals.png'}")
    finally:
        if not (tmp_path / "intervals.png").exists():
            browser.screenshot(tmp_path / "intervals.png")
    md = (tmp_path / "leaderboard.md").read_text()
    assert "with optimistic ties" in md and "tier" in md.splitlines()[0]


def test_page_shows_the_groups_table(tmp_path, browser):
    """--query-groups: the page's table of μAP by group, read back from the DOM, holds
    leaderboard.json's figures and intervals; a team's group name stays text."""
    from disc21spark.matching.stats.groups_file import read_query_groups

    (tmp_path / "g.csv").write_text(f"query_id,group\nQ0,crop\nQ1,{IMG_NAME.replace(',', ' ')}\n")
    groups = read_query_groups(str(tmp_path / "g.csv"), GT)
    r = Resampling(50, 0.95, 0, groups)
    subs = []
    for name, pairs in (
        ("a", "Q0,R0,0.9\nQ1,R1,0.8\nQ3,R9,0.95\n"),
        ("b", "Q1,R1,0.9\nQ2,R2,0.1\n"),
    ):
        (tmp_path / f"{name}.csv").write_text(pairs)
        metrics = score_file(str(tmp_path / f"{name}.csv"), "auto", GT, 0, 50, resampling=r)
        subs.append(Submission(name, f"{name}.csv", name, metrics=metrics))
    out = tmp_path / "out"
    out.mkdir()
    report.write(out, subs, RUN)
    rows = json.loads((out / "leaderboard.json").read_text())["submissions"]
    browser.open((out / "leaderboard.html").as_uri())
    cells = json.loads(
        browser.evaluate(
            "JSON.stringify(Array.from(document.querySelectorAll('#groups tr'))"
            ".map(function (tr) { return Array.from(tr.cells).map(function (c) { return c.textContent; }); }))"
        )
    )
    assert cells[0] == ["submission", *groups.names]
    assert browser.evaluate("document.querySelectorAll('img').length") == 0
    for row, shown in zip(rows, cells[1:]):
        assert shown[0] == row["submission"]
        for g, text in zip(row["groups"]["groups"], shown[1:]):
            assert text.startswith(f"{g['micro_ap']:.4f}")
