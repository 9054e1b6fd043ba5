"""A page's prose as sentences, for tests/test_docs_plain.py and test_docs_glossary.py:
the words a reader reads as running text, without code blocks, tables, headings, HTML
comments or link targets; and which pages are the users' (the others are design pages).

A sentence ends at ``.``, ``!`` or ``?`` followed by a space and a capital, a backtick,
a digit, a bracket or a quote (``e.g.`` and ``i.e.`` end none), at a blank line, and at
the start of a list item. A span in backticks counts as one word, as a reader takes a
name or a command in at once; a link counts the words of its text.
"""

from __future__ import annotations

import re

import pytest

from tests.docs_blocks import FENCE, PAGES, ROOT

# written for developers, not users: the design notes and the history of the benchmarks
DESIGN_PAGES = {"docs/design.md", "docs/benchmarks-archive.md"}
USER_PAGES = [p for p in PAGES if str(p.relative_to(ROOT)) not in DESIGN_PAGES]
# user pages measured, but rewritten on another branch of issue 48 (h48a): remove once merged
PENDING: dict[str, str] = {}  # page → why it is not held yet (none today)

COMMENT = re.compile(r"<!--.*?-->", re.S)
HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
REF_LINK = re.compile(r"\[([^\]]*)\]\[[^\]]*\]")
CODE = re.compile(r"``?[^`]+?``?")
MATH = re.compile(r"\$\$.*?\$\$|\\\(.*?\\\)|\\\[.*?\\\]", re.S)
ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")
# a sentence's end: its stop, then a space and what starts a sentence
END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)([.!?])\s+(?=[A-Zμ`\[(\"'0-9*_])")


def paragraphs(text: str) -> list[tuple[int, str]]:
    """The prose of a page's Markdown ``text`` as (first line, text) pairs: one per
    paragraph or list item, with fenced blocks, math blocks, comments, tables, headings,
    admonition titles and link definitions left out."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    text = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    text = MATH.sub(lambda m: "x" + "\n" * m.group(0).count("\n"), text)
    found: list[tuple[int, str]] = []
    current: list[str] = []
    start = 0

    def close() -> None:
        if current:
            found.append((start, " ".join(current)))
            current.clear()

    for number, line in enumerate(text.splitlines(), 1):
        bare = line.strip()
        if not bare or bare.startswith(("#", "|", "!!!", "???", "[")) and _not_prose(bare):
            close()
            continue
        if ITEM.match(line):
            close()
            bare = ITEM.sub("", line).strip()
        if not current:
            start = number
        current.append(bare)
    close()
    return found


def _not_prose(line: str) -> bool:
    """A heading, a table row, an admonition's title, or a link definition."""
    if line.startswith(("#", "|", "!!!", "???")):
        return True
    return re.match(r"^\[[^\]]+\]:\s", line) is not None


def words(sentence: str) -> int:
    """The words of one sentence: a backticked span is one word, a link its text's."""
    sentence = LINK.sub(r"\1", sentence)
    sentence = REF_LINK.sub(r"\1", sentence)
    sentence = CODE.sub(" w ", sentence)
    sentence = HTML_TAG.sub(" ", sentence)
    return sum(1 for token in sentence.split() if re.search(r"\w", token))


def sentences(text: str) -> list[tuple[int, int, str]]:
    """Every sentence of a page's Markdown ``text`` as (line, words, sentence), the
    line being its paragraph's first."""
    found = []
    for line, paragraph in paragraphs(text):
        # a backticked span's stops end no sentence
        masked = CODE.sub(lambda m: "`" + "x" * (len(m.group(0)) - 2) + "`", paragraph)
        cut = 0
        for m in END.finditer(masked):
            found.append((line, paragraph[cut : m.end(1)]))
            cut = m.end()
        found.append((line, paragraph[cut:]))
    return [(line, words(s), s.strip()) for line, s in found if s.strip()]


def page_params(pages: list) -> dict:
    """``pytest.mark.parametrize`` keywords for ``pages`` (Paths under ROOT): a page of
    ``PENDING`` expected to fail (not strictly), each named by its path."""
    names = [str(p.relative_to(ROOT)) for p in pages]
    return {
        "argvalues": [
            pytest.param(p, marks=pytest.mark.xfail(reason=PENDING[n], strict=False))
            if n in PENDING
            else p
            for p, n in zip(pages, names)
        ],
        "ids": names,
    }
