"""The bad-input matrix: every job and the installed command against the inputs users get
wrong, one table (issue 16). A case is the files it writes, the command line, the exit
code, the one line the user sees and the files the output folder holds afterwards.

Every case is also checked for:
- no Python or Java stack trace on screen (only --debug shows one);
- no output folder and no debris left behind, nothing written outside --output: the
  case's folder is byte-identical afterwards, but for the output itself;
- a pre-existing output folder (a file of the user's in it, --overwrite given) kept byte
  for byte when the job fails;
- no wrong number: a legal-but-odd input (CRLF, a byte-order mark, blank lines...) gives
  the figures of the numpy specification on the rows the official reader's rules see
  (``official_rows``), under both engines for one matching-track file.

Most cases run in this process (``commands.main`` with the shared SparkSession, or the
in-process engine); a few run the installed command and jobs/*.py as the user does.
The docs' table (docs/errors.md) is generated from this one (``python -m tests.test_bad_input_matrix``
rewrites that page).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from tests.bad_inputs import (
    CLEAN,
    CLEAN_COLUMNS,
    GT,
    HEADER,
    QIDS,
    RIDS,
    XB,
    XQ,
    image_bytes,
    picture,
)
from tests.conftest import ROOT, cli_env, without_root_file_access
from tests.running import Screen, in_process, quiet_log, snapshot

# ------------------------------------------------------------------ shared inputs

PADDED = "".join(" " + line.replace(",", " ,\t") + " \n" for line in CLEAN.splitlines())
WHITESPACE = " \t\r"
LIB_SIZE = 8  # good images in the shared library


def text(name: str, content: str | bytes) -> Callable[[Path], None]:
    """A writer of one file of the case folder (str: UTF-8, bytes: as they are)."""

    def write(d: Path) -> None:
        path = d / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)

    return write


def files(*writers: Callable[[Path], None]) -> Callable[[Path], None]:
    def write(d: Path) -> None:
        for w in writers:
            w(d)

    return write


def gzipped(name: str, content: str, cut: float = 1.0) -> Callable[[Path], None]:
    data = gzip.compress(content.encode(), mtime=0)
    return text(name, data[: int(len(data) * cut)])


def parquet(name: str, **columns) -> Callable[[Path], None]:
    def write(d: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        (d / name).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(columns), d / name)

    return write


def with_gt(*writers: Callable[[Path], None], gt: str = GT) -> Callable[[Path], None]:
    return files(text("gt.csv", gt), *writers)


# --------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Case:
    """One row of the matrix.

    ``args`` and ``sees`` use ``{d}`` for the case's folder, ``{lib}`` and ``{bench}`` for
    the shared image library and bench folder. ``sees`` is, for exit code 2, the exact
    line on screen, ``…`` standing for a library's own words (Arrow's, Java's); for exit
    code 0 what the user gets, in words (the checks say it in code).
    """

    id: str
    group: str
    input: str
    command: list[str]
    code: int
    sees: str
    setup: Callable[[Path], None] | None = None
    engines: tuple[str, ...] = ()  # default: spark for evaluate, else in process with Spark
    outputs: tuple[str, ...] = ()  # files the output folder holds after a success
    check: Callable[[Path, str], None] | None = None  # (case folder, engine) after a success
    note: str = ""  # what the official ISC2021 scorer does instead, and why we differ
    preexisting: bool = True  # also run with a pre-existing output folder and --overwrite
    beside: tuple[str, ...] = ()  # files a success may write next to the output (documented)
    per_engine: dict = field(default_factory=dict)  # engine → (code, sees) where they differ
    root_skip: bool = False  # needs permissions root ignores: as root, run under setpriv

    def __post_init__(self) -> None:
        if not self.engines:
            default = ("spark",) if self.command[0] == "evaluate" else ("inproc",)
            object.__setattr__(self, "engines", default)

    def expected(self, engine: str) -> tuple[int, str]:
        return self.per_engine.get(engine, (self.code, self.sees))


MATCHING_FILES = ("metrics.json", "pr_curve.csv", "pr_curve.png")
# resamples/: each submission's bootstrap replicates, kept for --previous (docs/statistics.md)
POOL_FILES = (
    "leaderboard.csv",
    "leaderboard.html",
    "leaderboard.json",
    "leaderboard.md",
    "pr_curves",
    "pr_curves.png",
    "resamples",
)
# every output folder also holds the run record and the marker of a complete folder
RECORD_FILES = ("_SUCCESS", "run.json")


def evaluate(preds: str = "{d}/p.csv", *extra: str, gt: str = "{d}/gt.csv") -> list[str]:
    return ["evaluate", "--ground-truth", gt, "--predictions", preds, "--output", "{d}/out", *extra]


def scores_like_official(case_dir: Path, engine: str, preds: str = "p.csv", gt: str = "gt.csv"):
    """metrics.json and pr_curve.csv equal the specification on the rows the official
    reader's rules give (the figures, bit for bit; the curve, byte for byte)."""
    expected = official_metrics(case_dir / preds, case_dir / gt)
    assert_metrics(case_dir / "out", expected, engine)


def scores_like_clean(case_dir: Path, engine: str) -> None:
    (case_dir / "clean").mkdir(exist_ok=True)
    (case_dir / "clean" / "p.csv").write_text(CLEAN)
    (case_dir / "clean" / "gt.csv").write_text(GT)
    expected = official_metrics(case_dir / "clean" / "p.csv", case_dir / "clean" / "gt.csv")
    assert_metrics(case_dir / "out", expected, engine)


def scores_zero(case_dir: Path, engine: str) -> None:
    doc = json.loads((case_dir / "out" / "metrics.json").read_text())
    assert doc["micro_ap"] == 0.0 and doc["n_predictions"] == 0, doc
    scores_like_official(case_dir, engine)


def P(**kw) -> dict:
    return kw


def matching(
    id: str,
    group: str,
    input: str,
    setup,
    code: int,
    sees: str,
    *,
    preds: str = "{d}/p.csv",
    extra: tuple[str, ...] = (),
    check=None,
    note: str = "",
    per_engine=None,
    gt="{d}/gt.csv",
) -> Case:
    """A single-file matching-track case: run by both engines, with the same result."""
    return Case(
        id,
        group,
        input,
        evaluate(preds, *extra, gt=gt),
        code,
        sees,
        setup,
        engines=("local", "spark"),
        outputs=MATCHING_FILES if code == 0 else (),
        check=check if code == 0 else None,
        note=note,
        per_engine=per_engine or {},
    )


