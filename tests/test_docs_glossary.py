"""Every term a newcomer may not know is defined on docs/glossary.md, and the first use of
a piece of jargon on a user page links to its entry (or the page is where it is
defined). No subprocess and no Spark."""

from __future__ import annotations

import re

import pytest

from tests.docs_blocks import ROOT
from tests.docs_prose import USER_PAGES, page_params, paragraphs

GLOSSARY = ROOT / "docs" / "glossary.md"
# the user's terms issue 48 names, by their anchor on the glossary page
TERMS = (
    "micro-ap optimistic-micro-ap pessimistic-ties recall-at-p90 recall-at-rank-k rank query"
    " reference distractor positive-pair submission pool board split bootstrap resample"
    " interval tier per-query-results plan in-process per-file-plan distributed-plan engine"
    " descriptor-track matching-track numpy-specification dead-leaves subsets trec-eval-q"
    " track-2-pipeline pss contribution map"
).split()
# jargon whose first use on a page must link to the glossary: the words, their anchor
JARGON = {
    "numpy specification": "numpy-specification",
    "per-file plan": "per-file-plan",
    "distributed plan": "distributed-plan",
    "dead leaves": "dead-leaves",
    "trec_eval": "trec-eval-q",
    "PSS": "pss",
    "track-2 pipeline": "track-2-pipeline",
    "--subsets": "subsets",
}
# the pages that define a term themselves, where its first use is its definition
DEFINED_ON = {("docs/rank-eval.md", "--subsets"), ("docs/pools.md", "distributed plan")}


def test_the_glossary_defines_every_term():
    text = GLOSSARY.read_text(encoding="utf-8")
    missing = [t for t in TERMS if "{#" + t + "}" not in text]
    assert not missing, f"docs/glossary.md has no entry for {missing}"


def unlinked_first_uses(name: str, text: str) -> list[str]:
    """The jargon of JARGON whose first paragraph on the page (``name``, its Markdown
    ``text``) has no link to the term's glossary entry, as 'page:line: term'."""
    found = []
    for term, anchor in JARGON.items():
        if (name, term) in DEFINED_ON:
            continue
        word = re.compile(r"(?<![\w-])" + re.escape(term) + r"(?![\w-])")
        first = next(((line, p) for line, p in paragraphs(text) if word.search(p)), None)
        if first is not None and f"glossary.md#{anchor}" not in first[1]:
            found.append(f"{name}:{first[0]}: {term}")
    return found


PAGES = [p for p in USER_PAGES if p != GLOSSARY]


@pytest.mark.parametrize("page", **page_params(PAGES))
def test_jargon_links_to_the_glossary_at_first_use(page):
    name = str(page.relative_to(ROOT))
    found = unlinked_first_uses(name, page.read_text(encoding="utf-8"))
    assert not found, "first use not linked to docs/glossary.md:\n" + "\n".join(found)


def test_an_unlinked_first_use_is_caught():
    text = "The numpy specification is here.\n\nThe [numpy specification](glossary.md#numpy-specification)."
    assert unlinked_first_uses("docs/x.md", text) == ["docs/x.md:1: numpy specification"]
    assert unlinked_first_uses("docs/x.md", text.split("\n\n")[1]) == []
