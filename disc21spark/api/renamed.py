"""The API's keywords renamed after 0.1.0, to the command line's option names
(docs/reference/vocabulary.md): an old keyword keeps working for one release, with a
DeprecationWarning, as an old option name does on the command line."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# function → old keyword → new keyword (the option's name, ``--sort-partitions`` → sort_partitions)
RENAMED: dict[str, dict[str, str]] = {
    "evaluate": {"partitions": "sort_partitions"},
    "evaluate_pool": {"partitions": "sort_partitions", "submission": "submission_column"},
    "evaluate_descriptors": {
        "queries": "query_descriptors",
        "references": "reference_descriptors",
        "metric": "distance",
        "score_norm": "score_norm_descriptors",
    },
    "make_queries": {"format": "query_format", "partitions": "image_partitions"},
    "rank_eval": {"partitions": "query_partitions"},
}


def old_keywords(function: F) -> F:
    """``function`` also taking its old keywords (``RENAMED[function.__name__]``): each
    warns once per call site and is passed on under its new name. TypeError when a
    call gives both names. ``inspect.signature`` shows the new names only."""
    renamed = RENAMED[function.__name__]

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for old, new in renamed.items():
            if old not in kwargs:
                continue
            if new in kwargs:
                raise TypeError(f"{function.__name__}() got both {old!r} and {new!r}")
            warnings.warn(
                f"{function.__name__}({old}=...) is deprecated, use {new}= "
                "(the old name will be removed in the next release)",
                DeprecationWarning,
                stacklevel=2,
            )
            kwargs[new] = kwargs.pop(old)
        return function(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