T, Q, G = "predictions (text)", "predictions (Parquet)", "ground truth"
# a damaged Parquet or gzip file: core/damage.py's words, the same on both engines
GZIP_CUT = "cannot be read as gzip (truncated: the compressed stream ends before its end)"
GZIP_NOT = "cannot be read as gzip (not gzip: no gzip magic number at its start)"
PARQUET_EMPTY = "cannot be read as Parquet (truncated, or not a Parquet file: 0 bytes, fewer than the 12 of the smallest)"
PARQUET_TEXT = "cannot be read as Parquet (not a Parquet file, or a damaged one: no PAR1 magic number at both ends)"
LOCAL_REFUSES = (
    "error: --engine local: {d}/p.parquet: ids that are not strings or a score that is not a "
    "number; use --engine spark"
)
CASES: list[Case] = [
    # ---------------------------------------------------------------- text inputs
    matching(
        "clean",
        T,
        "a clean file (the reference for the odd ones)",
        with_gt(text("p.csv", CLEAN)),
        0,
        "the table of figures",
        check=scores_like_clean,
    ),
    matching(
        "empty",
        T,
        "empty file",
        with_gt(text("p.csv", "")),
        0,
        "μAP 0 (no predictions)",
        check=scores_zero,
        note="official: the same (an empty list of predictions)",
    ),
    matching(
        "header-only",
        T,
        "header line only",
        with_gt(text("p.csv", HEADER)),
        0,
        "μAP 0 (no predictions)",
        check=scores_zero,
    ),
    matching(
        "bom",
        T,
        "UTF-8 byte-order mark",
        with_gt(text("p.csv", "\ufeff" + CLEAN)),
        0,
        "the clean file's figures",
        check=scores_like_clean,
        note="official: the mark becomes part of the first query id (that pair turns into "
        "an unknown query's false positive); we drop it, as UTF-8 readers do (Hadoop's "
        "line reader, Arrow), so the file scores as its author meant",
    ),
    matching(
        "bom-header-crlf",
        T,
        "byte-order mark, header and CRLF (a spreadsheet's export)",
        with_gt(text("p.csv", ("\ufeff" + HEADER + CLEAN).replace("\n", "\r\n"))),
        0,
        "the clean file's figures",
        check=scores_like_clean,
        note="official: the marked header is not recognised, and its score 'score' stops the run",
    ),
    matching(
        "crlf",
        T,
        "CRLF line ends",
        with_gt(text("p.csv", CLEAN.replace("\n", "\r\n"))),
        0,
        "the clean file's figures",
        check=scores_like_clean,
    ),
    matching(
        "cr",
        T,
        "old Mac line ends (CR only)",
        with_gt(text("p.csv", CLEAN.replace("\n", "\r"))),
        0,
        "the clean file's figures",
        check=scores_like_clean,
    ),
    matching(
        "blank-lines",
        T,
        "blank and whitespace-only lines",
        with_gt(text("p.csv", "\n \n" + CLEAN.replace("\n", "\n\t\n") + "\n\n")),
        0,
        "the clean file's figures",
        check=scores_like_clean,
        note="official: a blank line stops the run (it cannot be split in 3)",
    ),
    matching(
        "padded",
        T,
        "spaces and tabs around fields",
        with_gt(text("p.csv", PADDED)),
        0,
        "the clean file's figures",
        check=scores_like_clean,
        note="official: strips the line only, so ' R1' is another reference",
    ),
    matching(
        "no-final-newline",
        T,
        "no newline at the end",
        with_gt(text("p.csv", CLEAN.rstrip("\n"))),
        0,
        "the clean file's figures",
        check=scores_like_clean,
    ),
    matching(
        "score-spellings",
        T,
        "scores spelled .9, 8e-1, +0.7, 0.60, 5E-1",
        with_gt(
            text(
                "p.csv",
                CLEAN.replace("0.9", ".9")
                .replace("0.8", "8e-1")
                .replace("0.7", "+0.7")
                .replace("0.6", "0.60")
                .replace("0.5", "5E-1"),
            )
        ),
        0,
        "the clean file's figures",
        check=scores_like_clean,
    ),
    matching(
        "repeated-header",
        T,
        "header lines repeated mid-file (concatenated files)",
        with_gt(text("p.csv", HEADER + CLEAN[:20] + HEADER + CLEAN[20:])),
        0,
        "the clean file's figures",
        check=scores_like_clean,
    ),
    matching(
        "gzip",
        T,
        "gzip-compressed (.csv.gz)",
        with_gt(gzipped("p.csv.gz", CLEAN)),
        0,
        "the clean file's figures",
        preds="{d}/p.csv.gz",
        check=lambda d, e: scores_like_official(d, e, "p.csv.gz"),
    ),
    matching(
        "quoted",
        T,
        'quoted fields ("Q1","R1","0.9")',
        with_gt(text("p.csv", 'Q1,R1,0.9\n"Q2","R2",0.7\n')),
        0,
        "the official reader's figures: a quoted id is another id",
        check=scores_like_official,
        note="official: the same (no quoting: the quotes are part of the id)",
    ),
    matching(
        "ids-with-spaces",
        T,
        "ids with spaces inside (Q 2)",
        with_gt(text("p.csv", "Q1,R1,0.9\nQ 2,R2,0.7\n")),
        0,
        "the official reader's figures: 'Q 2' is an unknown query",
        check=scores_like_official,
    ),
    matching(
        "megabyte-line",
        T,
        "a line of a megabyte (a 1 MB reference id)",
        with_gt(text("p.csv", "Q1,R1,0.9\nQ2," + "R" * (1 << 20) + ",0.8\nQ2,R2,0.7\n")),
        0,
        "the official reader's figures",
        check=scores_like_official,
    ),
    matching(
        "unknown-queries",
        T,
        "only queries the ground truth does not know",
        with_gt(text("p.csv", "QA,R1,0.9\nQB,R2,0.7\n")),
        0,
        "μAP 0; n_unknown_query_predictions 2",
        check=scores_like_official,
    ),
    matching(
        "id-comma",
        T,
        "an id with a comma (Q,2)",
        with_gt(text("p.csv", "Q1,R1,0.9\nQ,2,R2,0.7\n")),
        2,
        "error: {d}/p.csv: line 2: expected 3 fields: query_id,reference_id,score, found more",
    ),
    matching(
        "two-fields",
        T,
        "a line of two fields",
        with_gt(text("p.csv", "Q1,R1,0.9\nQ2,R2\n")),
        2,
        "error: {d}/p.csv: line 2: missing score (expected 3 fields: query_id,reference_id,score)",
    ),
    matching(
        "one-field",
        T,
        "a line of one field",
        with_gt(text("p.csv", "Q1,R1,0.9\n\nQ2\n")),
        2,
        "error: {d}/p.csv: line 3: empty reference_id",
    ),
    matching(
        "four-fields",
        T,
        "a line of four fields",
        with_gt(text("p.csv", "Q1,R1,0.9,x\n")),
        2,
        "error: {d}/p.csv: line 1: expected 3 fields: query_id,reference_id,score, found more",
    ),
    matching(
        "trailing-comma",
        T,
        "a comma after the score (an empty fourth field)",
        with_gt(text("p.csv", "Q1,R1,0.9\nQ2,R2,0.8,\n")),
        2,
        "error: {d}/p.csv: line 2: expected 3 fields: query_id,reference_id,score, found more",
    ),
    matching(
        "tabs",
        T,
        "tab-separated values",
        with_gt(text("p.csv", "Q1\tR1\t0.9\n")),
        2,
        "error: {d}/p.csv: line 1: empty reference_id",
    ),
    matching(
        "semicolons",
        T,
        "semicolon-separated values (a European spreadsheet)",
        with_gt(text("p.csv", "Q1;R1;0,9\n")),
        2,
        "error: {d}/p.csv: line 1: missing score (expected 3 fields: query_id,reference_id,score)",
    ),
    matching(
        "score-nan",
        T,
        "score nan",
        with_gt(text("p.csv", "Q1,R1,0.9\nQ2,R2,nan\n")),
        2,
        "error: {d}/p.csv: line 2: score 'nan' is not finite",
        note="official: accepted (NaN then sorts arbitrarily)",
    ),
    matching(
        "score-inf",
        T,
        "score inf",
        with_gt(text("p.csv", "Q1,R1,inf\n")),
        2,
        "error: {d}/p.csv: line 1: score 'inf' is not finite",
        note="official: accepted",
    ),
    matching(
        "score-minus-infinity",
        T,
        "score -Infinity",
        with_gt(text("p.csv", "Q1,R1,0.9\nQ2,R2,-Infinity\n")),
        2,
        "error: {d}/p.csv: line 2: score '-Infinity' is not finite",
        note="official: accepted",
    ),
    matching(
        "score-1e400",
        T,
        "score 1e400 (overflows a double)",
        with_gt(text("p.csv", "Q1,R1,1e400\n")),
        2,
        "error: {d}/p.csv: line 1: score '1e400' is not finite",
        note="official: read as infinity and accepted",
    ),
    matching(
        "score-empty",
        T,
        "empty score",
        with_gt(text("p.csv", "Q1,R1,0.9\nQ2,R2,\n")),
        2,
        "error: {d}/p.csv: line 2: missing score (expected 3 fields: query_id,reference_id,score)",
    ),
    matching(
        "score-text",
        T,
        "score that is text",
        with_gt(text("p.csv", "Q1,R1,high\n")),
        2,
        "error: {d}/p.csv: line 1: score 'high' is not a number",
    ),
    matching(
        "empty-query",
        T,
        "an empty query id",
        with_gt(text("p.csv", "Q1,R1,0.9\n,R2,0.5\n")),
        2,
        "error: {d}/p.csv: line 2: empty query_id",
        note="official: accepted as the query ''",
    ),
    matching(
        "empty-reference",
        T,
        "an empty reference id",
        with_gt(text("p.csv", "Q1, ,0.9\n")),
        2,
        "error: {d}/p.csv: line 1: empty reference_id",
    ),
    matching(
        "repeated-pair",
        T,
        "a pair repeated with another score",
        with_gt(text("p.csv", "Q1,R1,0.9\nQ2,R2,0.5\nQ1,R1,0.3\n")),
        2,
        "error: {d}/p.csv: lines 1 and 3: duplicate pair (Q1, R1) appears 2 times; the "
        "official scorer rejects duplicate predictions",
    ),
    matching(
        "repeated-pair-bom-crlf",
        T,
        "a repeated pair in a file with a byte-order mark and CRLF",
        with_gt(text("p.csv", "\ufeffQ1,R1,0.9\r\nQ2,R2,0.5\r\nQ1,R1,0.3\r\n")),
        2,
        "error: {d}/p.csv: lines 1 and 3: duplicate pair (Q1, R1) appears 2 times; the "
        "official scorer rejects duplicate predictions",
    ),
    matching(
        "not-utf8",
        T,
        "bytes that are not UTF-8 (Latin-1 é)",
        with_gt(text("p.csv", b"Q1,R1,0.9\nQ\xe92,R2,0.5\n")),
        2,
        "error: {d}/p.csv: line 2: not UTF-8 text (a byte the UTF-8 decoder replaced by U+FFFD)",
        note="official: stops with a UnicodeDecodeError",
    ),
    matching(
        "binary",
        T,
        "binary garbage (every byte value)",
        with_gt(text("p.csv", bytes(range(256)) * 8)),
        2,
        "error: {d}/p.csv: line 1: …",
    ),
    matching(
        "truncated-gz",
        T,
        "a truncated .gz",
        with_gt(gzipped("p.csv.gz", CLEAN * 50, cut=0.5)),
        2,
        f"error: {{d}}/p.csv.gz: {GZIP_CUT}",
        preds="{d}/p.csv.gz",
    ),
    matching(
        "not-gzip",
        T,
        "a .gz that is not gzip",
        with_gt(text("p.csv.gz", CLEAN)),
        2,
        f"error: {{d}}/p.csv.gz: {GZIP_NOT}",
        preds="{d}/p.csv.gz",
    ),
    matching(
        "missing",
        T,
        "a predictions file that does not exist",
        with_gt(),
        2,
        "error: {d}/p.csv: no such file or directory",
    ),
    matching(
        "max-results",
        T,
        "more predictions than --max-results",
        with_gt(text("p.csv", CLEAN)),
        2,
        "error: {d}/p.csv: 6 predictions, more than --max-results 5 (pass --max-results 0 for no limit)",
        extra=("--max-results", "5"),
    ),
    # ---------------------------------------------------------------- Parquet
    matching(
        "parquet",
        Q,
        "a clean Parquet file",
        with_gt(parquet("p.parquet", **CLEAN_COLUMNS)),
        0,
        "the clean file's figures",
        preds="{d}/p.parquet",
        check=lambda d, e: scores_like_official(d, e, "p.parquet"),
    ),
    matching(
        "parquet-zero-bytes",
        Q,
        "a Parquet file of zero bytes",
        with_gt(text("p.parquet", b"")),
        2,
        f"error: {{d}}/p.parquet: {PARQUET_EMPTY}",
        preds="{d}/p.parquet",
    ),
    matching(
        "parquet-not-parquet",
        Q,
        "a .parquet file that is CSV text",
        with_gt(text("p.parquet", CLEAN)),
        2,
        f"error: {{d}}/p.parquet: {PARQUET_TEXT}",
        preds="{d}/p.parquet",
    ),
    matching(
        "parquet-string-scores",
        Q,
        "a score column of numbers written as strings",
        with_gt(
            parquet(
                "p.parquet", **{**CLEAN_COLUMNS, "score": [str(x) for x in CLEAN_COLUMNS["score"]]}
            )
        ),
        0,
        "the clean file's figures (Spark casts the strings)",
        preds="{d}/p.parquet",
        check=scores_like_clean,
        per_engine={"local": (2, LOCAL_REFUSES)},
    ),
    matching(
        "parquet-text-scores",
        Q,
        "a score column of strings that are not numbers",
        with_gt(
            parquet(
                "p.parquet", query_id=["Q1", "Q2"], reference_id=["R1", "R2"], score=["0.5", "high"]
            )
        ),
        2,
        "error: {d}/p.parquet: row query_id='Q2', reference_id='R2': missing or non-numeric score",
        preds="{d}/p.parquet",
        per_engine={"local": (2, LOCAL_REFUSES)},
    ),
    matching(
        "parquet-integer-ids",
        Q,
        "integer ids (gt ids 1, 2...)",
        files(
            text("gt.csv", "1,11\n2,12\n3,\n"),
            parquet(
                "p.parquet", query_id=[1, 2, 9], reference_id=[11, 99, 12], score=[0.9, 0.8, 0.7]
            ),
        ),
        0,
        "the figures of the same ids as text (Spark casts them)",
        preds="{d}/p.parquet",
        check=lambda d, e: scores_like_official(d, e, "p.parquet"),
        per_engine={"local": (2, LOCAL_REFUSES)},
    ),
    matching(
        "parquet-integer-scores",
        Q,
        "integer scores",
        with_gt(
            parquet(
                "p.parquet",
                query_id=["Q1", "Q2", "Q2"],
                reference_id=["R1", "R9", "R2"],
                score=[3, 2, 2],
            )
        ),
        0,
        "the official reader's figures",
        preds="{d}/p.parquet",
        check=lambda d, e: scores_like_official(d, e, "p.parquet"),
    ),
    matching(
        "parquet-missing-column",
        Q,
        "no score column",
        with_gt(parquet("p.parquet", query_id=["Q1"], reference_id=["R1"])),
        2,
        "error: {d}/p.parquet: missing column 'score' (has: query_id, reference_id)",
        preds="{d}/p.parquet",
    ),
    matching(
        "parquet-null-id",
        Q,
        "a null query id",
        with_gt(
            parquet("p.parquet", query_id=["Q1", None], reference_id=["R1", "R2"], score=[0.9, 0.8])
        ),
        2,
        "error: {d}/p.parquet: row query_id=None, reference_id='R2': empty query_id",
        preds="{d}/p.parquet",
    ),
    matching(
        "parquet-nan",
        Q,
        "a NaN score",
        with_gt(
            parquet(
                "p.parquet",
                query_id=["Q1", "Q2"],
                reference_id=["R1", "R2"],
                score=[0.9, float("nan")],
            )
        ),
        2,
        "error: {d}/p.parquet: row query_id='Q2', reference_id='R2': score 'NaN' is not finite",
        preds="{d}/p.parquet",
    ),
    matching(
        "parquet-null-score",
        Q,
        "a null score",
        with_gt(
            parquet(
                "p.parquet", query_id=["Q1", "Q2"], reference_id=["R1", "R2"], score=[0.9, None]
            )
        ),
        2,
        "error: {d}/p.parquet: row query_id='Q2', reference_id='R2': missing or non-numeric score",
        preds="{d}/p.parquet",
    ),
    matching(
        "parquet-repeated-pair",
        Q,
        "a repeated pair",
        with_gt(
            parquet("p.parquet", query_id=["Q1", "Q1"], reference_id=["R1", "R1"], score=[0.9, 0.1])
        ),
        2,
        "error: {d}/p.parquet: duplicate pair (Q1, R1) appears 2 times; the official scorer "
        "rejects duplicate predictions",
        preds="{d}/p.parquet",
    ),
    # ---------------------------------------------------------------- ground truth
    matching(
        "gt-missing",
        G,
        "no ground-truth file",
        text("p.csv", CLEAN),
        2,
        "error: {d}/gt.csv: no such file or directory",
    ),
    matching(
        "gt-empty",
        G,
        "an empty ground truth",
        with_gt(text("p.csv", CLEAN), gt=""),
        2,
        "error: {d}/gt.csv: ground truth is empty",
    ),
    matching(
        "gt-header-only",
        G,
        "a ground truth of its header only",
        with_gt(text("p.csv", CLEAN), gt="query_id,reference_id\n"),
        2,
        "error: {d}/gt.csv: ground truth is empty",
    ),
    matching(
        "gt-three-columns",
        G,
        "three columns",
        with_gt(text("p.csv", CLEAN), gt="Q1,R1\nQ2,R2,0.5\n"),
        2,
        "error: {d}/gt.csv: line 2: expected 2 fields: query_id,reference_id, found 3",
    ),
    matching(
        "gt-repeated-row",
        G,
        "a repeated row",
        with_gt(text("p.csv", CLEAN), gt="Q1,R1\nQ2,R2\nQ1,R1\n"),
        2,
        "error: {d}/gt.csv: line 3: duplicate ground-truth row (Q1, R1), also on line 1",
        note="official: counted twice as positives (recall can then never reach 1)",
    ),
    matching(
        "gt-no-positive",
        G,
        "no positive pair (every reference empty)",
        with_gt(text("p.csv", CLEAN), gt="Q1,\nQ2,\n"),
        2,
        "error: {d}/gt.csv: ground truth has no positive pair (every reference_id is empty)",
        note="official: divides by zero positives",
    ),
    matching(
        "gt-distractor-and-matched",
        G,
        "a query both distractor and matched",
        with_gt(text("p.csv", CLEAN), gt="Q1,R1\nQ2,R2\nQ1,\n"),
        2,
        "error: {d}/gt.csv: line 3: query Q1 is listed both as a distractor and with a "
        "reference (first on line 1)",
    ),
    matching(
        "gt-empty-query",
        G,
        "an empty query id",
        with_gt(text("p.csv", CLEAN), gt="Q1,R1\n,R2\n"),
        2,
        "error: {d}/gt.csv: line 2: empty query_id",
    ),
    matching(
        "gt-bom-crlf",
        G,
        "a byte-order mark and CRLF",
        with_gt(text("p.csv", CLEAN), gt="\ufeff" + GT.replace("\n", "\r\n")),
        0,
        "the clean file's figures",
        check=scores_like_clean,
        note="official: the mark makes the header a pair, and query Q1 another id",
    ),
    matching(
        "gt-not-utf8",
        G,
        "bytes that are not UTF-8",
        files(text("p.csv", CLEAN), text("gt.csv", b"Q1,R1\nQ\xe92,R2\n")),
        2,
        "error: {d}/gt.csv: line 2: not UTF-8 text (a byte the UTF-8 decoder replaced by U+FFFD)",
    ),
    matching(
        "gt-parquet-zero-bytes",
        G,
        "a Parquet ground truth of zero bytes",
        files(text("p.csv", CLEAN), text("gt.parquet", b"")),
        2,
        f"error: {{d}}/gt.parquet: {PARQUET_EMPTY}",
        gt="{d}/gt.parquet",
    ),
    matching(
        "gt-parquet-missing-column",
        G,
        "a Parquet ground truth without reference_id",
        files(text("p.csv", CLEAN), parquet("gt.parquet", query_id=["Q1"])),
        2,
        "error: {d}/gt.parquet: missing column 'reference_id' (has: query_id)",
        gt="{d}/gt.parquet",
    ),
]


