"""One page's blocks in one interpreter, as a reader pastes them into a notebook:

    python tests/docs_python_run.py PLAN.json RESULT.json     (from the page's folder)

PLAN holds the page's name and its steps in page order: a bash block (run with
``bash -euo pipefail``, as tests/test_docs.py runs them) or a Python block (executed in
the namespace the page's earlier blocks filled), each with its page line and, for a
Python block, the text the page shows as its output (or null). The first step that
fails ends the run; RESULT gets ``{"failure": text or null, "seconds": {line: s}}``.
A traceback names the page and the page's own line numbers.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import time
import traceback
from pathlib import Path


class Tee(io.StringIO):
    """What a block prints: kept for the comparison, and shown as it is printed."""

    def write(self, text: str) -> int:
        sys.__stdout__.write(text)
        return super().write(text)


def normal(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def python_step(page: str, step: dict, namespace: dict) -> str | None:
    """Run one Python block; why it failed, or None."""
    # blank lines first, so that the compiled block's line numbers are the page's
    code = compile("\n" * step["line"] + step["code"], page, "exec")
    printed = Tee()
    try:
        with contextlib.redirect_stdout(printed):
            exec(code, namespace)
    except BaseException:  # noqa: BLE001 (SystemExit too: a block must not exit)
        return f"{page}:{step['line']}: the block raised\n{traceback.format_exc(limit=-8)}"
    expected = step.get("expected")
    if expected is not None and normal(printed.getvalue()) != normal(expected):
        return (
            f"{page}:{step['line']}: the block prints\n{printed.getvalue()}\n"
            f"but the page shows\n{expected}"
        )
    return None


def bash_step(page: str, step: dict) -> str | None:
    """Run one bash block in this folder; why it failed, or None."""
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", step["code"]], capture_output=True, text=True
    )
    if done.returncode == 0:
        return None
    return f"{page}:{step['line']}: the bash block exited {done.returncode}\n{done.stderr[-3000:]}"


def stop_spark() -> None:
    """Stop a session a block started, and wait for its JVM (the package's own shutdown):
    the JVM is then a child this process reaped, so the test's CPU count (its children's
    rusage) includes it."""
    from disc21spark.core import gateway

    gateway.stop_all()


def main(plan_path: str, result_path: str) -> None:
    plan = json.loads(Path(plan_path).read_text(encoding="utf-8"))
    namespace: dict = {"__name__": "__main__"}
    seconds, failure = {}, None
    for step in plan["steps"]:
        started = time.monotonic()
        if step["kind"] == "python":
            failure = python_step(plan["page"], step, namespace)
        else:
            failure = bash_step(plan["page"], step)
        seconds[step["line"]] = round(time.monotonic() - started, 2)
        if failure:
            break
    stop_spark()
    result = {"failure": failure, "seconds": seconds}
    Path(result_path).write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
