"""The documentation works as written: README.md and docs/ hold commands that parse with
today's options and run in a fresh shell, the README stays short, the generated CLI
reference names every option, and CONTRIBUTING.md's layout is the package's.

A fenced ``bash`` block preceded by ``<!-- runnable -->`` is run as it is, in a clean
environment, from a throwaway folder that links the checkout's files (so that ``demo/``
is written there, not into the checkout). ``<!-- runnable: spark -->`` marks a block that
starts Spark: those run with DISC21SPARK_DOCS_SPARK=1 (each starts a JVM); every command
of every block, runnable or not, is parsed by the command's own parser.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from disc21spark import commands
from disc21spark.core import invocation
from tests.docs_blocks import PAGES, ROOT, fenced_blocks, fresh_shell

BLOCK = re.compile(r"(?:<!-- (runnable(?:: spark)?) -->\n)?```(?:bash|sh)\n(.*?)\n```", re.S)
SCRIPTS = {f"jobs/{script}": name for name, script in invocation.JOB_SCRIPTS.items()}


def blocks() -> list[tuple[str, str, str]]:
    """(page, marker or '', text) of every bash block, in page order."""
    found = []
    for page in PAGES:
        for m in BLOCK.finditer(page.read_text(encoding="utf-8")):
            found.append((str(page.relative_to(ROOT)), m.group(1) or "", m.group(2)))
    return found


def command_lines(text: str) -> list[list[str]]:
    """Our commands in a block: each as [command, *options], up to a shell operator."""
    found = []
    for line in text.replace("\\\n", " ").splitlines():
        if "..." in line or "<" in line:  # a placeholder, not a command to run
            continue
        words = shlex.split(line, comments=True)
        for i, word in enumerate(words):
            name = None
            if word.endswith("/disc21spark") or word == "disc21spark":
                name = words[i + 1] if i + 1 < len(words) else None
                rest = words[i + 2 :]
            elif word == "-m" and words[i + 1 : i + 2] == ["disc21spark"]:
                name = words[i + 2] if i + 2 < len(words) else None
                rest = words[i + 3 :]
            elif word in SCRIPTS:
                name, rest = SCRIPTS[word], words[i + 1 :]
            if name is None:
                continue
            cut = next((j for j, w in enumerate(rest) if w in ("|", ";", "&&", ">", "||")), None)
            found.append([name, *rest[:cut]] if name in commands.COMMANDS else [name])
            break
    return found


DOCUMENTED = [
    (page, line)
    for page, _, text in blocks()
    for line in command_lines(text)
    if not line[0].startswith("-")  # disc21spark --help, --version
]


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 200, f"README.md has {lines} lines; the docs site holds the rest"


def test_the_readme_first_screen_sets_up_a_fresh_clone():
    """The README's first screen (40 lines) shows `make demo` and `make test` in its first
    bash block, and CI runs that test command as it is written there."""
    head = "\n".join((ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:40])
    first = BLOCK.search(head)
    assert first, "README.md: no bash block in the first 40 lines"
    lines = [line.split("#")[0].strip() for line in first.group(2).splitlines()]
    assert "make demo" in lines and "make test" in lines, lines
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test\b", ci, re.M), ".ci/run does not run the README's make test"
    # the site's home page starts at the same place
    home = BLOCK.search((ROOT / "docs" / "index.md").read_text(encoding="utf-8"))
    assert home and home.group(2) == first.group(2), "docs/index.md starts elsewhere"


def test_evaluate_help_says_where_one_file_is_scored():
    """One local file is scored in this process: the help must not say "on Spark" alone."""
    text = commands.main_parser()[1]["evaluate"].description
    assert "One local file is scored in this process" in text, text
    assert "submission on Spark" not in text, text


def test_the_docs_document_commands():
    pages = {page for page, _ in DOCUMENTED}
    assert {"README.md", "docs/matching.md", "docs/pools.md", "docs/rank-eval.md"} <= pages
    assert {line[0] for _, line in DOCUMENTED} >= set(commands.COMMANDS)


@pytest.mark.parametrize(
    "page,line", DOCUMENTED, ids=[f"{p}:{' '.join(a)[:60]}" for p, a in DOCUMENTED]
)
def test_every_documented_command_parses_with_todays_options(page, line, capsys):
    if line[0] not in commands.COMMANDS:
        pytest.fail(f"{page}: {line[0]!r} is not a disc21spark command")
    try:
        commands.parse(line)
    except SystemExit as exc:
        assert exc.code == 0, f"{page}: {shlex.join(line)}: {capsys.readouterr().err}"
    assert "deprecated" not in capsys.readouterr().err, f"{page} uses an old option name"


RUNNABLE = [(page, marker, text) for page, marker, text in blocks() if marker]


def test_the_docs_have_runnable_blocks():
    pages = {page for page, marker, _ in RUNNABLE if marker == "runnable"}
    # the first run is written once, in the tutorial's step 1; the README's blocks need Spark
    assert {"docs/install.md", "docs/tutorial/first-result.md"} <= pages
    assert "README.md" in {page for page, _, _ in RUNNABLE}


def test_every_block_that_starts_spark_says_it_needs_java():
    """A reader who has no Java learns it at the block, not pages later: the text just
    above each `runnable: spark` bash block says "Java" (or "no Spark", for a block that
    only follows Spark's outputs)."""
    silent = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for block in fenced_blocks("\n".join(lines)):
            if block.marker == "runnable: spark" and block.language in ("bash", "sh"):
                above = "\n".join(lines[max(0, block.line - 9) : block.line - 1])
                if "Java" not in above and "no Spark" not in above:
                    silent.append(f"{page.relative_to(ROOT)}:{block.line}")
    assert not silent, f"blocks that start Spark without a word of Java: {silent}"


def run_block(page: str, text: str, tmp_path: Path) -> None:
    work, env = fresh_shell(tmp_path)
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", text],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"{page}: exit {proc.returncode}\n{text}\n{proc.stderr[-3000:]}"
    assert "deprecated" not in proc.stderr, f"{page}: an old option name\n{proc.stderr}"


CHEAP = list(dict.fromkeys((p, t) for p, m, t in RUNNABLE if m == "runnable"))


@pytest.mark.parametrize(
    "page,text", CHEAP, ids=[f"{p}:{t.splitlines()[0][:50]}" for p, t in CHEAP]
)
def test_cheap_blocks_run_in_a_fresh_shell(page, text, tmp_path):
    run_block(page, text, tmp_path)


SPARK = list(dict.fromkeys(t for _, m, t in RUNNABLE if m == "runnable: spark"))


@pytest.mark.skipif(
    not os.environ.get("DISC21SPARK_DOCS_SPARK"), reason="DISC21SPARK_DOCS_SPARK=1 runs them"
)
@pytest.mark.parametrize("text", SPARK, ids=[t.splitlines()[0][:50] for t in SPARK])
def test_spark_blocks_run_in_a_fresh_shell(text, tmp_path):
    run_block("docs", text, tmp_path)


# ------------------------------------------------------------------ CONTRIBUTING's layout


def layout() -> str:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    return text[text.index("## Layout") :]


def test_every_module_is_in_the_layout():
    tree = layout()
    block = tree[tree.index("disc21spark/\n") : tree.index("\ntests/")]
    parts = re.split(r"\n  (\w+)/", block)
    by_package = {"": parts[0], **dict(zip(parts[1::2], parts[2::2], strict=True))}
    missing = []
    for path in sorted((ROOT / "disc21spark").rglob("*.py")):
        rel = path.relative_to(ROOT / "disc21spark")
        package = rel.parts[0] if len(rel.parts) > 1 else ""
        if rel.name == "__init__.py" and package != "commands":
            continue
        if rel.name not in by_package.get(package, ""):
            missing.append(str(rel))
    assert not missing, f"CONTRIBUTING.md's layout lacks {missing}"


def test_imports_follow_the_documented_dependency_rule():
    rule = layout().split("```")[0]
    allowed: dict[str, set[str]] = {}
    for source, targets in re.findall(r"`(\w+) → \{([^}]*)\}`", rule):
        allowed.setdefault(source, set()).update(t.strip() for t in targets.split(","))
    for source, target in re.findall(r"`(\w+) → (\w+)`", rule):
        allowed.setdefault(source, set()).add(target)
    # the packages and the top-level modules (engine.py, scheduled.py) alike
    stages = {p.name for p in (ROOT / "disc21spark").iterdir() if (p / "__init__.py").exists()}
    stages |= {p.stem for p in (ROOT / "disc21spark").glob("*.py")} - {"__init__", "__main__"}
    wrong = []
    for path in (ROOT / "disc21spark").rglob("*.py"):
        rel = path.relative_to(ROOT / "disc21spark")
        source = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        if source in ("commands", "__main__") or source not in stages:
            continue
        text = path.read_text()
        imported = set(re.findall(r"^\s*(?:from|import) disc21spark\.(\w+)", text, re.M))
        imported |= set(re.findall(r"^\s*from disc21spark import (\w+)", text, re.M))
        for target in imported - {source, "core"}:
            if target not in allowed.get(source, set()):
                wrong.append(f"{rel} imports {target}")
    assert not wrong, f"not in CONTRIBUTING.md's dependency rule: {wrong}"


# ------------------------------------------------------------------ the generated references


def test_the_cli_reference_names_every_option_and_no_old_one():
    from disc21spark.commands.common import _Renamed
    from disc21spark.commands.reference import command_markdown

    _, parsers = commands.main_parser()
    for name, parser in parsers.items():
        text = command_markdown(name)
        for action in parser._actions:
            first = action.option_strings[0] if action.option_strings else None
            if first in (None, "-h", "--version"):
                continue
            if isinstance(action, _Renamed):  # only in the "old name" column
                assert f"| `{first}` |" in text, (name, first)
            else:
                assert f"| `{first}`" in text, (name, first)


def test_the_site_leaves_the_branch_notes_out():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "strict: true" in config and re.search(r"exclude_docs: \|\n\s+_notes/", config)
    assert "make docs" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"])
def test_links_of_the_top_level_files_lead_somewhere(name):
    """The site checks its own links (make docs, strict); these files are read on the
    repository's page, outside the site."""
    text = (ROOT / name).read_text(encoding="utf-8")
    broken = [
        target
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
        if "://" not in target and not (ROOT / target).exists()
    ]
    assert not broken, f"{name}: links to nothing: {broken}"


# ------------------------------------------------------------------ changes and citation


def test_the_changelog_is_in_the_site():
    """CHANGELOG.md is a page of the site, included whole by the docs hook, its links into
    docs/ made the site's own (make docs, strict, then checks them)."""
    import importlib.util

    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"^\s+- [\w ]+: changelog\.md$", config, re.M), "changelog.md not in the nav"
    assert "<!-- generated: changelog -->" in (ROOT / "docs" / "changelog.md").read_text()
    spec = importlib.util.spec_from_file_location("hook", ROOT / "docs/_hooks/generated.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = hook.changelog()
    assert "## Unreleased" in page and "](docs/" not in page


def test_the_project_says_how_to_cite_it():
    """CITATION.cff (CFF 1.2.0) and the README's and the site's "How to cite" name the
    DISC21 paper and Howe's, where the figures come from."""
    import yaml

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["title"] and cff["authors"] and cff["message"]
    titles = {ref["title"] for ref in cff["references"]}
    assert titles == {
        "The 2021 Image Similarity Dataset and Challenge",
        "Using Artificial Queries to Evaluate Image Retrieval",
    }
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## How to cite") :].split("\n## ")[0]
    site = (ROOT / "docs" / "cite.md").read_text(encoding="utf-8")
    for text in (" ".join(section.split()), " ".join(site.split())):  # lines rewrapped
        assert "arXiv:2106.09672" in text and "Douze" in text
        assert "Howe" in text and "Using Artificial Queries to Evaluate Image Retrieval" in text
    assert re.search(r"^\s+- [\w ]+: cite\.md$", (ROOT / "mkdocs.yml").read_text(), re.M)


def test_what_a_constant_score_earns_is_what_the_pages_say():
    """A constant score earns almost nothing, not 0: the tutorial's submission (seed 21,
    199,999 pairs) with every score equal gives the μAP that the FAQ, Metrics and
    Leaderboard statistics quote."""
    import disc21spark as ds
    from disc21spark.testing import synth

    gt = ROOT / "data" / "disc21_dev_ground_truth.csv"
    frame = synth.simulate_submission(synth.read_ground_truth_csv(gt), 200_000, 21)
    assert len(frame) == 199_999
    quoted = f"{ds.evaluate(str(gt), frame.assign(score=0.5), resamples=0).micro_ap:.6f}"
    assert quoted == "0.006988"
    for page in ("faq.md", "metrics.md", "statistics.md"):
        text = " ".join((ROOT / "docs" / page).read_text(encoding="utf-8").split())
        assert f"μAP {quoted}" in text, page
        assert "constant score earns nothing" not in text and "gets 0 officially" not in text


def test_the_docs_name_the_real_job_scripts():
    """`jobs/<command>.py` is not a file: the pages that list the scripts name each one."""
    for page in ("README.md", "docs/install.md", "docs/reference/cli.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        assert "jobs/<command>.py" not in text, page
        for script in invocation.JOB_SCRIPTS.values():
            assert f"`jobs/{script}`" in text, (page, script)


def test_the_tutorials_steps_are_numbered_alike_everywhere():
    """The nav's "N. title: page" and the page's "# Step N:" agree, and each step's
    "Next:" link leads to the step after it."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    steps = re.findall(r"^\s+- (\d)\. [^:]+: ([\w/.-]+\.md)$", config, re.M)
    assert [int(n) for n, _ in steps] == list(range(9)), steps
    for n, page in steps:
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        assert text.startswith(f"# Step {n}:"), page
        if int(n) < 8:
            after = Path(steps[int(n) + 1][1]).name
            nxt = re.search(r"\*\*Next:\*\* \[Step (\d):[^\]]*\]\(([^)]+)\)", text)
            assert nxt and nxt.group(1) == str(int(n) + 1), page
            assert Path(nxt.group(2)).name == after, page