# ------------------------------------------------------------------------- pools
PL, D, IM, OPT, OUT, CMD = (
    "pool of submissions",
    "descriptors",
    "images",
    "options",
    "output path",
    "installed command",
)


def pool_statuses(expected: dict[str, str], scored: dict[str, str] | None = None):
    """leaderboard.csv: each submission's status (reason pattern for invalid ones) and the
    scored ones' figures equal to the specification on their file alone."""

    def check(d: Path, engine: str) -> None:
        import csv

        with (d / "out" / "leaderboard.csv").open(newline="") as fh:
            rows = {r["submission"]: r for r in csv.DictReader(fh)}
        assert sorted(rows) == sorted(expected)
        for name, status in expected.items():
            if status == "ok":
                assert rows[name]["status"] == "ok", rows[name]
            else:
                assert rows[name]["status"] == "invalid"
                assert re.fullmatch(fill(status, {"d": str(d)}), rows[name]["reason"]), rows[name]
        for name, file in (scored or {}).items():
            m = official_metrics(d / file, d / "gt.csv")
            doc = json.loads((d / "out" / "leaderboard.json").read_text())
            row = next(r for r in doc["submissions"] if r["submission"] == name)
            for key, value in m.to_dict().items():
                assert row[key] == (value if value is None or np.isfinite(value) else None), key
            assert_curve(d / "out" / "pr_curves" / f"{name}.csv", m)

    return check


def assert_curve(path: Path, expected) -> None:
    from disc21spark.matching.report import write_curve_csv

    other = path.with_name("expected.tmp")
    write_curve_csv(other, expected)
    try:
        assert path.read_bytes() == other.read_bytes()
    finally:
        other.unlink()


def pool(*writers):
    return with_gt(*writers)


def evaluate_pool(*preds: str, extra: tuple[str, ...] = ()) -> list[str]:
    return [
        "evaluate",
        "--ground-truth",
        "{d}/gt.csv",
        "--predictions",
        *preds,
        "--output",
        "{d}/out",
        *extra,
    ]


