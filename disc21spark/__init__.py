"""disc21spark: exact DISC21 / ISC2021 image copy detection evaluation on Spark.

>>> import disc21spark as ds
>>> m = ds.evaluate("gt.csv", predictions_df)      # doctest: +SKIP
>>> m.micro_ap, m.recall_at_p90, m.pr_curve      # doctest: +SKIP

The functions load on first use: the command line and ``import disc21spark`` stay cheap.
"""

from __future__ import annotations

from typing import Any

from disc21spark.core.errors import InputError, OutputError, WorkersLost
from disc21spark.core.version import __version__ as __version__

__all__ = [
    "DescriptorResult",
    "InputError",
    "Leaderboard",
    "MatchingMetrics",
    "OutputError",
    "WorkersLost",
    "evaluate",
    "evaluate_descriptors",
    "evaluate_pool",
    "freeze_board",
    "make_library",
    "make_queries",
    "rank_eval",
]
_API = set(__all__) - {"InputError", "OutputError", "WorkersLost", "MatchingMetrics"}


def __getattr__(name: str) -> Any:
    # deferred: pyarrow and numpy load with the first call, not with the command line
    if name in _API:
        from disc21spark import api

        return getattr(api, name)
    if name == "MatchingMetrics":
        from disc21spark.matching.model import MatchingMetrics

        return MatchingMetrics
    raise AttributeError(f"module 'disc21spark' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*__all__, "__version__"})
