"""Results as files (metrics.json, pr_curve.csv, pr_curve.png, with --per-query queries.csv)
and as a table for people."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from disc21spark.core import fs, record
from disc21spark.core.output import staged_output
from disc21spark.core.phases import Phases
from disc21spark.matching.model import MatchingMetrics
from disc21spark.matching.stats.report import uncertainty_lines

if TYPE_CHECKING:
    import pandas as pd

ROWS = (
    ("micro_ap", "μAP (micro average precision)", "{:.6f}"),
    ("recall_at_p90", "recall at precision 0.9", "{:.6f}"),
    ("threshold_at_p90", "score threshold at precision 0.9", "{:.6g}"),
    ("recall_at_rank1", "recall at rank 1", "{:.6f}"),
    ("recall_at_rank10", "recall at rank 10", "{:.6f}"),
    ("n_predictions", "predictions", "{:,}"),
    ("n_true_positives", "true positives among them", "{:,}"),
    ("n_positives", "ground-truth positive pairs", "{:,}"),
    ("n_queries", "ground-truth queries (distractors included)", "{:,}"),
    ("n_queries_with_predictions", "queries with predictions", "{:,}"),
    ("n_unknown_query_predictions", "predictions for unknown queries", "{:,}"),
)


def metrics_document(metrics: MatchingMetrics, run: dict, blocks: dict | None = None) -> dict:
    """The metrics.json content: every exact figure, then ``blocks`` (a track's own,
    such as the descriptor track's ``budgets``), then how it was computed."""
    doc = metrics.to_dict()
    doc["pr_curve_points"] = len(metrics.curve)
    doc["warnings"] = list(metrics.warnings)
    if metrics.uncertainty is not None:
        doc.update(metrics.uncertainty.to_dict())
    if metrics.groups is not None:
        doc["groups"] = metrics.groups.to_dict()
    doc.update(blocks or {})
    doc["run"] = run
    return doc


def run_document(files: fs.LocalFiles, private: bool = False, **inputs: Any) -> dict:
    """The ``run`` part of a result file: the inputs and settings given, then the run
    record (core/record.py: command, times, the engine that ran the job, as ``files``
    names it (``core.fs.files_of`` of the decision's engine), versions, inputs with
    SHA-256, the seconds of each phase), built once per run; ``private``: a folder
    never published (``record.Record.document``)."""
    return {**inputs, **record.current().document(files, private)}


@contextmanager
def staged_report(
    files: fs.LocalFiles, phases: Phases, output: str, overwrite: bool, inputs: dict
) -> Iterator[tuple[Path, dict]]:
    """The report phase: a staging folder that becomes ``output`` whole when the block
    ends well, and the run document of ``inputs`` for the files written there."""
    with phases.phase("report"), staged_output(output, overwrite) as stage:
        yield stage, run_document(files, record.current().is_private(output), **inputs)


def format_table(metrics: MatchingMetrics, title: str = "DISC21 matching track") -> str:
    values = metrics.to_dict()
    width = max(len(label) for _, label, _ in ROWS)
    lines = [title, "-" * (width + 16)]
    for key, label, fmt in ROWS:
        value = values[key]
        text = "not reached" if value is None else fmt.format(value)
        lines.append(f"{label:<{width}}  {text:>12}")
    if metrics.uncertainty is not None:
        lines.extend(uncertainty_lines(metrics.uncertainty, width))
    return "\n".join(lines)


def write_curve_csv(path: Path, metrics: MatchingMetrics) -> None:
    curve = metrics.curve
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["precision", "recall", "threshold"])
        for p, r, t in zip(curve.precision, curve.recall, curve.threshold):
            writer.writerow([repr(float(p)), repr(float(r)), repr(float(t))])


def plot_curves(path: Path, curves: list[tuple[str, MatchingMetrics]], title: str) -> None:
    """The PR curves of (label, metrics) as a PNG (``curve_png``: Pillow, no matplotlib)."""
    from disc21spark.matching.reports.curve_png import draw_curves

    draw_curves(path, curves, title)


def json_safe(value: object) -> object:
    """A figure as JSON can hold it: NaN and infinities (no data) become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_matching_report(
    folder: Path,
    metrics: MatchingMetrics,
    run: dict,
    title: str,
    name: str = "submission",
    blocks: dict | None = None,
) -> None:
    doc = {k: json_safe(v) for k, v in metrics_document(metrics, run, blocks).items()}
    (folder / "metrics.json").write_text(json.dumps(doc, indent=2) + "\n")
    write_curve_csv(folder / "pr_curve.csv", metrics)
    if metrics.groups is not None:
        metrics.groups.write_csv(folder / "groups.csv")
    if metrics.queries is not None:
        write_queries(folder, metrics.queries)
    plot_curves(folder / "pr_curve.png", [(name, metrics)], title)


def write_queries(folder: Path, queries: pd.DataFrame) -> None:
    """queries.csv (floats as Python writes them, so they read back to the bit; a
    missing value empty) and queries.parquet, the same table typed."""
    queries.to_csv(folder / "queries.csv", index=False)
    queries.to_parquet(folder / "queries.parquet", index=False)