CASES += [
    Case(
        "pool-bad-members",
        PL,
        "a pool with a bad line, a truncated .gz and a clean file",
        evaluate_pool("{d}/pool"),
        0,
        "the leaderboard: the clean file scored, the others invalid with their one line",
        pool(
            text("pool/a.csv", CLEAN),
            text("pool/b.csv", "Q1,R1,0.9\nQ2,R2,nan\n"),
            gzipped("pool/c.csv.gz", CLEAN * 50, cut=0.5),
        ),
        outputs=POOL_FILES,
        check=pool_statuses(
            {
                "a": "ok",
                "b": r"{d}/pool/b\.csv: line 2: score 'nan' is not finite",
                "c": r"{d}/pool/c\.csv\.gz: cannot be read as gzip \(truncated: the "
                r"compressed stream ends before its end\)",
            },
            {"a": "pool/a.csv"},
        ),
    ),
    Case(
        "pool-fail-on-invalid",
        PL,
        "the same pool with --fail-on-invalid",
        evaluate_pool("{d}/pool", extra=("--fail-on-invalid",)),
        2,
        "error: {d}/pool: 1 of 2 submissions invalid (--fail-on-invalid); first: b: "
        "{d}/pool/b.csv: line 2: score 'nan' is not finite",
        pool(text("pool/a.csv", CLEAN), text("pool/b.csv", "Q1,R1,0.9\nQ2,R2,nan\n")),
    ),
    Case(
        "pool-parquet-schemas",
        PL,
        "Parquet files of different schemas in one pool "
        "(string scores, integer ids, no score column)",
        evaluate_pool("{d}/pool/*.parquet"),
        0,
        "the leaderboard: each file as it would score alone",
        pool(
            parquet("pool/a.parquet", **CLEAN_COLUMNS),
            parquet(
                "pool/b.parquet",
                **{**CLEAN_COLUMNS, "score": [str(x) for x in CLEAN_COLUMNS["score"]]},
            ),
            parquet("pool/c.parquet", query_id=[1, 2], reference_id=[1, 2], score=[0.5, 0.4]),
            parquet("pool/d.parquet", query_id=["Q1"], reference_id=["R1"]),
        ),
        outputs=POOL_FILES,
        check=pool_statuses(
            {
                "a": "ok",
                "b": "ok",
                "c": "ok",
                "d": r"{d}/pool/d\.parquet: missing column 'score' \(has: query_id, reference_id\)",
            },
            {"a": "pool/a.parquet", "c": "pool/c.parquet"},
        ),
    ),
    Case(
        "pool-same-name",
        PL,
        "two files that would name the same submission (a.csv, a.parquet)",
        evaluate_pool("{d}/pool"),
        2,
        "error: {d}/pool/a.parquet: two submissions would be named 'a' (also {d}/pool/a.csv)",
        pool(text("pool/a.csv", CLEAN), parquet("pool/a.parquet", **CLEAN_COLUMNS)),
    ),
    Case(
        "pool-glob-nothing",
        PL,
        "a glob matching nothing",
        evaluate_pool("{d}/pool/*.csv"),
        2,
        "error: {d}/pool/*.csv: no such file or directory",
        pool(),
    ),
    Case(
        "pool-empty-folder",
        PL,
        "a folder without data files (hidden and _SUCCESS files only)",
        evaluate_pool("{d}/pool"),
        2,
        "error: {d}/pool: folder holds no data file",
        pool(text("pool/_SUCCESS", ""), text("pool/.hidden.csv", CLEAN)),
    ),
    Case(
        "pool-column-missing",
        PL,
        "--submission-column naming no column",
        evaluate_pool("{d}/p.parquet", extra=("--submission-column", "team")),
        2,
        "error: {d}/p.parquet: missing column 'team' (has: query_id, reference_id, score)",
        pool(parquet("p.parquet", **CLEAN_COLUMNS)),
    ),
    Case(
        "pool-column-csv",
        PL,
        "--submission-column with a CSV file",
        evaluate_pool("{d}/p.csv", extra=("--submission-column", "team")),
        2,
        "error: {d}/p.csv: --submission-column needs a Parquet table (CSV has 3 fields)",
        pool(text("p.csv", CLEAN)),
    ),
    Case(
        "pool-column-null",
        PL,
        "a row without a submission name",
        evaluate_pool("{d}/p.parquet", extra=("--submission-column", "team")),
        2,
        "error: {d}/p.parquet: rows without a team (the submission)",
        pool(parquet("p.parquet", **CLEAN_COLUMNS, team=["a", "a", None, "b", "b", "b"])),
    ),
    Case(
        "pool-column-path",
        PL,
        "a submission named ../../x (it would name a file outside --output)",
        evaluate_pool("{d}/p.parquet", extra=("--submission-column", "team")),
        2,
        "error: {d}/p.parquet: submission name '../../x' cannot name a file (no '/', '\\', "
        "leading '.' or control character)",
        pool(parquet("p.parquet", **CLEAN_COLUMNS, team=["a", "a", "a", "../../x", "b", "b"])),
    ),
    Case(
        "pool-previous-damaged",
        PL,
        "--previous with a damaged leaderboard.json",
        evaluate_pool("{d}/a.csv", "{d}/b.csv", extra=("--previous", "{d}/last")),
        2,
        "error: --previous {d}/last: not a leaderboard this tool wrote (…)",
        pool(
            text("a.csv", CLEAN), text("b.csv", CLEAN), text("last/leaderboard.json", '{"run": 3}')
        ),
    ),
]

# ------------------------------------------------------------------- descriptors


def h5(name: str, ids=None, vectors=None, *, drop: str = "", dtype=np.float32):
    def write(d: Path) -> None:
        import h5py

        with h5py.File(d / name, "w") as f:
            if drop != "vectors":
                f.create_dataset("vectors", data=np.asarray(vectors, dtype=dtype))
            if drop != "image_names":
                f.create_dataset(
                    "image_names", data=np.array(ids, dtype=object), dtype=h5py.string_dtype()
                )

    return write


def descriptors(query=None, reference=None) -> Callable[[Path], None]:
    return files(
        text("gt.csv", "Q1,R1\nQ2,R2\nQ3,\nQ4,R4\n"),
        query or h5("q.h5", QIDS, XQ),
        reference or h5("r.h5", RIDS, XB),
    )


def evaluate_descriptors(*extra: str, q: str = "{d}/q.h5", r: str = "{d}/r.h5") -> list[str]:
    return [
        "evaluate",
        "--ground-truth",
        "{d}/gt.csv",
        "--query-descriptors",
        q,
        "--reference-descriptors",
        r,
        "--knn",
        "2",
        "--output",
        "{d}/out",
        *extra,
    ]


def descriptor_figures(d: Path, engine: str) -> None:
    """The kNN pairs of exact −squared distances (ties by reference id), scored by the
    specification: what the float32 inputs give."""
    from disc21spark.matching import spec
    from disc21spark.matching.model import GroundTruth

    x, b = XQ.astype(np.float64), XB.astype(np.float64)
    scores = -((x[:, None, :] - b[None, :, :]) ** 2).sum(-1).astype(np.float32)
    q, r, s = [], [], []
    for i, row in enumerate(scores):
        for j in sorted(range(len(RIDS)), key=lambda j: (-row[j], RIDS[j]))[:2]:
            q.append(QIDS[i]), r.append(RIDS[j]), s.append(float(row[j]))
    gt = GroundTruth(
        "gt",
        np.array(QIDS, dtype=object),
        np.array(["Q1", "Q2", "Q4"], dtype=object),
        np.array(["R1", "R2", "R4"], dtype=object),
    )
    expected = spec.evaluate(np.array(q, dtype=object), np.array(r, dtype=object), np.array(s), gt)
    assert_metrics(d / "out", expected)


NAN_XB = XB.copy()
NAN_XB[2, 1] = np.nan
CASES += [
    Case(
        "desc-clean",
        D,
        "clean HDF5 descriptors (the reference for the odd ones)",
        evaluate_descriptors(),
        0,
        "the table of figures",
        descriptors(),
        outputs=MATCHING_FILES,
        check=descriptor_figures,
    ),
    Case(
        "desc-float64",
        D,
        "float64 vectors",
        evaluate_descriptors(),
        0,
        "the float32 file's figures",
        descriptors(h5("q.h5", QIDS, XQ, dtype=np.float64), h5("r.h5", RIDS, XB, dtype=np.float64)),
        outputs=MATCHING_FILES,
        check=descriptor_figures,
    ),
    Case(
        "desc-no-vectors",
        D,
        "HDF5 without vectors",
        evaluate_descriptors(),
        2,
        "error: {d}/r.h5: missing HDF5 dataset 'vectors'",
        descriptors(reference=h5("r.h5", RIDS, XB, drop="vectors")),
    ),
    Case(
        "desc-no-names",
        D,
        "HDF5 without image_names",
        evaluate_descriptors(),
        2,
        "error: {d}/q.h5: missing HDF5 dataset 'image_names'",
        descriptors(query=h5("q.h5", QIDS, XQ, drop="image_names")),
    ),
    Case(
        "desc-lengths",
        D,
        "ids and vectors of different lengths",
        evaluate_descriptors(),
        2,
        "error: {d}/r.h5: 4 image_names for 5 vectors (they must match)",
        descriptors(reference=h5("r.h5", RIDS[:4], XB)),
    ),
    Case(
        "desc-zero-rows",
        D,
        "zero query rows",
        evaluate_descriptors(),
        2,
        "error: {d}/q.h5: the query side has no descriptors",
        descriptors(query=h5("q.h5", [], np.zeros((0, 4)))),
    ),
    Case(
        "desc-nan",
        D,
        "a NaN in a reference vector",
        evaluate_descriptors(),
        2,
        "error: {d}/r.h5: row 3 (image 'R3'): vector has NaN or infinite values",
        descriptors(reference=h5("r.h5", RIDS, NAN_XB)),
    ),
    Case(
        "desc-nan-query",
        D,
        "a NaN in a query vector",
        evaluate_descriptors(),
        2,
        "error: {d}/q.h5: row 1 (image 'Q1'): vector has NaN or infinite values",
        descriptors(query=h5("q.h5", QIDS, np.where(np.eye(4) > 0, np.nan, XQ))),
    ),
    Case(
        "desc-max-dim",
        D,
        "more dimensions than --max-dim",
        evaluate_descriptors("--max-dim", "3"),
        2,
        "error: {d}/r.h5: 4 dimensions, more than --max-dim 3",
        descriptors(),
    ),
    Case(
        "desc-dims",
        D,
        "query and reference dimensions differ",
        evaluate_descriptors(),
        2,
        "error: {d}/q.h5: query descriptors have 4 dimensions, references have 3",
        descriptors(reference=h5("r.h5", RIDS, np.zeros((5, 3)))),
    ),
    Case(
        "desc-repeated-ids",
        D,
        "a reference id repeated",
        evaluate_descriptors(),
        2,
        "error: {d}/r.h5: image id 'R2' appears 2 times in the reference descriptors",
        descriptors(reference=h5("r.h5", ["R1", "R2", "R3", "R2", "R5"], XB)),
    ),
    Case(
        "desc-empty-id",
        D,
        "an empty query id",
        evaluate_descriptors(),
        2,
        "error: {d}/q.h5: row 2: empty image id",
        descriptors(query=h5("q.h5", ["Q1", "", "Q3", "Q4"], XQ)),
    ),
    Case(
        "desc-text-h5",
        D,
        "a text file named .h5",
        evaluate_descriptors(),
        2,
        "error: {d}/r.h5: cannot be read as HDF5 (…)",
        descriptors(reference=text("r.h5", CLEAN)),
    ),
    Case(
        "desc-npy-no-ids",
        D,
        ".npy without its _ids.txt",
        evaluate_descriptors(r="{d}/r.npy"),
        2,
        "error: {d}/r.npy: needs its ids file {d}/r_ids.txt (one id per line)",
        descriptors(reference=lambda d: np.save(d / "r.npy", XB)),
    ),
    Case(
        "desc-factory",
        D,
        "an unbuildable FAISS factory string",
        evaluate_descriptors("--index", "IVF-nonsense"),
        2,
        "error: --index IVF-nonsense: FAISS cannot build it (could not parse index string IVF-nonsense)",
        descriptors(),
    ),
    Case(
        "desc-glob-nothing",
        D,
        "a glob matching no descriptor file",
        evaluate_descriptors(q="{d}/none*.h5"),
        2,
        "error: {d}/none*.h5: no query descriptor file found",
        descriptors(),
    ),
    Case(
        "desc-score-norm-nan",
        D,
        "--score-norm-weight nan",
        evaluate_descriptors("--score-norm-descriptors", "{d}/r.h5", "--score-norm-weight", "nan"),
        2,
        "error: --score-norm-weight must be a finite number",
        descriptors(),
        engines=("none",),
    ),
]


