"""What a user asks of ``disc21spark evaluate``, typed: ``EvaluateRequest`` holds every
option by its option's name (``--max-results`` → ``max_results``), with defaults.ini's
values. The command line parses its arguments into one (``of_namespace``), the Python API
builds one from its keywords; ``checked`` applies the rules no single option can say,
in the command line's words, and the jobs are built from the checked request
(``MatchingJob.from_options``, ``PoolJob.from_options``, ``DescriptorJob.from_options``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from disc21spark.commands.requests import Request, UsageError, below_one
from disc21spark.core.config import from_defaults, parse_limit, parse_size, parse_span
from disc21spark.core.paths import is_uri
from disc21spark.engine import plan_named
from disc21spark.matching.stats import difference

# the options of one track only (``checked`` refuses them on the other), by --help's group
POOL_OPTIONS = (
    "submission_column",
    "fail_on_invalid",
    "previous",
    "pool_plan",
    "private_queries",
    "private_output",
    "freeze",
    "compare_to",
    "queries_needed",
)
DESCRIPTOR_OPTIONS = (
    "query_descriptors",
    "reference_descriptors",
    "knn",
    "distance",
    "index",
    "nprobe",
    "max_dim",
    "broadcast_limit",
    "score_norm_descriptors",
    "score_norm_weight",
    "score_norm_neighbors",
    "train_descriptors",
    "write_predictions",
    "query_partitions",
    "budgets",
    "knn_budgets",
)
INTERVAL_OPTIONS = ("resamples", "confidence", "seed", "query_groups")
# why an option given on the other track is refused
OTHER_TRACK = {
    "descriptor": (
        (
            INTERVAL_OPTIONS,
            "is for the matching track: the descriptor track computes no interval "
            "(score its --write-predictions file for them)",
        ),
        (POOL_OPTIONS, "is for a pool of predictions files, not the descriptor track"),
    ),
    "matching": ((DESCRIPTOR_OPTIONS, "is for the descriptor track (--query-descriptors ...)"),),
}
BUDGET_EXAMPLES = {"budgets": "10000,50000,100000", "knn_budgets": "1,5,10"}


def _counts(text: str) -> list[int]:
    return [int(v) for v in text.split(",")]


@dataclass(frozen=True)
class EvaluateRequest(Request):
    """Every option of ``disc21spark evaluate`` (docs/reference/cli.md says what each
    does); ``track``: set by ``checked``."""

    SECTION: ClassVar[str] = "evaluate"
    READS: ClassVar[tuple[str, ...]] = (
        "ground_truth",
        "predictions",
        "query_descriptors",
        "reference_descriptors",
        "score_norm_descriptors",
        "train_descriptors",
        "query_groups",
        "private_queries",
        "previous",
        "compare_to",
    )
    WRITES: ClassVar[tuple[str, ...]] = ("output", "private_output")

    ground_truth: str
    output: str | None
    predictions: list[str] | None = None
    overwrite: bool = False
    max_results: int = from_defaults(int)
    submission_column: str | None = None
    fail_on_invalid: bool = False
    previous: str | None = None
    pool_plan: str = from_defaults(plan_named)
    query_descriptors: list[str] | None = None
    reference_descriptors: list[str] | None = None
    knn: int | None = from_defaults(int)
    distance: str = from_defaults()
    index: str = from_defaults()
    nprobe: int | None = from_defaults(int)
    max_dim: int = from_defaults(int)
    broadcast_limit: int = from_defaults(parse_size)
    score_norm_descriptors: list[str] | None = None
    score_norm_weight: float = from_defaults(float)
    score_norm_neighbors: tuple[int, int] = from_defaults(parse_span)
    train_descriptors: list[str] | None = None
    write_predictions: bool = False
    query_partitions: int | None = from_defaults(int)
    budgets: list[int] | None = from_defaults(_counts)
    knn_budgets: list[int] | None = from_defaults(_counts)
    sort_partitions: int | None = from_defaults(int)
    curve_points: int = from_defaults(int)
    predictions_format: str = from_defaults()
    ground_truth_format: str = from_defaults()
    title: str | None = from_defaults()
    engine: str = from_defaults()
    explain: bool = False
    local_max_bytes: int | None = from_defaults(parse_limit)
    resamples: int = from_defaults(int)
    confidence: float = from_defaults(float)
    seed: int = from_defaults(int)
    query_groups: str | None = None
    per_query: bool = False
    private_queries: str | None = None
    private_output: str | None = None
    freeze: bool = False
    compare_to: str | None = None
    queries_needed: float | None = None
    track: str | None = None

    def checked(self) -> EvaluateRequest:
        return checked(self)

    def track_options(self) -> dict[str, Any]:
        """The options of this request's track (the run record keeps them)."""
        other = DESCRIPTOR_OPTIONS if self.track == "matching" else POOL_OPTIONS
        dropped = {*other, "given", "track"}  # what no option sets
        return {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in dropped
        }


