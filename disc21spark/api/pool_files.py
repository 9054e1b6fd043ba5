"""``evaluate_pool`` of paths: a pool of files scored by the command line's pool job
(``pool.job.run``), on the engine the command would choose for it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from disc21spark.api import inputs
from disc21spark.api.inputs import PATH, kind, label
from disc21spark.api.results import Leaderboard
from disc21spark.core.errors import InputError


def all_paths(predictions: Any) -> bool:
    """Whether ``predictions`` is a path or a sequence of paths (a pool of files)."""
    if isinstance(predictions, (str, os.PathLike)):
        return True
    return isinstance(predictions, Sequence) and all(kind(p) == PATH for p in predictions)


def score(
    ground_truth: Any, predictions: Any, submission: str | None, engine: Any, options: dict
) -> Leaderboard:
    """A pool of files through the command line's pool job, on the engine the command
    would choose (``inputs.pool_engine``)."""
    from disc21spark.pool import job as pool_job

    if kind(ground_truth) != PATH:
        source = label("ground_truth", ground_truth)
        raise InputError(source, "a pool of files needs the ground truth as a path")
    if isinstance(predictions, (str, os.PathLike)):
        predictions = [predictions]
    paths = [os.fspath(p) for p in predictions]
    if options["pool_plan"] is None:  # the command's default
        del options["pool_plan"]
    request = inputs.request(
        "evaluate",
        ground_truth=os.fspath(ground_truth),
        predictions=paths,
        output=None,
        submission_column=submission,
        **options,
    )
    local = inputs.pool_engine(engine, request)
    spark = None if local else inputs.spark_session(engine, [])
    result = pool_job.run(spark, pool_job.PoolJob.from_options(request, local), announce=False)
    private = None if result.private is None else Leaderboard(result.private)
    return Leaderboard(result.submissions, private)
