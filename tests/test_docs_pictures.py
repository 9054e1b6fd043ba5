"""The docs' pictures (docs/_hooks/pictures/, made by make docs) stay in step with the
pages, checked without making them: every picture a page links is one the generator
makes, and each command the generator runs is the one its tutorial page shows, so that a
picture shows the figures the page quotes."""

from __future__ import annotations

import ast
import re

import pytest

from tests.docs_blocks import PAGES, ROOT, fenced_blocks

HOOKS = ROOT / "docs" / "_hooks"
OUTPUTS = HOOKS / "pictures" / "outputs.py"
# options that change no output: the generator's work folder is new, and it runs quietly
NO_FIGURE = re.compile(r" --(overwrite|quiet)\b")


def normal(command: str) -> str:
    """A command line with its continuations joined, its spaces single, and the options
    that change no output left out."""
    command = " ".join(command.replace("\\\n", " ").split())
    return NO_FIGURE.sub("", command).replace(".venv/bin/disc21spark ", "")


def generator_commands() -> list[tuple[str, str]]:
    """(tutorial page, command) of each ``run(...)`` in pictures/outputs.py: the page is
    the one its function's docstring names; ``{GT}`` is the ground truth's path."""
    tree = ast.parse(OUTPUTS.read_text(encoding="utf-8"))
    gt = next(
        n.value.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "GT"
    )
    found = []
    for function in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        page = re.search(r"docs/tutorial/[\w-]+\.md", ast.get_docstring(function) or "")
        for call in ast.walk(function):
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "run":
                (arg,) = call.args
                parts = arg.values if isinstance(arg, ast.JoinedStr) else [arg]
                text = "".join(gt if isinstance(p, ast.FormattedValue) else p.value for p in parts)
                assert page, f"pictures/outputs.py: {function.name} names no tutorial page"
                found.append((page.group(0), text))
    return found


COMMANDS = generator_commands()


@pytest.mark.parametrize("page,command", COMMANDS, ids=[c[:50] for _, c in COMMANDS])
def test_each_picture_command_is_its_pages_command(page, command):
    blocks = fenced_blocks((ROOT / page).read_text(encoding="utf-8"))
    shown = "\n".join(normal(b.text) for b in blocks if b.language == "bash")
    assert normal(command) in shown, f"{page} no longer runs `disc21spark {command}`"


def test_every_linked_picture_is_made(monkeypatch):
    monkeypatch.syspath_prepend(str(HOOKS))
    from pictures import NAMES

    linked = {}
    for page in PAGES:
        for name in re.findall(r"img/generated/([^)\s]+)", page.read_text(encoding="utf-8")):
            linked.setdefault(name, str(page.relative_to(ROOT)))
    assert COMMANDS and set(NAMES) >= {"concepts_pr_curve.png", "leaderboard.png"}
    missing = {name: page for name, page in linked.items() if name not in NAMES}
    assert not missing, f"linked, and made by no step of docs/_hooks/pictures/: {missing}"
    unused = set(NAMES) - set(linked)
    assert not unused, f"docs/_hooks/pictures/ makes pictures no page shows: {unused}"
