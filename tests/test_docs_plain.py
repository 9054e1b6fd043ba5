"""Plain English on the user pages: no sentence of their prose has more than 30 words.

The prose is what tests/docs_prose.py keeps of a page: no code blocks, tables, headings
or comments. Design pages (the design notes, the benchmark archive, CONTRIBUTING.md)
are written for the package's developers and are not measured. No subprocess and no
Spark.
"""

from __future__ import annotations

import pytest

from tests.docs_blocks import PAGES, ROOT
from tests.docs_prose import DESIGN_PAGES, USER_PAGES, page_params, sentences, words

MAX_WORDS = 30


def too_long(text: str) -> list[tuple[int, int, str]]:
    """The sentences of ``text`` over MAX_WORDS words as (line, words, sentence), the
    longest first."""
    found = [s for s in sentences(text) if s[1] > MAX_WORDS]
    return sorted(found, key=lambda s: (-s[1], s[0]))


def test_the_design_pages_exist():
    names = {str(p.relative_to(ROOT)) for p in PAGES}
    assert DESIGN_PAGES <= names
    assert "docs/glossary.md" in names and "docs/metrics.md" in names


@pytest.mark.parametrize("page", **page_params(USER_PAGES))
def test_no_sentence_of_a_user_page_is_over_30_words(page):
    name = str(page.relative_to(ROOT))
    long = too_long(page.read_text(encoding="utf-8"))
    listed = "\n".join(f"{name}:{line}: {n} words: {s}" for line, n, s in long)
    assert not long, f"{len(long)} sentences of more than {MAX_WORDS} words:\n{listed}"


LONG = "Word " + " ".join(["word"] * 30) + "."
SHORT = "Word " + " ".join(["word"] * 29) + "."


@pytest.mark.parametrize(
    "text,found",
    [
        (SHORT, []),
        (LONG, [31]),
        (f"# {LONG[:-1]}\n\n{SHORT}", []),  # a heading is no sentence
        (f"| a | {LONG} |\n|---|---|\n", []),  # nor a table row
        (f"```text\n{LONG}\n```\n", []),  # nor a code block
        (f"<!-- {LONG} -->\n{SHORT}", []),  # nor a comment
        (f"{SHORT} {SHORT}", []),  # two sentences
        (f"{SHORT}\n\n{SHORT}", []),
        (f"- {SHORT}\n- {SHORT}", []),  # each list item is its own
        ("Take " + " ".join(["it"] * 26) + " e.g. Then more.", [30]),  # e.g. ends none
        ("A `--long --option with words` " + " ".join(["w"] * 28) + ".", [30]),
        ("See [the page with a long title](x.md) " + " ".join(["w"] * 24) + ".", [31]),
        ("It is `a. B` and " + " ".join(["w"] * 27) + ".", [31]),  # a stop in code
    ],
)
def test_sentences_are_measured_as_a_reader_reads_them(text, found):
    assert [n for _, n, _ in too_long(text)] == [n for n in found if n > MAX_WORDS]
    if found:
        assert [n for _, n, _ in sentences(text)] == found


def test_a_backticked_span_is_one_word_and_a_link_its_text():
    assert words("run `disc21spark evaluate --pool x` now") == 3
    assert words("see [the metrics reference](metrics.md#micro-ap)") == 4
