"""Every Python block of README.md and docs/ works as written.

A page's Python blocks run in page order in one interpreter (they share a namespace, as
in a notebook), in a fresh folder that links the checkout's files, each after the page's
earlier ``<!-- runnable -->`` bash blocks have run there (they make ``demo/...``);
tests/docs_python_run.py runs them. A ```text block right after a Python block is what
the block prints, compared line by line. A block preceded by ``<!-- not run: reason -->``
is only compiled. ``<!-- runnable: spark -->`` marks one that needs the page's Spark
bash blocks to have run first (minutes of JVMs): it runs, after them, with
DISC21SPARK_DOCS_SPARK=1, as those bash blocks do in tests/test_docs.py, and is only
compiled without. In every block, each call of a ``disc21spark`` function is bound
against its real signature, so a wrong keyword fails even where nothing runs.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

import disc21spark
from tests.docs_blocks import PAGES, ROOT, Block, fenced_blocks, fresh_shell

RUNNER = ROOT / "tests" / "docs_python_run.py"
NOT_RUN, SPARK = "not run: ", "runnable: spark"
WITH_SPARK = bool(os.environ.get("DISC21SPARK_DOCS_SPARK"))


def python_blocks(text: str) -> list[Block]:
    return [b for b in fenced_blocks(text) if b.language == "python"]


PYTHON_PAGES = [
    str(p.relative_to(ROOT)) for p in PAGES if python_blocks(p.read_text(encoding="utf-8"))
]


def plan(text: str, spark: bool = WITH_SPARK) -> list[dict]:
    """The steps that run: every unmarked Python block (and with ``spark`` those marked
    ``runnable: spark``), and the page's runnable bash blocks before the last of them
    (with ``spark``, its Spark ones too), in page order; [] if none runs. A Python
    block's ``expected`` is the text of a ```text block that follows it at once."""
    blocks = fenced_blocks(text)
    markers = {"", SPARK} if spark else {""}
    runs = [i for i, b in enumerate(blocks) if b.language == "python" and b.marker in markers]
    bash = {"runnable", SPARK} if spark else {"runnable"}
    steps: list[dict] = []
    for i, block in enumerate(blocks[: runs[-1] + 1] if runs else []):
        if block.language in ("bash", "sh") and block.marker in bash:
            steps.append({"kind": "bash", "line": block.line, "code": block.text})
        elif i in runs:
            after = blocks[i + 1] if i + 1 < len(blocks) else None
            expected = after.text if after is not None and after.language == "text" else None
            steps.append(
                {"kind": "python", "line": block.line, "code": block.text, "expected": expected}
            )
    return steps


def names_of_the_package(blocks: list[Block]) -> tuple[set[str], dict[str, str]]:
    """The names a page's blocks give the package (``import disc21spark as ds``) and its
    functions (``from disc21spark import evaluate``): the blocks share one namespace."""
    modules, functions = {"disc21spark"}, {}
    for block in blocks:
        for node in ast.walk(ast.parse(block.text)):
            if isinstance(node, ast.Import):
                modules |= {a.asname or a.name for a in node.names if a.name == "disc21spark"}
            elif isinstance(node, ast.ImportFrom) and node.module == "disc21spark":
                functions |= {a.asname or a.name: a.name for a in node.names}
    return modules, functions


def unbound_calls(page: str, block: Block, modules: set[str], functions: dict[str, str]):
    """``page:line: why`` for each call of a package function in ``block`` that its
    signature refuses (a wrong keyword, too many arguments) or that names nothing."""
    problems = []
    for node in ast.walk(ast.parse(block.text)):
        func = getattr(node, "func", None)
        if isinstance(func, ast.Attribute) and getattr(func.value, "id", None) in modules:
            name = func.attr
        elif isinstance(func, ast.Name) and func.id in functions:
            name = functions[func.id]
        else:
            continue
        where = f"{page}:{block.line + node.lineno}"
        target = getattr(disc21spark, name, None)
        if target is None:
            problems.append(f"{where}: disc21spark has no {name}")
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            continue  # *args or **options: the names are not known before the call
        try:
            inspect.signature(target).bind(*node.args, **{k.arg: k for k in node.keywords})
        except TypeError as exc:
            problems.append(f"{where}: ds.{name}(...): {exc}")
    return problems