# ------------------------------------------------------------------------ images


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bomb() -> bytes:
    """A valid PNG header declaring 20,000 × 20,000 pixels over a few bytes of data."""
    header = struct.pack(">IIBBBBB", 20_000, 20_000, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + png_chunk(b"IHDR", header)
        + png_chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + png_chunk(b"IEND", b"")
    )


def odd_images() -> dict[str, Callable[[], bytes]]:
    from PIL import Image

    def gif() -> bytes:
        frames = [Image.fromarray(picture(i)) for i in range(3)]
        out = io.BytesIO()
        frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:], duration=50)
        return out.getvalue()

    return {
        "zero-bytes": lambda: b"",
        "truncated": lambda: image_bytes(picture(9, 64, 64), "JPEG")[:400],
        "not-an-image": lambda: b"hello, I am text",
        "1x1": lambda: image_bytes(picture(3, 1, 1)),
        "16-bit": lambda: image_bytes(
            Image.fromarray((np.arange(48 * 48).reshape(48, 48) * 20).astype(np.uint16))
        ),
        "cmyk": lambda: image_bytes(Image.new("CMYK", (48, 48), (10, 200, 30, 0)), "JPEG"),
        "animated-gif": gif,
        "bomb": bomb,
        "unreadable": lambda: image_bytes(picture(4)),
    }


ODD_SUFFIX = {
    "truncated": ".jpg",
    "not-an-image": ".jpg",
    "cmyk": ".jpg",
    "animated-gif": ".gif",
    "zero-bytes": ".png",
}


def library_with(kind: str | None, good: int = 4) -> Callable[[Path], None]:
    def write(d: Path) -> None:
        (d / "lib").mkdir()
        for i in range(good):
            (d / "lib" / f"good_{i}.png").write_bytes(image_bytes(picture(i)))
        if kind:
            path = d / "lib" / f"odd{ODD_SUFFIX.get(kind, '.png')}"
            path.write_bytes(odd_images()[kind]())
            if kind == "unreadable":
                path.chmod(0)

    return write


def odd_file(kind: str) -> str:
    return f"odd{ODD_SUFFIX.get(kind, '.png')}"


def bench_has(kind: str, reason: str | None):
    """skipped.csv lists the odd file with ``reason`` (None: it is a reference, unskipped)."""

    def check(d: Path, engine: str) -> None:
        import pandas as pd

        skipped = pd.read_csv(d / "out" / "skipped.csv", keep_default_na=False)
        refs = pd.read_csv(d / "out" / "references.csv", keep_default_na=False)
        hits = skipped[skipped.path.str.endswith(odd_file(kind))]
        if reason is None:
            assert hits.empty, hits
            assert refs.path.str.endswith(odd_file(kind)).any()
        else:
            assert len(hits) == 1 and re.fullmatch(reason, hits.reason.iloc[0]), hits

    return check


def vectors_have(kind: str, reason: str | None):
    """v.h5 holds the good images (and the odd one when legal); v_skipped.csv the rest."""

    def check(d: Path, engine: str) -> None:
        import h5py
        import pandas as pd

        with h5py.File(d / "v.h5") as f:
            names = [n.decode() for n in f["image_names"][:]]
            assert np.isfinite(f["vectors"][:]).all()
        skipped = pd.read_csv(d / "v_skipped.csv", keep_default_na=False)
        good = [f"good_{i}" for i in range(4)]
        if reason is None:
            assert sorted(names) == sorted([*good, "odd"]) and skipped.empty
        else:
            assert sorted(names) == good and len(skipped) == 1
            assert re.fullmatch(reason, skipped.reason.iloc[0]), skipped

    return check


MAKE_QUERIES = [
    "make-queries",
    "--images",
    "{d}/lib",
    "--output",
    "{d}/out",
    "--tests",
    "jumble:2x2",
    "--queries-per-test",
    "2",
    "--seed",
    "1",
]
EXTRACT = ["extract", "--images", "{d}/lib", "--method", "colorhist", "--output", "{d}/v.h5"]
BENCH_FILES = (
    "bench.json",
    "contact_sheet.png",
    "ground_truth.csv",
    "queries",
    "queries.csv",
    "queries.parquet",
    "query_groups.csv",
    "references.csv",
    "references.parquet",
    "skipped.csv",
)
IMAGE_REASONS = {  # kind: (input, what the scan says; None: a usable image)
    "zero-bytes": ("an image file of zero bytes", r"empty file \(0 bytes\)"),
    "truncated": ("a truncated JPEG", r"damaged image \(.+\)"),
    "not-an-image": ("text named .jpg", "not an image Pillow can read"),
    "1x1": (
        "a 1×1 image",
        r"not used as a query source \(kept as a reference\): 1×1 px is too "
        r"small for jumble:2x2",
    ),
    "16-bit": ("a 16-bit greyscale PNG", None),
    "cmyk": ("a CMYK JPEG", None),
    "animated-gif": ("an animated GIF (the first frame is used)", None),
    "bomb": (
        "a PNG declaring 20,000 × 20,000 pixels (decompression bomb)",
        r"too many pixels \(.+\)",
    ),
    "unreadable": ("an image without read permission", r".*Permission denied.*"),
}
for kind, (what, reason) in IMAGE_REASONS.items():
    CASES.append(
        Case(
            f"make-queries-{kind}",
            IM,
            what,
            MAKE_QUERIES,
            0,
            f"listed in skipped.csv: {reason}" if reason else "used like any image",
            library_with(kind),
            outputs=BENCH_FILES,
            check=bench_has(kind, reason),
            root_skip=kind == "unreadable",
            engines=("jobs",) if kind == "unreadable" else (),
        )
    )
for kind in ("zero-bytes", "truncated", "16-bit", "cmyk", "bomb", "unreadable"):
    what, reason = IMAGE_REASONS[kind]
    CASES.append(
        Case(
            f"extract-{kind}",
            IM,
            what,
            EXTRACT,
            0,
            f"listed in v_skipped.csv: {reason}" if reason else "described like any image",
            library_with(kind),
            beside=("v_skipped.csv", "v_run.json"),
            check=vectors_have(kind, reason),
            preexisting=False,
            root_skip=kind == "unreadable",
            engines=("jobs",) if kind == "unreadable" else (),
        )
    )
CASES += [
    Case(
        "make-queries-only-bad",
        IM,
        "a library of unreadable files only",
        MAKE_QUERIES,
        2,
        "error: --queries-per-test 2: needs 2 distinct source images; the library has 0 usable (2 files, 2 unreadable, 0 too small for the tests)",
        files(text("lib/a.jpg", "text"), text("lib/b.png", b"")),
    ),
    Case(
        "make-queries-glob-nothing",
        IM,
        "--images glob matching nothing",
        [*MAKE_QUERIES[:2], "{d}/lib/*.jpg", *MAKE_QUERIES[3:]],
        2,
        "error: {d}/lib/*.jpg: no such file or folder",
        library_with(None),
    ),
    Case(
        "make-queries-no-images",
        IM,
        "a folder without image files",
        MAKE_QUERIES,
        2,
        "error: {d}/lib: no image files found",
        text("lib/notes.txt", "no images here"),
    ),
    Case(
        "make-queries-missing",
        IM,
        "--images that does not exist",
        MAKE_QUERIES,
        2,
        "error: {d}/lib: no such file or folder",
    ),
    Case(
        "extract-no-images",
        IM,
        "extract from a folder without images",
        EXTRACT,
        2,
        "error: {d}/lib: no image could be described",
        text("lib/notes.txt", "no images here"),
        preexisting=False,
    ),
    Case(
        "extract-only-bad",
        IM,
        "extract from unreadable files only",
        EXTRACT,
        2,
        "error: {d}/lib: no image could be described",
        files(text("lib/a.jpg", "text"), text("lib/b.png", b"")),
        preexisting=False,
    ),
]


