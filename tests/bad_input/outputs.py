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

# ---------------------------------------- what a run never touches (issue 44, core/keep.py)
NEVER = "a run never replaces or writes into a path it reads"
SPLIT = ("--private-queries", "{d}/split.csv")
TWO = pool(text("pool/a.csv", CLEAN), text("pool/b.csv", CLEAN), text("split.csv", "Q1\nQ2\n"))
FROZEN_BOARD = files(
    text("runs/official/leaderboard.json", "{}"), text("runs/official/FROZEN.json", "{}")
)
CASES += [
    Case(
        "pool-private-output-is-predictions",
        OUT,
        "a split: --private-output is the --predictions folder, --overwrite given",
        evaluate_pool("{d}/pool", extra=(*SPLIT, "--private-output", "{d}/pool", "--overwrite")),
        2,
        f"error: --private-output {{d}}/pool is --predictions {{d}}/pool: {NEVER}",
        TWO,
        preexisting=False,
        engines=("none",),
    ),
    Case(
        "evaluate-output-holds-predictions",
        OUT,
        "--output the folder holding the predictions file, --overwrite given",
        ["evaluate", "--ground-truth", "{d}/gt.csv", "--predictions", "{d}/in/p.csv"]
        + ["--output", "{d}/in", "--overwrite"],
        2,
        f"error: --output {{d}}/in holds --predictions {{d}}/in/p.csv: {NEVER}",
        with_gt(text("in/p.csv", CLEAN)),
        preexisting=False,
        engines=("none",),
    ),
    Case(
        "evaluate-output-inside-input",
        OUT,
        "--output inside the --predictions folder",
        evaluate_pool("{d}/pool")[:-1] + ["{d}/pool/out"],
        2,
        f"error: --output {{d}}/pool/out is inside --predictions {{d}}/pool: {NEVER}",
        TWO,
        preexisting=False,
        engines=("none",),
    ),
    Case(
        "pool-outputs-nested",
        OUT,
        "a split: --output inside --private-output",
        [*evaluate_pool("{d}/pool")[:-1], "{d}/both/pub", *SPLIT, "--private-output", "{d}/both"],
        2,
        "error: --private-output {d}/both holds --output {d}/both/pub: each output needs a "
        "folder of its own (writing one would replace the other)",
        TWO,
        preexisting=False,
        engines=("none",),
    ),
    Case(
        "evaluate-output-holds-frozen",
        OUT,
        "--output a folder holding a frozen board, --overwrite given",
        [*EVAL[:-1], "{d}/runs", "--overwrite"],
        2,
        "error: {d}/runs: holds the frozen board {d}/runs/official, which no run replaces "
        "(not even with --overwrite)",
        files(with_gt(text("p.csv", CLEAN)), FROZEN_BOARD),
        preexisting=False,
        engines=("none",),
    ),
    Case(
        "evaluate-output-inside-frozen",
        OUT,
        "--output inside a frozen board",
        [*EVAL[:-1], "{d}/runs/official/extra"],
        2,
        "error: {d}/runs/official/extra: inside the frozen board {d}/runs/official, which no "
        "run writes in (not even with --overwrite)",
        files(with_gt(text("p.csv", CLEAN)), FROZEN_BOARD),
        preexisting=False,
        engines=("none",),
    ),
    Case(
        "freeze-output-inside-frozen",
        OUT,
        "freeze: --output inside a frozen board",
        [*FREEZE[:-1], "{d}/runs/official/private_copy"],
        2,
        "error: {d}/runs/official/private_copy: inside the frozen board {d}/runs/official, "
        "which no run writes in (not even with --overwrite)",
        files(text("board/leaderboard.json", '{"run": {}, "submissions": []}'), FROZEN_BOARD),
        preexisting=False,
        engines=("none",),
    ),
    Case(
        "pool-empty-path",
        OUT,
        "a split: --private-queries '' --private-output ''",
        evaluate_pool("{d}/pool", extra=("--private-queries", "", "--private-output", "")),
        2,
        "error: --private-queries: an empty path (give a file or folder)",
        TWO,
        preexisting=False,
        engines=("none",),
    ),
]
