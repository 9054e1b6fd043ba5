"""Submission pools: every submission of a pool scored by one Spark plan.

A pool is a glob, a folder or several paths (one file = one submission, named by its
file name without extension), or one Parquet table with a submission column. All valid
submissions go through the same census and the same range sort keyed by (submission,
score); a bad submission is marked invalid with the single-file message and does not
sink the others. With ``previous``, unchanged submissions (same content checksum, same
ground truth and settings) take their results from the last run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql import SparkSession

from disc21spark import engine
from disc21spark.core import config, damage, fs, record
from disc21spark.core.errors import (
    InputError,
    failure_texts,
    is_read_failure,
)
from disc21spark.core.fs import data_files
from disc21spark.core.paths import display_path
from disc21spark.core.phases import Phases
from disc21spark.core.runner import fields_from_options
from disc21spark.matching import coverage
from disc21spark.matching.ground_truth import first_steps
from disc21spark.matching.model import GroundTruth, Submission
from disc21spark.matching.rows import PREDICTION_COLUMNS
from disc21spark.matching.scoring_job import ScoringJob
from disc21spark.matching.spark import per_file
from disc21spark.matching.spark.read import read_parquet
from disc21spark.matching.spark.score import Scoring, UnreadableInput, score
from disc21spark.pool import boards, in_process, kinds, publish
from disc21spark.pool import report as pool_report
from disc21spark.pool.boards import HIDDEN_REASON
from disc21spark.pool.listing import (  # noqa: F401 (submission_name: the pool's face)
    file_checksums,
    submission_name,
)
from disc21spark.pool.read import list_submissions, read_pool
from disc21spark.pool.split import Split, read_split

log = logging.getLogger("disc21spark")


@dataclass(frozen=True)
class PoolJob(ScoringJob):
    """A pool of submissions (the fields of ``ScoringJob``, then the pool's)."""

    INPUTS = (
        "ground_truth",
        "predictions",
        "previous",
        "compare_to",
        "query_groups",
        "private_queries",
    )
    PRIVATE_INPUTS = ("private_queries",)

    predictions: list[str]
    submission_column: str | None = None
    fail_on_invalid: bool = False
    previous: str | None = None
    pool_plan: str = config.from_defaults()
    local_max_bytes: int | None = config.from_defaults(config.parse_limit)
    # public and private boards (pool/split.py, pool/boards.py)
    private_queries: str | None = None
    private_output: str | None = None
    # a frozen board (pool/changes.py): publish this one frozen; compare with that one
    freeze: bool = False
    compare_to: str | None = None
    # a μAP difference: the queries it would need, per place (queries_needed.csv)
    queries_needed: float | None = None
    # the engine's decision (``engine.settle``); None: settled from pool_plan on entry
    choice: engine.Choice | None = None

    @classmethod
    def from_options(cls, request: Any, choice: engine.Choice | None = None) -> PoolJob:
        """`disc21spark evaluate` with a pool (``engine.settle`` tells a pool): ``request``
        a checked ``commands.evaluate_request.EvaluateRequest``."""
        predictions = list(request.predictions)
        return cls(**fields_from_options(cls, request, predictions=predictions, choice=choice))

    def execute(self, spark: SparkSession) -> PoolResult:
        return run(spark, self)

    def summary(self, result: PoolResult) -> list[str]:
        lines = [pool_report.format_table(result.submissions), summary_line(result)]
        if self.queries_needed is not None:
            lines += pool_report.queries_needed_lines(result.submissions, self.queries_needed)
        if result.private is not None:  # a terminal's text ends up in logs: not shown
            lines.append(f"the public board above; the private board in {self.private_output}/")
        if self.output:
            lines.append(
                f"results in {self.output}/ (leaderboard.csv/.json/.md/.html/.tex, "
                "pr_curves/, pr_curves.png)"
            )
        return lines


@dataclass
class PoolResult:
    """The pool's submissions (the public board's, with a split), the settings a
    previous run must share, and with a split the private board's submissions."""

    submissions: list[Submission]
    settings: dict = field(default_factory=dict)
    private: list[Submission] | None = None
    key: bytes | None = None  # the split's digest's key (kept on the private board)
    split: Split | None = None

    @property
    def n_invalid(self) -> int:
        return sum(s.status != "ok" for s in self.submissions)


def _settings(
    spark: SparkSession, job: PoolJob, gt_path: str, split: Split | None, key: bytes | None
) -> dict:
    """What a previous run must share for its results to be reused: the ground truth by
    its content (a file changed in place is a new ground truth), wherever it lives, and
    the private queries by their keyed digest (``pool/kinds.py``; None: no split; the
    plain SHA-256 a board written before it published is null now, never equal)."""
    return {
        kinds.PLAIN: None,
        kinds.KEYED: None if split is None else kinds.keyed_digest(key, split),
        "ground_truth_sha256": _content_digest(spark, gt_path, job.choice),
        "max_results": job.max_results,
        "curve_points": job.curve_points,
        **job.resampling.settings(),
        # the groups by their content: None (no groups) matches a leaderboard without any
        "query_groups_sha256": None if job.groups is None else job.groups.digest,
    }


def _content_digest(spark: SparkSession, path: str, choice: engine.Choice) -> str:
    """SHA-256 of a file, or of a folder's or a glob's files in order (the local engine's
    ground truth is one local file)."""
    files = data_files(spark, path) if choice.needs_spark else [path]
    if len(files) == 1:
        return record.sha256(files[0], spark)
    return fs.files_digest(list(file_checksums(spark, files).items()))


def run(spark: SparkSession, job: PoolJob, announce: bool = True) -> PoolResult:
    """Score a pool; writes job.output (when given) whole or not at all. ``announce``:
    say each scored submission's coverage warnings on stderr (the library API does not)."""
    phases = Phases()
    # the one sequence's first steps (matching.ground_truth.first_steps) on the pool's decision
    job, gt, files = first_steps(spark, replace(job, choice=_settled(spark, job)), phases)
    split = split_phase(files.spark, job.private_queries, gt, phases)
    # the boards named are checked before anything is written: their files, their kind
    before = kinds.compared_board(job.compare_to, split, spark) if job.compare_to else None
    prior = kinds.previous_board(job.previous, split, spark) if job.previous else None
    key = None if split is None else kinds.split_key(prior, spark)
    settings = _settings(spark, job, job.ground_truth, split, key)
    with phases.phase("pool") as note:
        subs, _ = list_submissions(spark, job)  # the sizes: in job.choice.inputs
        # a reused submission has no per-query table: with --per-query every one is scored
        reuse = prior is not None and not job.per_query
        previous = pool_report.read_previous(job.previous, settings) if reuse else {}
        for s in subs:
            old = previous.get(s.name)
            # a reason withheld from a public board is found again for the private one
            if old is not None and old.checksum == s.checksum and old.reason != HIDDEN_REASON:
                s.status, s.reason, s.metrics, s.reused = old.status, old.reason, old.metrics, True
        todo = [s for s in subs if not s.reused]
        note["rows"] = len(subs)
        note["detail"] = f"{len(todo)} to score, {len(subs) - len(todo)} reused"
    ahead: dict[str, dict] = {}  # in process, each board's outcomes from the one read
    if todo:  # with a split: which are valid, on the files as submitted; the boards'
        # figures replace these, so no per-query or group tables in this pass
        judged = job if split is None else replace(job, per_query=False, groups=None)
        ahead = _score(spark, judged, gt, todo, phases, boards.ahead(job, gt, split))
    private = None
    if split is not None:

        def board(name: str, board_gt: GroundTruth, ids: list[str], scored: list) -> None:
            on_board = replace(job, groups=split.groups(job.groups, name))
            known = ahead.get(name, {})  # from the read as submitted (a reused one: not)
            done = [s for s in scored if s.source in known]
            _outcomes(on_board, done, [known[s.source] for s in done])
            rest = [s for s in scored if s.source not in known]
            if rest:
                _score_board(spark, on_board, board_gt, rest, phases, ids)

        private = boards.score_boards(gt, split, subs, todo, board)
    for s in todo if announce else []:
        if s.metrics is not None:
            coverage.announce(s.name, s.metrics.warnings)
    result = PoolResult(subs, settings, private, key, split)
    if job.fail_on_invalid and result.n_invalid:
        first = next(s for s in subs if s.status != "ok")
        raise InputError(
            ", ".join(job.predictions),
            f"{result.n_invalid} of {len(subs)} submissions invalid (--fail-on-invalid); "
            f"first: {first.name}: {first.reason}",
        )
    publish.write(spark, job, result, phases, before)
    return result


def split_phase(
    spark: SparkSession, path: str | None, gt: GroundTruth, phases: Phases
) -> Split | None:
    """The --private-queries file read against ``gt`` (None without one)."""
    if path is None:
        return None
    with phases.phase("private queries") as note:
        split = read_split(path, gt, spark)
        note["rows"] = int(split.private.sum())
        note["detail"] = "queries on the private board"
    return split


def _settled(spark: SparkSession, job: PoolJob) -> engine.Choice:
    """The job's decision; for a job built by hand, ``engine.settle``'s, once (a pool
    of one file, too)."""
    asked = job.choice or engine.Choice("spark", job.pool_plan, local_max_bytes=job.local_max_bytes)
    return replace(
        engine.settle(
            spark,
            asked,
            job.predictions,
            submission_column=job.submission_column,
            fmt=job.predictions_format,
            given=job,
        ),
        kind="pool",
    )


def _score(
    spark: SparkSession,
    job: PoolJob,
    gt: GroundTruth,
    subs: list[Submission],
    phases: Phases,
    ahead: list[tuple[str, in_process.Board]] = (),
) -> dict[str, dict]:
    """Every submission of ``subs`` scored; fills its status and metrics. On the
    per-file plan each file is a task of its own, and what only Spark reads as Spark
    does is left for the distributed plan. ``ahead`` (in process alone): boards scored
    from the same read of each file; returned, per board name, each source's Outcome."""
    found: dict[str, dict] = {}
    if job.choice.plan == "per-file":
        with phases.phase("score", unit="files") as note:
            files = [job.choice.inputs.of(s.source) for s in subs]
            if job.choice.needs_spark:  # one Spark task a file
                outcomes = per_file.score_files(spark, files, gt, job.settings())
            elif ahead:  # one read a file: as submitted, then on every board
                outcomes, on = in_process.score_split(
                    files, gt, job.settings(), [b for _, b in ahead]
                )
                found = {n: dict(zip([s.source for s in subs], o)) for (n, _), o in zip(ahead, on)}
            else:  # one worker process a file at a time, no JVM
                outcomes = in_process.score_files(files, gt, job.settings())
            left = _outcomes(job, subs, outcomes)
            note["rows"] = sum(s.metrics.n_predictions for s in subs if s.metrics)
            note["detail"] = f"{len(subs) - len(left)} submissions, one task per file"
            if not job.choice.needs_spark:
                note["detail"] = f"{len(subs)} submissions, one worker process per file" + (
                    ", each read once for its validity and every board" if ahead else ""
                )
        subs = left
    _score_distributed(spark, job, gt, subs, phases)
    return found


def _outcomes(job: PoolJob, subs: list[Submission], outcomes: list) -> list[Submission]:
    """Each submission's ``per_file.Outcome`` taken: its metrics, or invalid with its
    error; those only Spark's reader reads as Spark does are returned, left to the
    distributed plan (the local engine cannot leave any: InputError)."""
    left = []
    for s, outcome in zip(subs, outcomes):
        if outcome.needs_spark and not job.choice.needs_spark:
            raise InputError(s.source, "Arrow reads it otherwise than Spark: use --engine spark")
        if outcome.needs_spark:
            left.append(s)
        elif outcome.error is not None:
            s.invalid(outcome.input_error())
        else:
            s.metrics = outcome.metrics
    return left


def _score_board(
    spark: SparkSession,
    job: PoolJob,
    gt: GroundTruth,
    subs: list[Submission],
    phases: Phases,
    ids: list[str],
) -> None:
    """The valid ``subs`` scored on a board (``gt`` its ground truth, ``ids`` its
    queries): on Spark's distributed plan, or in this machine's worker processes."""
    if job.choice.needs_spark:
        _score_distributed(spark, job, gt, subs, phases, only=ids)
        return
    with phases.phase("board", unit="files") as note:
        files = [job.choice.inputs.of(s.source) for s in subs]
        outcomes = in_process.score_files(files, gt, job.settings(), ids)
        _outcomes(job, subs, outcomes)
        note["detail"] = f"{len(subs)} submissions, their rows of the board's queries"


def _score_distributed(
    spark: SparkSession,
    job: PoolJob,
    gt: GroundTruth,
    subs: list[Submission],
    phases: Phases,
    only: list[str] | None = None,
) -> None:
    """Submissions through the one scorer: one read, one census, one count for them all;
    ``only``: their rows of these query ids alone (a board's, ``gt`` its ground truth)."""
    live = [s for s in subs if _parquet_usable(spark, job, s)]
    while live:  # an unreadable file is dropped (and marked) and the read starts again
        scoring = Scoring(
            gt,
            job.curve_points,
            job.sort_partitions,
            job.max_results,
            sources={i: _where(s) for i, s in enumerate(live)},
            read_detail=f"{len(live)} submissions parsed, checked and counted in one pass",
            resampling=job.resampling,
            per_query=job.per_query,
            rows_at_most=job.choice.inputs.rows_at_most_of_one([s.source for s in live]),
        )
        pairs = read_pool(spark, job, live, only)
        try:
            scored = score(spark, pairs, range(len(live)), scoring, phases)
        except UnreadableInput as exc:
            culprit = _unreadable(spark, exc.cause, live)
            if culprit is None:
                raise exc.cause from None
            fmt = job.choice.inputs.of(culprit.source).format
            reason = damage.unreadable(culprit.source, exc.cause, fmt, spark)
            culprit.invalid(InputError(display_path(culprit.source), reason))
            live = [s for s in live if s is not culprit]
            continue
        for i, error in scored.errors.items():
            live[i].invalid(error)
        names = {i: s.name for i, s in enumerate(live)}
        checked = coverage.check_spark(spark, pairs, gt, scored.metrics, names, False)
        for i, metrics in checked.items():
            live[i].metrics = metrics
        return


def _parquet_usable(spark: SparkSession, job: PoolJob, s: Submission) -> bool:
    """A Parquet submission file is opened alone first: one file's footer or columns
    must not decide the schema of the whole pool (marked invalid when unusable)."""
    if job.submission_column or job.choice.inputs.of(s.source).format != "parquet":
        return True
    try:
        read_parquet(spark, s.source, PREDICTION_COLUMNS)
    except InputError as error:
        s.invalid(InputError(display_path(s.source), error.reason))
        return False
    return True


def _where(s: Submission) -> str:
    return display_path(s.source) if not s.source.startswith("table:") else s.source


def _unreadable(spark: SparkSession, exc: Exception, subs: list[Submission]) -> Submission | None:
    """The submission whose file made the read fail, when the failure names it."""
    if not is_read_failure(exc):
        return None
    text = " ".join(failure_texts(exc))
    hits = [
        s
        for s in subs
        if any(n in text for n in (s.source, display_path(s.source), fs.uri(spark, s.source)))
    ]
    return max(hits, key=lambda s: len(s.source)) if hits else None


def summary_line(result: PoolResult) -> str:
    n = len(result.submissions)
    reused = sum(s.reused for s in result.submissions)
    return f"{n} submissions: {n - result.n_invalid} scored, {result.n_invalid} invalid" + (
        f", {reused} reused from the previous run" if reused else ""
    )
