"""The in-process engine: one submission file scored in this process, no JVM.

A file is read in batches and counted chunk by chunk (``batched.py``: Arrow under the
Spark job's rules, the first bad line named in its words, the true pairs' positions
counted as the Spark plan's partitions count them); its figures are the
specification's (``spec.evaluate_encoded``), bit for bit, as tests hold every engine.
A table in memory (``api/tables.py``) goes through the same passes (``Source.of_table``).
Nothing here imports PySpark.
"""

from __future__ import annotations

from typing import Any

from disc21spark.core.formats import NotForThisEngine
from disc21spark.core.phases import Phases
from disc21spark.matching.inprocess.batched import score_source
from disc21spark.matching.inprocess.source import Source
from disc21spark.matching.model import GroundTruth, MatchingMetrics, Settings

# the reader's names, used through this module by the jobs
__all__ = ["NotForThisEngine", "score_file", "score_source"]


def score_file(
    resolved: Any, gt: GroundTruth, settings: Settings, phases: Phases | None = None
) -> MatchingMetrics:
    """``score_source`` of a local file as the decision resolved it
    (``resolve.ResolvedInput`` with ``local`` set); the path as given names it in the
    --max-results message, as on Spark. The warnings are returned, not printed."""
    source = Source.of_input(resolved)
    return score_source(source, gt, settings, phases, announce=False, given=resolved.given)
