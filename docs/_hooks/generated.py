"""MkDocs hook: the pages whose content is generated from the code at build time.

``<!-- generated: cli -->`` becomes the command-line reference, written from the argparse
parsers (disc21spark/commands/reference.py); ``<!-- generated: api -->`` becomes one
mkdocstrings block per public module that exists in this checkout, so the API reference
follows the package without a hand-kept list of its members.
"""

from __future__ import annotations

import importlib.util

# the modules a user of the Python API reads, in reading order; those not (yet) in the
# package are left out
API_MODULES = (
    "disc21spark",
    "disc21spark.api",
    "disc21spark.engine",
    "disc21spark.matching.model",
    "disc21spark.core.errors",
    "disc21spark.matching.spec",
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


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 (MkDocs' API)
    if "<!-- generated: cli -->" in markdown:
        from disc21spark.commands.reference import markdown as cli

        markdown = markdown.replace("<!-- generated: cli -->", cli())
    if "<!-- generated: api -->" in markdown:
        markdown = markdown.replace("<!-- generated: api -->", _api())
    return markdown
