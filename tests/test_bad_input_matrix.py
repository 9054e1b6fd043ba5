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
The README's table is generated from this one (``python -m tests.test_bad_input_matrix``).
"""

from __future__ import annotations

import gzip
import io
import json
import logging
import os
import re
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT, cli_env

# ------------------------------------------------------------------ shared inputs

GT = "query_id,reference_id\nQ1,R1\nQ2,R2\nQ3,\nQ4,R4\nQ5,R5\n"
CLEAN = "Q1,R1,0.9\nQ2,R9,0.8\nQ2,R2,0.7\nQX,R4,0.6\nQ5,R1,0.5\nQ4,R4,0.4\n"
HEADER = "query_id,reference_id,score\n"
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
    engines: tuple[str, ...] = ("spark",)
    outputs: tuple[str, ...] = ()  # files the output folder holds after a success
    check: Callable[[Path, str], None] | None = None  # (case folder, engine) after a success
    note: str = ""  # what the official ISC2021 scorer does instead, and why we differ
    preexisting: bool = True  # also run with a pre-existing output folder and --overwrite
    beside: tuple[str, ...] = ()  # files a success may write next to the output (documented)
    per_engine: dict = field(default_factory=dict)  # engine → (code, sees) where they differ
    root_skip: bool = False  # needs permissions that root ignores

    def expected(self, engine: str) -> tuple[int, str]:
        return self.per_engine.get(engine, (self.code, self.sees))


MATCHING_FILES = ("metrics.json", "pr_curve.csv", "pr_curve.png")
POOL_FILES = ("leaderboard.csv", "leaderboard.json", "leaderboard.md", "pr_curves", "pr_curves.png")


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
    id: str, group: str, input: str, setup, code: int, sees: str, *, preds: str = "{d}/p.csv",
    extra: tuple[str, ...] = (), check=None, note: str = "", per_engine=None, gt="{d}/gt.csv",
) -> Case:  # fmt: skip
    """A single-file matching-track case: run by both engines, with the same result."""
    return Case(
        id, group, input, evaluate(preds, *extra, gt=gt), code, sees, setup,
        engines=("local", "spark"), outputs=MATCHING_FILES if code == 0 else (),
        check=check if code == 0 else None, note=note, per_engine=per_engine or {},
    )  # fmt: skip


T, Q, G = "predictions (text)", "predictions (Parquet)", "ground truth"
CLEAN_COLUMNS = {
    k: [row.split(",")[i] if i < 2 else float(row.split(",")[i]) for row in CLEAN.splitlines()]
    for i, k in enumerate(("query_id", "reference_id", "score"))
}
LOCAL_REFUSES = (
    "error: --engine local: {d}/p.parquet: ids that are not strings or a score that is not a "
    "number; use --engine spark"
)
CASES: list[Case] = [
    # ---------------------------------------------------------------- text inputs
    matching("clean", T, "a clean file (the reference for the odd ones)", with_gt(text("p.csv", CLEAN)),
             0, "the table of figures", check=scores_like_clean),
    matching("empty", T, "empty file", with_gt(text("p.csv", "")), 0,
             "μAP 0 (no predictions)", check=scores_zero,
             note="official: the same (an empty list of predictions)"),
    matching("header-only", T, "header line only", with_gt(text("p.csv", HEADER)), 0,
             "μAP 0 (no predictions)", check=scores_zero),
    matching("bom", T, "UTF-8 byte-order mark", with_gt(text("p.csv", "\ufeff" + CLEAN)), 0,
             "the clean file's figures", check=scores_like_clean,
             note="official: the mark becomes part of the first query id (that pair turns into "
             "an unknown query's false positive); we drop it, as UTF-8 readers do (Hadoop's "
             "line reader, Arrow), so the file scores as its author meant"),
    matching("bom-header-crlf", T, "byte-order mark, header and CRLF (a spreadsheet's export)",
             with_gt(text("p.csv", ("\ufeff" + HEADER + CLEAN).replace("\n", "\r\n"))), 0,
             "the clean file's figures", check=scores_like_clean,
             note="official: the marked header is not recognised, and its score 'score' stops "
             "the run"),
    matching("crlf", T, "CRLF line ends", with_gt(text("p.csv", CLEAN.replace("\n", "\r\n"))), 0,
             "the clean file's figures", check=scores_like_clean),
    matching("cr", T, "old Mac line ends (CR only)",
             with_gt(text("p.csv", CLEAN.replace("\n", "\r"))), 0, "the clean file's figures",
             check=scores_like_clean),
    matching("blank-lines", T, "blank and whitespace-only lines",
             with_gt(text("p.csv", "\n \n" + CLEAN.replace("\n", "\n\t\n") + "\n\n")), 0,
             "the clean file's figures", check=scores_like_clean,
             note="official: a blank line stops the run (it cannot be split in 3)"),
    matching("padded", T, "spaces and tabs around fields",
             with_gt(text("p.csv", PADDED)),
             0, "the clean file's figures", check=scores_like_clean,
             note="official: strips the line only, so ' R1' is another reference"),
    matching("no-final-newline", T, "no newline at the end",
             with_gt(text("p.csv", CLEAN.rstrip("\n"))), 0, "the clean file's figures",
             check=scores_like_clean),
    matching("score-spellings", T, "scores spelled .9, 8e-1, +0.7, 0.60, 5E-1",
             with_gt(text("p.csv", CLEAN.replace("0.9", ".9").replace("0.8", "8e-1")
                          .replace("0.7", "+0.7").replace("0.6", "0.60").replace("0.5", "5E-1"))),
             0, "the clean file's figures", check=scores_like_clean),
    matching("repeated-header", T, "header lines repeated mid-file (concatenated files)",
             with_gt(text("p.csv", HEADER + CLEAN[:20] + HEADER + CLEAN[20:])), 0,
             "the clean file's figures", check=scores_like_clean),
    matching("gzip", T, "gzip-compressed (.csv.gz)", with_gt(gzipped("p.csv.gz", CLEAN)), 0,
             "the clean file's figures", preds="{d}/p.csv.gz",
             check=lambda d, e: scores_like_official(d, e, "p.csv.gz")),
    matching("quoted", T, 'quoted fields ("Q1","R1","0.9")',
             with_gt(text("p.csv", 'Q1,R1,0.9\n"Q2","R2",0.7\n')), 0,
             "the official reader's figures: a quoted id is another id",
             check=scores_like_official,
             note="official: the same (no quoting: the quotes are part of the id)"),
    matching("ids-with-spaces", T, "ids with spaces inside (Q 2)",
             with_gt(text("p.csv", "Q1,R1,0.9\nQ 2,R2,0.7\n")), 0,
             "the official reader's figures: 'Q 2' is an unknown query", check=scores_like_official),
    matching("megabyte-line", T, "a line of a megabyte (a 1 MB reference id)",
             with_gt(text("p.csv", "Q1,R1,0.9\nQ2," + "R" * (1 << 20) + ",0.8\nQ2,R2,0.7\n")), 0,
             "the official reader's figures", check=scores_like_official),
    matching("unknown-queries", T, "only queries the ground truth does not know",
             with_gt(text("p.csv", "QA,R1,0.9\nQB,R2,0.7\n")), 0,
             "μAP 0; n_unknown_query_predictions 2", check=scores_like_official),
    matching("id-comma", T, "an id with a comma (Q,2)",
             with_gt(text("p.csv", "Q1,R1,0.9\nQ,2,R2,0.7\n")), 2,
             "error: {d}/p.csv: line 2: expected 3 fields: query_id,reference_id,score, found more"),
    matching("two-fields", T, "a line of two fields", with_gt(text("p.csv", "Q1,R1,0.9\nQ2,R2\n")), 2,
             "error: {d}/p.csv: line 2: missing score (expected 3 fields: query_id,reference_id,score)"),
    matching("one-field", T, "a line of one field",
             with_gt(text("p.csv", "Q1,R1,0.9\n\nQ2\n")), 2,
             "error: {d}/p.csv: line 3: empty reference_id"),
    matching("four-fields", T, "a line of four fields",
             with_gt(text("p.csv", "Q1,R1,0.9,x\n")), 2,
             "error: {d}/p.csv: line 1: expected 3 fields: query_id,reference_id,score, found more"),
    matching("tabs", T, "tab-separated values", with_gt(text("p.csv", "Q1\tR1\t0.9\n")), 2,
             "error: {d}/p.csv: line 1: empty reference_id"),
    matching("semicolons", T, "semicolon-separated values (a European spreadsheet)",
             with_gt(text("p.csv", "Q1;R1;0,9\n")), 2,
             "error: {d}/p.csv: line 1: missing score (expected 3 fields: query_id,reference_id,score)"),
    matching("score-nan", T, "score nan", with_gt(text("p.csv", "Q1,R1,0.9\nQ2,R2,nan\n")), 2,
             "error: {d}/p.csv: line 2: score 'nan' is not finite",
             note="official: accepted (NaN then sorts arbitrarily)"),
    matching("score-inf", T, "score inf", with_gt(text("p.csv", "Q1,R1,inf\n")), 2,
             "error: {d}/p.csv: line 1: score 'inf' is not finite",
             note="official: accepted"),
    matching("score-minus-infinity", T, "score -Infinity",
             with_gt(text("p.csv", "Q1,R1,0.9\nQ2,R2,-Infinity\n")), 2,
             "error: {d}/p.csv: line 2: score '-Infinity' is not finite", note="official: accepted"),
    matching("score-1e400", T, "score 1e400 (overflows a double)",
             with_gt(text("p.csv", "Q1,R1,1e400\n")), 2,
             "error: {d}/p.csv: line 1: score '1e400' is not finite",
             note="official: read as infinity and accepted"),
    matching("score-empty", T, "empty score", with_gt(text("p.csv", "Q1,R1,0.9\nQ2,R2,\n")), 2,
             "error: {d}/p.csv: line 2: missing score (expected 3 fields: query_id,reference_id,score)"),
    matching("score-text", T, "score that is text", with_gt(text("p.csv", "Q1,R1,high\n")), 2,
             "error: {d}/p.csv: line 1: score 'high' is not a number"),
    matching("empty-query", T, "an empty query id", with_gt(text("p.csv", "Q1,R1,0.9\n,R2,0.5\n")), 2,
             "error: {d}/p.csv: line 2: empty query_id",
             note="official: accepted as the query ''"),
    matching("empty-reference", T, "an empty reference id", with_gt(text("p.csv", "Q1, ,0.9\n")), 2,
             "error: {d}/p.csv: line 1: empty reference_id"),
    matching("repeated-pair", T, "a pair repeated with another score",
             with_gt(text("p.csv", "Q1,R1,0.9\nQ2,R2,0.5\nQ1,R1,0.3\n")), 2,
             "error: {d}/p.csv: lines 1 and 3: duplicate pair (Q1, R1) appears 2 times; the "
             "official scorer rejects duplicate predictions"),
    matching("repeated-pair-bom-crlf", T, "a repeated pair in a file with a byte-order mark and CRLF",
             with_gt(text("p.csv", "\ufeffQ1,R1,0.9\r\nQ2,R2,0.5\r\nQ1,R1,0.3\r\n")), 2,
             "error: {d}/p.csv: lines 1 and 3: duplicate pair (Q1, R1) appears 2 times; the "
             "official scorer rejects duplicate predictions"),
    matching("not-utf8", T, "bytes that are not UTF-8 (Latin-1 é)",
             with_gt(text("p.csv", b"Q1,R1,0.9\nQ\xe92,R2,0.5\n")), 2,
             "error: {d}/p.csv: line 2: not UTF-8 text (a byte the UTF-8 decoder replaced by U+FFFD)",
             note="official: stops with a UnicodeDecodeError"),
    matching("binary", T, "binary garbage (every byte value)",
             with_gt(text("p.csv", bytes(range(256)) * 8)), 2,
             "error: {d}/p.csv: line 1: …"),
    matching("truncated-gz", T, "a truncated .gz", with_gt(gzipped("p.csv.gz", CLEAN * 50, cut=0.5)),
             2, "error: {d}/p.csv.gz: cannot be read (…)", preds="{d}/p.csv.gz"),
    matching("not-gzip", T, "a .gz that is not gzip", with_gt(text("p.csv.gz", CLEAN)),
             2, "error: {d}/p.csv.gz: cannot be read (…)", preds="{d}/p.csv.gz"),
    matching("missing", T, "a predictions file that does not exist", with_gt(), 2,
             "error: {d}/p.csv: no such file or directory"),
    matching("max-results", T, "more predictions than --max-results",
             with_gt(text("p.csv", CLEAN)), 2,
             "error: {d}/p.csv: 6 predictions, more than --max-results 5 (pass --max-results 0 for no limit)",
             extra=("--max-results", "5")),
    # ---------------------------------------------------------------- Parquet
    matching("parquet", Q, "a clean Parquet file", with_gt(parquet("p.parquet", **CLEAN_COLUMNS)), 0,
             "the clean file's figures", preds="{d}/p.parquet",
             check=lambda d, e: scores_like_official(d, e, "p.parquet")),
    matching("parquet-zero-bytes", Q, "a Parquet file of zero bytes",
             with_gt(text("p.parquet", b"")), 2, "error: {d}/p.parquet: cannot be read (…)",
             preds="{d}/p.parquet"),
    matching("parquet-not-parquet", Q, "a .parquet file that is CSV text",
             with_gt(text("p.parquet", CLEAN)), 2, "error: {d}/p.parquet: cannot be read (…)",
             preds="{d}/p.parquet"),
    matching("parquet-string-scores", Q, "a score column of numbers written as strings",
             with_gt(parquet("p.parquet", **{**CLEAN_COLUMNS, "score": [str(x) for x in CLEAN_COLUMNS["score"]]})),
             0, "the clean file's figures (Spark casts the strings)", preds="{d}/p.parquet",
             check=scores_like_clean, per_engine={"local": (2, LOCAL_REFUSES)}),
    matching("parquet-text-scores", Q, "a score column of strings that are not numbers",
             with_gt(parquet("p.parquet", query_id=["Q1", "Q2"], reference_id=["R1", "R2"], score=["0.5", "high"])),
             2, "error: {d}/p.parquet: row query_id='Q2', reference_id='R2': missing or non-numeric score",
             preds="{d}/p.parquet", per_engine={"local": (2, LOCAL_REFUSES)}),
    matching("parquet-integer-ids", Q, "integer ids (gt ids 1, 2...)",
             files(text("gt.csv", "1,11\n2,12\n3,\n"), parquet("p.parquet", query_id=[1, 2, 9], reference_id=[11, 99, 12], score=[0.9, 0.8, 0.7])),
             0, "the figures of the same ids as text (Spark casts them)", preds="{d}/p.parquet",
             check=lambda d, e: scores_like_official(d, e, "p.parquet"),
             per_engine={"local": (2, LOCAL_REFUSES)}),
    matching("parquet-integer-scores", Q, "integer scores",
             with_gt(parquet("p.parquet", query_id=["Q1", "Q2", "Q2"], reference_id=["R1", "R9", "R2"], score=[3, 2, 2])),
             0, "the official reader's figures", preds="{d}/p.parquet",
             check=lambda d, e: scores_like_official(d, e, "p.parquet")),
    matching("parquet-missing-column", Q, "no score column",
             with_gt(parquet("p.parquet", query_id=["Q1"], reference_id=["R1"])), 2,
             "error: {d}/p.parquet: missing column 'score' (has: query_id, reference_id)",
             preds="{d}/p.parquet"),
    matching("parquet-null-id", Q, "a null query id",
             with_gt(parquet("p.parquet", query_id=["Q1", None], reference_id=["R1", "R2"], score=[0.9, 0.8])),
             2, "error: {d}/p.parquet: row query_id=None, reference_id='R2': empty query_id",
             preds="{d}/p.parquet"),
    matching("parquet-nan", Q, "a NaN score",
             with_gt(parquet("p.parquet", query_id=["Q1", "Q2"], reference_id=["R1", "R2"], score=[0.9, float("nan")])),
             2, "error: {d}/p.parquet: row query_id='Q2', reference_id='R2': score 'NaN' is not finite",
             preds="{d}/p.parquet"),
    matching("parquet-null-score", Q, "a null score",
             with_gt(parquet("p.parquet", query_id=["Q1", "Q2"], reference_id=["R1", "R2"], score=[0.9, None])),
             2, "error: {d}/p.parquet: row query_id='Q2', reference_id='R2': missing or non-numeric score",
             preds="{d}/p.parquet"),
    matching("parquet-repeated-pair", Q, "a repeated pair",
             with_gt(parquet("p.parquet", query_id=["Q1", "Q1"], reference_id=["R1", "R1"], score=[0.9, 0.1])),
             2, "error: {d}/p.parquet: duplicate pair (Q1, R1) appears 2 times; the official scorer "
             "rejects duplicate predictions", preds="{d}/p.parquet"),
    # ---------------------------------------------------------------- ground truth
    matching("gt-missing", G, "no ground-truth file", text("p.csv", CLEAN), 2,
             "error: {d}/gt.csv: no such file or directory"),
    matching("gt-empty", G, "an empty ground truth", with_gt(text("p.csv", CLEAN), gt=""), 2,
             "error: {d}/gt.csv: ground truth is empty"),
    matching("gt-header-only", G, "a ground truth of its header only",
             with_gt(text("p.csv", CLEAN), gt="query_id,reference_id\n"), 2,
             "error: {d}/gt.csv: ground truth is empty"),
    matching("gt-three-columns", G, "three columns",
             with_gt(text("p.csv", CLEAN), gt="Q1,R1\nQ2,R2,0.5\n"), 2,
             "error: {d}/gt.csv: line 2: expected 2 fields: query_id,reference_id, found 3"),
    matching("gt-repeated-row", G, "a repeated row",
             with_gt(text("p.csv", CLEAN), gt="Q1,R1\nQ2,R2\nQ1,R1\n"), 2,
             "error: {d}/gt.csv: line 3: duplicate ground-truth row (Q1, R1), also on line 1",
             note="official: counted twice as positives (recall can then never reach 1)"),
    matching("gt-no-positive", G, "no positive pair (every reference empty)",
             with_gt(text("p.csv", CLEAN), gt="Q1,\nQ2,\n"), 2,
             "error: {d}/gt.csv: ground truth has no positive pair (every reference_id is empty)",
             note="official: divides by zero positives"),
    matching("gt-distractor-and-matched", G, "a query both distractor and matched",
             with_gt(text("p.csv", CLEAN), gt="Q1,R1\nQ2,R2\nQ1,\n"), 2,
             "error: {d}/gt.csv: line 3: query Q1 is listed both as a distractor and with a "
             "reference (first on line 1)"),
    matching("gt-empty-query", G, "an empty query id",
             with_gt(text("p.csv", CLEAN), gt="Q1,R1\n,R2\n"), 2,
             "error: {d}/gt.csv: line 2: empty query_id"),
    matching("gt-bom-crlf", G, "a byte-order mark and CRLF",
             with_gt(text("p.csv", CLEAN), gt="\ufeff" + GT.replace("\n", "\r\n")), 0,
             "the clean file's figures", check=scores_like_clean,
             note="official: the mark makes the header a pair, and query Q1 another id"),
    matching("gt-not-utf8", G, "bytes that are not UTF-8",
             files(text("p.csv", CLEAN), text("gt.csv", b"Q1,R1\nQ\xe92,R2\n")), 2,
             "error: {d}/gt.csv: line 2: not UTF-8 text (a byte the UTF-8 decoder replaced by U+FFFD)"),
    matching("gt-parquet-zero-bytes", G, "a Parquet ground truth of zero bytes",
             files(text("p.csv", CLEAN), text("gt.parquet", b"")), 2,
             "error: {d}/gt.parquet: cannot be read (…)", gt="{d}/gt.parquet"),
    matching("gt-parquet-missing-column", G, "a Parquet ground truth without reference_id",
             files(text("p.csv", CLEAN), parquet("gt.parquet", query_id=["Q1"])), 2,
             "error: {d}/gt.parquet: missing column 'reference_id' (has: query_id)",
             gt="{d}/gt.parquet"),
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


@dataclass
class Screen:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``folder``."""
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


