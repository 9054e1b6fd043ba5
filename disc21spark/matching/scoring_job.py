"""The options scoring is given, one submission or a pool: a job of the runner, apart from
the plain data types (``model.py``), which import no runner."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from disc21spark.core import config
from disc21spark.core.runner import BaseJob
from disc21spark.matching.model import Settings
from disc21spark.matching.stats.model import Resampling


@dataclass(frozen=True)
class ScoringJob(BaseJob):
    """What scoring is given, one submission (``MatchingJob``) or a pool
    (``pool.job.PoolJob``); defaults from conf/defaults.ini [evaluate]."""

    DEFAULTS = "evaluate"
    INPUTS = ("ground_truth", "predictions", "query_groups")

    ground_truth: str
    predictions: Any  # one path, or a pool's paths
    output: str | None
    max_results: int = config.from_defaults(int)
    sort_partitions: int | None = config.from_defaults(int)
    overwrite: bool = False
    curve_points: int = config.from_defaults(int)
    predictions_format: str = config.from_defaults()
    ground_truth_format: str = config.from_defaults()
    resamples: int = config.from_defaults(int)
    confidence: float = config.from_defaults(float)
    seed: int = config.from_defaults(int)
    query_groups: str | None = None  # the groups file (stats/groups_file.py)
    per_query: bool = False  # one row per query (matching/per_query.py): queries.csv
    # that file read against the ground truth (``run`` sets it): a QueryGroups
    groups: object = field(default=None, compare=False, repr=False)

    @functools.cached_property
    def resampling(self) -> Resampling:
        """The bootstrap settings (resamples, confidence, seed) and the query groups: built
        once per job (``dataclasses.replace`` makes a new job, with its own)."""
        return Resampling(self.resamples, self.confidence, self.seed, self.groups)

    def settings(self, batch_bytes: int | None = None) -> Settings:
        """The scoring settings of this job (``Settings``), once its query groups are
        read; ``batch_bytes``: the decision's (``engine.Choice.batch_bytes``)."""
        return Settings(
            self.max_results, self.curve_points, self.resampling, self.per_query, batch_bytes
        )