# ----------------------------------------------------------------------- options


def usage(id: str, input: str, command: list[str], sees: str, setup=None, **kw) -> Case:
    """A bad option: refused before Spark starts (``none`` fails if a session is asked for)."""
    return Case(id, OPT, input, command, 2, sees, setup, engines=kw.pop("engines", ("none",)), **kw)


EVAL = evaluate("{d}/p.csv")
DESC = evaluate_descriptors()
LIBRARY = ["make-library", "--output", "{d}/out", "--size", "3"]
EXTRACT_BENCH = ["extract", "--bench", "{bench}", "--method", "tiny", "--output", "{d}/out"]
RANK = ["rank-eval", "--bench", "{bench}", "--output", "{d}/out", "--methods", "tiny"]
EVAL_RANGE = "error: --max-results must be ≥ 0, --sort-partitions ≥ 1 and --curve-points ≥ 2"
KNN_RANGE = "error: --knn, --max-dim and --nprobe must be ≥ 1"
RANK_RANGE = "error: --knn and --subsets must be ≥ 1, --resamples ≥ 10, --seed ≥ 0"
MQ_RANGE = "error: --seed must be ≥ 0 and --image-partitions ≥ 1"
CASES += [
    usage(
        "opt-max-results-negative", "--max-results -1", [*EVAL, "--max-results", "-1"], EVAL_RANGE
    ),
    usage(
        "opt-partitions-zero", "--sort-partitions 0", [*EVAL, "--sort-partitions", "0"], EVAL_RANGE
    ),
    usage(
        "opt-partitions-negative",
        "--sort-partitions -3",
        [*EVAL, "--sort-partitions", "-3"],
        EVAL_RANGE,
    ),
    usage("opt-curve-points-zero", "--curve-points 0", [*EVAL, "--curve-points", "0"], EVAL_RANGE),
    usage(
        "opt-max-results-text",
        "--max-results ten",
        [*EVAL, "--max-results", "ten"],
        "error: argument --max-results: invalid int value: 'ten'",
    ),
    usage(
        "opt-local-max-bytes",
        "--local-max-bytes -1",
        [*EVAL, "--local-max-bytes", "-1"],
        "error: argument --local-max-bytes: '-1': a size must be positive",
    ),
    usage(
        "opt-local-max-bytes-word",
        "--local-max-bytes lots",
        [*EVAL, "--local-max-bytes", "lots"],
        "error: argument --local-max-bytes: 'lots' is not a size such as 2G or 512M or auto",
    ),
    matching(
        "opt-max-results-absurd",
        OPT,
        "--max-results 10^30 (absurd, but only a limit)",
        with_gt(text("p.csv", CLEAN)),
        0,
        "the clean file's figures",
        extra=("--max-results", str(10**30)),
        check=scores_like_clean,
    ),
    matching(
        "opt-curve-points-absurd",
        OPT,
        "--curve-points 10^12 (more than there are points)",
        with_gt(text("p.csv", CLEAN)),
        0,
        "the clean file's figures",
        extra=("--curve-points", str(10**12)),
        check=scores_like_clean,
    ),
    Case(
        "opt-partitions-absurd",
        OPT,
        "--sort-partitions 100000 (more than there are rows)",
        [*EVAL, "--sort-partitions", "100000"],
        0,
        "the clean file's figures",
        with_gt(text("p.csv", CLEAN)),
        outputs=MATCHING_FILES,
        check=scores_like_clean,
    ),
    usage("opt-knn-zero", "--knn 0", [*DESC, "--knn", "0"], KNN_RANGE),
    usage("opt-nprobe-zero", "--nprobe 0", [*DESC, "--nprobe", "0"], KNN_RANGE),
    usage("opt-max-dim-zero", "--max-dim 0", [*DESC, "--max-dim", "0"], KNN_RANGE),
    usage(
        "opt-query-partitions-zero",
        "--query-partitions 0",
        [*DESC, "--query-partitions", "0"],
        "error: --query-partitions must be ≥ 1",
    ),
    usage(
        "opt-broadcast-limit-zero",
        "--broadcast-limit 0",
        [*DESC, "--broadcast-limit", "0"],
        "error: argument --broadcast-limit: '0': a size must be positive",
    ),
    usage(
        "opt-score-norm-neighbors",
        "--score-norm-neighbors 0..1",
        [*DESC, "--score-norm-neighbors", "0..1"],
        "error: argument --score-norm-neighbors: '0..1': need 1 ≤ a ≤ b",
    ),
    usage(
        "opt-descriptor-max-results-zero",
        "descriptor track with --max-results 0",
        [c for c in DESC if c not in ("--knn", "2")] + ["--max-results", "0"],
        "error: the descriptor track needs --max-results ≥ 1 (or --knn K)",
    ),
    Case(
        "opt-knn-absurd",
        OPT,
        "--knn 10^9 (more than there are references)",
        [*DESC, "--knn", str(10**9)],
        0,
        "every pair found, as with --knn 5",
        descriptors(),
        outputs=MATCHING_FILES,
    ),
    usage(
        "opt-library-size-zero",
        "make-library --size 0",
        [*LIBRARY, "--size", "0"],
        "error: size must be a positive integer, got 0",
    ),
    usage(
        "opt-library-size-negative",
        "make-library --size -1",
        [*LIBRARY, "--size", "-1"],
        "error: size must be a positive integer, got -1",
    ),
    usage(
        "opt-library-size-absurd",
        "make-library --size 10^12",
        [*LIBRARY, "--size", str(10**12)],
        "error: --size must be at most 10,000,000",
    ),
    usage(
        "opt-library-width-zero",
        "make-library --width 0",
        [*LIBRARY, "--width", "0"],
        "error: width must be in [16, 8192], got 0",
    ),
    usage(
        "opt-library-width-absurd",
        "make-library --width 10^6",
        [*LIBRARY, "--width", str(10**6)],
        "error: width must be in [16, 8192], got 1000000",
    ),
    usage(
        "opt-library-height-negative",
        "make-library --height -5",
        [*LIBRARY, "--height", "-5"],
        "error: height must be in [16, 8192], got -5",
    ),
    usage(
        "opt-library-seed-negative",
        "make-library --seed -1",
        [*LIBRARY, "--seed", "-1"],
        "error: seed must be a non-negative integer, got -1",
    ),
    usage(
        "opt-queries-per-test-zero",
        "make-queries --queries-per-test 0",
        [*MAKE_QUERIES, "--queries-per-test", "0"],
        "error: --queries-per-test: must be at least 1 (got 0)",
    ),
    usage(
        "opt-queries-per-test-negative",
        "make-queries --queries-per-test -4",
        [*MAKE_QUERIES, "--queries-per-test", "-4"],
        "error: --queries-per-test: must be at least 1 (got -4)",
    ),
    Case(
        "opt-queries-per-test-absurd",
        OPT,
        "make-queries --queries-per-test 10^9",
        [*MAKE_QUERIES, "--queries-per-test", str(10**9)],
        2,
        "error: --queries-per-test 1000000000: needs 1000000000 distinct source images; the "
        "library has 4 usable (4 files, 0 unreadable, 0 too small for the tests)",
        library_with(None),
    ),
    usage(
        "opt-distractors-negative",
        "make-queries --distractors -0.5",
        [*MAKE_QUERIES, "--distractors", "-0.5"],
        "error: --distractors: is a fraction in [0, 1) (got -0.5)",
    ),
    usage(
        "opt-distractors-one",
        "make-queries --distractors 1",
        [*MAKE_QUERIES, "--distractors", "1"],
        "error: --distractors: is a fraction in [0, 1) (got 1)",
    ),
    usage(
        "opt-distractors-nan",
        "make-queries --distractors nan",
        [*MAKE_QUERIES, "--distractors", "nan"],
        "error: --distractors: is a fraction in [0, 1) (got nan)",
    ),
    usage("opt-queries-seed", "make-queries --seed -1", [*MAKE_QUERIES, "--seed", "-1"], MQ_RANGE),
    usage(
        "opt-queries-partitions",
        "make-queries --image-partitions 0",
        [*MAKE_QUERIES, "--image-partitions", "0"],
        MQ_RANGE,
    ),
    # an option of the other track is refused, not ignored
    usage(
        "opt-descriptor-resamples",
        "descriptor track with --resamples 50 (it computes no interval)",
        [*DESC, "--resamples", "50"],
        "error: --resamples is for the matching track: the descriptor track computes no "
        "interval (score its --write-predictions file for them)",
    ),
    usage(
        "opt-descriptor-seed",
        "descriptor track with --seed 3",
        [*DESC, "--seed", "3"],
        "error: --seed is for the matching track: the descriptor track computes no "
        "interval (score its --write-predictions file for them)",
    ),
    usage(
        "opt-descriptor-pool-plan",
        "descriptor track with --pool-plan per-file",
        [*DESC, "--pool-plan", "per-file"],
        "error: --pool-plan is for a pool of predictions files, not the descriptor track",
    ),
    usage(
        "opt-matching-knn",
        "matching track with --knn 10 (a descriptor search option)",
        [*EVAL, "--knn", "10"],
        "error: --knn is for the descriptor track (--query-descriptors ...)",
    ),
    usage(
        "opt-sheet",
        "make-queries --sheet-per-test -1",
        [*MAKE_QUERIES, "--sheet-per-test", "-1"],
        "error: --sheet-per-test must be ≥ 0",
    ),
    usage(
        "tests-empty",
        "--tests '' (empty)",
        [*MAKE_QUERIES, "--tests", ""],
        "error: '': empty test in the list (tests are separated by commas)",
    ),
    usage(
        "tests-no-parameter",
        "--tests crop (no parameter)",
        [*MAKE_QUERIES, "--tests", "crop"],
        "error: 'crop' needs a parameter: crop:K",
    ),
    usage(
        "tests-zero",
        "--tests crop:0",
        [*MAKE_QUERIES, "--tests", "crop:0"],
        "error: 'crop:0': the parameter must be between 0.01 and 100",
    ),
    usage(
        "tests-text",
        "--tests crop:abc",
        [*MAKE_QUERIES, "--tests", "crop:abc"],
        "error: 'crop:abc': 'abc' is not a number",
    ),
    usage(
        "tests-identity-grid",
        "--tests jumble:1x1",
        [*MAKE_QUERIES, "--tests", "jumble:1x1"],
        "error: 'jumble:1x1': a 1x1 grid has no shuffle other than the identity",
    ),
    usage(
        "tests-range",
        "--tests lowcon:120",
        [*MAKE_QUERIES, "--tests", "lowcon:120"],
        "error: 'lowcon:120': the parameter must be between 0 and 100",
    ),
    usage(
        "tests-empty-item",
        "--tests crop:50,,jumble:2x2",
        [*MAKE_QUERIES, "--tests", "crop:50,,jumble:2x2"],
        "error: 'crop:50,,jumble:2x2': empty test in the list (tests are separated by commas)",
    ),
    usage(
        "tests-dangling-plus",
        "--tests crop:50+",
        [*MAKE_QUERIES, "--tests", "crop:50+"],
        "error: 'crop:50+': a '+' with no test after it",
    ),
    usage(
        "tests-twice",
        "--tests crop:50,crop:50",
        [*MAKE_QUERIES, "--tests", "crop:50,crop:50"],
        "error: test 'crop:50' is given twice",
    ),
    usage(
        "tests-unknown",
        "--tests blurr:2",
        [*MAKE_QUERIES, "--tests", "blurr:2"],
        "error: unknown test 'blurr:2' (known: …)",
    ),
    usage(
        "extract-partitions",
        "extract --image-partitions 0",
        [*EXTRACT, "--image-partitions", "0"],
        "error: --image-partitions must be ≥ 1",
    ),
    usage(
        "extract-method-unknown",
        "extract --method sift",
        [*EXTRACT[:4], "sift", *EXTRACT[5:]],
        "error: unknown descriptor method 'sift' (built-in: colorhist, correlogram, tiny, pdq; "
        "or module:function)",
    ),
    usage(
        "extract-method-module",
        "extract --method no_such_module:f",
        [*EXTRACT[:4], "no_such_module:f", *EXTRACT[5:]],
        "error: descriptor method 'no_such_module:f': cannot import module 'no_such_module': ModuleNotFoundError: No module named 'no_such_module'",
    ),
    usage("rank-knn", "rank-eval --knn 0", [*RANK, "--knn", "0"], RANK_RANGE),
    usage("rank-subsets", "rank-eval --subsets 0", [*RANK, "--subsets", "0"], RANK_RANGE),
    usage("rank-resamples", "rank-eval --resamples 9", [*RANK, "--resamples", "9"], RANK_RANGE),
    usage("rank-seed", "rank-eval --seed -1", [*RANK, "--seed", "-1"], RANK_RANGE),
    usage(
        "rank-partitions",
        "rank-eval --query-partitions 0",
        [*RANK, "--query-partitions", "0"],
        "error: --query-partitions must be ≥ 1",
    ),
    usage(
        "rank-sizes-order",
        "rank-eval --sizes 3,2",
        [*RANK, "--sizes", "3,2"],
        "error: argument --sizes: sizes must be positive and increasing, such as 500,1000",
    ),
    usage(
        "rank-sizes-zero",
        "rank-eval --sizes 0",
        [*RANK, "--sizes", "0"],
        "error: argument --sizes: sizes must be positive and increasing, such as 500,1000",
    ),
    usage(
        "rank-descriptors-empty",
        "rank-eval --methods ''",
        [*RANK, "--methods", ""],
        "error: --methods: give at least one method",
    ),
    usage(
        "rank-descriptors-twice",
        "rank-eval --methods tiny,tiny",
        [*RANK, "--methods", "tiny,tiny"],
        "error: --methods: a method is named twice (…)",
    ),
    Case(
        "rank-subsets-absurd",
        OPT,
        "rank-eval --subsets 10^6 (more than there are references)",
        [*RANK, "--subsets", str(10**6)],
        2,
        "error: --subsets: must be between 1 and the 7 references",
        engines=("inproc",),
    ),
    Case(
        "rank-sizes-absurd",
        OPT,
        "rank-eval --sizes 10^9 (larger than the library)",
        [*RANK, "--sizes", str(10**9)],
        2,
        "error: --sizes: 1,000,000,000 is outside 2..7 (every size holds the 2 originals of the queries; the bench has 7 references)",
        engines=("inproc",),
    ),
    Case(
        "rank-bench-missing",
        OUT,
        "rank-eval --bench that does not exist",
        ["rank-eval", "--bench", "{d}/nope", "--output", "{d}/out"],
        2,
        "error: {d}/nope: not a folder (give the --output of disc21spark make-queries)",
    ),
    Case(
        "rank-bench-empty",
        OUT,
        "rank-eval --bench of an empty folder",
        ["rank-eval", "--bench", "{d}/b", "--output", "{d}/out"],
        2,
        "error: {d}/b: bench.json is missing: not a folder written by disc21spark make-queries",
        lambda d: (d / "b").mkdir(),
    ),
    Case(
        "rank-vectors-folder",
        OPT,
        "rank-eval --methods tiny=folder without descriptors.json",
        [*RANK[:-1], "tiny={d}/vec"],
        2,
        "error: {d}/vec: descriptors.json is missing: not a folder written by disc21spark extract --bench",
        lambda d: (d / "vec").mkdir(),
    ),
    Case(
        "extract-bench-missing",
        OUT,
        "extract --bench that does not exist",
        ["extract", "--bench", "{d}/nope", "--method", "tiny", "--output", "{d}/out"],
        2,
        "error: {d}/nope: not a folder (give the --output of disc21spark make-queries)",
    ),
]