def fill(template: str, places: dict[str, str]) -> str:
    for key, value in places.items():
        template = template.replace("{" + key + "}", value)
    return template


def line_pattern(sees: str, places: dict[str, str]) -> re.Pattern:
    parts = [re.escape(fill(p, places)) for p in sees.split("…")]
    return re.compile(".+".join(parts))


def in_process(argv: list[str], capsys, session) -> Screen:
    """``disc21spark ARGV`` in this process; ``session``: the SparkSession the runner gets
    (None: the case must not start Spark)."""
    from disc21spark import commands
    from disc21spark.core import runner

    def factory(*_, **__):
        assert session is not None, "this case started Spark"
        return session

    saved = runner._spark_session
    runner._spark_session = factory
    # the runner's log handler writes to the sys.stderr of its day: make it this test's
    for handler in list(logging.getLogger("disc21spark").handlers):
        logging.getLogger("disc21spark").removeHandler(handler)
    try:
        code = commands.main(argv)
    except SystemExit as exc:  # argparse: usage errors and --help
        code = exc.code
    finally:
        runner._spark_session = saved
    captured = capsys.readouterr()
    return Screen(code, captured.out, captured.err)


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
    if case.root_skip and os.geteuid() == 0:
        pytest.skip("root reads and writes whatever the permissions say")
    variants = ["fresh"]
    if case.code != 0 and case.preexisting and output_of(case.command):
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
        shared_before = {k: snapshot(Path(v)) for k, v in shared.items() if v in " ".join(argv)}
        if engine in ("local", "spark"):
            screen = in_process([*argv, "--engine", engine], capsys, session)
        elif engine == "none":
            screen = in_process(argv, capsys, None)
        elif engine == "inproc":
            screen = in_process(argv, capsys, session)
        else:  # a launcher: the installed command or a job script, as the user starts them
            screen = as_user(LAUNCHERS[engine](argv[0]), argv[1:], d)
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
            k: v for k, v in after.items()
            if not (rel and (k == rel or k.startswith(rel + os.sep)))
            and k not in {fill(b, places) for b in case.beside}
        }  # fmt: skip
        assert kept == before, "written outside --output: " + ", ".join(set(kept) ^ set(before))
        if out and case.outputs:
            assert sorted(p.name for p in Path(out).iterdir()) == sorted(case.outputs)
        if case.check:
            case.check(d, engine)


def jobs_script(command: str) -> list[str]:
    script = {"evaluate": "evaluate", "make-library": "make_library", "make-queries": "make_queries",
              "extract": "extract_descriptors", "rank-eval": "rank_eval"}[command]  # fmt: skip
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
def shared(tmp_path_factory) -> dict[str, str]:
    return {}


@pytest.fixture(scope="module")
def session(request):
    """The suite's SparkSession, started only when a case needs it."""
    return request.getfixturevalue("spark")


@pytest.mark.parametrize("case,engine", params())
def test_bad_input(case: Case, engine: str, tmp_path, capsys, shared, request):
    uses_spark = engine in ("spark", "inproc")
    session = request.getfixturevalue("spark") if uses_spark else None
    run_case(case, engine, tmp_path, capsys, shared, session)
