"""MkDocs hook: the pages whose content is generated from the code at build time.

``<!-- generated: cli -->`` becomes the command-line reference, written from the argparse
parsers (disc21spark/commands/reference.py); ``<!-- generated: api -->`` becomes one
mkdocstrings block per public module that exists in this checkout, so the API reference
follows the package without a hand-kept list of its members; ``<!-- generated: changelog
-->`` becomes CHANGELOG.md, its links to ``docs/...`` made relative to the site (the file
stays where a repository's readers look for it, and is written once).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# the modules a user of the Python API reads, in reading order; those not (yet) in the
# package are left out
API_MODULES = (
    "disc21spark",
    "disc21spark.api",
    "disc21spark.engine",
    "disc21spark.matching.model",
    "disc21spark.core.errors",
    "disc21spark.matching.oracle.spec",
    "disc21spark.descriptors.spec",
    "disc21spark.ranks.spec",
    "disc21spark.matching.stats",
)


def _exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _api() -> str:
    return "\n\n".join(f"::: {name}" for name in API_MODULES if _exists(name))


def changelog() -> str:
    """CHANGELOG.md without its title (the page has its own), links into docs/ made
    relative to the site's root: ``](docs/operations.md)`` becomes ``](operations.md)``."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    text = text.split("\n", 1)[1] if text.startswith("# ") else text
    return re.sub(r"\]\(docs/", "](", text)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 (MkDocs' API)
    if "<!-- generated: cli -->" in markdown:
        from disc21spark.commands.reference import markdown as cli

        markdown = markdown.replace("<!-- generated: cli -->", cli())
    if "<!-- generated: api -->" in markdown:
        markdown = markdown.replace("<!-- generated: api -->", _api())
    if "<!-- generated: changelog -->" in markdown:
        markdown = markdown.replace("<!-- generated: changelog -->", changelog())
    return markdown
