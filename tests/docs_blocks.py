"""What the docs tests share: the pages, their fenced blocks, and a fresh shell's folder.

A block's marker is the HTML comment on the line just above its fence:
``<!-- runnable -->`` and ``<!-- runnable: spark -->`` (bash blocks, tests/test_docs.py),
``<!-- not run: reason -->`` (a Python block that only compiles, tests/test_docs_python.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_notes" not in p.parts),
]
# a fence at the start of a line, its language, its text; the marker on the line above
FENCE = re.compile(r"^(?:<!-- (.*?) -->\n)?```(\w*)\n(.*?)\n```$", re.S | re.M)


@dataclass(frozen=True)
class Block:
    """One fenced block: its language (``python``, ``bash``, ``text``...), its marker
    (the comment above it, or ''), its text, and the page line of its opening fence."""

    language: str
    marker: str
    text: str
    line: int


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced block of a page's Markdown ``text``, in page order."""
    found = []
    for m in FENCE.finditer(text):
        fence = m.start(2) - 3  # the opening ``` itself, after the marker's line
        line = text.count("\n", 0, fence) + 1
        found.append(Block(m.group(2), m.group(1) or "", m.group(3), line))
    return found


def fresh_shell(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder that looks like the checkout (its files linked, no demo/), and the
    environment of a new login shell: no virtualenv activated, nothing exported but
    PYTHONPATH, which makes .venv's programs run this checkout's package (the virtualenv
    may hold another checkout's editable install)."""
    work = tmp_path / "checkout"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in ("demo", "site", ".git"):
            (work / entry.name).symlink_to(entry)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(ROOT),
        "TMPDIR": str(tmp_path),
    }
    return work, env