def static_problems(page: str, text: str) -> list[str]:
    """A marker a Python block cannot have, a block that does not compile, a call its
    function's signature refuses."""
    blocks = python_blocks(text)
    problems = [
        f"{page}:{b.line}: marker {b.marker!r}: a Python block has none, {SPARK!r} or "
        f"{NOT_RUN!r} and a reason"
        for b in blocks
        if b.marker not in ("", SPARK)
        and not (b.marker.startswith(NOT_RUN) and b.marker[len(NOT_RUN) :].strip())
    ]
    for block in blocks:
        try:
            compile(block.text, f"{page}:{block.line}", "exec")
        except SyntaxError as exc:
            problems.append(f"{page}:{block.line + (exc.lineno or 0)}: {exc.msg}")
    if problems:
        return problems
    modules, functions = names_of_the_package(blocks)
    return [p for b in blocks for p in unbound_calls(page, b, modules, functions)]


def run_page(page: str, text: str, tmp_path: Path) -> tuple[str | None, float]:
    """Run a page's steps in a fresh folder: why it failed (or None), and the CPU
    seconds it took, its JVM's included (the runner waits for it)."""
    steps = plan(text)
    if not steps:
        return None, 0.0
    tmp_path.mkdir(parents=True, exist_ok=True)
    work, env = fresh_shell(tmp_path)
    # Spark on the loopback, and the suite's lighter JVM options (tests/conftest.py)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.update({k: os.environ[k] for k in ("SPARK_SUBMIT_OPTS",) if k in os.environ})
    plan_file, result_file = tmp_path / "plan.json", tmp_path / "result.json"
    plan_file.write_text(json.dumps({"page": page, "steps": steps}), encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, str(RUNNER), str(plan_file), str(result_file)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0 or not result_file.exists():
        return f"{page}: the runner exited {done.returncode}\n{done.stderr[-3000:]}", cpu
    return json.loads(result_file.read_text(encoding="utf-8"))["failure"], cpu


def test_the_docs_have_python_blocks_that_run():
    running = {p for p in PYTHON_PAGES if plan((ROOT / p).read_text(encoding="utf-8"))}
    # the README's first run moved to the tutorial's step 1 (written once); api.md is the
    # Python API's own page
    assert {"docs/api.md", "docs/concepts.md", "docs/tutorial/first-result.md"} <= running


@pytest.mark.parametrize("page", PYTHON_PAGES)
def test_every_python_block_works_as_written(page, tmp_path):
    text = (ROOT / page).read_text(encoding="utf-8")
    problems = static_problems(page, text)
    assert not problems, "\n".join(problems)
    started = time.monotonic()
    failure, cpu = run_page(page, text, tmp_path)
    print(f"{page}: {time.monotonic() - started:.1f} s, {cpu:.1f} s of CPU")
    assert failure is None, failure


# a page written wrong on purpose: the checks above must be able to fail
WRONG_PAGE = """# A wrong page

<!-- not run: a file of the reader's -->
```python
import disc21spark as ds

m = ds.evaluate("gt.csv", "p.csv", resample=0)
```

```python
total = 1 + 1
print(total)
```

```text
3
```

```python
raise ValueError("wrong on purpose")
```
"""


def test_a_wrong_keyword_in_a_block_that_does_not_run_is_reported():
    (problem,) = static_problems("wrong.md", WRONG_PAGE)
    assert problem.startswith("wrong.md:7: ds.evaluate(...)") and "resample" in problem


def test_a_wrong_output_and_a_block_that_raises_are_reported(tmp_path):
    failure, _ = run_page("wrong.md", WRONG_PAGE, tmp_path / "output")
    assert failure.startswith("wrong.md:10: the block prints\n2\n") and "shows\n3" in failure
    fixed = WRONG_PAGE.replace("```text\n3", "```text\n2")
    failure, _ = run_page("wrong.md", fixed, tmp_path / "raises")
    assert failure.startswith("wrong.md:19: the block raised")
    assert 'File "wrong.md", line 20' in failure and "wrong on purpose" in failure
