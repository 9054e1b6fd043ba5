"""The bad-input matrix's rows (``Case``), what builds them (the files a case writes,
its command line) and the specification its odd-but-legal inputs are scored against."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tests.bad_inputs import (
    CLEAN,
    GT,
)

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


def board(name: str, kind: str | None = None, edit=None, drop: str = "") -> Callable[[Path], None]:
    """A writer of a board folder as a pool run publishes it (``published_board``):
    ``kind`` its run block's board, ``edit(doc)`` its leaderboard.json changed, ``drop``
    one of its parts removed."""

    def write(d: Path) -> None:
        import shutil

        from tests.pool_helpers import published_board

        folder = published_board(d / name, board=kind, edit=edit)
        if drop:
            target = folder / drop
            shutil.rmtree(target) if target.is_dir() else target.unlink()

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
    "leaderboard.tex",
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

PL, D, IM, OPT, OUT, CMD = (
    "pool of submissions",
    "descriptors",
    "images",
    "options",
    "output path",
    "installed command",
)


def fill(template: str, places: dict[str, str]) -> str:
    for key, value in places.items():
        template = template.replace("{" + key + "}", value)
    return template


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
    from disc21spark.matching.model import GroundTruth
    from disc21spark.matching.oracle import spec

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
    from disc21spark.matching.reports.report import json_safe, write_curve_csv

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
