"""The public Python API: what ``disc21spark`` exports (see disc21spark/__init__.py)."""

from disc21spark.api.matching import evaluate, evaluate_pool
from disc21spark.api.results import DescriptorResult, Leaderboard
from disc21spark.api.tracks import evaluate_descriptors, make_library, make_queries, rank_eval
from disc21spark.core.frozen import freeze_board

__all__ = [
    "DescriptorResult",
    "Leaderboard",
    "evaluate",
    "evaluate_descriptors",
    "evaluate_pool",
    "freeze_board",
    "make_library",
    "make_queries",
    "rank_eval",
]