def checked(r: EvaluateRequest) -> EvaluateRequest:
    """``r`` with its track set, once the rules no single option can say hold;
    UsageError naming the first that does not."""
    descriptor = bool(r.query_descriptors or r.reference_descriptors)
    if descriptor and r.predictions:
        _refuse("give --predictions (matching track) or descriptors (descriptor track), not both")
    if not descriptor and not r.predictions:
        _refuse("give --predictions, or --query-descriptors and --reference-descriptors")
    if descriptor and not (r.query_descriptors and r.reference_descriptors):
        _refuse("the descriptor track needs --query-descriptors and --reference-descriptors")
    if descriptor and r.query_groups:
        _refuse(
            "--query-groups is for the matching track: score the descriptor track's "
            "--write-predictions file with it"
        )
    if descriptor and r.per_query:
        _refuse(
            "--per-query is for the matching track: score the descriptor track's "
            "--write-predictions file with it"
        )
    if descriptor and r.knn is None and r.max_results < 1:
        _refuse("the descriptor track needs --max-results ≥ 1 (or --knn K)")
    if (r.knn is not None and r.knn < 1) or r.max_dim < 1 or below_one(r.nprobe):
        _refuse("--knn, --max-dim and --nprobe must be ≥ 1")
    if below_one(r.query_partitions):
        _refuse("--query-partitions must be ≥ 1")
    if not math.isfinite(r.score_norm_weight):  # NaN would make every score NaN
        _refuse("--score-norm-weight must be a finite number")
    if r.resamples < 0 or r.seed < 0 or not 0 < r.confidence < 1:
        _refuse("--resamples and --seed must be ≥ 0, --confidence between 0 and 1")
    r = replace(r, **_budgets(r, descriptor), track="descriptor" if descriptor else "matching")
    _refuse_the_other_track(r)
    if r.max_results < 0 or below_one(r.sort_partitions) or r.curve_points < 2:
        _refuse("--max-results must be ≥ 0, --sort-partitions ≥ 1 and --curve-points ≥ 2")
    _check_boards(r)
    return r


def _check_boards(r: EvaluateRequest) -> None:
    """--queries-needed a positive difference; --private-queries and --private-output:
    both or neither (the API, which writes nothing, takes the queries alone), the private
    board never inside the published folder."""
    q = r.queries_needed
    if q is not None and not difference.is_difference(q):
        _refuse(
            f"--queries-needed must be a μAP difference from {difference.SMALLEST_DIFFERENCE:.6f} "
            f"to 1, such as 0.01 (got {q!r})"
        )
    if r.private_output and not r.private_queries:
        _refuse("--private-output needs --private-queries (the queries of the private board)")
    if r.private_queries and r.output and not r.private_output:
        _refuse("--private-queries needs --private-output DIR: the private board's folder")
    if not r.private_queries:
        return
    if r.output and _inside(r.private_output, r.output):
        _refuse(
            f"--private-output {r.private_output} is inside --output {r.output}: the private "
            "board must never be published with the public one"
        )


def _inside(path: str, folder: str) -> bool:
    """``path`` is ``folder`` or inside it (local paths, and URIs by their text)."""
    if is_uri(path) or is_uri(folder):
        return path.rstrip("/") == folder.rstrip("/") or path.startswith(folder.rstrip("/") + "/")
    here, there = Path(path).resolve(), Path(folder).resolve()
    return here == there or there in here.parents


def _budgets(r: EvaluateRequest, descriptor: bool) -> dict[str, list[int]]:
    """--budgets and --knn-budgets as lists of whole numbers ≥ 1, increasing, each with
    its search (the API hands lists straight in, so the values are checked here)."""
    out = {}
    for name, example in BUDGET_EXAMPLES.items():
        values, option = getattr(r, name), "--" + name.replace("_", "-")
        if values is None:
            continue
        if not descriptor:
            _refuse(f"{option} is for the descriptor track (--query-descriptors ...)")
        counts = isinstance(values, (list, tuple)) and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values
        )
        if not counts or not values or values[0] < 1 or sorted(set(values)) != list(values):
            shown = ",".join(map(str, values)) if isinstance(values, (list, tuple)) else values
            _refuse(
                f"{option} must be whole numbers ≥ 1 in increasing order, such as "
                f"{example} (got {shown!r})"
            )
        out[name] = [int(v) for v in values]
    if r.budgets is not None and r.knn is not None:
        _refuse("--budgets cuts the global search (--max-results); with --knn give --knn-budgets")
    if r.knn_budgets is not None and r.knn is None:
        _refuse("--knn-budgets cuts the kNN search: give --knn K as well")
    return out


def _refuse_the_other_track(r: EvaluateRequest) -> None:
    """An option of the other track, given, is refused with one line: no option is
    silently ignored."""
    for names, why in OTHER_TRACK[r.track]:
        for name in names:
            if name in r.given:
                _refuse(f"--{name.replace('_', '-')} {why}")


def _refuse(message: str) -> None:
    raise UsageError(message)
