"""The small inputs of the evaluate job's tests, shared with the engines' and the memory
limit's: a ground truth, bad submissions and bad ground truths with the message each
gets, and a command line over them."""

from __future__ import annotations

import argparse
from pathlib import Path

GT_LINES = "query_id,reference_id\nQ1,R1\nQ2,R2\nQ3,\nQ4,R4\n"


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


BAD_PREDICTIONS = [
    ("Q1,R1,0.9\nQ2,R2\n", r"p\.csv: line 2: missing score"),
    ("Q1,R1,0.9\nQ2,R2,0.5,extra\n", r"p\.csv: line 2: expected 3 fields.*found more"),
    # a fourth field with spaces: still named by its line
    ("Q1,R1,0.9\nQ2,R2,0.5, extra ,x\n", r"p\.csv: line 2: expected 3 fields.*found more"),
    ("Q1,R1,0.9\n\nQ2,R2,abc\n", r"p\.csv: line 3: score 'abc' is not a number"),
    ("Q1,R1,0.9\nQ2,R2,NaN\n", r"p\.csv: line 2: score 'NaN' is not finite"),
    ("Q1,R1,-inf\n", r"p\.csv: line 1: score '-inf' is not finite"),
    ("Q1,R1,1e999\n", r"p\.csv: line 1: score '1e999' is not finite"),
    ("Q1,,0.5\n", r"p\.csv: line 1: empty reference_id"),
    ("Q1,R1,0.5\nQ2,R2,0.1\nQ1,R1,0.7\n", r"p\.csv: lines 1 and 3: duplicate pair \(Q1, R1\)"),
]
BAD_GROUND_TRUTH = [
    ("", r"ground truth is empty"),
    ("query_id,reference_id\n", r"ground truth is empty"),
    ("Q1,\nQ2,\n", r"ground truth has no positive pair"),
    ("Q1,R1\nQ2,R2\nQ1,R1\n", r"line 3: duplicate ground-truth row \(Q1, R1\), also on line 1"),
    ("Q1,R1\nQ1,\n", r"line 2: query Q1 is listed both as a distractor and with a reference"),
    ("Q1,R1,0.5\n", r"line 1: expected 2 fields: query_id,reference_id, found 3"),
    ("Q1,R1\n,R2\n", r"line 2: empty query_id"),
]


def args_for(
    tmp_path: Path, *extra: str, predictions: list[str] | None = None
) -> argparse.Namespace:
    from disc21spark import commands

    gt = write(tmp_path / "gt.csv", GT_LINES)
    preds = predictions or [write(tmp_path / "p.csv", "Q1,R1,0.5\n")]
    argv = ["evaluate", "--ground-truth", gt, "--output", str(tmp_path / "o"), *extra]
    return commands.parse([*argv, "--predictions", *preds])
