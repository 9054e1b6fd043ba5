"""Every name in backticks of README.md and docs/ resolves against the code
(tests/docs_names.py says how each kind of name is checked, tests/docs_names_lists.py what
it allows), and the check catches a made-up name. No subprocess and no Spark."""

from __future__ import annotations

import pytest

from tests.docs_names import problems_of
from tests.docs_names_lists import PAGES, ROOT


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_name_in_backticks_resolves(page):
    name = str(page.relative_to(ROOT))
    problems = problems_of(name, page.read_text(encoding="utf-8"))
    assert not problems, "names the code does not have:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    "text,caught",
    [
        ("the spec is `library/spec.py`", "library/spec.py"),
        ("see `search_plan.py`", "search_plan.py"),
        ("give `make-queries --format png`", "--format"),
        ("or `--format` alone", "--format"),
        ("`disc21spark evaluate --tests crop:50`", "--tests"),
        ("`jobs/score.py`", "jobs/score.py"),
        ("`disc21spark.matching.nowhere`", "disc21spark.matching.nowhere"),
        ("`engine.choose_plan`", "engine.choose_plan"),
        ("`m.precision_curve`", "m.precision_curve"),
        ('`evaluate(gt, p, distance="ip")`', "evaluate("),
        ("`tests/test_pool.py::test_that_never_was`", "test_that_never_was"),
        ("`demo/out/scores.json`", "scores.json"),
        ("`demo/nowhere/metrics.json`", "demo/nowhere"),
        ("`--no-such-option`", "--no-such-option"),
        ("`wait_for_nothing`", "wait_for_nothing"),
    ],
)
def test_a_made_up_name_is_caught(text, caught):
    problems = problems_of("docs/page.md", "line one\n" + text)
    assert problems and problems[0].startswith("docs/page.md:2: `"), problems
    assert caught in problems[0], problems


@pytest.mark.parametrize(
    "text",
    [
        "`disc21spark/matching/spark/plan.py`, `matching/spark/plan.py`, `jobs/*.py`, `metrics.json`",
        "`make-queries --query-format png`, `evaluate --query-descriptors`, `--archives`",
        "`disc21spark.testing.synth`, `engine.choose`, `ds.evaluate`, `m.pr_curve`",
        "`tests/test_pool.py`, `demo/out/pr_curve.png`, `<stem>_run.json`",
    ],
)
def test_real_names_pass(text):
    assert problems_of("docs/page.md", text) == []
