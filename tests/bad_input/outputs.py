"""Output paths of every command."""

from __future__ import annotations

from tests.bad_input.common import OUT, Case, board, files, text, with_gt
from tests.bad_input.descriptors import descriptors
from tests.bad_input.images import EXTRACT, MAKE_QUERIES, library_with
from tests.bad_input.options import DESC, EVAL, EXTRACT_BENCH, LIBRARY, RANK
from tests.bad_input.pools import evaluate_pool, pool
from tests.bad_inputs import (
    CLEAN,
)

# ------------------------------------------------------------------ output paths


def output_cases(
    name: str,
    command: list[str],
    setup=None,
    out: str = "{d}/out",
    sees: dict | None = None,
    engines: tuple[str, ...] = (),
) -> list[Case]:
    """The four ways an --output can be wrong, for one command (``sees``: other lines;
    ``engines``: where they run, ``Case``'s default when empty)."""
    sees = sees or {}
    leaf = out.rsplit("/", 1)[1]
    at = command.index("--output") + 1

    def to(target: str) -> list[str]:
        return [*command[:at], target, *command[at + 1 :]]

    def plus(*writers):
        return files(*(w for w in (setup, *writers) if w))

    return [
        Case(
            f"{name}-output-file",
            OUT,
            f"{name}: --output is a file",
            to(out),
            2,
            sees.get("file", f"error: {out}: exists and is not a folder"),
            plus(text(out.removeprefix("{d}/"), "mine")),
            preexisting=False,
            engines=engines,
        ),
        Case(
            f"{name}-output-not-empty",
            OUT,
            f"{name}: --output a non-empty folder, no --overwrite",
            to(out),
            2,
            sees.get(
                "folder",
                f"error: {out}: folder exists and is not empty (pass --overwrite to replace it)",
            ),
            plus(text(out.removeprefix("{d}/") + "/mine.txt", "mine")),
            preexisting=False,
            engines=engines,
        ),
        Case(
            f"{name}-output-no-parent",
            OUT,
            f"{name}: --output in a missing folder",
            to("{d}/no/" + leaf),
            2,
            "error: {d}/no: parent folder does not exist",
            setup,
            preexisting=False,
            engines=engines,
        ),
        Case(
            f"{name}-output-read-only",
            OUT,
            f"{name}: --output in a read-only folder",
            to("{ro}/" + leaf),
            2,
            "error: {ro}: cannot write the output folder here (…)",
            setup,
            preexisting=False,
            engines=engines,
        ),
    ]


CASES: list[Case] = [
    *output_cases("evaluate", EVAL, with_gt(text("p.csv", CLEAN))),
    *output_cases(
        "pool",
        evaluate_pool("{d}/pool"),
        pool(text("pool/a.csv", CLEAN), text("pool/b.csv", CLEAN)),
    ),
    *output_cases("descriptors", DESC, descriptors()),
    *output_cases("make-library", LIBRARY),
    *output_cases("make-queries", MAKE_QUERIES, library_with(None)),
    *output_cases("extract-bench", EXTRACT_BENCH),
    *output_cases("rank-eval", RANK),
]
FREEZE = ["freeze", "--board", "{d}/board", "--output", "{d}/out"]
TAKEN = "error: {d}/out: exists (a frozen board is copied to a new folder)"
CASES += output_cases(
    "freeze",
    FREEZE,
    board("board"),
    sees={"file": TAKEN, "folder": TAKEN},
    engines=("none",),  # freeze starts no Spark
)
EXISTS = "error: {d}/v.h5: exists (pass --overwrite to replace it)"
CASES += output_cases(
    "extract", EXTRACT, library_with(None), out="{d}/v.h5", sees={"file": EXISTS, "folder": EXISTS}
)
CASES += [
    Case(
        "extract-output-folder-overwrite",
        OUT,
        "extract: --output names a folder, --overwrite given",
        [*EXTRACT, "--overwrite"],
        2,
        "error: {d}/v.h5: is a folder (the output is one file)",
        files(library_with(None), text("v.h5/mine.txt", "mine")),
        preexisting=False,
    ),
    Case(
        "extract-output-suffix",
        OUT,
        "extract: --output with another ending (v.txt)",
        [*EXTRACT[:-1], "{d}/v.txt"],
        2,
        "error: {d}/v.txt: the output must end in .h5, .parquet or .npy",
        library_with(None),
        preexisting=False,
    ),
]