# ------------------------------------------------------------------ output paths


def output_cases(
    name: str, command: list[str], setup=None, out: str = "{d}/out", sees: dict | None = None
) -> list[Case]:
    """The four ways an --output can be wrong, for one command (``sees``: other lines)."""
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
        ),
    ]


CASES += [
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


# ------------------------------------------------------------ the installed command
CASES += [
    Case(
        "cli-bad-line",
        CMD,
        "disc21spark evaluate (in process): a score that is text",
        evaluate(),
        2,
        "error: {d}/p.csv: line 1: score 'high' is not a number",
        with_gt(text("p.csv", "Q1,R1,high\n")),
        engines=("installed",),
    ),
    Case(
        "cli-debug",
        CMD,
        "the same with --debug: the trace, then the line",
        [*evaluate(), "--debug"],
        2,
        "error: {d}/p.csv: line 1: score 'high' is not a number",
        with_gt(text("p.csv", "Q1,R1,high\n")),
        engines=("installed",),
    ),
    Case(
        "cli-spark-parquet",
        CMD,
        "disc21spark evaluate --engine spark: a .parquet that is not "
        "Parquet (Spark's failure, no Java trace)",
        [*evaluate("{d}/p.parquet"), "--engine", "spark"],
        2,
        f"error: {{d}}/p.parquet: {PARQUET_TEXT}",
        with_gt(text("p.parquet", CLEAN)),
        engines=("installed",),
        preexisting=False,
    ),
    Case(
        "cli-usage",
        CMD,
        "jobs/evaluate.py without --ground-truth",
        ["evaluate", "--output", "{d}/o"],
        2,
        "error: the following arguments are required: --ground-truth",
        engines=("jobs",),
    ),
    Case(
        "cli-tests",
        CMD,
        "jobs/make_queries.py with an unknown test",
        [*MAKE_QUERIES, "--tests", "blurr:2"],
        2,
        "error: unknown test 'blurr:2' (known: …)",
        library_with(None),
        engines=("jobs",),
    ),
    Case(
        "cli-library-size",
        CMD,
        "jobs/make_library.py --size 0",
        [*LIBRARY, "--size", "0"],
        2,
        "error: size must be a positive integer, got 0",
        engines=("jobs",),
    ),
]


# ------------------------------------------------------------------------ oracle


def official_lines(path: Path) -> list[tuple[str, ...]]:
    """Records of a text file under the official reader's rules as this project documents
    them: lines split at \\n, \\r\\n or \\r; each line stripped and split on commas, each
    field stripped; blank lines skipped; a leading byte-order mark dropped."""
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    content = data.decode("utf-8").removeprefix("\ufeff")
    out = []
    for line in io.StringIO(content, newline=None):
        line = line.rstrip("\n").strip(WHITESPACE)
        if line:
            out.append(tuple(f.strip(WHITESPACE) for f in line.split(",")))
    return out


def official_metrics(preds: Path, gt_path: Path):
    from disc21spark.matching import spec
    from disc21spark.matching.model import GroundTruth

    gt_rows = [r for r in official_lines(gt_path) if r != ("query_id", "reference_id")]
    queries = list(dict.fromkeys(q for q, _ in gt_rows))
    positives = [(q, r) for q, r in gt_rows if r]
    gt = GroundTruth(
        str(gt_path),
        np.array(queries, dtype=object),
        np.array([q for q, _ in positives], dtype=object),
        np.array([r for _, r in positives], dtype=object),
    )
    if preds.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(preds).to_pydict()
        rows = list(zip(*(table[c] for c in ("query_id", "reference_id", "score"))))
    else:
        rows = [r for r in official_lines(preds) if r != ("query_id", "reference_id", "score")]
    q = np.array([str(r[0]) for r in rows], dtype=object)
    r = np.array([str(r[1]) for r in rows], dtype=object)
    s = np.array([float(r[2]) for r in rows], dtype=np.float64)
    return spec.evaluate(q, r, s, gt)


def assert_metrics(out: Path, expected, engine: str | None = None) -> None:
    """metrics.json's figures and pr_curve.csv are the specification's, exactly."""
    from disc21spark.matching.report import json_safe, write_curve_csv

    doc = json.loads((out / "metrics.json").read_text())
    run = doc.pop("run")
    doc.pop("pr_curve_points")
    doc.pop("warnings")  # advice about the ids (tests/test_coverage.py), not a figure
    # the intervals and the optimistic μAP: tests/test_stats*.py hold them to their spec
    doc.pop("bootstrap", None)  # the descriptor track has none
    doc.pop("micro_ap_optimistic", None)
    assert doc == {k: json_safe(v) for k, v in expected.to_dict().items()}
    if engine in ("local", "spark"):
        assert run["engine"] == engine
    write_curve_csv(out / "expected_curve.csv", expected)
    try:
        assert (out / "pr_curve.csv").read_bytes() == (out / "expected_curve.csv").read_bytes()
    finally:
        (out / "expected_curve.csv").unlink()


# ----------------------------------------------------------------------- harness

TRACES = (
    "Traceback (most recent call last)",
    "Exception ignored",
    "\tat org.",
    "\tat java.",
    "\tat scala.",
    "Caused by:",
    "py4j.protocol",
    "Py4JJavaError",
    "Exception in thread",
    "SparkException",
)


def fill(template: str, places: dict[str, str]) -> str:
    for key, value in places.items():
        template = template.replace("{" + key + "}", value)
    return template


def line_pattern(sees: str, places: dict[str, str]) -> re.Pattern:
    parts = [re.escape(fill(p, places)) for p in sees.split("…")]
    return re.compile(".+".join(parts))


def as_user(launcher: list[str], argv: list[str], cwd: Path) -> Screen:
    proc = subprocess.run(
        [*launcher, *argv], capture_output=True, text=True, env=cli_env(), timeout=600, cwd=cwd
    )
    return Screen(proc.returncode, proc.stdout, proc.stderr)


def output_of(argv: list[str]) -> str | None:
    return argv[argv.index("--output") + 1] if "--output" in argv else None


def error_lines(screen: Screen) -> list[str]:
    return [
        line
        for line in screen.text.splitlines()
        if line.startswith(("error:", "internal error:")) or ": error: " in line
    ]


def check_screen(case: Case, engine: str, screen: Screen, places: dict[str, str]) -> None:
    code, sees = case.expected(engine)
    where = f"{case.id} [{engine}]:\n{screen.text[-3000:]}"
    debug = "--debug" in case.command
    if not debug:
        for trace in TRACES:
            assert trace not in screen.text, where
    else:  # the trace is what --debug is for
        assert "Traceback (most recent call last)" in screen.text, where
    assert screen.code == code, where
    lines = error_lines(screen)
    if code == 0:
        assert lines == [], where
        return
    assert len(lines) == 1, where
    line = lines[0]
    if ": error: " in line and not line.startswith("error:"):  # argparse names the program
        line = "error: " + line.split(": error: ", 1)[1]
    assert line_pattern(sees, places).fullmatch(line), f"{line!r} is not {sees!r}\n{where}"


def run_case(case: Case, engine: str, tmp: Path, capsys, shared: dict, session) -> None:
    as_root = case.root_skip and os.geteuid() == 0
    if as_root and not (engine in LAUNCHERS and shutil.which("setpriv")):
        pytest.skip("root reads and writes whatever the permissions say")
    variants = ["fresh"]
    # a user's folder kept when the job fails: the staging and publishing that keep it
    # are the runner's, whatever the engine; a case run in process too checks it there,
    # and Spark keeps it for the cases only Spark runs (globs, folders, Hadoop paths)
    checked_in_process = engine == "spark" and "local" in case.engines
    if case.code != 0 and case.preexisting and output_of(case.command) and not checked_in_process:
        variants.append("existing")
    for variant in variants:
        d = tmp / variant
        d.mkdir()
        places = {"d": str(d), **shared}
        if case.setup:
            case.setup(d)
        argv = [fill(a, places) for a in case.command]
        out = output_of(argv)
        if variant == "existing":
            Path(out).mkdir(exist_ok=True)
            (Path(out) / "mine.txt").write_text("the user's own file")
            argv.append("--overwrite")
        before = snapshot(d)
        shared_before = {k: snapshot(Path(v)) for k, v in shared.items() if k == "bench"}
        if engine in ("local", "spark"):
            screen = in_process([*argv, "--engine", engine], capsys, session)
        elif engine == "none":
            screen = in_process(argv, capsys, None)
        elif engine == "inproc":
            screen = in_process(argv, capsys, session)
        else:  # a launcher: the installed command or a job script, as the user starts them
            drop = without_root_file_access() if case.root_skip else []
            screen = as_user([*drop, *LAUNCHERS[engine](argv[0])], argv[1:], d)
        check_screen(case, engine, screen, places)
        after = snapshot(d)
        for key, value in shared_before.items():
            assert snapshot(Path(shared[key])) == value, f"{key} changed"
        code, _ = case.expected(engine)
        if code != 0:
            assert after == before, f"{case.id} [{engine}]: files changed: " + ", ".join(
                sorted(set(after) ^ set(before))
            )
            continue
        rel = os.path.relpath(out, d) if out else None
        kept = {
            k: v
            for k, v in after.items()
            if not (rel and (k == rel or k.startswith(rel + os.sep)))
            and k not in {fill(b, places) for b in case.beside}
        }
        assert kept == before, "written outside --output: " + ", ".join(set(kept) ^ set(before))
        if out and case.outputs:
            assert sorted(p.name for p in Path(out).iterdir()) == sorted(
                (*case.outputs, *RECORD_FILES)
            )
        if case.check:
            case.check(d, engine)


def jobs_script(command: str) -> list[str]:
    script = {
        "evaluate": "evaluate",
        "make-library": "make_library",
        "make-queries": "make_queries",
        "extract": "extract_descriptors",
        "rank-eval": "rank_eval",
    }[command]
    return [sys.executable, str(ROOT / "jobs" / f"{script}.py")]


LAUNCHERS: dict[str, Callable[[str], list[str]]] = {
    "installed": lambda command: [str(Path(sys.executable).parent / "disc21spark"), command],
    "jobs": jobs_script,
}


def params() -> list:
    return [
        pytest.param(case, engine, id=f"{case.id}-{engine}")
        for case in CASES
        for engine in case.engines
    ]


@pytest.fixture(scope="module")
def read_only(tmp_path_factory) -> str:
    """A folder no one may write in: root writes anywhere but in /proc."""
    if os.geteuid() == 0:
        return "/proc"
    folder = tmp_path_factory.mktemp("read_only")
    folder.chmod(0o555)
    return str(folder)


@pytest.fixture(scope="module")
def bench(spark, tmp_path_factory) -> str:
    """A small bench folder (make_queries on 8 images, 2 tests × 3 queries)."""
    from disc21spark.queries.job import QueryJob
    from disc21spark.queries.job import run as make_bench
    from disc21spark.queries.spec import Settings
    from disc21spark.queries.transforms import parse_tests

    quiet_log()
    root = tmp_path_factory.mktemp("matrix_bench")
    library_with(None, good=LIB_SIZE)(root)
    settings = Settings(
        tuple(parse_tests("crop:50,lowcon:60")), per_test=3, distractors=0.3, seed=2
    )
    make_bench(spark, QueryJob([str(root / "lib")], str(root / "bench"), settings))
    return str(root / "bench")


@pytest.mark.parametrize("case,engine", params())
def test_bad_input(case: Case, engine: str, tmp_path, capsys, read_only, request):
    shared = {"ro": read_only}
    if any("{bench}" in a for a in case.command):
        shared["bench"] = request.getfixturevalue("bench")
    uses_spark = engine in ("spark", "inproc")
    session = request.getfixturevalue("spark") if uses_spark else None
    run_case(case, engine, tmp_path, capsys, shared, session)


# ------------------------------------------------------------------ the docs' table
PAGE = ROOT / "docs" / "errors.md"
BEGIN, END = "<!-- bad-input-matrix: begin -->", "<!-- bad-input-matrix: end -->"
SHOWN = {"{d}/": "", "{ro}": "/read-only", "{bench}": "bench", "…": "…"}


def shown(text: str) -> str:
    for key, value in SHOWN.items():
        text = text.replace(key, value)
    return text.replace("|", "\\|")


def readme_table() -> str:
    """The matrix as docs/errors.md shows it: input, what the user sees, exit code."""
    lines = [
        BEGIN,
        "",
        "| | input | command | what the user sees | exit |",
        "|---|---|---|---|---|",
    ]
    for case in CASES:
        engines = (
            " and ".join(case.engines)
            .replace("none", "before Spark")
            .replace("inproc", "Spark")
            .replace("installed", "installed command")
            .replace("jobs", "jobs/*.py")
        )
        seen = shown(case.sees)
        if case.code:
            seen = f"`{seen}`"
        if case.note:
            seen += f" — {shown(case.note)}"
        for engine, (code, sees) in case.per_engine.items():
            seen += f"; `--engine {engine}`: `{shown(sees)}` (exit {code})"
        command = f"{case.command[0]} ({engines})"
        lines.append(f"| {case.group} | {shown(case.input)} | {command} | {seen} | {case.code} |")
    return "\n".join([*lines, "", END])


def test_the_docs_page_holds_the_table():
    text = PAGE.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, "run python -m tests.test_bad_input_matrix"
    current = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert current == readme_table(), (
        "docs/errors.md is stale: python -m tests.test_bad_input_matrix"
    )


def test_the_matrix_covers_the_issue():
    assert len(CASES) >= 80 and len({c.id for c in CASES}) == len(CASES)
    commands = {c.command[0] for c in CASES}
    assert commands == {"evaluate", "make-library", "make-queries", "extract", "rank-eval"}
    assert {"installed", "jobs", "local", "spark", "inproc", "none"} <= {
        e for c in CASES for e in c.engines
    }


if __name__ == "__main__":  # rewrite docs/errors.md's table from CASES
    text = PAGE.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    PAGE.write_text(text[:start] + readme_table() + text[end:], encoding="utf-8")
    print(f"{PAGE.relative_to(ROOT)}: the bad-input matrix rewritten")
